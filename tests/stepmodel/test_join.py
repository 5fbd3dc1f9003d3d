"""The ranks of a run joined at their collectives: each rank's wait for the last arrival is split
from its communication, on built runs with a known late rank and on real traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import perflint
from perflint.cli import main
from perflint.stepmodel.join import RankEntry, join_ranks
from tests.builder import TraceBuilder
from tests.conftest import TRACES

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _rank(rank: int, compute: list[float], world: int, shift: float = 0.0, steps: int = 3) -> TraceBuilder:
    """Three steps: a GEMM of the rank's own length, then an all-reduce that ends on every rank
    200 us after the slowest rank's GEMM (so an early rank waits in it). `shift` moves the rank's
    whole clock."""
    b = TraceBuilder(rank=rank)
    b.meta["distributedInfo"] = {"rank": rank, "world_size": world}
    for i in range(steps):
        t0 = i * 5000.0 + shift
        b.step(i + 1, ts=t0, dur=5000.0)
        b.kernel("ampere_sgemm_128x64_nn", ts=t0 + 20, dur=compute[rank], launch_ts=t0 + 10)
        end = t0 + 20 + max(compute) + 200
        s = t0 + 22 + compute[rank]
        b.kernel(ALLREDUCE, ts=s, dur=end - s, launch_ts=t0 + 12, stream=20, collective={"Collective name": "allreduce"})
        b.wait_for_gpu(t0 + 30, end)
    return b


def _run(tmp_path: Path, compute: list[float], shifts: list[float] | None = None) -> list[dict[str, Any]]:
    run = tmp_path / "run"
    run.mkdir()
    for r in range(len(compute)):
        _rank(r, compute, len(compute), (shifts or [0.0] * len(compute))[r]).write(run / f"rank{r}.json")
    return sorted(perflint.summary(str(run)), key=lambda t: t["rank"])


def _bound(t: dict[str, Any]) -> dict[str, float]:
    return {b["category"]: b["us"] for b in t["step_model"]["bound_by"]}


def test_an_early_rank_waits_for_the_last_one(tmp_path: Path) -> None:
    traces = _run(tmp_path, [1000.0, 1500.0, 3000.0])
    waits = [t["step_model"]["ranks"] for t in traces]
    assert [w["wait_us"] for w in waits] == pytest.approx([2000.0, 1500.0, 0.0], abs=1.0)
    assert waits[0]["waited_for"][0]["rank"] == 2 and not waits[2]["waited_for"]
    b0, b2 = _bound(traces[0]), _bound(traces[2])
    assert b0["comm_wait"] == pytest.approx(2000.0, abs=1.0)
    assert "comm_wait" not in b2 and b2["communication"] == pytest.approx(198.0, abs=2.0)
    for t in traces:  # the shares still add up to the step
        assert sum(b["pct"] for b in t["step_model"]["bound_by"]) == pytest.approx(100.0, abs=0.01)
        assert next(b["label"] for b in t["step_model"]["bound_by"] if b["category"] == "communication") == "communication transfer"
    assert "_collectives" not in traces[0]
    lanes = waits[0]["lanes"]  # the picture's data: every rank's time in the all-reduce, rank 0's wait
    assert set(lanes["busy"]) == {"0", "1", "2"} and [(round(b - a), late) for a, b, late, _ in lanes["waits"]] == [(2000, 2)]
    assert waits[2]["lanes"]["waits"] == []


def test_ranks_on_different_clocks_are_aligned_on_collective_ends(tmp_path: Path) -> None:
    traces = _run(tmp_path, [1000.0, 3000.0], shifts=[0.0, 12_345.0])
    r0, r1 = (t["step_model"]["ranks"] for t in traces)
    assert r1["clock_offset_us"] == pytest.approx(12_345.0, abs=1.0)
    assert r0["wait_us"] == pytest.approx(2000.0, abs=1.0) and r1["wait_us"] == pytest.approx(0.0, abs=1.0)


def test_the_check_reports_the_split_and_the_summary_text_says_who(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for r in range(2):
        _rank(r, [1000.0, 3000.0], 2).write(run / f"rank{r}.json")
    result = perflint.check(str(run))
    r0 = next(t for t in result.run.traces if t.rank == 0)
    assert r0.metrics["step_model"]["ranks"]["waited_for"][0]["rank"] == 1
    assert main(["summary", str(run / "rank0.json"), str(run / "rank1.json")]) == 0
    out = capsys.readouterr().out
    assert "communication wait (late rank)" in out and "for the last rank to arrive (rank 1 2.0 ms)" in out
    html = tmp_path / "summary.html"
    assert main(["summary", str(run), "--html", str(html)]) == 0
    page = html.read_text()
    assert "collectives across ranks" in page and "waits for rank 1: allreduce" in page


def test_the_straggler_finding_counts_the_others_critical_path_wait(tmp_path: Path) -> None:
    """STRAG001's impact is what the other ranks' steps wait for the late rank on their critical
    paths (rank 0 waits 2 ms per step, over 3 analysed steps), not the late rank's own extra time
    over the median of the others (1.5 ms)."""
    run = tmp_path / "run"
    run.mkdir()
    for r in range(3):
        _rank(r, [1000.0, 2000.0, 3000.0], 3, steps=5).write(run / f"rank{r}.json")
    result = perflint.check(str(run), select="STRAG001")
    (f,) = [f for f in result.run.run_findings if f.code == "STRAG001"]
    assert f.impact_us == pytest.approx(3 * 2000.0, rel=0.01)
    assert "the other ranks wait 2.0 ms per step for it" in f.message


def test_one_rank_alone_is_not_joined(tmp_path: Path) -> None:
    _rank(0, [1000.0, 3000.0], 2).write(tmp_path / "rank0.json")
    (t,) = perflint.summary(str(tmp_path / "rank0.json"))
    assert "ranks" not in t["step_model"]
    assert all(b["label"] != "communication transfer" for b in t["step_model"]["bound_by"])


def test_collectives_that_do_not_end_together_are_not_split() -> None:
    """Two sampled ranks of a 128-rank job whose point-to-point kernels end apart: matched, but
    nothing is called waiting."""
    run = TRACES / "hta/trace_filter"
    if not run.exists():
        pytest.skip("shared traces not present")
    traces = perflint.summary(str(run))
    assert len(traces) == 2
    for t in traces:
        rk = t["step_model"]["ranks"]
        assert rk["matched"] > 0 and rk["joined"] == 0 and "do not end together" in rk["note"]
        assert all(b["category"] != "comm_wait" for b in t["step_model"]["bound_by"])


def test_a_rank_twice_is_not_a_run() -> None:
    rows = {"names": ["allreduce"], "name": [0], "step": [1], "ordinal": [0], "start": [0.0], "end": [10.0], "median": [True], "on_path": [1.0]}
    entries = [RankEntry(f"/r/{i}.json", 0, dict(rows), {"bound_by": []}) for i in range(2)]
    join_ranks(entries)
    assert all("ranks" not in e.step_model for e in entries)
