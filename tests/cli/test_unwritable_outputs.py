"""Outputs that cannot be written: each fails on its own line (exit 2), the others are still
written, and no command prints a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflint.cli import main
from tests.conftest import FIXTURES

TRACE = str(FIXTURES / "gpu" / "clean_bf16.pt.trace.json.gz")


def _blocked(tmp_path: Path, name: str) -> str:
    """A path under a plain file: no directory can be made for it."""
    block = tmp_path / "a_file"
    block.write_text("x")
    return str(block / name)


def test_one_unwritable_report_loses_no_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sarif, html, junit = tmp_path / "ok.sarif", tmp_path / "ok.html", _blocked(tmp_path, "out.xml")
    code = main(["check", TRACE, "--junit", junit, "--sarif", str(sarif), "--html", str(html), "-o", _blocked(tmp_path, "o.txt")])
    err = capsys.readouterr().err
    assert code == 2 and sarif.stat().st_size > 0 and html.stat().st_size > 0
    lines = [x for x in err.splitlines() if x.startswith("perflint: error:")]
    assert len(lines) == 2 and all("is not a directory" in x for x in lines)
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["snapshot", TRACE, "-o", "{out}"],
        ["accept", TRACE, "--reason", "known", "-o", "{out}"],
        ["summary", TRACE, "-o", "{out}"],
        ["summary", TRACE, "--html", "{out}"],
    ],
    ids=["snapshot", "accept", "summary", "summary-html"],
)
def test_every_command_says_which_file_it_cannot_write(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _blocked(tmp_path, "out")
    code = main([a.replace("{out}", out) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert [x for x in err.splitlines() if x.startswith("perflint: error:")] == [x for x in err.splitlines() if out in x and "cannot write" in x]


def test_diff_writes_its_text_when_the_html_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "snap.json"
    assert main(["snapshot", TRACE, "-o", str(snap)]) == 0
    text = tmp_path / "diff.txt"
    code = main(["diff", str(snap), TRACE, "--html", _blocked(tmp_path, "d.html"), "-o", str(text)])
    err = capsys.readouterr().err
    assert code == 2 and text.stat().st_size > 0 and "cannot write" in err and "Traceback" not in err
