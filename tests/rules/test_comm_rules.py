"""Communication rules (COMM001 exposed communication, COMM002) on real NCCL and RCCL ranks."""

from __future__ import annotations

import pytest

from tests.conftest import shared_trace
from tests.rules.trace_json import check_json, findings_of


def test_comm_mi300_rccl_rank0(capsys: pytest.CaptureFixture[str]) -> None:
    doc = check_json([shared_trace("tracelens/traces/mi300/resnet_act_checkpoint.json.gz")], "COMM001,COMM002", capsys)
    (c1,) = findings_of(doc, "COMM001")
    assert not findings_of(doc, "COMM002")  # exposed communication over 10% is COMM001's finding alone
    ev = c1["evidence"]
    assert ev["collectives"] == "allreduce, broadcast" and ev["comm_kernels"] == 4
    assert ev["comm_pct"] == pytest.approx(83.81, abs=0.01)
    assert ev["comm_exposed_pct"] == pytest.approx(62.55, abs=0.01)
    assert ev["comm_overlap_pct"] == pytest.approx(24.85, abs=0.01)


def test_comm_hta_nccl_rank0(capsys: pytest.CaptureFixture[str]) -> None:
    doc = check_json([shared_trace("hta/negative_queue_length_values_check/rank0.json.gz")], "COMM001,COMM002", capsys)
    (c1,) = findings_of(doc, "COMM001")
    ev = c1["evidence"]
    # 80 NCCL kernels in the trace, 45 inside the 3 analysis steps; shares within [0, 100]
    assert ev["comm_kernels"] == 45 and ev["steps"] == 3
    assert ev["comm_pct"] == pytest.approx(16.17, abs=0.01)
    assert 0 <= ev["comm_exposed_pct"] <= ev["comm_pct"] <= 100
    assert ev["comm_overlap_pct"] == pytest.approx(1.34, abs=0.01)
    assert not findings_of(doc, "COMM002")  # one finding per root cause: COMM001 has it


@pytest.mark.parametrize(
    ("name", "kind"),
    [("all_reduce", "all_reduce"), ("ncclDevKernel_AllGather_RING_LL", "all_gather"), ("parallel all-reduce", "all_reduce"),
     ("c10d::alltoall_base_", "all_to_all"), ("_reduce_scatter_base", "reduce_scatter"), ("ncclKernel_SendRecv_RING_SIMPLE", "send_recv"),
     ("void deep_ep::intranode::dispatch<8>", "all_to_all"), ("aten::mm", None)],
)  # fmt: skip
def test_collective_kinds_in_any_spelling(name: str, kind: str | None) -> None:
    from perflint.metrics.collectives import collective_kind

    assert collective_kind(name) == kind


def test_comm_advice_follows_the_traffic() -> None:
    """HTA's sampled recsys ranks run NCCL SendRecv kernels under c10d::alltoall_base_ (sharded
    embeddings): all-to-all advice, no DDP buckets; the cpu_only rank's gloo/nccl all_reduce is
    data-parallel gradient traffic."""
    from perflint.facts import Context
    from perflint.facts.comm import comm_numbers
    from perflint.graph.load import load_trace

    a2a = comm_numbers(Context(load_trace(shared_trace("hta/trace_filter/sampled_rank-0.json.gz"))))
    assert a2a["comm_traffic"] == "expert_parallel" and "all-to-all" in a2a["comm_advice"] and "no_sync" not in a2a["comm_advice"]
    dp = comm_numbers(Context(load_trace(shared_trace("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"))))
    assert dp["comm_traffic"] == "data_parallel" and "no_sync()" in dp["comm_advice"]


def test_a_rank_of_a_larger_job_is_never_a_single_process_run(tmp_path: object) -> None:
    from pathlib import Path

    from perflint.facts import REGISTRY, Context
    from perflint.graph.load import load_trace
    from tests.builder import TraceBuilder

    b = TraceBuilder(rank=63)  # world size 64 recorded, no collective kernels in the window
    b.step(1, 0, 1000)
    b.op("aten::mm", 5, 10)
    b.kernel("ampere_sgemm_128x64_tn", 20, 300, launch_ts=6)
    reason = REGISTRY.capabilities["communication"].check(Context(load_trace(b.write(Path(tmp_path) / "r.json"))))
    assert reason is not None and "64-process job" in reason and "single-process" not in reason


def test_exposed_communication_says_how_much_is_waiting(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    """Ranks 0-2 wait 7.6 ms per step in an all-to-all for rank 3 (COMM003's bad case). Checked
    alone, a rank's COMM001 counts the wait as exposed communication; checked with its run, it
    says how much is waiting and for whom, and keeps only the 10 us transfer as its impact."""
    import importlib.util
    from pathlib import Path

    from tests.conftest import FIXTURES

    spec = importlib.util.spec_from_file_location("fixture_COMM003", FIXTURES / "rules" / "COMM003" / "make.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    run = Path(str(tmp_path)) / "run"
    run.mkdir()
    for r, b in enumerate(mod.bad()):
        b.write(run / f"rank{r}.json")
    (alone,) = findings_of(check_json([str(run / "rank0.json")], "COMM001", capsys), "COMM001")
    assert alone["severity"] == "warning" and "waiting" not in alone["message"]
    found = findings_of(check_json([str(run)], "COMM001", capsys), "COMM001")
    assert len(found) == 3  # rank 3 waits for nobody: its exposed share is below the threshold
    for f in found:
        assert "of it, 7.6 ms per step is waiting for rank 3 to arrive and 10.0 µs transfer" in f["message"]
        assert f["evidence"]["comm_wait_us"] == pytest.approx(7600.0) and f["evidence"]["waited_for_rank"] == 3
        assert f["severity"] == "info" and f["impact_us"] == pytest.approx(10.0)
        assert "waiting for rank 3, which overlapping does not shorten" in f["evidence"]["step_model_note"]


def test_communication_advice_carries_its_numbers(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    """COMM001's fix opens with the numbers it rests on: the collective with the most time, its
    calls, bytes and time per step, and its bus bandwidth beside the link's peak (COMM004's bad
    case: 64 MiB fp32 all-reduce in 3.9 ms on an A100 SXM)."""
    import importlib.util
    from pathlib import Path

    from tests.conftest import FIXTURES

    spec = importlib.util.spec_from_file_location("fixture_COMM004", FIXTURES / "rules" / "COMM004" / "make.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = mod.bad().write(Path(str(tmp_path)) / "t.json")
    (f,) = findings_of(check_json([str(path)], "COMM001", capsys), "COMM001")
    assert f["fix"].startswith(
        "Most of it is all_reduce in process group 0 of 8 ranks: 1 call(s), 67.1 MB, 3.9 ms of kernel time per step, at 30.1 GB/s "
        "bus bandwidth over its kernel time (which holds any wait for the other ranks) against the NVLink peak of 300 GB/s per direction."
    )
    assert "per direction. The communication is " in f["fix"]  # then the advice for its traffic
