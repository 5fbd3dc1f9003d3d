"""HTA temporal breakdown without HTA: perflint vs an independent plain-JSON computation written here
from the spec (docs/metrics.md), and vs HTA 0.5.0's recorded numbers."""

from __future__ import annotations

import gzip
import json
import math
import re
from typing import Any

import pytest

from perflint.graph.load import load_trace
from perflint.metrics.temporal import hta_kernel_type, hta_temporal, temporal_breakdown
from tests.conftest import shared_trace

# Whole-microsecond GPU traces; (idle %, compute %, non-compute %) printed by HTA 0.5.0
# get_temporal_breakdown (pandas 2.3.3), recorded with /work/notes/hta_temporal.py.
HTA_RECORDED: dict[str, tuple[float, float, float]] = {
    "kineto/test/gpu_metrics_input.json": (99.58, 0.4, 0.02),
    "kineto/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz": (24.32, 73.23, 2.45),
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz": (99.49, 0.08, 0.43),
    "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz": (78.71, 18.63, 2.66),
    "hta/negative_queue_length_values_check/rank0.json.gz": (69.44, 14.15, 16.41),
    "hta/trace_compare/base/base.json.gz": (0.0, 100.0, 0.0),
    "hta/trace_filter/sampled_rank-0.json.gz": (53.56, 17.71, 28.74),
    "hta/trace_filter/sampled_rank-1.json.gz": (54.72, 22.57, 22.72),
    "param/resnet_kineto.json.gz": (67.4, 28.25, 4.34),
}


def _independent(path: str) -> tuple[float, float, float]:
    """Plain-JSON temporal breakdown, one event at a time (deliberately not perflint's code)."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc

    def num(x: Any) -> int:
        try:
            return int(x)
        except (TypeError, ValueError):
            return -1

    rows = []
    for e in events:
        if e.get("dur") is None or e.get("cat") is None or e["cat"] == "Trace":
            continue
        a = e.get("args") or {}
        rows.append((str(e.get("name")), e["ts"], e["dur"], num(a.get("stream", -1)), num(a.get("correlation", -1))))
    step_names = {r[0] for r in rows if "ProfilerStep" in r[0]}

    def gpu(r: tuple[str, int, int, int, int]) -> bool:
        return (r[3] >= 0 and r[4] >= 0) or r[0] in ("Event Sync", "Context Sync")

    if len(step_names) > 1:
        last = max(r[1] for r in rows if not gpu(r) and r[0] in step_names)
        cpu = [r for r in rows if not gpu(r) and r[1] < last]
        corr = {r[4] for r in cpu}
        rows = cpu + [r for r in rows if gpu(r) and r[4] in corr]
    dev = sorted((r[1], r[1] + r[2], r[0]) for r in rows if r[3] != -1)

    def union(iv: list[tuple[int, int]]) -> list[list[int]]:
        out: list[list[int]] = []
        for s, t in sorted(iv):
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], t)
            else:
                out.append([s, t])
        return out

    merged = union([(s, t) for s, t, _ in dev])
    span = merged[-1][1] - merged[0][0]
    idle = span - sum(t - s for s, t in merged)
    compute_iv = [
        (s, t)
        for s, t, n in dev
        if not re.match(r"nccl.*Kernel|Memcpy|Memset|dma", n) and not re.match(r".*Memcpy|Memset|.*Sync", n)
    ]
    compute = sum(t - s for s, t in union(compute_iv))
    return 100 * idle / span, 100 * compute / span, 100 * (span - idle - compute) / span


@pytest.mark.parametrize("rel", sorted(HTA_RECORDED))
def test_temporal_matches_independent_and_recorded_hta(rel: str) -> None:
    path = shared_trace(rel)
    mine = temporal_breakdown(load_trace(path))
    got = (mine["idle_pct"], mine["compute_pct"], mine["non_compute_pct"])
    ref = _independent(path)
    for g, r, h in zip(got, ref, HTA_RECORDED[rel]):
        assert g is not None
        assert math.isclose(g, r, abs_tol=1e-9)
        assert abs(g - h) <= 0.005 + 1e-9  # HTA prints 2 decimals


def test_step_filter_is_hta_s() -> None:
    # Two ProfilerStep names: the last step's launches are dropped by correlation.
    t = load_trace(shared_trace("hta/trace_filter/sampled_rank-0.json.gz"))
    tb = hta_temporal(t)
    assert tb is not None and tb.step_filter
    # A single step name: HTA filters nothing.
    t1 = load_trace(shared_trace("kineto/test/gpu_metrics_input.json"))
    tb1 = hta_temporal(t1)
    assert tb1 is not None and not tb1.step_filter and tb1.device_events == 32


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "COMMUNICATION"),
        ("ncclKernel_AllGather", "COMMUNICATION"),
        ("Memcpy HtoD (Pageable -> Device)", "MEMORY"),
        ("Memset (Device)", "MEMORY"),
        ("dma_copy", "MEMORY"),
        ("Stream Sync", "OTHER"),  # ".*Sync"
        ("Stream Wait Event", "COMPUTATION"),  # HTA's quirk: no "Sync" in the name
        ("my_Memcpy_kernel", "OTHER"),  # ".*Memcpy" anywhere
        ("kernel_Memset", "COMPUTATION"),  # "Memset" only at the start
        ("volta_sgemm_128x64_nn", "COMPUTATION"),
    ],
)
def test_hta_kernel_type(name: str, kind: str) -> None:
    assert hta_kernel_type(name) == kind
