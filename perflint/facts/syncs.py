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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perflint.facts import Context, Fields, Row, capability, fact, typed
from perflint.facts._common import in_steps, model, runtime_in_window, window_us
from perflint.facts._group import Groups, id_table, label_table, present_ids
from perflint.facts._optree import OpInfo, on_chain, op_info, op_infos
from perflint.facts.memcpy import parse_memcpy
from perflint.graph.build import runtime_source
from perflint.ids import distinct, isin_ids
from perflint.metrics.apis import is_launch, is_sync_copy, sync_kind
from perflint.model import MEMCPY, NONE, OP_CPU, Trace
from perflint.stepmodel.graph import calls_inside

SYNC_OPS = {"aten::item": "item", "aten::_local_scalar_dense": "item"}


def sync_op(name: str) -> str | None:
    """The sync an op forces, by its name with or without the `aten::` namespace (nvprof's pyprof
    markers name ops without it)."""
    return SYNC_OPS.get(name if name.startswith("aten::") else "aten::" + name)
_DIRECTION = re.compile(r"Memcpy (\w+)")

FIELDS: Fields = {
    "kind": typed("what synchronized: a runtime API name, or the op (aten::item)", "text"),
    "category": typed("device | stream | event | item | memcpy (a synchronous copy call) | pageable_copy (an async copy to pageable host memory, which waits for the copy)", "text"),
    "op": typed("bottom-level op enclosing the sync (the sync op itself for aten::item)", "text"),
    "top_level_op": typed("outermost op on the stack", "text"),
    "op_stack": typed("ops from outermost to innermost", "list"),
    "source": typed("user's file:line, when stacks were recorded", "text"),
    "count": typed("syncs in the analysis steps (whole trace without steps)", "integer"),
    "per_step": typed("count / steps (null without steps)", "number"),
    "blocked_us": "total CPU time blocked in the sync calls",
    "sync_note": typed("what kind of wait, in words, where the API name does not say it (null otherwise)", "text"),
    "gpu_idle_us": "device idle time the syncs caused: from each wait's return to the next GPU work, at most the wait's length (null without GPU work)",
    "mean_us": "mean blocked time per sync",
    "max_us": "longest sync",
    "share_pct": "blocked time / step time (GPU span without steps)",
    "direction": typed("memcpy direction (HtoD, DtoH, DtoD...) for synchronous memcpy, else null", "text"),
    "bytes": typed("bytes copied by the synchronous memcpy calls (null when not linked)", "integer"),
    "max_bytes": "largest single synchronous copy in the group",
    "in_steps": typed("true when counted inside ProfilerSteps, false when the trace has none", "bool"),
    "steps": typed("number of analysis steps", "integer"),
}


def _sync_op_flag(ctx: Context, sync_names: list[int]) -> np.ndarray | None:
    """Per op: it is an aten::item / _local_scalar_dense (None without such ops)."""
    ops = ctx.trace.ops
    if not sync_names or len(ops) == 0:
        return None
    return isin_ids(ops.name, np.asarray(sync_names, dtype=ops.name.dtype))


def _under(ctx: Context, flag: np.ndarray | None, asked: np.ndarray) -> np.ndarray:
    """Per asked op (NONE: False): a sync op is on its chain (the op itself included)."""
    if flag is None:
        return np.zeros(len(asked), dtype=bool)
    return on_chain(ctx, flag, asked)


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
class _Copies:
    """The GPU copy each runtime call launched (the last one linked to it)."""

    calls: np.ndarray  # runtime rows that launched a copy, ascending
    copy: np.ndarray  # per such call: its last linked GPU copy row

    def of(self, calls: np.ndarray) -> np.ndarray:
        """Per runtime row: its linked GPU copy row, NONE where none."""
        out = np.full(len(calls), NONE, dtype=np.int32)
        if not len(self.calls):
            return out
        k = np.searchsorted(self.calls, calls)
        np.minimum(k, len(self.calls) - 1, out=k)
        hit = self.calls[k] == calls
        out[hit] = self.copy[k[hit]]
        return out


def _copies(t: Trace) -> _Copies:
    g = t.gpu
    cp = np.flatnonzero((g.kind == MEMCPY) & (g.launch != NONE))[::-1]
    calls, last = np.unique(g.launch[cp], return_index=True)
    return _Copies(calls, cp[last].astype(np.int32))


def _category(t: Trace) -> Callable[[int], int]:
    """Per runtime API string id: 1 a sync, 2 a synchronous copy, 3 an async copy (it blocks when
    it goes to pageable memory), 0 neither."""

    def category(i: int) -> int:
        api = t.s(i)
        if sync_kind(api):
            return 1
        if is_sync_copy(api):
            return 2
        return 3 if is_launch(api) and "Memcpy" in api else 0

    return category


@dataclass
class _Events:
    """Syncs in the window, in the order they are counted: sync ops, then runtime calls. Each is
    kept as its row alone (`_events`' array); what the groups need of it (kind, op, wait, copy,
    source) is read from the trace a slice or a group at a time."""

    n: int  # how many syncs
    n_ops: int  # how many of them are ops (the first ones)
    category: np.ndarray  # per runtime API id + 1: its _category
    copies: _Copies

    def parts(self) -> list[tuple[slice, bool]]:
        """Slices of the syncs, each all ops (True) or all runtime calls."""
        n, k = self.n, self.n_ops
        return [(slice(a, min(a + _SLICE, k)), True) for a in range(0, k, _SLICE)] + [
            (slice(a, min(a + _SLICE, n)), False) for a in range(k, n, _SLICE)
        ]


def _events(ctx: Context) -> tuple[np.ndarray, _Events]:
    """The syncs' rows (sync ops' op rows, then runtime calls' rows) and what they are; the trace
    has runtime calls."""
    t = ctx.trace
    ops = t.ops
    rt = t.runtime
    g = t.gpu
    sync_ops = [i for i in present_ids(ops.name) if sync_op(t.s(i))]
    flag = _sync_op_flag(ctx, sync_ops)
    cand = np.zeros(0, dtype=np.int64)
    if sync_ops:
        cand = np.flatnonzero(isin_ids(ops.name, np.asarray(sync_ops, dtype=np.int32)) & (ops.kind == OP_CPU))
        cand = cand[in_steps(ctx, ops.ts[cand])]
        # _local_scalar_dense inside aten::item: counted as the item
        cand = cand[~_under(ctx, flag, ops.parent[cand])]
        cand = cand[_runtime_inside(t, cand)]
    category = id_table(rt.name, _category(t), dtype=np.int8, fill=0)
    copies = _copies(t)
    # An async copy from device to pageable host memory returns only when the copy is done.
    to_pageable = id_table(g.name, lambda i: parse_memcpy(t.s(i))[::2] == ("DtoH", "Pageable"), dtype=bool, fill=False)
    parts = [cand.astype(_ROW)]
    for a in range(0, len(rt), _SLICE):  # a slice at a time: the categorising temporaries stay small
        rows = np.flatnonzero(category[rt.name[a : a + _SLICE] + 1] > 0)
        rows += a
        rows = rows[runtime_in_window(ctx, rows)]
        rows = rows[~_under(ctx, flag, rt.op[rows])]  # inside aten::item: counted as the item
        async_rows = category[rt.name[rows] + 1] == 3
        if async_rows.any():
            linked = copies.of(rows[async_rows])
            names = np.full(len(linked), NONE, dtype=np.int64)
            names[linked != NONE] = g.name[linked[linked != NONE]]
            keep = ~async_rows
            keep[async_rows] = to_pageable[names + 1]
            rows = rows[keep]
        parts.append(rows.astype(_ROW))
    rows = np.concatenate(parts)
    return rows, _Events(len(rows), len(cand), category, copies)


@dataclass
class _First:
    """What a group's row reads of its first sync."""

    kind: str
    category: int  # _category of a runtime call, 0 for a sync op
    info: OpInfo
    source: str | None  # the runtime call's own frame, where its ops name no source
    direction: str | None


class _Keys:
    """Per sync, its group (kind x direction x op stack and source x runtime source) as one code,
    a slice of syncs at a time. The op infos are resolved in the order the syncs come, as one
    op_infos over all of them would."""

    def __init__(self, ctx: Context, ev: _Events, rows: np.ndarray) -> None:
        t = ctx.trace
        self.ctx, self.ev = ctx, ev
        kind_ids = present_ids(t.ops.name[rows[: ev.n_ops]]) + (np.flatnonzero(ev.category > 0) - 1).tolist()
        self.kind, kinds = label_table(kind_ids, max(kind_ids, default=NONE), t.s)
        copy_names = [NONE, *present_ids(t.gpu.name[ev.copies.copy])]
        self.dir, directions = label_table(copy_names, max(copy_names), lambda i: self._direction(i))
        self.where: dict[tuple[tuple[str, ...], str | None], int] = {}
        self.source = runtime_source(t)
        # Digits, least significant first: kind, direction, runtime source (+1: NONE is 0), where.
        self.k = len(kinds)
        self.kd = self.k * len(directions)
        self.kds = self.kd * (len(t.strings) + 1)
        self.dtype = np.int32 if self.kds * (len(t.ops) + 1) < 2**31 else np.int64

    def _direction(self, name: int) -> str | None:
        return _direction(self.ctx.trace.s(name)) if name != NONE else None

    def codes(self, rows: np.ndarray) -> np.ndarray:
        out = np.empty(len(rows), dtype=self.dtype)
        for s, of_ops in self.ev.parts():
            out[s] = self._code(rows[s], of_ops)
        return out

    def _code(self, rows: np.ndarray, of_ops: bool) -> np.ndarray:
        t = self.ctx.trace
        ev = self.ev
        code: np.ndarray
        if of_ops:
            op = rows
            code = self.kind[t.ops.name[rows] + 1].astype(np.int64)
            code += int(self.dir[0]) * self.k
            src = np.zeros(len(rows), dtype=np.int64)
        else:
            kind = t.runtime.name[rows]
            op = t.runtime.op[rows]
            code = self.kind[kind + 1].astype(np.int64)
            copying = np.flatnonzero(ev.category[kind + 1] >= 2)
            del kind
            names = np.full(len(rows), NONE, dtype=np.int32)
            copy = ev.copies.of(rows[copying])
            linked = copy != NONE
            names[copying[linked]] = t.gpu.name[copy[linked]]
            code += self.dir[names + 1].astype(np.int64) * self.k
            src = self.source[rows].astype(np.int64)
            src += 1
        iid, infos = op_infos(self.ctx, op)
        where = np.asarray([self.where.setdefault((i.stack, i.source), len(self.where)) for i in infos], dtype=np.int64)
        # A runtime call's own frame names it only where its ops name none (see runtime_source).
        has_src = np.asarray([i.source is not None for i in infos], dtype=bool)
        src[has_src[iid]] = 0
        src *= self.kd
        code += src
        del src
        code += where[iid] * self.kds
        return code

    def first(self, e: int, row: int) -> _First:
        """What a group reads of its first sync: sync e, at `row` of the ops or runtime calls."""
        t = self.ctx.trace
        if e < self.ev.n_ops:
            return _First(t.s(int(t.ops.name[row])), 0, op_info(self.ctx, row), None, None)
        api = int(t.runtime.name[row])
        category = int(self.ev.category[api + 1])
        info = op_info(self.ctx, int(t.runtime.op[row]))
        src = int(self.source[row])
        copy = int(self.ev.copies.of(np.asarray([row]))[0]) if category >= 2 else NONE
        return _First(
            t.s(api),
            category,
            info,
            t.s(src) if src != NONE and info.source is None else None,
            self._direction(int(t.gpu.name[copy])) if copy != NONE else None,
        )


def _idle(ms: np.ndarray, me: np.ndarray, back: np.ndarray, blocked: np.ndarray) -> np.ndarray:
    """Per sync (`back`: when its wait returned, `blocked`: its length): how long the device sat
    idle from the moment the wait returned until new work started, at most the wait's length. The
    wait drained the queue, so the GPU idles until the host queues more; without the sync that host
    work would have overlapped the queued work, by at most the wait's length. Idle time during the
    wait is not counted: the GPU was then held up by something the sync does not cause (another
    stream, another rank). `ms`, `me`: the busy intervals (busy_intervals), at least one."""
    k = np.searchsorted(ms, back, side="right")  # first busy interval starting after the return
    j = np.maximum(k - 1, 0)
    inside = (k > 0) & (me[j] > back)  # still busy when the wait returned
    np.minimum(k, len(ms) - 1, out=j)
    part = ms[j]  # the next work's start; the return itself where none follows
    past = k >= len(ms)
    part[past] = back[past]
    part -= back
    np.maximum(part, 0.0, out=part)
    np.minimum(part, blocked, out=part)
    part[inside] = 0.0
    return part


_SLICE = 1 << 16
_ROW = np.int32  # op and runtime rows (the model's int32 columns index them)


@dataclass
class _Waits:
    """A group's waits: their total, longest, and the device idle time they caused."""

    count: int
    blocked: float
    longest: float
    idle: float | None


def _waits(ctx: Context, ops: np.ndarray, calls: np.ndarray, busy: tuple[np.ndarray, np.ndarray]) -> _Waits:
    """The waits of a group's sync ops then runtime calls (sums over the group's values in sync
    order, as one array)."""
    t = ctx.trace
    dur = _joined([t.ops.dur[ops], t.runtime.dur[calls]])
    blocked, longest = float(dur.sum()), float(dur.max())
    del dur
    ms, me = busy
    if not len(ms):
        return _Waits(len(ops) + len(calls), blocked, longest, None)
    idle = np.empty(len(ops) + len(calls))
    at = 0
    for col, rows in ((t.ops, ops), (t.runtime, calls)):
        for a in range(0, len(rows), _SLICE):  # a slice at a time: the temporaries stay small
            r = rows[a : a + _SLICE]
            w = col.dur[r]
            idle[at : at + len(r)] = _idle(ms, me, col.ts[r] + w, w)
            at += len(r)
    return _Waits(len(idle), blocked, longest, float(idle.sum()))


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The parts end to end; a part that is the only one holding rows is taken as it is."""
    full = [p for p in parts if len(p)]
    return full[0] if len(full) == 1 else np.concatenate(parts)


def _row(ctx: Context, ev: _Events, first: _First, ops: np.ndarray, calls: np.ndarray, busy: tuple[np.ndarray, np.ndarray]) -> Row:
    """A group's row (share_pct left to the caller), from its sync ops' and runtime calls' rows."""
    g = ctx.trace.gpu
    steps = len(ctx.steps)
    waits = _waits(ctx, ops, calls, busy)
    copies = ev.copies.of(calls) if first.category >= 2 else np.zeros(0, dtype=np.int32)
    sizes = g.nbytes[copies[copies != NONE]]
    sizes = sizes[sizes >= 0]
    kind, category, stack, count = first.kind, first.category, first.info.stack, waits.count
    return {
        # The runtime calls that waited (those inside the sync ops too), for the step model's what-if.
        "_calls": np.concatenate([calls.astype(np.int64), calls_inside(ctx.trace, ops.astype(np.int64))]),
        "kind": kind,
        "category": "memcpy" if category == 2 else "pageable_copy" if category == 3 else sync_kind(kind) or sync_op(kind),
        "op": stack[-1] if stack else None,
        "top_level_op": stack[0] if stack else None,
        "op_stack": list(stack),
        "source": first.info.source if first.source is None else first.source,
        "count": count,
        "per_step": count / steps if steps else None,
        "blocked_us": waits.blocked,
        "sync_note": "copies to pageable host memory" if category == 3 else None,
        "gpu_idle_us": waits.idle,
        "mean_us": waits.blocked / count,
        "max_us": waits.longest,
        "share_pct": None,
        "direction": first.direction,
        "bytes": int(sizes.sum()) if len(sizes) else None,
        "max_bytes": int(sizes.max()) if len(sizes) else None,
        "in_steps": bool(steps),
        "steps": steps,
    }


@fact("sync_groups", key=("kind", "direction", "op_stack", "source"), fields=FIELDS)
def sync_groups(ctx: Context) -> list[Row]:
    """Host syncs in the analysis steps, grouped per kind x op stack x source (never per call)."""
    if not len(ctx.trace.runtime):  # nothing shows that an item waited on a GPU
        return []
    rows, ev = _events(ctx)
    if not len(rows):
        return []
    keys = _Keys(ctx, ev, rows)
    groups = Groups(keys.codes(rows))
    firsts = [keys.first(e, r) for e, r in zip(groups.first.tolist(), rows[groups.first].tolist())]
    slices = groups.slices()
    # How many of each group's syncs are ops (they come first); then the syncs' rows in group
    # order, so that a group's rows are a slice (the group ids and order can go).
    of_ops = np.bincount(groups.gid[: ev.n_ops], minlength=len(groups)).tolist()
    rows = rows[groups.order]
    del groups
    busy = model(ctx).spans.work
    out = [_row(ctx, ev, first, rows[sl][:k], rows[sl][k:], busy) for first, sl, k in zip(firsts, slices, of_ops)]
    del rows
    span = window_us(ctx)
    if span:
        for r in out:
            r["share_pct"] = 100.0 * r["blocked_us"] / span
    out.sort(key=lambda r: -r["blocked_us"])
    return out


def _direction(copy_name: str) -> str | None:
    m = _DIRECTION.match(copy_name)
    return m.group(1) if m else None


@capability("host_activity", "the trace has host-side activity (CPU ops or runtime calls) to attribute syncs to")
def _host_activity(t: Trace) -> str | None:
    if len(t.runtime) or len(t.ops):
        return None
    return "the trace has neither CPU operator nor CUDA/HIP runtime events"
