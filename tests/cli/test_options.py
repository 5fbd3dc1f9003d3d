"""The check's options are declared once (perflint.options.CheckOptions): every option is a flag of
`perflint check`, a keyword of `perflint.check` and of the pytest fixture, a config key where it
says so and an input of the GitHub Action where it is meant for CI; nothing else is. A command
refuses an option it would ignore."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import perflint
from perflint.cli import build_parser, main
from perflint.commands.common import REPORT_FILES
from perflint.config import _KNOWN, Config
from perflint.errors import UsageError
from perflint.options import OPTIONS, CheckOptions
from perflint.pytest_plugin import PerflintFixture
from tests.conftest import ROOT

NAMES = [o.name for o in OPTIONS]
GPU = ROOT / "fixtures" / "gpu"
CLEAN = GPU / "clean_bf16.pt.trace.json.gz"
UNALIGNED = GPU / "gemm_fp16_unaligned.pt.trace.json.gz"
# `check`'s own flags besides the run's options: where its reports go and how they look.
REPORT_FLAGS = {"exit_zero", "format", "output", *REPORT_FILES, "max_bytes", "source_root", "html"}
# action.yml's inputs that are not options of the run: the traces, the reports, and the action's own.
ACTION_OWN = {"paths", *REPORT_FILES, "html", "max-bytes", "summary", "args", "version", "cache", "python"}


def _subparser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices[command]
    return parser


def _flags(command: str) -> dict[str, list[str]]:
    """dest -> option strings of the command's optional arguments."""
    return {a.dest: list(a.option_strings) for a in _subparser(command)._actions if a.option_strings and a.dest != "help"}


def test_every_option_is_a_check_flag_and_nothing_else_is() -> None:
    flags = _flags("check")
    assert set(flags) - REPORT_FLAGS == set(NAMES)
    for o in OPTIONS:
        assert flags[o.name] == list(o.spec.flags or (f"--{o.dashed}",)), o.name


def test_perflint_check_takes_every_option_and_nothing_else() -> None:
    params = list(inspect.signature(perflint.check).parameters.values())
    assert params[0].name == "paths"
    got = [(p.name, p.kind, p.default, p.annotation) for p in params[1:]]
    assert got == [(o.name, inspect.Parameter.KEYWORD_ONLY, o.default, o.type) for o in OPTIONS]


@pytest.mark.parametrize("method", ["check", "assert_clean", "profile"])
def test_the_fixture_takes_every_option(method: str) -> None:
    params = inspect.signature(getattr(PerflintFixture, method)).parameters
    keywords = [p.name for p in params.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert keywords == (["name"] if method == "profile" else []) + NAMES


class _Config:
    def getoption(self, name: str) -> Any:
        return None


def test_the_fixture_passes_every_option_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    real = perflint.check

    def check(paths: Any, **options: Any) -> Any:
        seen.update(options)
        return real(CLEAN, select="DIM")

    monkeypatch.setattr("perflint.api.check", check)
    request: Any = type("Request", (), {"config": _Config()})()
    given = {name: f"<{name}>" for name in NAMES}
    PerflintFixture(request, tmp_path).assert_clean("traces/", **given)
    assert seen == given


def test_config_keys_are_the_options_marked_so() -> None:
    keys = {f.name for f in dataclasses.fields(Config)} & set(NAMES)
    assert keys == {o.name for o in OPTIONS if o.spec.config}
    assert {o.dashed for o in OPTIONS if o.spec.config} <= set(_KNOWN[()])


def test_action_inputs_are_the_ci_options_and_nothing_else() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    inputs = set(action["inputs"])
    ci = {o.dashed for o in OPTIONS if o.spec.ci}
    assert inputs - ACTION_OWN == ci
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "check")
    for o in OPTIONS:
        if o.spec.ci:  # the input reaches the command line as the option's flag
            var = "IN_" + o.name.upper()
            assert step["env"][var] == f"${{{{ inputs.{o.dashed} }}}}"
            assert re.search(rf'{re.escape((o.spec.flags or (f"--{o.dashed}",))[0])} "\${var}"', step["run"]), o.name


def test_check_takes_the_new_keywords(tmp_path: Path) -> None:
    for trace in (CLEAN, UNALIGNED):
        shutil.copy(trace, tmp_path / trace.name)
    both = perflint.check(tmp_path, select="DIM", jobs=1, executor="process", include_edge_steps=True)
    assert {f.trace for f in both.findings} == {str(tmp_path / UNALIGNED.name)}
    one = perflint.check(tmp_path, select="DIM", jobs=1, exclude=["gemm_*"])
    assert one.passed and [Path(t.path).name for t in one.run.traces] == [CLEAN.name]
    assert [(Path(s.path).name, s.reason) for s in one.skipped] == [(UNALIGNED.name, "excluded by pattern 'gemm_*'")]
    assert perflint.check(CLEAN, select="DIM", memory_budget="2G", jobs=1).passed
    with pytest.raises(UsageError, match="memory_budget: not a size"):
        perflint.check(CLEAN, memory_budget="lots")
    with pytest.raises(UsageError, match="executor"):
        perflint.check(CLEAN, executor="threads")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="--scheduler"):
        perflint.check(CLEAN, scheduler="tcp://nowhere:8786")


def test_options_are_frozen_and_typed_by_their_declaration() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CheckOptions().jobs = 2  # type: ignore[misc]
    assert all(o.spec.help for o in OPTIONS)


@pytest.mark.parametrize(
    "extra",
    [
        ["--sarif", "out.sarif"],
        ["--json", "out.json"],
        ["--format", "json"],
        ["--exit-zero"],
        ["--max-bytes", "1000"],
        ["--fail-on", "warning"],
        ["--accepted", "accepted.json"],
        ["--html", "out.html"],
    ],
)
def test_accept_refuses_what_it_would_ignore(extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "accepted.json"
    with pytest.raises(SystemExit) as exc:
        main(["accept", str(UNALIGNED), "--reason", "known", "-o", str(out), *extra])
    assert exc.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err
    assert not out.exists()


def test_accept_takes_the_rest_of_the_check_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "accepted.json"
    assert main(["accept", str(UNALIGNED), "--reason", "known", "-o", str(out), "--select", "DIM", "-j", "1", "--include-edge-steps"]) == 0
    assert '"DIM001"' in out.read_text()
    assert set(_flags("accept")) == (set(NAMES) - {"fail_on", "accepted"}) | {"output", "reason", "merge", "force"}


def test_docs_list_every_option_with_its_flag() -> None:
    rows = re.findall(r"^\| `(\w+)` \| `(--[\w-]+)` \| (.*) \|$", (ROOT / "docs" / "api.md").read_text(), flags=re.M)
    assert [(name, flag) for name, flag, _ in rows] == [(o.name, (o.spec.flags or (f"--{o.dashed}",))[0]) for o in OPTIONS]
    assert [name for name, _, meaning in rows if meaning.startswith("*config*")] == [o.name for o in OPTIONS if o.spec.config]
