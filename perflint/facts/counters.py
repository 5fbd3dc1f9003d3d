"""`counter_kernel_groups`: CUPTI profiler-mode ranges (one per kernel, counters as args) grouped
per top-level op x op x shapes x kernel, so Tensor Core use can be checked against the hardware's
own tensor-pipe instruction counters rather than only the kernel-name table."""

from __future__ import annotations

from typing import Any

from perflint.facts import Context, Fields, Row, capability, fact, typed
from perflint.facts._common import kernel_row_dtype, op_info
from perflint.metrics.kernel_classes import kernel_category, uses_tensor_cores
from perflint.metrics.tensor_cores import TENSOR_COUNTER_MARKERS
from perflint.model import NONE, Trace

HALF_FP_COUNTERS = ("hfma", "hmul", "hadd")

FIELDS: Fields = {
    "kernel": typed("kernel name (the range's name)", "text"),
    "category": typed("kernel category", "text"),
    "dtype": typed("compute dtype (kernel name, else the launching op's first floating input)", "text"),
    "tensor_cores": typed("Tensor Core use by the kernel-name table (null for non-matrix kernels)", "bool"),
    "tensor_pipe_inst": typed("tensor-pipe (MMA) instructions counted by CUPTI, summed over the group", "number"),
    "half_fp_inst": typed("half-precision SIMT FMA/MUL/ADD instructions counted by CUPTI", "number"),
    "op": typed("bottom-level op of the launch", "text"),
    "top_level_op": typed("outermost op of the launch", "text"),
    "op_stack": typed("ops from outermost to innermost", "list"),
    "input_dims": typed("Input Dims of the op that describes the work", "list"),
    "source": typed("user's file:line, when stacks were recorded", "text"),
    "count": typed("profiled launches", "integer"),
    "time_us": "kernel time of the profiled ranges",
    "share_pct": "share of all profiled kernel time",
}


def _tensor_keys(t: Trace) -> list[str]:
    keys: set[str] = set()
    for cr in t.counter_ranges:
        keys.update(k for k in cr.counters if any(m in k for m in TENSOR_COUNTER_MARKERS))
    return sorted(keys)


@capability("cupti_tensor_counters", "the trace has CUPTI counters that tell Tensor Core use")
def _has_tensor_counters(t: Trace) -> str | None:
    if not t.counter_ranges:
        return "the trace has no CUPTI profiler-mode counter ranges"
    if not _tensor_keys(t):
        return "the CUPTI ranges carry no tensor-pipe counters (e.g. sm__inst_executed_pipe_tensor_op_hmma.sum)"
    return None


@fact("counter_kernel_groups", key=("top_level_op", "op", "kernel", "input_dims"), fields=FIELDS)
def counter_kernel_groups(ctx: Context) -> list[Row]:
    """Counter ranges grouped per op x kernel x shapes, with tensor-pipe and half-FP counts."""
    t = ctx.trace
    tkeys = _tensor_keys(t)
    total = sum(cr.dur for cr in t.counter_ranges) or 0.0
    groups: dict[tuple[Any, ...], Row] = {}
    for cr in t.counter_ranges:
        op = int(t.runtime.op[cr.launch]) if cr.launch != NONE else NONE
        info = op_info(ctx, op)
        name = t.s(cr.name)
        key = (info.stack[0] if info.stack else None, info.stack[-1] if info.stack else None, repr(info.dims), name)
        row = groups.get(key)
        if row is None:
            row = groups[key] = {
                "kernel": name,
                "category": kernel_category(name),
                "dtype": kernel_row_dtype(t, info, name),
                "tensor_cores": uses_tensor_cores(name),
                "tensor_pipe_inst": 0.0 if tkeys else None,
                "half_fp_inst": 0.0,
                "op": key[1],
                "top_level_op": key[0],
                "op_stack": list(info.stack),
                "input_dims": info.dims,
                "source": info.source,
                "count": 0,
                "time_us": 0.0,
            }
        row["count"] += 1
        row["time_us"] += cr.dur
        if tkeys:
            row["tensor_pipe_inst"] += sum(cr.counters.get(k, 0.0) for k in tkeys)
        row["half_fp_inst"] += sum(v for k, v in cr.counters.items() if any(f"_op_{h}_" in k for h in HALF_FP_COUNTERS))
    out = list(groups.values())
    for r in out:
        r["share_pct"] = 100.0 * r["time_us"] / total if total else 0.0
    out.sort(key=lambda r: -r["time_us"])
    return out
