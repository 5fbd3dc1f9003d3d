"""Tensor Core use: kernel-name table cross-checked with CUPTI counters when present."""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.metrics.kernel_classes import classify, trace_vendor, uses_tensor_cores
from perflint.model import KERNEL, Trace

# Counter names that count tensor-pipe (MMA) instructions in CUPTI profiler ranges.
TENSOR_COUNTER_MARKERS = ("pipe_tensor", "tensor_op", "hmma", "imma")
# FP16 SIMT FMA counters: half math that did not go to the tensor pipe.
HALF_SIMT_COUNTERS = ("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",)


def counter_verdicts(trace: Trace) -> list[dict[str, Any]]:
    """Per CUPTI range of a matrix kernel: the name verdict and what the counters say."""
    out = []
    vendor = trace_vendor(trace)
    for cr in trace.counter_ranges:
        name = trace.s(cr.name)
        by_name = uses_tensor_cores(name, vendor)
        if by_name is None:
            continue
        tensor = [v for k, v in cr.counters.items() if any(m in k for m in TENSOR_COUNTER_MARKERS)]
        by_counter: bool | None = None
        if tensor:
            by_counter = sum(tensor) > 0
        out.append({"name": name, "by_name": by_name, "by_counters": by_counter, "counters": cr.counters})
    return out


def tensor_core_summary(trace: Trace) -> dict[str, Any]:
    g = trace.gpu
    tc = classify(trace).tensor_core
    kern = g.kind == KERNEL
    total = float(g.dur[kern].sum())
    matrix = kern & (tc >= 0)
    tc_time = float(g.dur[kern & (tc == 1)].sum())
    matrix_time = float(g.dur[matrix].sum())
    verdicts = counter_verdicts(trace)
    disagree = [v["name"] for v in verdicts if v["by_counters"] is not None and v["by_counters"] != v["by_name"]]
    return {
        "kernel_time_pct": round(100.0 * tc_time / total, 3) if total else None,
        "matrix_kernel_time_pct": round(100.0 * tc_time / matrix_time, 3) if matrix_time else None,
        "counter_checked": len([v for v in verdicts if v["by_counters"] is not None]),
        "counter_disagreements": sorted(set(disagree))[:20],
        "source": "cupti_counters+names" if verdicts else "names",
        "matrix_kernels": int(np.count_nonzero(matrix)),
    }
