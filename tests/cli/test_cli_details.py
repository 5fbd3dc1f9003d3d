"""CLI details: help text on every option, -V, usage errors for bad counts and environment values."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from perflint.cli import build_parser, main


def _parsers(p: argparse.ArgumentParser, prog: str = "perflint") -> list[tuple[str, argparse.ArgumentParser]]:
    out = [(prog, p)]
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                out += _parsers(sp, f"{prog} {name}")
    return out


def test_every_option_has_help() -> None:
    missing = [
        f"{prog}: {'/'.join(a.option_strings) or a.dest}"
        for prog, p in _parsers(build_parser())
        for a in p._actions
        if not a.help or a.help == argparse.SUPPRESS
    ]
    assert missing == []


def test_help_describes_accept(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.strip().startswith("accept"))
    assert "accepted" in line and "lint traces" not in line


def test_short_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["-V"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("perflint ")


@pytest.mark.parametrize("command", ["check", "summary", "snapshot", "diff"])
@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_bad_jobs_is_usage_error(command: str, jobs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, str(tmp_path), "--jobs", jobs]
    argv += [str(tmp_path)] if command == "diff" else []
    argv += ["-o", str(tmp_path / "s.json")] if command == "snapshot" else []
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--jobs" in err


def test_malformed_memory_budget_env_is_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": []}')
    monkeypatch.setenv("PERFLINT_MEMORY_BUDGET", "lots")
    assert main(["summary", str(trace), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert err == "perflint: error: PERFLINT_MEMORY_BUDGET: not a size: 'lots' (use e.g. 512M or 4G)\n"
    # The command-line option wins over the variable.
    main(["summary", str(trace), "--jobs", "1", "--memory-budget", "1G"])
    assert "PERFLINT_MEMORY_BUDGET" not in capsys.readouterr().err


def test_max_bytes_below_the_verdict_is_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", str(tmp_path), "--max-bytes", "40"])
    assert exc.value.code == 2 and "at least 256" in capsys.readouterr().err
