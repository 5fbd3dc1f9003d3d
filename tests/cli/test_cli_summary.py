from __future__ import annotations

import json

import pytest

from perflint.cli import main
from tests.conftest import shared_trace

SUMMARY_KEYS = {
    "gpu": {"utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct"},
    "temporal": {"idle_pct", "compute_pct", "non_compute_pct"},
    "steps": {"count", "median_us"},
    "device": {"name", "sm_count", "compute_capability"},
    "tensor_cores": {"kernel_time_pct"},
}


def test_summary_json_has_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace("tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz")
    assert main(["summary", path, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (t,) = doc["traces"]
    for group, keys in SUMMARY_KEYS.items():
        assert keys <= set(t[group]), group
    assert t["device"]["name"] == "NVIDIA H100 80GB HBM3"
    assert t["device"]["sm_count"] == 132
    assert t["device"]["compute_capability"] == "9.0"
    cats = t["kernels"]["by_category"]
    assert {"gemm", "conv", "attention", "memcpy", "triton_pointwise", "other"} <= set(cats)
    assert abs(sum(c["pct"] for c in cats.values()) - 100.0) < 0.01
    top = t["kernels"]["top"][0]
    assert top["top_level_op"] == "aten::linear"
    assert top["count"] * top["mean_us"] == pytest.approx(top["total_us"], rel=1e-3)


def test_summary_text_and_bad_file_exit_2(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    good = shared_trace("hta/critical_path/cuda_event_sync/event_sync_trace.json.gz")
    bad = tmp_path / "empty.json"
    bad.write_text("")
    assert main(["summary", str(bad), good]) == 2
    out, err = capsys.readouterr()
    assert "NVIDIA A100-PG509-200" in out  # the good trace is still summarized
    assert err.strip() == f"perflint: error: {bad}: empty file"
