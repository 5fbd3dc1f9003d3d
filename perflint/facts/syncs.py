"""`sync_groups`: host-side synchronizations inside the analysis steps (the whole trace when it
has no ProfilerStep markers), grouped per sync kind x op stack x source line.

Kinds: device/stream/event synchronize runtime calls (CUDA runtime, driver and HIP: facts.apis),
the ops that force one (aten::item, aten::_local_scalar_dense), synchronous memcpy calls (cudaMemcpy,
hipMemcpyWithStream, not *Async), and async copies from device to pageable host memory, which
return only once the copy is done (tensor.cpu() / .to('cpu') of a GPU tensor). A runtime sync or memcpy made inside an aten::item is counted once, as the item: the op
is what the user wrote. Blocked time is the CPU duration of the call (or of the outermost sync op).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from perflint.facts import Context, Row, capability, fact
from perflint.facts._group import Groups, dense_ids, id_table, labels, present_ids
from perflint.facts._optree import on_chain, op_infos
from perflint.facts.apis import is_launch, is_sync_copy, sync_kind
from perflint.facts.launch import runtime_in_window, window_span_us
from perflint.facts.memcpy import parse_memcpy
from perflint.facts.steps import busy_intervals
from perflint.graph.build import runtime_source
from perflint.ids import distinct, isin_ids
from perflint.metrics.steps import step_of
from perflint.model import MEMCPY, NONE, OP_CPU, Trace

SYNC_OPS = {"aten::item": "item", "aten::_local_scalar_dense": "item"}
_DIRECTION = re.compile(r"Memcpy (\w+)")

FIELDS = {
    "kind": "what synchronized: a runtime API name, or the op (aten::item)",
    "category": "device | stream | event | item | memcpy (a synchronous copy call) | pageable_copy (an async copy to pageable host memory, which waits for the copy)",
    "op": "bottom-level op enclosing the sync (the sync op itself for aten::item)",
    "top_level_op": "outermost op on the stack",
    "op_stack": "ops from outermost to innermost",
    "source": "user's file:line, when stacks were recorded",
    "count": "syncs in the analysis steps (whole trace without steps)",
    "per_step": "count / steps (null without steps)",
    "blocked_us": "total CPU time blocked in the sync calls",
    "sync_note": "what kind of wait, in words, where the API name does not say it (null otherwise)",
    "gpu_idle_us": "device idle time the syncs caused: from each wait's return to the next GPU work, at most the wait's length (null without GPU work)",
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


def _under_sync_op(ctx: Context, sync_names: list[int], asked: np.ndarray) -> np.ndarray:
    """Per asked op (NONE: False): an aten::item / _local_scalar_dense is on its chain (the op
    itself included)."""
    ops = ctx.trace.ops
    if not sync_names or len(ops) == 0:
        return np.zeros(len(asked), dtype=bool)
    hit = isin_ids(ops.name, np.asarray(sync_names, dtype=ops.name.dtype))
    return on_chain(ctx, hit, asked)


def _runtime_inside(t: Trace, cand: np.ndarray) -> np.ndarray:
    """Per op: a runtime call ran inside it on its thread. `.item()` of a GPU tensor copies and
    waits (cudaMemcpyAsync + cudaStreamSynchronize inside aten::_local_scalar_dense); of a CPU
    tensor it calls nothing, and blocks nothing: AdamW's per-parameter step counters do that
    every step (fixtures/gpu/regress_base). Used only when the trace recorded runtime calls; a
    CPU-only profile of a GPU program cannot tell the two apart."""
    rt, ops = t.runtime, t.ops
    keep = np.zeros(len(cand), dtype=bool)
    for th in distinct(ops.thread[cand]):
        mine = np.flatnonzero(ops.thread[cand] == th)
        ts = np.sort(rt.ts[rt.thread == th])
        if not len(ts):
            continue
        first = np.searchsorted(ts, ops.ts[cand[mine]], side="left")
        ok = first < len(ts)
        inside = np.zeros(len(mine), dtype=bool)
        inside[ok] = ts[first[ok]] <= (ops.ts + ops.dur)[cand[mine[ok]]]
        keep[mine] = inside
    return keep


@dataclass
class _Events:
    """Syncs in the window, in the order they are counted: sync ops, then runtime calls."""

    kind: np.ndarray  # string id of the op name / runtime API
    op: np.ndarray  # op whose stack describes the sync
    blocked: np.ndarray  # us
    idle: np.ndarray | None  # us, device idle time the wait caused (`_idle_after`), None without GPU work
    copy: np.ndarray  # linked GPU copy row of a synchronous memcpy call, else NONE
    memcpy: np.ndarray  # bool: a synchronous memcpy call
    to_host: np.ndarray  # bool: an async copy call that blocked because it went to pageable memory
    src: np.ndarray  # user source (string id) of a runtime call outside every op, else NONE


def _events(ctx: Context) -> _Events:
    t = ctx.trace
    ops = t.ops
    rt = t.runtime
    sync_ops = [i for i in present_ids(ops.name) if t.s(i) in SYNC_OPS]
    kind, op, blocked, back = [], [], [], []
    if sync_ops and len(rt):  # without runtime calls nothing shows that an item waited on a GPU
        cand = np.flatnonzero(isin_ids(ops.name, np.asarray(sync_ops, dtype=np.int32)) & (ops.kind == OP_CPU))
        cand = cand[_op_window(ctx, ops.ts[cand])]
        # _local_scalar_dense inside aten::item: counted as the item
        cand = cand[~_under_sync_op(ctx, sync_ops, ops.parent[cand])]
        if len(rt):
            cand = cand[_runtime_inside(t, cand)]
        kind.append(ops.name[cand])
        op.append(cand)
        blocked.append(ops.dur[cand])
        back.append(ops.ts[cand] + ops.dur[cand])
    n_ops = sum(len(k) for k in kind)
    copy = np.full(n_ops, NONE, dtype=np.int32)
    memcpy = np.zeros(n_ops, dtype=bool)
    to_host = np.zeros(n_ops, dtype=bool)
    src = np.full(n_ops, NONE, dtype=np.int32)
    if len(rt):
        def category(i: int) -> int:
            api = t.s(i)
            if sync_kind(api):
                return 1
            if is_sync_copy(api):
                return 2
            return 3 if is_launch(api) and "Memcpy" in api else 0  # async copy: blocks when it goes to pageable memory

        cat = id_table(rt.name, category, dtype=np.int8, fill=0)[rt.name + 1]
        rows = np.flatnonzero(cat > 0)
        rows = rows[runtime_in_window(ctx, rows)]
        rop = rt.op[rows]
        if len(ops):
            rows = rows[~_under_sync_op(ctx, sync_ops, rop)]  # inside aten::item: counted as the item
        # memcpy direction / bytes per runtime call via its linked GPU copy (the last one linked)
        g = t.gpu
        cp = np.flatnonzero((g.kind == MEMCPY) & (g.launch != NONE))[::-1]
        launches, last = np.unique(g.launch[cp], return_index=True)
        is_copy = cat[rows] >= 2
        k = np.searchsorted(launches, rows[is_copy])
        k_ok = k < len(launches)
        hit = np.zeros(len(k), dtype=bool)
        hit[k_ok] = launches[k[k_ok]] == rows[is_copy][k_ok]
        rcopy = np.full(len(rows), NONE, dtype=np.int32)
        rcopy[np.flatnonzero(is_copy)[hit]] = cp[last[k[hit]]]
        # An async copy from device to pageable host memory returns only when the copy is done.
        to_pageable = id_table(g.name, lambda i: parse_memcpy(t.s(i))[::2] == ("DtoH", "Pageable"), dtype=bool, fill=False)
        async_rows = cat[rows] == 3
        blocking = np.zeros(len(rows), dtype=bool)
        linked = rcopy[async_rows]
        names = np.full(len(linked), NONE, dtype=np.int64)
        names[linked != NONE] = g.name[linked[linked != NONE]]
        blocking[async_rows] = to_pageable[names + 1]
        keep = ~async_rows | blocking
        rows, rcopy = rows[keep], rcopy[keep]
        is_copy = cat[rows] == 2
        pageable = cat[rows] == 3
        kind.append(rt.name[rows])
        op.append(rt.op[rows])
        blocked.append(rt.dur[rows])
        back.append(rt.ts[rows] + rt.dur[rows])
        copy = _joined([copy, rcopy], np.int32)
        memcpy = _joined([memcpy, is_copy], np.bool_)
        to_host = _joined([to_host, pageable], np.bool_)
        src = _joined([src, runtime_source(t)[rows]], np.int32)
        del rows, rcopy, is_copy, pageable
    waited = _joined(blocked, np.float64)
    idle = _idle_after(ctx, _joined(back, np.float64), waited)
    return _Events(_joined(kind, np.int32), _joined(op, np.int32), waited, idle, copy, memcpy, to_host, src)


def _joined(parts: list[np.ndarray], dt: type[np.generic]) -> np.ndarray:
    """The parts end to end as `dt`; a part that is the only one holding rows is taken as it
    is (the parts are the caller's own arrays)."""
    full = [p for p in parts if len(p)]
    if len(full) == 1:
        return full[0].astype(dt, copy=False)
    return np.concatenate(parts).astype(dt, copy=False) if parts else np.zeros(0, dtype=dt)


def _idle_after(ctx: Context, back: np.ndarray, blocked: np.ndarray) -> np.ndarray | None:
    """Per sync (`back`: when its wait returned, `blocked`: its length): how long the device sat
    idle from the moment the wait returned until new work started, at most the wait's length. The
    wait drained the queue, so the GPU idles until the host queues more; without the sync that host
    work would have overlapped the queued work, by at most the wait's length. Idle time during the
    wait is not counted: the GPU was then held up by something the sync does not cause (another
    stream, another rank). None without GPU work."""
    ms, me = busy_intervals(ctx)
    if not len(ms):
        return None
    idle = np.empty(len(back))
    for i in range(0, len(back), _SLICE):  # a slice at a time: the index temporaries stay small
        s = slice(i, i + _SLICE)
        b = back[s]
        k = np.searchsorted(ms, b, side="right")  # first busy interval starting after the return
        j = np.maximum(k - 1, 0)
        inside = (k > 0) & (me[j] > b)  # still busy when the wait returned
        np.minimum(k, len(ms) - 1, out=j)
        part = ms[j]  # the next work's start; the return itself where none follows
        past = k >= len(ms)
        part[past] = b[past]
        part -= b
        np.maximum(part, 0.0, out=part)
        np.minimum(part, blocked[s], out=part)
        part[inside] = 0.0
        idle[s] = part
    return idle


_SLICE = 1 << 18


@fact("sync_groups", key=("kind", "direction", "op_stack", "source"), fields=FIELDS)
def sync_groups(ctx: Context) -> list[Row]:
    """Host syncs in the analysis steps, grouped per kind x op stack x source (never per call)."""
    ev = _events(ctx)
    if not len(ev.op):
        return []
    t = ctx.trace
    g = t.gpu
    steps = len(ctx.steps)
    span = window_span_us(ctx)
    iid, infos = op_infos(ctx, ev.op)
    where, _ = dense_ids((info.stack, info.source) for info in infos)
    kind_id, kinds = labels(ev.kind, t.s)
    has_copy = ev.copy != NONE
    copy_name = np.full(len(ev.op), NONE, dtype=np.int32)
    copy_name[has_copy] = g.name[ev.copy[has_copy]]
    dir_id, directions = labels(copy_name, lambda i: _direction(t.s(i)) if i != NONE else None)
    del copy_name
    # A runtime call's own frame names it only where its ops name none (see runtime_source).
    op_has_src = np.fromiter((info.source is not None for info in infos), dtype=bool, count=len(infos))
    src = np.where(op_has_src[iid], NONE, ev.src)
    groups = Groups(kind_id, dir_id, where[iid], src)
    # What the rows read of each group's first sync; the per-sync keys are not needed past here.
    first_at = groups.first
    first_kind, first_dir, first_iid, first_src = (x[first_at].tolist() for x in (kind_id, dir_id, iid, src))
    del kind_id, dir_id, iid, src
    order = groups.order
    rows: list[Row] = []
    for gi, sl in enumerate(groups.slices()):
        # Each group's values gathered on their own: no reordered copy of every sync's.
        idx = order[sl]
        dur = ev.blocked[idx]
        first = int(first_at[gi])
        info = infos[first_iid[gi]]
        stack = info.stack
        source = info.source if first_src[gi] == NONE else t.s(first_src[gi])
        kind = kinds[first_kind[gi]]
        copies = ev.copy[idx]
        sizes = g.nbytes[copies[copies != NONE]]
        sizes = sizes[sizes >= 0]
        blocked = float(dur.sum())
        count = len(dur)
        rows.append(
            {
                "kind": kind,
                "category": "memcpy" if ev.memcpy[first] else "pageable_copy" if ev.to_host[first] else sync_kind(kind) or SYNC_OPS[kind],
                "op": stack[-1] if stack else None,
                "top_level_op": stack[0] if stack else None,
                "op_stack": list(stack),
                "source": source,
                "count": count,
                "per_step": count / steps if steps else None,
                "blocked_us": blocked,
                "sync_note": "copies to pageable host memory" if ev.to_host[first] else None,
                "gpu_idle_us": float(ev.idle[idx].sum()) if ev.idle is not None else None,
                "mean_us": blocked / count,
                "max_us": float(dur.max()),
                "share_pct": 100.0 * blocked / span if span else None,
                "direction": directions[first_dir[gi]],
                "bytes": int(sizes.sum()) if len(sizes) else None,
                "max_bytes": int(sizes.max()) if len(sizes) else None,
                "in_steps": bool(steps),
                "steps": steps,
            }
        )
    rows.sort(key=lambda r: -r["blocked_us"])
    return rows


def _direction(copy_name: str) -> str | None:
    m = _DIRECTION.match(copy_name)
    return m.group(1) if m else None


@capability("host_activity", "the trace has host-side activity (CPU ops or runtime calls) to attribute syncs to")
def _host_activity(t: Trace) -> str | None:
    if len(t.runtime) or len(t.ops):
        return None
    return "the trace has neither CPU operator nor CUDA/HIP runtime events"
