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


def _op_key(ctx: Context, op: int) -> int:
    """A small int naming everything op_info depends on: the chain of (name, kind, dims, types,
    source, forward op's dims and source) up to the root. Ops of repeated steps share keys, so
    op_info is computed once per distinct launch site, not once per launch (tiled / long traces
    have millions of ops)."""
    keys: dict[int, int] = ctx.cache.setdefault("op_keys", {})
    got = keys.get(op)
    if got is not None:
        return got
    cols = ctx.cache.get("op_cols")
    if cols is None:
        o = ctx.trace.ops
        fwd = o.fwd_op
        has = fwd != NONE
        fwd_dims = np.full(len(o), NONE, dtype=np.int64)
        fwd_src = np.full(len(o), NONE, dtype=np.int64)
        fwd_dims[has] = o.dims[fwd[has]]
        fwd_src[has] = o.source[fwd[has]]
        cols = (
            o.parent.tolist(),
            list(zip(o.name.tolist(), o.kind.tolist(), o.dims.tolist(), o.types.tolist(), o.source.tolist(),
                     fwd_dims.tolist(), fwd_src.tolist())),
        )
        ctx.cache["op_cols"] = cols
    parent, own = cols
    table: dict[tuple[Any, ...], int] = ctx.cache.setdefault("op_key_table", {})
    path = []
    o = op
    while o != NONE and o not in keys:
        path.append(o)
        o = parent[o]
    k = keys[o] if o != NONE else -1
    for o in reversed(path):
        tup = (k, own[o])
        k = table.setdefault(tup, len(table))
        keys[o] = k
    return k


def op_info(ctx: Context, op: int) -> OpInfo:
    """Stack, shapes, dtype and source of a launching op. `op`, `top` and `shape_op` are those of
    the first op seen with the same structure (see _op_key): use them as representatives only."""
    cache: dict[int, OpInfo] = ctx.cache.setdefault("op_info", {})
    key = _op_key(ctx, op) if op != NONE else -2
    got = cache.get(key)
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
    cache[key] = info
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
