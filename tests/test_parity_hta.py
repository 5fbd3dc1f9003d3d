"""Live parity with HolisticTraceAnalysis 0.5.0 get_temporal_breakdown (pip extra `hta`).

Without HTA installed the test skips locally but FAILS in CI (env CI or PERFLINT_REQUIRE_SHARED),
where the `hta` extra is installed. tests/test_metrics_temporal.py checks the same traces without HTA.
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

import pytest

from perflint.metrics.temporal import temporal_breakdown
from perflint.graph.load import load_trace
from tests.conftest import shared_trace

# GPU traces whose timestamps are whole microseconds (HTA's ns rounding is a no-op there); three
# have >= 2 ProfilerSteps, so HTA's last-step/correlation filter is exercised, two have cuda_sync rows.
PARITY_TRACES = [
    "kineto/test/gpu_metrics_input.json",
    "kineto/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz",
    "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/negative_queue_length_values_check/rank0.json.gz",
    "hta/trace_filter/sampled_rank-0.json.gz",
    "hta/trace_filter/sampled_rank-1.json.gz",
]
TOLERANCE_PP = 0.1


def _hta() -> Any:
    try:
        return importlib.import_module("hta.trace_analysis")
    except ImportError as exc:
        if os.environ.get("CI") or os.environ.get("PERFLINT_REQUIRE_SHARED"):
            pytest.fail(f"HTA (pip extra 'hta') must be installed in CI: {exc}")
        pytest.skip("HTA not installed (pip install 'perflint-gpu[hta]')")


@pytest.mark.parametrize("rel", PARITY_TRACES)
def test_temporal_equals_live_hta(rel: str) -> None:
    mod = _hta()
    path = os.path.abspath(shared_trace(rel))
    logging.getLogger("hta").setLevel(logging.ERROR)
    # A {rank: file} dict gives HTA its rank, so traces without distributedInfo need nothing.
    analysis = mod.TraceAnalysis(trace_files={0: path})
    df = analysis.get_temporal_breakdown(visualize=False)
    row = df[df["rank"] == 0].iloc[0]
    mine = temporal_breakdown(load_trace(path))
    for key, col in (("idle_pct", "idle_time_pctg"), ("compute_pct", "compute_time_pctg"), ("non_compute_pct", "non_compute_time_pctg")):
        assert mine[key] is not None
        assert abs(mine[key] - float(row[col])) <= TOLERANCE_PP, (key, mine[key], float(row[col]))


def test_cupti_counter_attribution_equals_live_hta() -> None:
    """get_cupti_counter_data_with_operators: same kernels, counters, op stacks, top/bottom ops."""
    from perflint.graph.build import op_stack

    mod = _hta()
    path = os.path.abspath(shared_trace("hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"))
    logging.getLogger("hta").setLevel(logging.ERROR)
    (df,) = mod.TraceAnalysis(trace_files={0: path}).get_cupti_counter_data_with_operators(ranks=[0])
    df = df.sort_values("ts")
    trace = load_trace(path)
    ranges = sorted(trace.counter_ranges, key=lambda c: c.ts)
    assert len(ranges) == len(df)
    ffma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
    for cr, (_, row) in zip(ranges, df.iterrows()):
        stack = [trace.s(int(trace.ops.name[o])) for o in op_stack(trace, int(trace.runtime.op[cr.launch]))]
        assert list(row["op_stack"]) == stack
        assert (row["top_level_op"], row["bottom_level_op"]) == (stack[0], stack[-1])
        assert trace.s(cr.name) == row["name"]
        assert int(row[ffma]) == int(cr.counters.get(ffma, -1))
