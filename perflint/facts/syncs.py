"""`sync_groups`: host-side synchronizations inside the analysis steps (the whole trace when it
has no ProfilerStep markers), grouped per sync kind x op stack x source line.

Kinds: device/stream/event synchronize runtime calls (CUDA runtime, driver and HIP), the ops that
force one (aten::item, aten::_local_scalar_dense), and synchronous memcpy calls (cudaMemcpy, not
*Async). A runtime sync or memcpy made inside an aten::item is counted once, as the item: the op
is what the user wrote. Blocked time is the CPU duration of the call (or of the outermost sync op).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from perflint.facts import Context, Row, capability, fact
from perflint.facts._common import op_info
from perflint.facts.launch import runtime_window, window_span_us
from perflint.graph.build import op_chain
from perflint.metrics.steps import step_of
from perflint.model import MEMCPY, NONE, OP_CPU, Trace

SYNC_CALLS = {
    "cudaDeviceSynchronize": "device", "cudaStreamSynchronize": "stream", "cudaEventSynchronize": "event",
    "cuCtxSynchronize": "device", "cuStreamSynchronize": "stream", "cuEventSynchronize": "event",
    "hipDeviceSynchronize": "device", "hipStreamSynchronize": "stream", "hipEventSynchronize": "event",
}
SYNC_OPS = {"aten::item": "item", "aten::_local_scalar_dense": "item"}
# Blocking copies: the runtime returns after the copy (cudaMemcpy*, cuMemcpy*, hipMemcpy*), not *Async.
_SYNC_MEMCPY = re.compile(r"^(cuda|hip)Memcpy(2D|3D|ToSymbol|FromSymbol|Peer|DtoD|HtoD|DtoH)?$|^cuMemcpy(HtoD|DtoH|DtoD|2D|3D|Peer)?(_v2)?$")
_DIRECTION = re.compile(r"Memcpy (\w+)")

FIELDS = {
    "kind": "what synchronized: a runtime API name, or the op (aten::item)",
    "category": "device | stream | event | item | memcpy",
    "op": "bottom-level op enclosing the sync (the sync op itself for aten::item)",
    "top_level_op": "outermost op on the stack",
    "op_stack": "ops from outermost to innermost",
    "source": "user's file:line, when stacks were recorded",
    "count": "syncs in the analysis steps (whole trace without steps)",
    "per_step": "count / steps (null without steps)",
    "blocked_us": "total CPU time blocked in the sync calls",
    "mean_us": "mean blocked time per sync",
    "max_us": "longest sync",
    "share_pct": "blocked time / step time (GPU span without steps)",
    "direction": "memcpy direction (HtoD, DtoH, DtoD...) for synchronous memcpy, else null",
    "bytes": "bytes copied by the synchronous memcpy calls (null when not linked)",
    "max_bytes": "largest single synchronous copy in the group",
    "in_steps": "true when counted inside ProfilerSteps, false when the trace has none",
    "steps": "number of analysis steps",
}


def _op_window(ctx: Context, ts: np.ndarray) -> np.ndarray:
    if not ctx.steps:
        return np.ones(len(ts), dtype=bool)
    return step_of(ctx.trace, ctx.steps, ts) >= 0


def _sync_op_ancestor(t: Trace, op: int, sync_names: set[int]) -> int:
    """Outermost aten::item / _local_scalar_dense on the chain ending at `op`, else NONE."""
    if op == NONE:
        return NONE
    for o in op_chain(t, op):
        if int(t.ops.name[o]) in sync_names:
            return o
    return NONE


def _events(ctx: Context) -> list[tuple[str, str, int, float, str | None, int | None]]:
    """(kind, category, op, blocked_us, direction, bytes) for every sync in the window."""
    t = ctx.trace
    ops = t.ops
    name_of = {i: t.s(i) for i in np.unique(ops.name).tolist() if t.s(i) in SYNC_OPS}
    sync_names = set(name_of)
    out: list[tuple[str, str, int, float, str | None, int | None]] = []
    if sync_names:
        cand = np.flatnonzero(np.isin(ops.name, np.fromiter(sync_names, dtype=np.int32)) & (ops.kind == OP_CPU))
        cand = cand[_op_window(ctx, ops.ts[cand])]
        for o in cand.tolist():
            if _sync_op_ancestor(t, int(ops.parent[o]), sync_names) != NONE:
                continue  # _local_scalar_dense inside aten::item: counted as the item
            name = name_of[int(ops.name[o])]
            out.append((name, SYNC_OPS[name], o, float(ops.dur[o]), None, None))
    rt = t.runtime
    if len(rt) == 0:
        return out
    names = {i: t.s(i) for i in np.unique(rt.name).tolist()}
    # memcpy direction / bytes per runtime call via its linked GPU copy
    g = t.gpu
    cp = np.flatnonzero((g.kind == MEMCPY) & (g.launch != NONE))
    copy_of = {int(g.launch[i]): i for i in cp.tolist()}
    win = runtime_window(ctx)
    for r in np.flatnonzero(win).tolist():
        api = names[int(rt.name[r])]
        cat = SYNC_CALLS.get(api)
        if cat is None and _SYNC_MEMCPY.match(api):
            cat = "memcpy"
        if cat is None:
            continue
        op = int(rt.op[r])
        if _sync_op_ancestor(t, op, sync_names) != NONE:
            continue  # inside aten::item: already counted as the item
        direction: str | None = None
        nbytes: int | None = None
        if cat == "memcpy":
            gi = copy_of.get(r)
            if gi is not None:
                m = _DIRECTION.match(t.s(int(g.name[gi])))
                direction = m.group(1) if m else None
                nbytes = int(g.nbytes[gi]) if g.nbytes[gi] >= 0 else None
        out.append((api, cat, op, float(rt.dur[r]), direction, nbytes))
    return out


@fact("sync_groups", key=("kind", "direction", "op_stack", "source"), fields=FIELDS)
def sync_groups(ctx: Context) -> list[Row]:
    """Host syncs in the analysis steps, grouped per kind x op stack x source (never per call)."""
    events = _events(ctx)
    if not events:
        return []
    steps = len(ctx.steps)
    span = window_span_us(ctx)
    groups: dict[tuple[Any, ...], list[tuple[str, str, int, float, str | None, int | None]]] = {}
    for ev in events:
        info = op_info(ctx, ev[2])
        groups.setdefault((ev[0], ev[4], info.stack, info.source), []).append(ev)
    rows: list[Row] = []
    for (kind, direction, stack, source), evs in groups.items():
        dur = np.array([e[3] for e in evs])
        sizes = [e[5] for e in evs if e[5] is not None]
        blocked = float(dur.sum())
        rows.append(
            {
                "kind": kind,
                "category": evs[0][1],
                "op": stack[-1] if stack else None,
                "top_level_op": stack[0] if stack else None,
                "op_stack": list(stack),
                "source": source,
                "count": len(evs),
                "per_step": len(evs) / steps if steps else None,
                "blocked_us": blocked,
                "mean_us": blocked / len(evs),
                "max_us": float(dur.max()),
                "share_pct": 100.0 * blocked / span if span else None,
                "direction": direction,
                "bytes": int(sum(sizes)) if sizes else None,
                "max_bytes": max(sizes) if sizes else None,
                "in_steps": bool(steps),
                "steps": steps,
            }
        )
    rows.sort(key=lambda r: -r["blocked_us"])
    return rows



@capability("host_activity")
def _host_activity(t: Trace) -> str | None:
    if len(t.runtime) or len(t.ops):
        return None
    return "the trace has neither CPU operator nor CUDA/HIP runtime events"
