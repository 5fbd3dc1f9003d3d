"""Per-format checks: JUnit (junitparser), SARIF (OASIS JSON schema), JSON (its own schema),
Markdown budgets, GitHub annotation limits, text width and colour."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from perflint.report import REPORTERS, ReportOptions
from perflint.report.json_schema import ReportModel, schema_text
from perflint.report.markdown import DEFAULT_MAX_BYTES
from tests.conftest import ROOT, TESTS
from tests.report_sample import many_findings, sample_result

SCHEMA_FILE = ROOT / "perflint" / "report" / "schema" / "report.schema.json"
SARIF_SCHEMA = TESTS / "schemas" / "sarif-schema-2.1.0.json"


def render(fmt: str, result=None, **kw) -> str:  # type: ignore[no-untyped-def]
    return REPORTERS[fmt](result or sample_result(), ReportOptions(**kw))


# --- JUnit -----------------------------------------------------------------------------------

def test_junit_suites_cases_and_states(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text(render("junit"), encoding="utf-8")
    xml = JUnitXml.fromfile(str(path))
    suites = {s.name: s for s in xml}
    assert set(suites) == {
        "traces/train.pt.trace.json.gz", "traces/ranks/rank1.json [rank 1]", "run (all ranks)", "perflint.errors", "perflint.skipped"
    }
    a, b = "traces/train.pt.trace.json.gz", "traces/ranks/rank1.json [rank 1]"
    train = {c.name: c for c in suites[a]}
    assert set(train) == {f"TC001 {a}", f"LAUNCH001 {a}", f"HEALTH003 {a}"}
    assert train[f"TC001 {a}"].classname == "perflint.tensor-cores"
    (fail,) = [r for r in train[f"TC001 {a}"].result if isinstance(r, Failure)]
    assert "time_us: 4000" in fail.text and "model/head.py:42" in fail.text and "fix:" in fail.text
    assert fail.message.startswith("TC001 tensor-cores.half-precision-without-tensor-cores: 1 error finding")
    # Warnings are below the default gate (error): passed, findings listed in system-out.
    assert train[f"LAUNCH001 {a}"].is_passed
    assert "idle_pct" in train[f"LAUNCH001 {a}"].system_out
    rank1 = {c.name: c for c in suites[b]}
    (skip,) = rank1[f"TC001 {b}"].result
    assert isinstance(skip, Skipped) and "no GPU kernel events" in skip.message
    (err,) = list(suites["perflint.errors"])[0].result
    assert isinstance(err, Error)
    # Files a directory scan passed over: one skipped testcase each, the reason as the message.
    skips = {c.name: c.result[0] for c in suites["perflint.skipped"]}
    assert set(skips) == {"skip traces/et/run_et.json.gz", "skip traces/README.md"}
    assert all(isinstance(r, Skipped) for r in skips.values()) and "execution trace" in skips["skip traces/et/run_et.json.gz"].message
    props = {p.name: p.value for p in suites["perflint.skipped"].properties()}
    assert props == {"traces_checked": "2", "files_skipped": "2"}
    # Unique (classname, name) pairs: GitLab drops duplicates.
    keys = [(c.classname, c.name) for s in xml for c in s]
    assert len(keys) == len(set(keys))


def test_junit_gate_follows_fail_on(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text(render("junit", sample_result(fail_on="warning")), encoding="utf-8")
    xml = JUnitXml.fromfile(str(path))
    failed = sorted(c.name for s in xml for c in s if any(isinstance(r, Failure) for r in c.result))
    assert failed == ["LAUNCH001 traces/train.pt.trace.json.gz", "STRAG001 run (all ranks)",
                      "TC001 traces/train.pt.trace.json.gz"]


# --- SARIF -----------------------------------------------------------------------------------

def test_sarif_validates_against_oasis_schema(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "head.py").write_text("x = 1\n")  # where the first finding's stack points
    doc = json.loads(render("sarif", root=str(tmp_path)))
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(doc)
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for r in rules:
        assert {"id", "name", "shortDescription", "fullDescription", "help", "defaultConfiguration"} <= set(r)
        assert r["help"]["text"] and r["help"]["markdown"]
    ids = [r["id"] for r in rules]
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]
        assert res["partialFingerprints"]
    first = run["results"][0]
    assert first["ruleId"] == "TC001" and first["level"] == "error"
    assert first["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "model/head.py"}, "region": {"startLine": 42}}
    no_src = next(r for r in run["results"] if r["ruleId"] == "LAUNCH001")
    assert no_src["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "traces/train.pt.trace.json.gz"}}
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels["HEALTH003"] == "note"
    suppressed = [r for r in run["results"] if "suppressions" in r]
    assert len(suppressed) == 2
    assert run["invocations"][0]["executionSuccessful"] is False


def test_sarif_absolute_paths_relative_to_root(tmp_path: Path) -> None:
    r = sample_result()
    r.traces[0].findings[0].source = str(tmp_path / "pkg" / "model.py") + ":7"
    r.traces[0].findings[2].trace = "/elsewhere/t.json"
    doc = json.loads(render("sarif", r, root=str(tmp_path)))
    locs = {res["ruleId"] + str(i): res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for i, res in enumerate(doc["runs"][0]["results"])}
    assert "pkg/model.py" in locs.values()
    assert "file:///elsewhere/t.json" in locs.values()


# --- JSON ------------------------------------------------------------------------------------

def test_json_schema_file_is_generated_from_models() -> None:
    if os.environ.get("PERFLINT_UPDATE_GOLDEN"):
        SCHEMA_FILE.write_text(schema_text(), encoding="utf-8")
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), "PERFLINT_UPDATE_GOLDEN=1 regenerates it"


@pytest.mark.parametrize("result", [sample_result(), many_findings(5)])
def test_json_matches_schema(result) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(render("json", result))
    jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))).validate(doc)
    ReportModel.model_validate(doc)
    assert doc["schema_version"] == 1


def test_json_same_content_as_other_reports() -> None:
    doc = json.loads(render("json"))
    assert doc["verdict"] == "error"
    assert doc["counts"] == {"error": 1, "warning": 2, "info": 1, "suppressed": 1, "accepted": 1, "traces": 2, "skipped": 2}
    assert [s["path"] for s in doc["skipped"]] == ["traces/et/run_et.json.gz", "traces/README.md"]
    fps = {f["fingerprint"] for t in doc["traces"] for f in t["findings"]} | {f["fingerprint"] for f in doc["run_findings"]}
    sarif = json.loads(render("sarif"))
    assert fps == {r["partialFingerprints"]["perflintFingerprint/v2"] for r in sarif["runs"][0]["results"]}
    assert [r["code"] for r in doc["rules"]] == ["HEALTH003", "LAUNCH001", "STRAG001", "TC001"]


# --- Markdown --------------------------------------------------------------------------------

def _verdict_and_counts(md: str) -> None:
    assert md.startswith("## ")
    assert re.search(r"\*\*\d+ errors?, \d+ warnings?, \d+ info in ", md)


def test_markdown_default_budget_and_order() -> None:
    md = render("markdown")
    _verdict_and_counts(md)
    assert md.index("### Findings") < md.index("### Details") < md.index("### Top kernels") < md.index("### Skipped rules")
    big = render("markdown", many_findings(6000))
    assert len(big.encode()) <= DEFAULT_MAX_BYTES
    assert "Left out to stay under" in big


@pytest.mark.parametrize("budget", [2000, 65536])
def test_markdown_max_bytes_keeps_verdict(budget: int) -> None:
    md = render("markdown", many_findings(400), max_bytes=budget)
    assert len(md.encode("utf-8")) <= budget
    _verdict_and_counts(md)
    assert "400 warnings" not in md and "134 errors" in md  # counts are of the whole run
    assert "Left out" in md


def test_markdown_tiny_budget_still_has_verdict() -> None:
    md = render("markdown", many_findings(50), max_bytes=300)
    assert len(md.encode()) <= 300
    _verdict_and_counts(md)


@pytest.mark.parametrize("budget", [1, 20, 60, 120])
def test_markdown_never_cuts_the_verdict_line(budget: int) -> None:
    md = render("markdown", many_findings(50), max_bytes=budget)
    first = render("markdown", many_findings(50)).splitlines()[0]
    assert md.splitlines()[0] == first and first.endswith("(fail-on error)")


def test_markdown_escapes_table_cells() -> None:
    md = render("markdown")
    row = next(line for line in md.splitlines() if line.startswith("| 1 |"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 7  # 6 cells: the '|' in the message is escaped
    assert "\\|" in row


# --- GitHub annotations ----------------------------------------------------------------------

def test_github_limits_and_notice(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    for i in range(7):  # the findings' source files
        (tmp_path / "src" / f"m{i}.py").write_text("x = 1\n")
    out = render("github", many_findings(90), root=str(tmp_path))
    lines = out.splitlines()
    errors = [l for l in lines if l.startswith("::error ")]
    warnings = [l for l in lines if l.startswith("::warning ")]
    notices = [l for l in lines if l.startswith("::notice ")]
    assert len(errors) == 10 and len(warnings) == 10 and len(notices) == 2
    assert "2 files skipped" in notices[0] and "traces/et/run_et.json.gz" in notices[0]
    assert "71 more findings" in notices[1]  # 90 + the rank-1 trace's info finding
    # Most recoverable time first: the highest error index is 87 (errors are i % 3 == 0).
    assert "finding number 87 " in errors[0] and "line=88" in errors[0] and "file=src/m3.py" in errors[0]


def test_github_auto_under_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from perflint.cli import main
    from tests.cli.test_report_cli import bad_trace

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["check", bad_trace(tmp_path), "--select", "TC001", "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("::error file=") and "title=perflint TC001" in out


def test_github_escapes_data() -> None:
    from perflint.report.github import _data, _prop

    assert _data("50%\nx") == "50%25%0Ax"
    assert _prop("a:b,c") == "a%3Ab%2Cc"


# --- Text ------------------------------------------------------------------------------------

def test_text_width_grouping_and_color() -> None:
    out = render("text", many_findings(12), width=100)
    assert max(len(l) for l in out.splitlines()[:-1]) <= 100
    assert out.index("Errors (4)") < out.index("Warnings (4)") < out.index("Info (5)")
    assert "\x1b[" not in out
    colored = render("text", many_findings(3), color=True)
    assert "\x1b[31m" in colored


def test_text_color_only_on_tty_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from perflint.commands.common import use_color

    args = argparse.Namespace(output=None)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    assert use_color(args) is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(args) is False
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: only a non-empty value disables colour
    assert use_color(args) is True
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr("sys.stdout.isatty", lambda: False, raising=False)
    assert use_color(args) is False
