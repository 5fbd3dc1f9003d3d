"""CUPTI profiler-mode (counter) traces as a kernel table: one row per measured kernel with each
recorded counter as a column under its metric name, the op stack of its launch, and FLOPs counted
by the hardware (HTA's get_cupti_counter_data_with_operators, plus `flops`).

`counter_flops`: per precision d, f, h, 2 x FMA + ADD + MUL thread instructions (the
smsp__sass_thread_inst_executed_op_*_pred_on.sum counters count one per predicated-on thread, so
an FMA is two FLOPs, as HTA's CUDA_SASS_INSTRUCTION_COUNTER_FLOPS weighs them), plus tensor-pipe
instructions where recorded, each counted as TENSOR_INST_FLOPS: the factor Nsight Compute's Tensor
Core roofline applies to sm__inst_executed_pipe_tensor (a warp MMA's FLOPs depend on its shape,
which the counter does not record; 512 is the tool's own convention, so the two agree).
"""

from __future__ import annotations

from typing import Any

from perflint.graph.build import op_stack
from perflint.metrics.kernel_classes import kernel_category
from perflint.model import NONE, Trace

SASS_FLOP_WEIGHTS: dict[str, float] = {
    f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum": 2.0 if op == "fma" else 1.0
    for p in ("d", "f", "h")
    for op in ("fma", "add", "mul")
}
TENSOR_INST_FLOPS = 512.0
# Tensor-pipe instruction totals, the first recorded one used (sm__ and smsp__ sum the same
# instructions; the per-op sub-counters such as ..._op_hmma are parts of these totals).
TENSOR_INST_COUNTERS = ("sm__inst_executed_pipe_tensor.sum", "smsp__inst_executed_pipe_tensor.sum")
# The table's own columns on counter traces, before the counters.
COUNTER_TABLE_COLUMNS = ("idx", "kernel", "name", "category", "sil", "ts_us", "dur_us", "op", "top_level_op", "bottom_level_op", "op_stack", "flops")
COUNTER_DEFAULT_COLUMNS = ("idx", "kernel", "sil", "top_level_op", "bottom_level_op", "flops")


def counter_flops(counters: dict[str, float]) -> float | None:
    """FLOPs one kernel executed by its CUPTI counters (see the module docstring); None when none
    of the counters it needs was recorded."""
    got = [w * counters[k] for k, w in SASS_FLOP_WEIGHTS.items() if k in counters]
    tensor = next((counters[k] for k in TENSOR_INST_COUNTERS if k in counters), None)
    if tensor is not None:
        got.append(TENSOR_INST_FLOPS * tensor)
    return float(sum(got)) if got else None


def counter_names(t: Trace) -> list[str]:
    """The counters the trace's ranges record, in first-seen order."""
    seen: dict[str, None] = {}
    for cr in t.counter_ranges:
        for k in cr.counters:
            seen.setdefault(k)
    return list(seen)


def counter_rows(t: Trace) -> list[dict[str, Any]]:
    """One row per CUPTI counter range in start-time order: COUNTER_TABLE_COLUMNS, then every
    counter the trace records (None where a range lacks it)."""
    from perflint.kernelnames.parse import parse_kernel_name

    names = counter_names(t)
    per_name: dict[int, tuple[str, str, str]] = {}  # name id -> (name, function, category)
    out = []
    for idx, cr in enumerate(sorted(t.counter_ranges, key=lambda c: c.ts)):
        got = per_name.get(cr.name)
        if got is None:
            full = t.s(cr.name)
            got = per_name[cr.name] = (full, parse_kernel_name(full).function or full, kernel_category(full))
        op = int(t.runtime.op[cr.launch]) if cr.launch != NONE else NONE
        stack = [t.s(int(t.ops.name[o])) for o in op_stack(t, op)]
        row: dict[str, Any] = {
            "idx": idx,
            "kernel": got[1],
            "name": got[0],
            "category": got[2],
            "sil": int(round(cr.dur * 1000)),
            "ts_us": cr.ts,
            "dur_us": cr.dur,
            "op": stack[-1] if stack else None,
            "top_level_op": stack[0] if stack else None,
            "bottom_level_op": stack[-1] if stack else None,
            "op_stack": stack,
            "flops": counter_flops(cr.counters),
        }
        for k in names:
            row[k] = cr.counters.get(k)
        out.append(row)
    return out
