"""The join of ranks matches collectives by the most exact key every rank records: process group
and sequence number, else the order within the process group, else step, name and order; the
per-collective table takes each call's wait from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perflint
from tests.builder import TraceBuilder

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
STEPS = 5  # the first and last are left out: three analysed steps


def _rank(rank: int, calls: list[tuple[str, float, float]], seq: bool, step_base: int = 1) -> TraceBuilder:
    """Steps of 1000 us; per step, `calls` (process group, kernel start in the step, kernel
    duration), each launched by a record_param_comms op that records the group and, with `seq`,
    its sequence number in the group; each group's kernels on a stream of their own."""
    b = TraceBuilder(device="NVIDIA H100 80GB HBM3", sm_count=132, cc=(9, 0))
    b.meta["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
    count: dict[str, int] = {}
    for n in range(STEPS):
        s = n * 1000.0
        b.step(n + step_base, s, 1000)
        for k, (pg, start, dur) in enumerate(calls):
            count[pg] = count.get(pg, 0) + 1
            args: dict[str, Any] = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 262144,
                                    "Out msg nelems": 262144, "Group size": 2, "Process Group Name": pg}  # fmt: skip
            if seq:
                args["Seq"] = count[pg]
            b.op("record_param_comms", s + 10 + 20 * k, 10, args=args)
            b.kernel(NCCL, s + start, dur, launch_ts=s + 12 + 20 * k, stream=20 + sorted({c[0] for c in calls}).index(pg))
    return b


def _write(tmp_path: Path, ranks: list[TraceBuilder]) -> str:
    d = tmp_path / "run"
    d.mkdir()
    for r, b in enumerate(ranks):
        b.write(d / f"rank{r}.json")
    return str(d)


def _by_rank(rows: list[dict[str, Any]]) -> dict[int, dict[str, dict[str, Any]]]:
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["rank"], {})[r["process_group"]] = r
    return out


def test_sequence_numbers_match_across_differently_numbered_steps(tmp_path: Path) -> None:
    # rank 1 arrives 100 us late at every all-reduce; both end together. Its steps are numbered
    # from 11: only the sequence number tells which collective is which.
    run = _write(tmp_path, [_rank(0, [("0", 100, 400)], seq=True), _rank(1, [("0", 200, 300)], seq=True, step_base=11)])
    rows = _by_rank(perflint.comms(run))
    assert rows[0]["0"]["wait_us"] == 3 * 100.0 and rows[0]["0"]["transfer_us"] == 3 * 300.0
    assert rows[1]["0"]["wait_us"] == 0.0 and rows[1]["0"]["transfer_us"] == 3 * 300.0
    assert rows[0]["0"]["joined"] == 3
    # bus bandwidth over the transfer alone: 1 MiB x 2(n-1)/n = 1 MiB per 300 us
    assert rows[0]["0"]["busbw_transfer_gbps"] == round(262144 * 4 / 300.0 / 1e3, 3)
    assert rows[0]["0"]["busbw_gbps"] == round(3 * 262144 * 4 / (3 * 400.0) / 1e3, 3)
    summary = {s["rank"]: s for s in perflint.summary(run)}
    assert summary[0]["step_model"]["ranks"]["matched_by"] == "process group and sequence number"
    assert summary[0]["communication"]["wait_us"] == 300.0


def test_without_sequence_numbers_steps_must_agree(tmp_path: Path) -> None:
    # the same run without Seq: matched by group order within a step, and the steps differ
    run = _write(tmp_path, [_rank(0, [("0", 100, 400)], seq=False), _rank(1, [("0", 200, 300)], seq=False, step_base=11)])
    rows = _by_rank(perflint.comms(run))
    assert rows[0]["0"]["wait_us"] is None and rows[0]["0"]["joined"] is None
    summary = {s["rank"]: s for s in perflint.summary(run)}
    ranks = summary[0]["step_model"]["ranks"]
    assert ranks["matched_by"] == "process group and order in the step" and ranks["matched"] == 0


def test_group_order_matches_collectives_issued_in_another_order_across_groups(tmp_path: Path) -> None:
    # Two groups on two streams: rank 0 starts group A's all-reduce first, rank 1 group B's. By
    # name and order each rank's first all-reduce would meet the other's other group's; by group
    # order each meets its own (A ends at 300 on both ranks, B at 600).
    def run(seq: bool, name: str, groups: bool = True) -> dict[int, dict[str, dict[str, Any]]]:
        r0 = _rank(0, [("A", 100, 200), ("B", 120, 480)], seq=seq)
        r1 = _rank(1, [("A", 150, 150), ("B", 110, 490)], seq=seq)
        if not groups:
            for b in (r0, r1):
                for e in b.events:
                    e.get("args", {}).pop("Process Group Name", None)
        d = tmp_path / name
        d.mkdir()
        return _by_rank([{k: v for k, v in r.items() if k != "path"} for r in perflint.comms(_write(d, [r0, r1]))])

    rows = run(False, "groups")
    assert (rows[0]["A"]["wait_us"], rows[1]["A"]["wait_us"]) == (3 * 50.0, 0.0)
    assert (rows[0]["B"]["wait_us"], rows[1]["B"]["wait_us"]) == (0.0, 3 * 10.0)
    assert run(True, "sequence") == rows  # the sequence numbers say the same
    by_name = run(False, "names", groups=False)  # by name order the groups' collectives cross: not joined
    assert by_name[0][None]["wait_us"] is None and by_name[0][None]["count"] == 6


def test_without_process_groups_name_order_as_before(tmp_path: Path) -> None:
    def strip(b: TraceBuilder) -> TraceBuilder:
        for e in b.events:
            e.get("args", {}).pop("Process Group Name", None)
        return b

    run = _write(tmp_path, [strip(_rank(0, [("0", 100, 400)], seq=True)), strip(_rank(1, [("0", 200, 300)], seq=True))])
    rows = _by_rank(perflint.comms(run))
    assert rows[0][None]["wait_us"] == 300.0
    summary = {s["rank"]: s for s in perflint.summary(run)}
    assert summary[0]["step_model"]["ranks"]["matched_by"] == "step, name and order"


def test_one_trace_alone_has_no_wait(tmp_path: Path) -> None:
    path = _rank(0, [("0", 100, 400)], seq=True).write(tmp_path / "rank0.json")
    (row,) = perflint.comms(path)
    assert (row["wait_us"], row["transfer_us"], row["joined"]) == (None, None, None)
    assert row["time_us"] == 3 * 400.0 and row["count"] == 3 and row["bytes"] == 3 * 262144 * 4
    (s,) = perflint.summary(path)
    assert s["communication"]["wait_us"] is None
    assert any("other ranks" in n for n in s["communication"]["notes"])
