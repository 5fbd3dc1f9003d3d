"""Host synchronization (SYNC001) on real traces, each claim cross-checked from the raw JSON."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import FIXTURES, shared_trace
from tests.rules.trace_json import events, only_trace

ALEXNET = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
SYNC_ITEM = str(FIXTURES / "cpu" / "sync_item.pt.trace.json.gz")


def test_alexnet_host_syncs_without_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """No ProfilerStep markers: the whole trace is examined; 21 synchronize calls as in MANIFEST."""
    path = shared_trace(ALEXNET)
    raw = [e for e in events(path) if e.get("cat") in ("cuda_runtime", "Runtime") and e["name"].endswith("Synchronize")]
    assert len(raw) == 21
    groups = _sync_rows(path)
    assert sum(r["count"] for r in groups) == 21
    kinds = {r["kind"]: 0 for r in groups}
    for r in groups:
        kinds[r["kind"]] += r["count"]
    assert kinds == {"cudaDeviceSynchronize": 5, "cudaStreamSynchronize": 16}
    assert len(groups) < 21  # grouped, never one row per call
    found = [f for f in only_trace(path, "SYNC001", capsys)["findings"] if f["code"] == "SYNC001"]
    # A finding only where the syncs cost the GPU idle time (>= 50 µs): the 16 stream syncs. Its
    # impact is what the step model saves removing them: at most the CPU time they blocked.
    assert [f["evidence"]["kind"] for f in found] == ["cudaStreamSynchronize"]
    assert found[0]["evidence"]["work_saved_us"] == pytest.approx(found[0]["evidence"]["gpu_idle_us"])
    assert 0 < found[0]["impact_us"] <= found[0]["evidence"]["blocked_us"]


def _sync_rows(path: str) -> list[dict[str, Any]]:
    from perflint.facts import Context, rows
    from perflint.facts.builtin import load_all
    from perflint.graph.load import load_trace

    load_all()
    return rows(Context(load_trace(path)), "sync_groups")


def test_cpu_only_profile_item_is_no_sync(capsys: pytest.CaptureFixture[str]) -> None:
    """A CPU-only profile records no runtime call: nothing shows that .item() waited on a GPU
    (on a CPU tensor it waits for nothing), so no sync is counted and SYNC001 stays quiet."""
    raw = events(SYNC_ITEM)
    assert any(e.get("name") == "aten::item" for e in raw)
    assert not any(e.get("cat") in ("cuda_runtime", "Runtime") for e in raw)
    assert _sync_rows(SYNC_ITEM) == []
    assert not [f for f in only_trace(SYNC_ITEM, "SYNC001", capsys)["findings"] if f["code"] == "SYNC001"]
