"""MindSpore cluster directories (per rank: step trace, hccl_raw, cluster analysis, flops_summary; with
or without an op timeline) are runs, one trace per rank. Numbers are checked against the files and
against what MindInsight's parallel proposer computes from them (its formulas, worked by hand here)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import statistics
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from perflint.errors import InputError
from perflint.graph.load import load_traces
from perflint.readers.mindspore.cluster import read_cluster, read_flops
from perflint.readers.mindspore.hccl import read_hccl
from perflint.readers.mindspore.steps import read_step_trace
from tests.conftest import FIXTURES, shared_trace

ASCEND = FIXTURES / "mindspore" / "ascend"
PIPE = ASCEND / "pipeline_cluster"
LONG = ASCEND / "long_step_trace"
CLUSTER = "ascend_cluster_analyse_pipeline-parallel_2_4_{}.csv"


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    rc = main([*args, "--format", "json"])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


def _check(path: Path, select: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    rc, doc, _ = _json(["check", str(path), "--select", select, "--fail-on", "never", "-j", "1"], capsys)
    assert rc == 0
    return doc


# --- each file kind ---------------------------------------------------------------------------


def test_step_trace_communication_columns_name_their_collective() -> None:
    got = read_step_trace(str(PIPE / "step_trace_raw_0_detail_time.csv"))
    rows = [r for r in _csv(PIPE / "step_trace_raw_0_detail_time.csv") if r["step_num"].isdigit()]
    assert got.number == [int(r["step_num"]) for r in rows] == [1, 2, 3, 4, 5, 6]  # '-' averages them
    by_name: dict[str, list[tuple[str, float, float]]] = {}
    for name, _, kind, a, b in got.comm:
        by_name.setdefault(name, []).append((kind, a, b))
    assert {n: {k for k, _, _ in v} for n, v in by_name.items()} == {
        "stream_11_0_Send-op3": {"Send"}, "stream_12_0_Receive-op4": {"Receive"}, "stream_13_0_AllReduce-op9": {"AllReduce"},
    }  # fmt: skip
    want = [(int(r["stream_12_0_Receive-op4_start_point"]) / 100, int(r["stream_12_0_Receive-op4_end_point"]) / 100) for r in rows]
    assert [(a, b) for _, a, b in by_name["stream_12_0_Receive-op4"]] == want
    # The older column names (stream_{s}_parallel_{i}, all-reduce points) say no op type.
    old = read_step_trace(str(Path(shared_trace("mindinsight/run_1/normal_run/profiler")) / "step_trace_raw_1_detail_time.csv"))
    assert {kind for _, _, kind, _, _ in old.comm} == {"parallel all-reduce"}


def test_hccl_raw_per_step_and_bytes_per_link() -> None:
    path = PIPE / "hccl_raw_0.csv"
    got = read_hccl(str(path))
    rows = [r for r in _csv(path) if r["step_num"].isdigit()]  # the '-' row averages the steps
    assert got["per_step"]["step"] == [1, 2, 3, 4, 5, 6]
    assert got["per_step"]["communication_us"] == pytest.approx([float(r["communication_cost"]) * 1000 for r in rows])
    assert got["per_step"]["wait_us"] == pytest.approx([float(r["wait_cost"]) * 1000 for r in rows])
    ops = [json.loads(r["communication_operator_cost"]) for r in rows]
    assert got["operators_us"] == pytest.approx({k: sum(o[k][1] for o in ops) * 1000 for k in ops[0]})
    # Step 2's Receive: rank 2 -> rank 0 over RDMA, 16384 KB (1000 bytes each), waiting 82.8 ms.
    (recv,) = [t for t in got["transfers"] if t["step"] == 2 and t["collective"] == "Receive"]
    link = ops[1]["stream_12_0_Receive-op4"][3]["2-0"]["RDMA"]
    assert (recv["src_rank"], recv["dst_rank"], recv["link"]) == (2, 0, "RDMA")
    assert recv["bytes"] == link[1] * 1000 and recv["time_us"] == pytest.approx(link[0] * 1000)
    assert recv["wait_us"] == pytest.approx(82.8e3) and recv["bandwidth_bytes_per_s"] == pytest.approx(link[2] * 1000)
    assert {t["collective"] for t in got["transfers"]} == {"Send", "Receive", "AllReduce"}
    assert len(got["transfers"]) == 3 * 6


def test_cluster_analysis_rows_follow_the_step_trace(tmp_path: Path) -> None:
    path = PIPE / CLUSTER.format(2)
    rows = _csv(path)
    got, warning = read_cluster(str(path), [1, 2, 3, 4, 5, 6], pipeline=True)
    assert warning is None and got["step"] == [1, 2, 3, 4, 5, 6]  # the 7th row is the average
    assert got["computation_us"] == pytest.approx([float(r["computation_time"]) * 1000 for r in rows[:6]])
    assert got["receive_alone_us"] == pytest.approx([12000.0] * 6)
    short = tmp_path / CLUSTER.format(2)
    short.write_text("".join(path.read_text().splitlines(keepends=True)[:5]))  # header + 4 steps
    got, warning = read_cluster(str(short), [1, 2, 3, 4, 5, 6], pipeline=True)
    assert got["step"] == [1, 2, 3, 4] and warning is not None and "4 rows for the 6 steps" in warning
    short.write_text("computation,communication\n1,2\n")
    with pytest.raises(InputError, match="bad header, no column computation_time"):
        read_cluster(str(short), [1], pipeline=False)


def test_flops_summary(tmp_path: Path) -> None:
    doc = json.loads((PIPE / "flops_summary_2.json").read_text())
    assert read_flops(str(PIPE / "flops_summary_2.json")) == pytest.approx((doc["cube_FLOPs"] + doc["vec_FLOPs"]) * 1e6)
    old = tmp_path / "flops_summary_0.json"
    old.write_text('{"FLOPs": 12.5, "FLOPS": 3.0, "FLOPS_Utilization": 40.0}')
    assert read_flops(str(old)) == pytest.approx(12.5e6)
    old.write_text('{"cube_FLOPs": "many"}')
    with pytest.raises(InputError, match="cube_FLOPs 'many' is not a number"):
        read_flops(str(old))


# --- the pipeline-parallel run without an op timeline -----------------------------------------------


def test_cluster_directory_is_one_trace_per_rank() -> None:
    traces = load_traces(str(PIPE))
    assert [(t.rank, t.world_size, t.meta["pipeline_stage"]) for t in traces] == [(0, 4, 0), (1, 4, 0), (2, 4, 1), (3, 4, 1)]
    for t in traces:
        assert [s.number for s in t.steps] == [1, 2, 3, 4, 5, 6]
        assert {t.s(int(c)) for c in t.gpu.collective} == {"Send", "Receive", "AllReduce"}  # no compute kernels
        assert any("no op timeline" in w for w in t.warnings)


def _analysis_rows(rank: int) -> list[dict[str, str]]:
    """The cluster analysis rows of the analysis steps 2..5 (warm-up step 1 and last step 6 left out)."""
    return _csv(PIPE / CLUSTER.format(rank))[1:5]


def test_stage_imbalance_as_mindinsight_proposer_computes_it(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _check(PIPE, "STAGE001,STRAG001", capsys)
    (f,) = doc["run_findings"]
    ev = f["evidence"]
    # perflint: a stage's compute per step is its ranks' mean computation_time over the analysis steps.
    stage_ms = {s: statistics.mean(float(r["computation_time"]) for rank in (2 * s, 2 * s + 1) for r in _analysis_rows(rank)) for s in (0, 1)}
    assert stage_ms == {0: 10.0, 1: 80.0}  # stage 1 computes 8x stage 0
    assert (ev["stage"], ev["stage_ranks"], ev["fastest_stage"]) == (1, "2, 3", 0)
    assert ev["compute_us"] == pytest.approx(80_000.0) and ev["fastest_compute_us"] == pytest.approx(10_000.0)
    assert ev["imbalance_pct"] == pytest.approx(700.0)  # 80 / 10 - 1
    assert f["impact_us"] == pytest.approx((80_000.0 - 45_000.0) * 4)  # over the stages' mean, 4 analysis steps
    assert "pipeline stage 1 of 2 (ranks 2, 3) is the bottleneck" in f["message"]
    # MindInsight's parallel proposer (_flops_analyze): per stage (numbered from 1) the ranks' cube +
    # vector MFLOPs summed over rank_size // stage_num; a stage above the stages' mean by 20% is flagged.
    # Stage 1: (1000 + 1000) / 2 = 1000; stage 2: (8000 + 8000) / 2 = 8000; mean 4500;
    # stage 2: 8000 / 4500 - 1 = 77.78% (its val 8000, percent round(77.777.., 2)).
    assert round(ev["flops_excess_pct"], 2) == 77.78
    assert ev["stage"] + 1 == 2  # the proposer's warn_stage
    (strag,) = [s for s in doc["run_statuses"] if s["code"] == "STRAG001"]
    assert strag["status"] == "passed"  # ranks are compared within their stage: 0 with 1, 2 with 3


def test_communication_from_the_cluster_analysis_and_the_step_trace(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _check(PIPE, "COMM001", capsys)
    found = {t["rank"]: t["findings"][0]["evidence"] for t in doc["traces"] if t["findings"]}
    assert sorted(found) == [0, 1, 2, 3]
    for rank, ev in found.items():
        exposed = statistics.mean(float(r["communication_alone_time"]) for r in _analysis_rows(rank)) * 1000
        trace = [r for r in _csv(PIPE / f"step_trace_raw_{rank}_detail_time.csv") if r["step_num"].isdigit()][1:5]
        spans = statistics.mean(sum(int(r[c]) for c in r if c.startswith("stream_") and not c.endswith("point")) / 100 for r in trace)
        # The fixture's spans never overlap each other: their union per step is their sum.
        assert ev["comm_exposed_us"] == pytest.approx(exposed) and ev["comm_us"] == pytest.approx(spans)
        assert ev["comm_overlap_pct"] == pytest.approx(100.0 * (spans - exposed) / spans)
        assert ev["comm_exposed_pct"] == pytest.approx(100.0 * exposed / 100_000.0)  # 100 ms steps
        assert ev["collectives"] == "AllReduce, Receive, Send" and ev["comm_traffic"] == "pipeline"
    assert (found[0]["comm_exposed_us"], found[2]["comm_exposed_us"]) == (90_000.0, 20_000.0)


def test_kernel_rules_are_skipped_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _check(PIPE, "UTIL001,TC001", capsys)
    for t in doc["traces"]:
        assert {s["status"] for s in t["statuses"]} == {"skipped"}
        assert all("only communication, no compute kernels" in s["reason"] for s in t["statuses"])


# --- a step trace longer than the op timeline -------------------------------------------------------


def test_step_time_uses_every_step_and_op_level_numbers_the_covered_ones(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for r in _csv(LONG / "step_trace_raw_0_detail_time.csv") if r["step_num"].isdigit()]
    assert len(rows) == 40
    analysed = rows[1:-1]
    rc, doc, _ = _json(["summary", str(LONG)], capsys)
    (t,) = doc["traces"]
    assert t["steps"]["count"] == len(analysed) == 38
    assert t["steps"]["median_us"] == pytest.approx(statistics.median(int(r["total"]) / 100 for r in analysed))  # 28 ms
    window = t["step_model"]["window"]
    assert window["op_steps"] == [1, 5] and [s["step"] for s in window["steps"]] == [2, 3, 4]
    assert any("covers steps 1-5 of the 40 steps" in w for w in t["warnings"])
    doc = _check(LONG, "DATA001,UTIL001", capsys)
    (tr,) = doc["traces"]
    (f,) = tr["findings"]
    # The data wait (iteration interval) is a step-level number: every analysed step counts.
    waits = sorted(int(r["iteration_interval"]) / 100 for r in analysed)
    assert f["code"] == "DATA001" and f["evidence"]["dataloader_steps"] == 38
    assert f["evidence"]["dataloader_us"] == pytest.approx(statistics.median(waits))  # 8.2 ms
    assert {s["code"]: s["status"] for s in tr["statuses"]}["UTIL001"] == "passed"  # busy over steps 2-4 only


# --- bad input: one line, exit 2, the other ranks still checked --------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        (CLUSTER.format(1), "computation,communication_alone_time\n1,2\n", CLUSTER.format(1) + ": bad header, no column computation_time"),
        (CLUSTER.format(1), None, None),
        ("hccl_raw_1.csv", 'step_num,communication_cost,wait_cost,link_info,communication_operator_cost\n1,2,3,{},"{oops"\n', "communication_operator_cost is not JSON"),
        ("flops_summary_1.json", "{not json", "flops_summary_1.json is not valid JSON"),
        ("step_trace_raw_1_detail_time.csv", "step_num,start_point\n1,2\n", "step_trace_raw_1_detail_time.csv: bad header, no column end_point"),
    ],
)
def test_a_bad_rank_file_is_one_line_and_the_other_ranks_are_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str | None, says: str | None
) -> None:
    run = tmp_path / "run"
    shutil.copytree(PIPE, run)
    if text is None:
        (run / name).unlink()  # a rank without its cluster analysis: read, without stage or breakdown
    else:
        (run / name).write_text(text)
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(["check", str(run), "--format", "json", "--fail-on", "never", "-j", "1"])
    err = capsys.readouterr().err
    ranks = [t["rank"] for t in json.loads(buf.getvalue())["traces"]]
    assert "Traceback" not in err
    if says is None:
        assert rc == 0 and ranks == [0, 1, 2, 3]
        return
    assert rc == 2 and ranks == [0, 2, 3]
    lines = [ln for ln in err.splitlines() if "error" in ln.lower() or says in ln]
    assert len([ln for ln in lines if says in ln]) == 1, err


def test_step_phases_cover_every_step_and_agree_with_the_step_traces_average_row(capsys: pytest.CaptureFixture[str]) -> None:
    """The phases' means cover every analysis step (2-321 of 322), also where the op timeline covers
    15; MindSpore's own '-' row averages steps 2-322, so the two differ by the last step only."""
    d = Path(shared_trace("mindinsight/run_1/normal_run/profiler"))
    rows = _csv(d / "step_trace_raw_1_detail_time.csv")
    (avg,) = [r for r in rows if r["step_num"] == "-"]
    steps = [r for r in rows if r["step_num"].isdigit()]
    rc, doc, _ = _json(["summary", str(d)], capsys)
    (t,) = doc["traces"]
    ph = t["steps"]["phases"]
    assert rc == 0 and ph["steps"] == t["steps"]["count"] == len(steps) - 2 == 320
    for key, col in (("iteration_interval_us", "iteration_interval"), ("fp_bp_us", "fp_and_bp"), ("tail_us", "tail")):
        assert ph[key] == pytest.approx(statistics.mean(int(r[col]) for r in steps[1:-1]) / 100, abs=0.001)
        assert ph[key] == pytest.approx(int(avg[col]) / 100, rel=1e-3)


def test_stragglers_without_stages_from_the_cluster_analysis(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same files named as a data-parallel run: one set of four ranks, compared by their
    computation per step (equal step times hide the slow ranks inside communication)."""
    run = tmp_path / "run"
    shutil.copytree(PIPE, run)
    for f in run.glob("ascend_cluster_analyse_*.csv"):
        f.rename(run / f.name.replace("pipeline-parallel_2_4", "data-parallel_1_4"))
    doc = _check(run, "STRAG001,STAGE001", capsys)
    found = {f["subject"]["rank"]: f["evidence"] for f in doc["run_findings"] if f["code"] == "STRAG001"}
    # Ranks 2 and 3 compute 80 ms per step; the median of each one's three peers is 10 ms.
    assert sorted(found) == [2, 3]
    assert found[2]["compute_us"] == pytest.approx(80_000.0) and found[2]["peer_compute_us"] == pytest.approx(10_000.0)
    assert {s["code"]: s["status"] for s in doc["run_statuses"]}["STAGE001"] == "skipped"


def test_a_step_level_finding_is_capped_by_every_step_not_the_op_timelines(capsys: pytest.CaptureFixture[str]) -> None:
    """DATA001's impact (8.2 ms x 38 steps) is below the 38 steps' time: nothing cuts it to the
    three steps (60 ms) the op timeline covers."""
    doc = _check(LONG, "DATA001", capsys)
    (f,) = doc["traces"][0]["findings"]
    assert f["impact_us"] == pytest.approx(8200.0 * 38) and "impact_uncapped_us" not in f["evidence"]


def test_point_to_point_sizes_come_from_hccl_raw() -> None:
    """Each rank's Send and Receive spans take their message size from hccl_raw's transfers (what
    a Send sent, what a Receive received: 16,384 KB each, two per step over 4 steps); an
    all-reduce's per-link transfers are not its size as nccl-tests counts it, so it has none."""
    import perflint

    rows = perflint.comms(str(FIXTURES / "mindspore" / "ascend" / "pipeline_cluster"))
    by = {(r["rank"], r["name"]): r for r in rows}
    for rank in range(4):
        p2p = by[(rank, "send")]
        assert p2p["count"] == 8 and p2p["bytes"] == 8 * 16_384_000 and p2p["sized"] == 8
        assert p2p["busbw_gbps"] == pytest.approx(p2p["bytes"] / (p2p["time_us"] * 1e3), abs=1e-3)  # bus factor 1
        assert by[(rank, "all_reduce")]["bytes"] is None


def test_recorded_hccl_wait_splits_exposed_communication(capsys: pytest.CaptureFixture[str]) -> None:
    """Stage-0 ranks of the pipeline fixture wait 83.3 ms per step (hccl_raw's wait_cost, median
    of the analysis steps) in their Receive from stage 1: COMM001 says that part is waiting for
    the peer the per-link wait names, keeps only the 6.7 ms transfer as its impact, and is judged
    again on the transfer alone."""
    import json

    from perflint.cli import main

    main(["check", str(ASCEND / "pipeline_cluster"), "--select", "COMM001", "--format", "json", "--fail-on", "never"])
    doc = json.loads(capsys.readouterr().out)
    by_rank = {t["rank"]: t["findings"] for t in doc["traces"]}
    (f,) = by_rank[0]
    assert f["message"].endswith("of it, 83.3 ms per step is waiting for rank 2 to arrive (as the profiler recorded it) and 6.7 ms transfer")
    assert f["evidence"]["comm_wait_us"] == pytest.approx(83_300.0) and f["evidence"]["waited_for_rank"] == 2
    assert f["impact_us"] == pytest.approx(4 * 6_700.0)  # four analysis steps of transfer
    # Judged on its transfer alone (6.7% of the step, under COMM001's 10%) the rule passes: the
    # wait is STAGE001's root cause, so COMM001 is information here, and says why.
    assert f["severity"] == "info" and f["evidence"]["step_model_note"].startswith("the transfer alone (6.7% of the step) is within the rule's bound")
