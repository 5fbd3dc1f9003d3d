"""Recorded source paths are placed in the source tree, or left out of the location and named in
the message: a bare name, a relative path, an absolute path from another machine; unique,
ambiguous and missing files; skipped directories; the bound on the tree walk; SARIF still valid."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from perflint.report import REPORTERS, ReportOptions
from perflint.report.locations import SourceLocator, locator
from tests.conftest import TESTS
from tests.report_sample import sample_result

SARIF_SCHEMA = TESTS / "schemas" / "sarif-schema-2.1.0.json"


def _tree(root: Path, *files: str) -> Path:
    for rel in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")
    return root


def test_bare_name_found_once_in_the_tree(tmp_path: Path) -> None:
    root = _tree(tmp_path, "fixtures/record_gpu_traces.py", "model/head.py")
    places = SourceLocator(str(root), cwd=str(tmp_path))
    assert places.place("record_gpu_traces.py") == "fixtures/record_gpu_traces.py"
    assert places.place("model/head.py") == "model/head.py"  # an existing relative path stays
    assert places.place("./model/head.py") == "model/head.py"


def test_two_files_of_that_name_are_ambiguous_and_none_is_missing(tmp_path: Path) -> None:
    root = _tree(tmp_path, "a/train.py", "b/train.py")
    places = SourceLocator(str(root), cwd=str(tmp_path))
    assert places.place("train.py") is None
    assert places.place("nowhere.py") is None
    assert places.place("b/train.py") == "b/train.py"  # the directory tells them apart


def test_absolute_path_from_another_machine_by_its_longest_tail(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo", "src/pkg/head.py", "src/other/head.py", "tools/run.py")
    places = SourceLocator(str(root), cwd=str(tmp_path))
    assert places.place("/home/ci/work/repo/src/pkg/head.py") == "src/pkg/head.py"
    assert places.place("/home/ci/work/repo/tools/run.py") == "tools/run.py"
    assert places.place("/home/ci/work/repo/elsewhere/head.py") is None  # only `head.py` matches: two files
    assert places.place("C:\\Users\\me\\repo\\src\\other\\head.py") == "src/other/head.py"
    # Installed packages are not the repository's code, whatever a file in it is called.
    _tree(root, "vendor/modeling_bert.py")
    assert places.place("/usr/lib/python3.11/site-packages/transformers/modeling_bert.py") is None


def test_absolute_path_under_the_root_becomes_relative(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo", "pkg/model.py")
    places = SourceLocator(str(root), cwd=str(tmp_path))
    assert places.place(str(root / "pkg" / "model.py")) == "pkg/model.py"


def test_relative_path_from_a_working_directory_below_the_root(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo", "sub/train.py", "train.py")
    places = SourceLocator(str(root), cwd=str(root / "sub"))
    assert places.place("train.py") == "train.py"  # the root's own file comes first
    assert SourceLocator(str(root), cwd=str(root / "sub")).place("./sub/train.py") == "sub/train.py"


def test_skipped_directories_neither_match_nor_make_a_name_ambiguous(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        "model/net.py",
        ".venv/lib/net.py",
        "node_modules/x/net.py",
        "build/lib/model/net.py",
        "myenv/lib/net.py",
        "myenv/pyvenv.cfg",
        ".git/net.py",
        "myenv/lib/lonely.py",
        "conda/conda-meta/history",
        "conda/lib/conda_only.py",
        "rl/env/step.py",
        "tools/build/make.py",
    )
    places = SourceLocator(str(root), cwd=str(tmp_path))
    assert places.place("net.py") == "model/net.py"
    assert places.place("lonely.py") is None and places.place("conda_only.py") is None
    # Only the root's build outputs are skipped; a source directory called env or build is searched.
    assert places.place("step.py") == "rl/env/step.py" and places.place("make.py") == "tools/build/make.py"


def test_the_walk_is_bounded(tmp_path: Path) -> None:
    root = _tree(tmp_path, *(f"d{i}/f{i}.py" for i in range(30)), "pkg/target.py")
    small = SourceLocator(str(root), cwd=str(tmp_path), max_entries=10)
    assert small.place("target.py") is None and not small.complete  # a partial index proves nothing unique
    assert small.place("pkg/target.py") == "pkg/target.py"  # the direct rules need no index
    assert SourceLocator(str(root), cwd=str(tmp_path)).place("target.py") == "pkg/target.py"


def test_one_locator_per_run_and_root(tmp_path: Path) -> None:
    r, other = sample_result(), sample_result()
    assert locator(r, str(tmp_path)) is locator(r, str(tmp_path))
    assert locator(other, str(tmp_path)) is not locator(r, str(tmp_path))
    assert locator(r, str(tmp_path / "x")) is not locator(r, str(tmp_path))


def _render(fmt: str, source: str, root: Path) -> str:
    r = sample_result()
    r.traces[0].findings[0].source = source
    return REPORTERS[fmt](r, ReportOptions(root=str(root)))


def _tc001_sarif(source: str, root: Path) -> dict[str, object]:
    doc = json.loads(_render("sarif", source, root))
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))).validate(doc)
    result: dict[str, object] = doc["runs"][0]["results"][0]
    assert result["ruleId"] == "TC001"
    return result


@pytest.mark.parametrize("source", ["record_gpu_traces.py:88", "/home/ci/work/repo/fixtures/record_gpu_traces.py:88"])
def test_placed_source_in_every_report(tmp_path: Path, source: str) -> None:
    root = _tree(tmp_path, "fixtures/record_gpu_traces.py", "fixtures/other.py")
    res = _tc001_sarif(source, root)
    (loc,) = res["locations"]  # type: ignore[misc]
    assert loc["physicalLocation"] == {"artifactLocation": {"uri": "fixtures/record_gpu_traces.py"}, "region": {"startLine": 88}}
    assert "[source:" not in res["message"]["text"]  # type: ignore[index]
    assert _render("concise", source, root).startswith("fixtures/record_gpu_traces.py:88: TC001 ")
    assert "::error file=fixtures/record_gpu_traces.py,line=88," in _render("github", source, root)
    (issue, *_) = [i for i in json.loads(_render("gitlab", source, root)) if i["check_name"] == "perflint/TC001"]
    assert issue["location"] == {"path": "fixtures/record_gpu_traces.py", "lines": {"begin": 88}}


@pytest.mark.parametrize("files", [("a/train.py", "b/train.py"), ()], ids=["ambiguous", "missing"])
def test_unplaced_source_is_named_in_the_message_not_the_location(tmp_path: Path, files: tuple[str, ...]) -> None:
    root = _tree(tmp_path, "README.md", *files)
    source = "/data/run/train.py:17"
    res = _tc001_sarif(source, root)
    text = res["message"]["text"]  # type: ignore[index]
    assert f"[source: {source}]" in text and "[trace: traces/train.pt.trace.json.gz]" in text
    (loc,) = res["locations"]  # type: ignore[misc]
    # the trace, never the missing file: code scanning refuses a result without a physical location
    assert loc["physicalLocation"] == {"artifactLocation": {"uri": "traces/train.pt.trace.json.gz"}}
    line = _render("concise", source, root).splitlines()[0]
    assert line.startswith("traces/train.pt.trace.json.gz: TC001 ") and line.endswith(f"[source: {source}]")
    gh = next(l for l in _render("github", source, root).splitlines() if "perflint TC001" in l)
    assert "file=traces/train.pt.trace.json.gz," in gh and "line=" not in gh and f"[source: {source}]" in gh
    (issue, *_) = [i for i in json.loads(_render("gitlab", source, root)) if i["check_name"] == "perflint/TC001"]
    assert issue["location"]["path"] == "traces/train.pt.trace.json.gz" and f"[source: {source}]" in issue["description"]


def test_unplaced_source_without_op_or_kernel_points_at_the_trace(tmp_path: Path) -> None:
    r = sample_result()
    f = r.traces[0].findings[0]
    f.source, f.op, f.kernel = "missing.py:3", None, None
    doc = json.loads(REPORTERS["sarif"](r, ReportOptions(root=str(tmp_path))))
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))).validate(doc)
    (res,) = [x for x in doc["runs"][0]["results"] if x["partialFingerprints"]["perflintFingerprint/v2"] == f.fingerprint]
    (loc,) = res["locations"]
    assert set(loc) == {"physicalLocation"} and "region" not in loc["physicalLocation"]
    assert "missing.py" not in loc["physicalLocation"]["artifactLocation"]["uri"]
    assert "[source: missing.py:3]" in res["message"]["text"]
