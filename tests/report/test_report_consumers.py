"""Reports fit their consumers: repository-relative locations (code scanning, annotations, GitLab),
JUnit names Jenkins does not split, the concise one-line format, unwrapped text in pipes, GitLab Code
Quality, and the summary's timeline sparklines."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from perflint.cli import main
from perflint.commands.common import source_root, text_width
from perflint.report import REPORTERS, ReportOptions
from perflint.report._common import repo_path
from tests.report_sample import many_findings, sample_result


def render(fmt: str, result=None, **kw) -> str:  # type: ignore[no-untyped-def]
    return REPORTERS[fmt](result or sample_result(), ReportOptions(**kw))


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "model").mkdir()
    (repo / "model" / "head.py").write_text("x = 1\n")
    (repo / "sub").mkdir()
    return repo


def test_source_root_is_the_git_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    monkeypatch.chdir(repo / "sub")
    assert source_root(argparse.Namespace(source_root=None)) == str(repo.resolve())
    assert source_root(argparse.Namespace(source_root=str(tmp_path))) == str(tmp_path)
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert source_root(argparse.Namespace(source_root=None)) in (str(outside.resolve()), *map(str, outside.resolve().parents))


def test_paths_relative_to_the_repository_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    monkeypatch.chdir(repo / "sub")
    root = str(repo)
    (repo / "sub" / "t.json").write_text("{}")
    assert repo_path("t.json", root) == "sub/t.json"  # relative to the working directory below the root
    assert repo_path("model/head.py", root) == "model/head.py"  # a recorded relative path, kept
    assert repo_path(str(repo / "model" / "head.py"), root) == "model/head.py"
    # A stack recorded on another machine: placed by the tail that exists in the checkout.
    assert repo_path("/home/ci/work/repo/model/head.py", root) == "model/head.py"
    assert repo_path("/opt/conda/lib/python3.11/site-packages/torch/nn/functional.py", root) is None


def test_sarif_annotations_and_code_quality_point_at_the_source_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    monkeypatch.chdir(repo)
    r = sample_result()
    r.traces[0].findings[0].source = "/workspace/checkout/model/head.py:42"
    sarif = json.loads(render("sarif", r, root=str(repo)))
    first = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert first == {"artifactLocation": {"uri": "model/head.py"}, "region": {"startLine": 42}}
    gh = render("github", r, root=str(repo))
    assert "::error file=model/head.py,line=42,title=perflint TC001" in gh
    (issue,) = [i for i in json.loads(render("gitlab", r, root=str(repo))) if i["check_name"] == "perflint/TC001"]
    assert issue["location"] == {"path": "model/head.py", "lines": {"begin": 42}}


def test_junit_classname_is_the_rule_group_and_names_carry_the_trace() -> None:
    xml = render("junit")
    classnames = set(re.findall(r'classname="([^"]+)"', xml))
    assert classnames == {"perflint.tensor-cores", "perflint.launch", "perflint.health", "perflint.distributed",
                          "perflint.errors", "perflint.skipped"}
    assert all(c.count(".") == 1 for c in classnames)
    names = set(re.findall(r'<testcase name="([^"]+)"', xml))
    assert {"TC001 traces/train.pt.trace.json.gz", "HEALTH003 traces/ranks/rank1.json [rank 1]", "STRAG001 run (all ranks)"} <= names


def test_concise_one_line_per_finding(tmp_path: Path) -> None:
    out = render("concise", root=str(_repo(tmp_path))).splitlines()  # the repository has model/head.py
    findings = [l for l in out if re.match(r"^\S+?(:\d+)?: [A-Z]+\d+ ", l)]
    assert len(findings) == 4  # the active ones: suppressed and accepted are left out
    assert findings[0] == ("model/head.py:42: TC001 bf16 gemm kernel ran without Tensor Cores: 12 launches, 4000.0 us "
                           "(40.0% of kernel time) from aten::linear | with input dims [[1, 1024], [1024, 4096]] "
                           "[trace: traces/train.pt.trace.json.gz]")
    assert "traces/ranks/rank1.json: HEALTH003 no op has Input Dims: profile with record_shapes=True [rank 1]" in out
    assert "traces/broken.json: error: invalid JSON at byte 17" in out
    assert out[-1].startswith("perflint: ERROR (fail-on error): 1 error, 2 warnings")


def test_concise_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli.test_report_cli import bad_trace

    trace = bad_trace(tmp_path)
    assert main(["check", trace, "--select", "TC001", "--jobs", "1", "--format", "concise"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{trace}: TC001 ")  # outside the repository: the path as given, no line
    assert len(lines) == 2 and lines[1].startswith("perflint: FAILED")


def test_text_is_not_wrapped_into_a_pipe_and_wraps_to_columns_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    r = sample_result()
    long = r.traces[0].findings[0].message
    flat = render("text", r)
    assert any(line.strip() == long for line in flat.splitlines())
    wrapped = render("text", r, width=60)
    assert max(len(l) for l in wrapped.splitlines()[:-1]) <= 60
    args = argparse.Namespace(output=None)
    monkeypatch.setattr("sys.stdout.isatty", lambda: False, raising=False)
    assert text_width(args) is None
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    monkeypatch.setenv("COLUMNS", "72")
    assert text_width(args) == 72


def test_gitlab_code_quality_fields() -> None:
    issues = json.loads(render("gitlab", many_findings(30), root="/nonexistent-root"))
    assert all(set(i) == {"description", "check_name", "fingerprint", "severity", "location"} for i in issues)
    assert {i["severity"] for i in issues} <= {"info", "minor", "major", "critical", "blocker"}
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    assert all(isinstance(i["location"]["lines"]["begin"], int) and i["location"]["path"] for i in issues)
    assert issues[0]["severity"] == "critical"


def test_gitlab_report_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli.test_report_cli import bad_trace

    out = tmp_path / "gl-code-quality-report.json"
    assert main(["check", bad_trace(tmp_path), "--select", "TC001", "--jobs", "1", "--gitlab", str(out)]) == 1
    (issue,) = json.loads(out.read_text())
    assert issue["check_name"] == "perflint/TC001" and issue["severity"] == "critical"


def test_summary_timeline_sparkline() -> None:
    from perflint.report.summary_text import SPARK_WIDTH, _timeline, sparkline

    assert sparkline([0.0, 0.01, 0.5, 1.0]) == " ▁▄█"
    tl = {
        "range_us": [0.0, 1000.0],
        "bucket_us": 10.0,
        "devices": {"0": {"utilization": [[10.0 * i, 1.0 if i < 50 else 0.0] for i in range(100)],
                          "sm_efficiency": [[0.0, 500.0, 0.5]]}},
    }
    lines = _timeline(tl)
    util = next(l for l in lines if "utilization" in l)
    bars = util.split("|")[1]
    assert len(bars) == SPARK_WIDTH and bars[: SPARK_WIDTH // 2] == "█" * (SPARK_WIDTH // 2) and bars.endswith(" ")
    assert util.endswith("mean 50.0%")
    sm = next(l for l in lines if "SM efficiency" in l).split("|")[1]
    assert sm[0] == "▄" and sm[-1] == " "
    assert lines[0] == "Timeline        1.0 ms; one character = 16.7 µs"  # 100 buckets do not fit: equal shares
    tl["range_us"] = [0.0, 95.0]  # 9.5 buckets of 10 µs: one a character, the last shorter
    tl["devices"]["0"]["utilization"] = [[10.0 * i, 1.0] for i in range(10)]
    lines = _timeline(tl)
    assert lines[0] == "Timeline        95.0 µs; one character = one 10.0 µs bucket (the last 5.0 µs)"
    assert len(next(l for l in lines if "utilization" in l).split("|")[1]) == 10


def test_summary_timeline_in_text_on_a_real_trace(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import shared_trace

    trace = shared_trace("hta/trace_compare/base/base.json.gz")
    assert main(["summary", trace, "--timeline", "--jobs", "1"]) == 0
    text = capsys.readouterr().out
    head = re.search(r"^Timeline +(\S+ \S+); one character = (.+)$", text, re.M)
    assert head, text
    # Either a character is one bucket of the JSON's series, or an equal share of the range.
    assert re.fullmatch(r"one \S+ \S+ bucket( \(the last \S+ \S+\))?|\S+ \S+", head.group(2)), head.group(2)
    util = re.search(r"^  GPU \d+ utilization +\|(.+)\| mean (\d+\.\d)%$", text, re.M)
    assert util and 1 <= len(util.group(1)) <= 60 and set(util.group(1)) <= set(" ▁▂▃▄▅▆▇█")
    assert main(["summary", trace, "--jobs", "1"]) == 0
    assert "Timeline" not in capsys.readouterr().out  # only when asked for
