"""MindSpore profiler directories: perflint's summary equals what csv/json compute over the same files,
directories are discovered whole, and bad input is one line naming the file."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections import defaultdict
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from perflint.cli import main
from perflint.readers import read_traces
from tests.conftest import ROOT, shared_trace

FIXTURES = ROOT / "fixtures" / "mindspore" / "gpu"


def _summary(*paths: str) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["summary", *paths, "--format", "json"]) == 0
    return json.loads(buf.getvalue())  # type: ignore[no-any-return]


def _step_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r["step_num"].isdigit()]


def _steps(path: Path, lo: float = -float("inf"), hi: float = float("inf")) -> int:
    """Steps of a step trace (10 ns units) that start inside [lo, hi) us, less the two edge steps."""
    n = 0
    for r in _step_rows(path):
        a, b = int(r["start_point"]) / 100, int(r["end_point"]) / 100
        n += lo - 0.05 * (b - a) <= a < hi
    return max(n - 2, 0)


def _expect(kernels: dict[str, list[float]], steps: int) -> dict:
    top = max(kernels, key=lambda k: sum(kernels[k]))
    return {
        "count": sum(len(v) for v in kernels.values()),
        "time": sum(sum(v) for v in kernels.values()),
        "top": top,
        "top_count": len(kernels[top]),
        "steps": steps,
    }


def _got(t: dict) -> dict:
    k = t["kernels"]
    return {
        "count": k["count"],
        "time": sum(c["time_us"] for c in k["by_category"].values()),
        "top": k["top"][0]["name"],
        "top_count": k["top"][0]["count"],
        "steps": t["steps"]["count"],
    }


def _close(got: dict, want: dict) -> None:
    assert got["time"] == pytest.approx(want["time"], rel=1e-6)
    assert {k: v for k, v in got.items() if k != "time"} == {k: v for k, v in want.items() if k != "time"}


def test_ascend_summary_equals_the_csv_files() -> None:
    d = Path(shared_trace("mindinsight/run_1/normal_run/profiler"))
    kernels: dict[str, list[float]] = defaultdict(list)
    with open(d / "output_timeline_data_1.txt", newline="") as f:
        rows = list(csv.reader(f))[1:]
    spans = [(float(r[2]) * 1000, float(r[3]) * 1000) for r in rows]
    for r, (_, dur) in zip(rows, spans):
        kernels[r[0]].append(dur)
    lo, hi = min(a for a, _ in spans), max(a + b for a, b in spans)
    with open(d / "step_trace_raw_1_detail_time.csv", newline="") as f:
        reader = csv.DictReader(f)
        comm = [c[: -len("_start_point")] for c in reader.fieldnames or [] if c.startswith("stream_") and c.endswith("_start_point")]
        for r in reader:
            if not r["step_num"].isdigit():
                continue
            for c in comm:
                a, b = int(r[c + "_start_point"]) / 100, int(r[c + "_end_point"]) / 100
                if b > a > 0 and lo <= a <= hi:
                    kernels[c].append(b - a)
    (t,) = _summary(str(d))["traces"]
    steps = d / "step_trace_raw_1_detail_time.csv"
    # Step time covers every step of the step trace; op-level numbers the steps the timeline covers.
    _close(_got(t), _expect(kernels, _steps(steps)))
    window = t["step_model"]["window"]
    assert len(window["steps"]) == _steps(steps, lo, hi) and window["op_steps"] == [1, 15]
    assert any("322 steps" in w for w in t["warnings"])


def test_gpu_two_rank_summary_equals_the_files() -> None:
    d = FIXTURES / "two_rank"
    traces = _summary(str(d))["traces"]
    assert [t["rank"] for t in traces] == [0, 1]
    for t in traces:
        events = json.loads((d / f"gpu_timeline_display_{t['rank']}.json").read_text())
        kernels: dict[str, list[float]] = defaultdict(list)
        for e in events:
            if e["tid"] != "Ops":
                kernels[e["name"]].append(e["dur"])
        lo = min(e["ts"] for e in events if e["tid"] != "Ops")
        hi = max(e["ts"] + e["dur"] for e in events if e["tid"] != "Ops")
        _close(_got(t), _expect(kernels, _steps(d / f"step_trace_raw_{t['rank']}_detail_time.csv", lo, hi)))


def test_ops_give_mindspore_op_view_per_type_and_shape() -> None:
    """MindSpore's op view (op type x input shape: occurrences, total time) is the op table grouped."""
    d = Path(shared_trace("mindinsight/run_1/normal_run/profiler"))
    (t,) = read_traces(str(d))
    want: dict[str, list[float]] = defaultdict(list)
    with open(d / "output_timeline_data_1.txt", newline="") as f:
        for r in list(csv.reader(f))[1:]:
            want[r[0].rsplit("/", 1)[-1].split("-op")[0]].append(float(r[3]) * 1000)
    got: dict[tuple[str, str], list[float]] = defaultdict(list)
    for name, dims, dur in zip(t.ops.name, t.ops.dims, t.ops.dur):
        if not t.s(int(name)).startswith(("ProfilerStep#", "DataWait#")):
            got[(t.s(int(name)), t.s(int(dims)))].append(float(dur))
    per_type: dict[str, float] = defaultdict(float)
    for (name, _), v in got.items():
        per_type[name] += sum(v)
    assert per_type == pytest.approx({k: sum(v) for k, v in want.items()})
    assert any(dims.startswith("[[") for name, dims in got if name == "MatMul")  # shapes from timeline_display


def test_directory_scan_reads_the_runs_whole(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES, tmp_path / "runs")
    shutil.copy(ROOT / "fixtures" / "gpu" / "sync_item.pt.trace.json.gz", tmp_path / "runs")
    doc = _summary(str(tmp_path / "runs"))
    paths = sorted((Path(t["path"]).name, t["rank"]) for t in doc["traces"])
    assert paths == [("data_stall", None), ("sync_item.pt.trace.json.gz", None), ("two_rank", 0), ("two_rank", 1)]
    assert doc["skipped"] == []


def test_rules_fire_on_the_fixtures() -> None:
    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["check", str(FIXTURES), "--format", "json", "--fail-on", "never"])
    doc = json.loads(buf.getvalue())
    found = {(Path(t["path"]).name, f["code"]) for t in doc["traces"] for f in t["findings"]}
    assert ("data_stall", "DATA001") in found and ("two_rank", "DATA001") not in found
    (strag,) = [f for f in doc["run_findings"] if f["code"] == "STRAG001"]
    assert strag["subject"]["rank"] == 1


def _broken(tmp_path: Path, name: str, text: str | None) -> Path:
    d = tmp_path / "bad"
    shutil.copytree(FIXTURES / "data_stall", d)
    if text is None:
        (d / name).unlink()
    else:
        (d / name).write_text(text)
    return d


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("gpu_timeline_display_0.json", None, "missing gpu_timeline_display_0.json"),
        ("step_trace_raw_0_detail_time.csv", "step_num,start_point,end_point,total\n1,2,3,4\n", "bad header, no column fp_point"),
        ("step_trace_raw_0_detail_time.csv", "step_num,start_point,end_point,fp_point,bp_point\n1,abc,3,4,5\n", "start_point 'abc' is not a number"),
        ("gpu_op_detail_info_0.csv", "op,side\n", "gpu_op_detail_info_0.csv: bad header"),
        ("gpu_timeline_display_0.json", "[{\"name\": \"k\", \"ph\": \"X\", \"tid\": \"7\", \"ts\": \"x\"}]", "without numeric ts/dur"),
    ],
)
def test_bad_directory_is_one_line_and_others_are_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str | None, says: str
) -> None:
    bad = _broken(tmp_path, name, text)
    good = FIXTURES / "two_rank"
    code = main(["check", str(bad), str(good), "--format", "json", "--fail-on", "never"])
    out, err = capsys.readouterr()
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len([ln for ln in lines if says in ln]) == 1 and "Traceback" not in err
    assert [t["rank"] for t in json.loads(out)["traces"]] == [0, 1]


def test_a_non_numeric_stream_id_in_an_ascend_timeline_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = Path(shared_trace("mindinsight/profiler"))
    run = tmp_path / "profiler"
    shutil.copytree(src, run)
    (timeline,) = run.glob("PROF_*/device_0/timeline/msprof_*.json")
    events = json.loads(timeline.read_text())
    task = next(e for e in events if isinstance(e, dict) and "Stream Id" in (e.get("args") or {}))
    task["args"]["Stream Id"] = "two"
    timeline.write_text(json.dumps(events))
    code = main(["check", str(run), str(FIXTURES / "two_rank"), "--format", "json", "--fail-on", "never"])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    assert [ln for ln in err.splitlines() if "non-numeric Stream Id ('two')" in ln]
    # The directory's GPU trace (rank None) and the other run are still checked.
    assert [(Path(t["path"]).name, t["rank"]) for t in json.loads(out)["traces"]] == [("profiler", None), ("two_rank", 0), ("two_rank", 1)]
