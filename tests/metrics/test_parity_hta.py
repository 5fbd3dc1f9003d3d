"""Live parity with HolisticTraceAnalysis 0.5.0 get_temporal_breakdown (pip extra `hta`).

Without HTA installed the test skips locally but FAILS in CI (env CI or PERFLINT_REQUIRE_SHARED),
where the `hta` extra is installed. tests/metrics/test_metrics_temporal.py checks the whole-µs traces without HTA.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from perflint.graph.load import load_trace
from perflint.metrics.temporal import hta_temporal, temporal_breakdown
from perflint.model import Trace
from perflint.trace_summary import summarize
from tests.builder import TraceBuilder
from tests.conftest import shared_trace

# Whole-µs GPU traces: three have >= 2 ProfilerSteps, so HTA's last-step/correlation filter is
# exercised, two have cuda_sync rows.
WHOLE_US = [
    "kineto/test/gpu_metrics_input.json",
    "kineto/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz",
    "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/negative_queue_length_values_check/rank0.json.gz",
    "hta/trace_filter/sampled_rank-0.json.gz",
    "hta/trace_filter/sampled_rank-1.json.gz",
]
# ns-resolution traces: HTA rounds every event to whole µs first (NVIDIA, MTIA, a CUDA-graph replay).
FRACTIONAL = [
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens/traces/inference/vllm_decode_full/graph_execution.json.gz",
    # 137 dma_request rows without a stream argument: no stream (-1), left out as HTA leaves them
    "hta/mtia_trace_single_rank/mtia_rank_0.json.gz",
    # ROCm: runtime calls carry "stream": "0x0", which HTA's parser reads as no stream (-1)
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "tracelens/traces/mi300/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens/traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
]
PARITY_TRACES = WHOLE_US + FRACTIONAL
# HTA's columns: perflint's µs value and percentage key for each.
COLUMNS = (
    ("idle_time", "idle_us", "idle_pct"),
    ("compute_time", "compute_us", "compute_pct"),
    ("non_compute_time", "non_compute_us", "non_compute_pct"),
    ("kernel_time", "kernel_time_us", None),
)


def _hta() -> Any:
    try:
        return importlib.import_module("hta.trace_analysis")
    except ImportError as exc:
        if os.environ.get("CI") or os.environ.get("PERFLINT_REQUIRE_SHARED"):
            pytest.fail(f"HTA (pip extra 'hta') must be installed in CI: {exc}")
        pytest.skip("HTA not installed (pip install 'perflint-gpu[hta]')")


@pytest.mark.parametrize("rel", PARITY_TRACES)
def test_temporal_equals_live_hta(rel: str) -> None:
    path = os.path.abspath(shared_trace(rel))
    _assert_equals_hta(path, load_trace(path))


def test_rounded_window_equals_live_hta(tmp_path: Path) -> None:
    """On a fractional trace HTA compares rounded starts with the last step's rounded start: a
    launch in the same µs as that step, though just before it, is dropped like one inside it."""
    b = TraceBuilder()
    for n, ts in ((1, 0.5), (2, 1000.5), (3, 2000.6)):
        b.step(n, ts=ts, dur=999.7)
    b.kernel("ampere_sgemm_128x64_nn", ts=50.4, dur=100.3, launch_ts=10.25)
    b.memcpy(ts=400.7, dur=20.6, nbytes=4096, launch_ts=300.1)
    b.kernel("ampere_sgemm_128x64_nn", ts=1700.2, dur=200.45, launch_ts=1500.7)
    b.kernel("ampere_sgemm_128x64_nn", ts=2100.3, dur=400.2, launch_ts=2000.2)  # dropped: ceil 2001 both
    b.kernel("ampere_sgemm_128x64_nn", ts=2600.3, dur=100.2, launch_ts=2500.4)
    path = b.write(tmp_path / "fractional.json")
    trace = load_trace(path)
    tb = hta_temporal(trace)
    assert tb is not None and tb.step_filter
    assert tb.kernel_time_us == 1900 - 51  # the second GEMM's end, not the third's
    _assert_equals_hta(path, trace)


def _assert_equals_hta(path: str, trace: Trace) -> None:
    """The same µs as HTA, and its percentages to the digits it prints."""
    mod = _hta()
    logging.getLogger("hta").setLevel(logging.ERROR)
    # A {rank: file} dict gives HTA its rank, so traces without distributedInfo need nothing.
    df = mod.TraceAnalysis(trace_files={0: path}).get_temporal_breakdown(visualize=False)
    row = df[df["rank"] == 0].iloc[0]
    tb = hta_temporal(trace)
    assert tb is not None
    pct = temporal_breakdown(trace)
    assert summarize(trace)["compat"]["hta"] == {k: round(v, 3) if v is not None else None for k, v in pct.items()}
    for col, us, key in COLUMNS:
        assert getattr(tb, us) == float(row[f"{col}(us)"]), (col, getattr(tb, us), float(row[f"{col}(us)"]))
        if key is not None:
            assert pct[key] is not None
            assert round(pct[key], 2) == float(row[f"{col}_pctg"]), (key, pct[key], float(row[f"{col}_pctg"]))


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
