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
