"""Directory scans: every JSON file under a directory is checked unless it is excluded or its
content is recognizably not a profiler trace, and every file passed over is reported with why."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from perflint.cli import main
from perflint.readers import discover, excluded_by, trace_suffixes
from perflint.readers.kineto.sniff import HEAD_BYTES, head, not_a_trace, top_level_keys
from tests.conftest import FIXTURES, shared_trace

GOOD = FIXTURES / "cpu" / "sync_item.pt.trace.json.gz"
OTHER = FIXTURES / "cpu" / "dataloader.pt.trace.json.gz"


def _json_check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main(["check", *argv, "--fail-on", "never", "--format", "json", "-j", "1"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_hta_directory_checks_every_trace_and_lists_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(shared_trace("hta"))
    candidates = sorted(str(p) for p in root.rglob("*") if p.name.endswith((".json", ".json.gz")))
    code, doc, _ = _json_check(capsys, str(root))
    assert code == 0 and doc["errors"] == []
    checked = sorted(t["path"] for t in doc["traces"])
    skipped = {s["path"]: s["reason"] for s in doc["skipped"]}
    et = str(root / "execution_trace" / "benchmark_simple_add_et.json.gz")
    assert sorted(checked + [et]) == candidates  # every JSON file but the execution trace is checked
    assert "execution trace" in skipped[et]
    assert "not a trace file name" in skipped[str(root / "memory_analysis" / "memory_timeline.raw.gz")]
    assert doc["counts"]["traces"] == len(checked) == 19 and doc["counts"]["skipped"] == len(skipped) == 2


def test_non_traces_of_other_tools_are_skipped_by_content(tmp_path: Path) -> None:
    cases = {
        "tracelens/rocprof/908_results.json.gz": "rocprofiler-sdk",
        "mindinsight/run_1/normal_run/profiler/timeline_summary_1.json": "without 'traceEvents'",
        "mindinsight/run_1/normal_run/profiler/step_trace_point_info.json": "'fp_start'",
        "hta/execution_trace/benchmark_simple_add_et.json.gz": "execution trace",
    }
    for rel, words in cases.items():
        why = not_a_trace(shared_trace(rel))
        assert why is not None and words in why, (rel, why)
    # The memory timeline, under a JSON name (export_memory_timeline writes .json too).
    timeline = tmp_path / "memory_timeline.json"
    timeline.write_bytes(gzip.decompress(Path(shared_trace("hta/memory_analysis/memory_timeline.raw.gz")).read_bytes()))
    assert timeline.stat().st_size > HEAD_BYTES  # decided from its first bytes
    assert "memory timeline" in (not_a_trace(str(timeline)) or "")
    small = tmp_path / "small_timeline.json"
    small.write_text("[[-1, 1, 37888, 7], [5, 2, 512, 7]]")
    assert "memory timeline" in (not_a_trace(str(small)) or "")


@pytest.mark.parametrize(
    "rel",
    [
        "hta/df_index_resolver/df_index_resolver.json.gz",  # big: decided from the head's keys
        "hta/call_stack/backward_thread.json",  # small, no deviceProperties
        "kineto/test/gpu_metrics_expected.json",
        "mindinsight/run_1/normal_run/profiler/timeline_display_1.json",  # a bare list of events
        "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    ],
)
def test_traces_are_never_taken_for_non_traces(rel: str) -> None:
    assert not_a_trace(shared_trace(rel)) is None


def test_top_level_keys_of_a_cut_object() -> None:
    text = b'{"schemaVersion": 1, "deviceProperties": [{"name": "x", "traceEvents": 1}], "a\\"b": {"{": "}"}, "traceEv'
    assert top_level_keys(text) == ["schemaVersion", "deviceProperties", 'a\\"b']
    assert top_level_keys(b'{"x": 1, "traceEvents": [{"ph": "X"') == ["x", "traceEvents"]


def test_head_of_plain_gzip_and_truncated_gzip(tmp_path: Path) -> None:
    data = b'{"traceEvents": []}'
    plain, gz, cut = tmp_path / "a.json", tmp_path / "b.json.gz", tmp_path / "c.json.gz"
    plain.write_bytes(data)
    gz.write_bytes(gzip.compress(data))
    cut.write_bytes(gzip.compress(b'{"k": "' + b"x" * 10_000 + b'"}')[:40])
    assert head(str(plain)) == (data, True) and head(str(gz)) == (data, True)
    assert head(str(cut)) is None and not_a_trace(str(cut)) is None  # the reader reports it
    big = tmp_path / "big.json.gz"
    big.write_bytes(gzip.compress(b'{"nodes": [' + b"1," * HEAD_BYTES + b'1], "schema": "1.0"}'))
    got = head(str(big))
    assert got is not None and len(got[0]) == HEAD_BYTES and got[1] is False


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("cut.json.gz", None, "truncated gzip"),
        ("bad.json", '{"traceEvents": [{"ph": "X", ', "invalid JSON"),
        ("bad_fields.json", '{"traceEvents": {"ph": "X"}}', "not a .*trace|unexpected value"),
        ("text.json", "hello, not JSON", "not JSON|unrecognized format"),
    ],
)
def test_broken_traces_in_a_directory_are_still_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, content: str | None, problem: str
) -> None:
    import re

    shutil.copy(GOOD, tmp_path / "good.pt.trace.json.gz")
    bad = tmp_path / name
    if content is None:
        bad.write_bytes(GOOD.read_bytes()[:200])
    else:
        bad.write_text(content)
    code = main(["check", str(tmp_path), "--fail-on", "never", "--format", "json", "-j", "1"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 2 and len(doc["traces"]) == 1 and doc["skipped"] == []
    (line,) = doc["errors"]
    assert line.startswith(str(bad)) and re.search(problem, line), line


def test_an_explicit_non_trace_stays_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    et = shared_trace("hta/execution_trace/benchmark_simple_add_et.json.gz")
    code = main(["check", et, "--fail-on", "never", "--format", "json", "-j", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2 and doc["skipped"] == [] and doc["errors"][0].startswith(et)


def test_a_directory_of_non_traces_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text('{"total_time": 1.5, "num_of_ops": 3}')
    (tmp_path / "notes.txt").write_text("hello")
    code = main(["check", str(tmp_path), "--format", "json", "-j", "1"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 2 and doc["traces"] == []
    (line,) = doc["errors"]
    assert line.startswith(str(tmp_path)) and "no trace files in directory (2 files skipped" in line
    assert {Path(s["path"]).name: s["reason"] for s in doc["skipped"]} == {
        "notes.txt": f"not a trace file name ({', '.join(trace_suffixes())})",
        "summary.json": "JSON object without 'traceEvents' (keys: 'total_time', 'num_of_ops'), not a profiler trace",
    }
    main(["check", str(tmp_path), "-j", "1"])
    text = capsys.readouterr().out
    assert "Skipped files (2)" in text and "summary.json" in text and "in 0 traces, 1 unreadable, 2 files skipped" in text


def _run_dir(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    (root / "ranks").mkdir(parents=True)
    (root / "old").mkdir()
    shutil.copy(GOOD, root / "ranks" / "rank0.pt.trace.json.gz")
    shutil.copy(OTHER, root / "ranks" / "rank1.pt.trace.json.gz")
    shutil.copy(OTHER, root / "old" / "rank0.pt.trace.json.gz")
    return root


def test_exclude_from_the_command_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    code, doc, _ = _json_check(capsys, str(root), "--exclude", "old", "--exclude", "*rank1*")
    assert code == 0 and [t["path"] for t in doc["traces"]] == [str(root / "ranks" / "rank0.pt.trace.json.gz")]
    assert {s["path"]: s["reason"] for s in doc["skipped"]} == {
        str(root / "old" / "rank0.pt.trace.json.gz"): "excluded by pattern 'old'",
        str(root / "ranks" / "rank1.pt.trace.json.gz"): "excluded by pattern '*rank1*'",
    }
    # A file named on the command line is excluded by its name too.
    code, doc, _ = _json_check(capsys, str(root / "ranks" / "rank1.pt.trace.json.gz"), str(GOOD), "--exclude", "rank1.*")
    assert [t["path"] for t in doc["traces"]] == [str(GOOD)] and len(doc["skipped"]) == 1
    # Everything excluded: nothing checked is an error, not a pass.
    code, doc, _ = _json_check(capsys, str(root), "--exclude", "*.json.gz")
    assert code == 2 and doc["traces"] == [] and len(doc["skipped"]) == 3
    assert doc["errors"] == [f"{root}: nothing to check: --exclude excludes every trace (3 excluded)"]
    # Named in the counts as what it is: no trace was unreadable.
    main(["check", str(root), "--exclude", "*.json.gz"])
    verdict = capsys.readouterr().out.splitlines()[-1]
    assert verdict.endswith("in 0 traces, 3 files skipped") and "unreadable" not in verdict, verdict
    # A directory the user excluded whole beside one that is checked: no error.
    code, doc, _ = _json_check(capsys, str(root / "ranks"), str(GOOD), "--exclude", "rank*")
    assert code != 2 and doc["errors"] == [] and [t["path"] for t in doc["traces"]] == [str(GOOD)]
    code, doc, _ = _json_check(capsys, str(GOOD), "--exclude", "sync_*")
    assert code == 2 and doc["errors"] == [f"{GOOD}: nothing to check: --exclude excludes every trace (1 excluded)"]


def test_exclude_from_the_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    cfg = tmp_path / "perflint.yaml"
    cfg.write_text("exclude: ['**/old/*']\n")
    code, doc, _ = _json_check(capsys, str(root), "--config", str(cfg))
    assert code == 0 and sorted(Path(t["path"]).parent.name for t in doc["traces"]) == ["ranks", "ranks"]
    assert [s["reason"] for s in doc["skipped"]] == ["excluded by pattern '**/old/*'"]
    cfg.write_text("exclude: 'old'\n")  # a list, not a string
    assert main(["check", str(root), "--config", str(cfg)]) == 2
    assert "exclude" in capsys.readouterr().err


def test_excluded_by_matches_relative_paths_base_names_and_directories() -> None:
    assert excluded_by("a/b/memory.json", ["memory*"]) == "memory*"
    assert excluded_by("a/b/memory.json", ["a/b"]) == "a/b"
    assert excluded_by("a/b/memory.json", ["a/*"]) == "a/*"
    assert excluded_by("memory.json", ["**/memory.json"]) == "**/memory.json"
    assert excluded_by("a/b/memory.json", ["b/memory.json", "c"]) is None
    # a file named on the command line: its path as given and its name, not its directories
    assert excluded_by("traces/old/x.json", ["old"], whole=True) is None
    assert excluded_by("traces/old/x.json", ["x.json"], whole=True) == "x.json"


def test_discover_keeps_path_order_and_reports_hidden_files_not(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.json").write_text("{}")
    (tmp_path / ".hidden.json").write_text("{}")
    (tmp_path / "b.json").write_text('{"traceEvents": []}')
    (tmp_path / "a.json").write_text('{"traceEvents": []}')
    files, errors, skipped = discover([str(tmp_path)])
    assert files == [str(tmp_path / "a.json"), str(tmp_path / "b.json")] and errors == [] and skipped == []


def test_summary_reports_skipped_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shutil.copy(GOOD, tmp_path / "good.pt.trace.json.gz")
    (tmp_path / "summary.json").write_text('{"total_time": 1.5}')
    assert main(["summary", str(tmp_path), "--format", "json", "-j", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["traces"]) == 1 and [Path(s["path"]).name for s in doc["skipped"]] == ["summary.json"]
    assert main(["summary", str(tmp_path), "-j", "1"]) == 0
    err = capsys.readouterr().err
    assert f"perflint: notice: skipped {tmp_path / 'summary.json'}: JSON object without 'traceEvents'" in err


def test_snapshot_notices_skipped_files_and_takes_exclude(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    (root / "summary.json").write_text('{"total_time": 1.5}')
    snap = tmp_path / "snap.json"
    assert main(["snapshot", str(root), "-o", str(snap), "--exclude", "old", "-j", "1"]) == 0
    err = capsys.readouterr().err
    assert "skipped" in err and "summary.json" in err and "excluded by pattern 'old'" in err
    assert len(json.loads(snap.read_text())["traces"]) == 2


def test_every_report_counts_traces_and_skipped_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shutil.copy(GOOD, tmp_path / "good.pt.trace.json.gz")
    (tmp_path / "summary.json").write_text('{"total_time": 1.5}')
    out = {}
    for fmt in ("text", "markdown", "junit", "sarif", "github"):
        main(["check", str(tmp_path), "--fail-on", "never", "--format", fmt, "-j", "1"])
        out[fmt] = capsys.readouterr().out
    assert "in 1 trace, 1 file skipped" in out["text"] and "in 1 trace, 1 file skipped" in out["markdown"]
    assert "### Skipped files (1)" in out["markdown"]
    assert 'name="files_skipped" value="1"' in out["junit"] and 'classname="perflint.skipped"' in out["junit"]
    sarif = json.loads(out["sarif"])["runs"][0]
    assert sarif["properties"] == {"tracesChecked": 1, "filesSkipped": 1}
    assert any("summary.json" in n["message"]["text"] for n in sarif["invocations"][0]["toolExecutionNotifications"])
    assert any(line.startswith("::notice title=perflint%3A 1 file skipped::") for line in out["github"].splitlines())


def test_other_tools_chrome_timelines_in_a_directory_are_skipped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A MindSpore timeline is a Chrome-format list with no PyTorch profiler event: that shows only
    once read. Scanned, it is skipped with the reason; named on the command line, an error."""
    src = Path(shared_trace("mindinsight/run_1/normal_run/profiler/timeline_display_1.json"))
    shutil.copy(src, tmp_path / "timeline_display_1.json")
    shutil.copy(FIXTURES / "gpu" / "sync_item.pt.trace.json.gz", tmp_path / "sync_item.pt.trace.json.gz")
    code, doc, _ = _json_check(capsys, str(tmp_path))
    assert code == 0 and doc["errors"] == []
    assert len(doc["traces"]) == 1
    (skipped,) = doc["skipped"]
    assert skipped["path"].endswith("timeline_display_1.json") and "no PyTorch profiler events" in skipped["reason"]
    assert main(["check", str(tmp_path / "timeline_display_1.json")]) == 2


def test_files_that_all_turn_out_not_traces_fail_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A directory whose only candidate is a Chrome trace without profiler events: the file is
    skipped (not unreadable), and a gate that checked nothing is an error, not a pass."""
    (tmp_path / "chrome.json").write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "f", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "cat": "x"}]}))
    code, doc, _ = _json_check(capsys, str(tmp_path))
    assert code == 2 and doc["traces"] == [] and len(doc["skipped"]) == 1
    assert doc["errors"] == [f"{tmp_path}: nothing to check: no trace among the files found (1 skipped)"]
