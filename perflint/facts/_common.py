"""Per-kernel context shared by fact sources: analysis window, launching op, shapes, dtype."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from perflint.facts import Context
from perflint.graph.build import forward_op, op_stack
from perflint.metrics.dtypes import kernel_dtype, op_dtype
from perflint.metrics.steps import launch_ts, step_of
from perflint.model import GPU_SYNC, NONE, Trace


def window_mask(ctx: Context) -> np.ndarray:
    """GPU rows launched inside the analysis steps (all rows when the trace has no steps)."""
    got = ctx.cache.get("window")
    if got is None:
        t = ctx.trace
        got = t.gpu.kind != GPU_SYNC
        if ctx.steps:
            got = got & (step_of(t, ctx.steps, launch_ts(t)) >= 0)
        ctx.cache["window"] = got
    return got  # type: ignore[no-any-return]


def steps_time_us(ctx: Context) -> float:
    return float(sum(s.dur for s in ctx.steps))


@dataclass(frozen=True)
class OpInfo:
    op: int  # bottom-level op index (NONE if unlinked)
    top: int
    stack: tuple[str, ...]
    shape_op: int  # the op whose Input Dims describe the work (forward op for backward kernels)
    dims: Any
    dtype: str | None
    source: str | None
    is_backward: bool


def op_info(ctx: Context, op: int) -> OpInfo:
    cache: dict[int, OpInfo] = ctx.cache.setdefault("op_info", {})
    got = cache.get(op)
    if got is not None:
        return got
    t = ctx.trace
    if op == NONE:
        info = OpInfo(NONE, NONE, (), NONE, None, None, None, False)
    else:
        chain = op_stack(t, op)
        stack = tuple(t.s(int(t.ops.name[o])) for o in chain)
        shape_op = NONE
        # The innermost op on the stack that recorded shapes describes the work.
        for o in reversed(chain):
            if t.ops.dims[o] != NONE:
                shape_op = o
                break
        fwd = forward_op(t, op)
        is_bwd = fwd != NONE
        if shape_op == NONE and is_bwd and t.ops.dims[fwd] != NONE:
            shape_op = fwd
        dims = t.decoded(int(t.ops.dims[shape_op])) if shape_op != NONE else None
        types = t.decoded(int(t.ops.types[shape_op])) if shape_op != NONE else None
        src = NONE
        for o in reversed(chain):
            if t.ops.source[o] != NONE:
                src = int(t.ops.source[o])
                break
        if src == NONE and is_bwd and t.ops.source[fwd] != NONE:
            src = int(t.ops.source[fwd])
        info = OpInfo(
            op=op,
            top=chain[0] if chain else op,
            stack=stack,
            shape_op=shape_op,
            dims=dims,
            dtype=op_dtype(types),
            source=t.s(src) if src != NONE else None,
            is_backward=is_bwd,
        )
    cache[op] = info
    return info


def kernel_op(t: Trace) -> np.ndarray:
    """Launching (bottom-level) op of each GPU row, NONE when unlinked."""
    g = t.gpu
    out = np.full(len(g), NONE, dtype=np.int32)
    linked = g.launch != NONE
    out[linked] = t.runtime.op[g.launch[linked]]
    return out


def kernel_row_dtype(t: Trace, info: OpInfo, kernel_name: str) -> str | None:
    """Kernel name first (it is what ran: an fp32 op may run a tf32 kernel), else the op's dtype."""
    kd = kernel_dtype(kernel_name)
    if kd is not None:
        return kd
    return info.dtype
