"""`gpu_gaps`: device idle gaps inside the analysis steps (the whole trace without steps),
grouped by the CPU op stack that was running when the GPU went idle.

The op is the innermost CPU op (ProfilerStep markers skipped) whose span covers the gap start
on the thread that launched the GPU work ending the gap (the step marker's thread for a gap
that runs to the end of a step): what that thread was busy with instead of launching work.
Only gaps >= 1 ms are kept; rules pick their own, larger, threshold from `longest_gap_us`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from perflint.facts import Context, Fields, Row, fact, typed
from perflint.facts._common import model
from perflint.facts._optree import op_arrays, stack_names
from perflint.graph.build import is_step_marker, ops_by_thread_ts
from perflint.ids import distinct
from perflint.model import NONE, OP_CPU, Trace
from perflint.stepmodel import device_work
from perflint.stepmodel.graph import thread_index
from perflint.stepmodel.usage import GAP_FLOOR_US, window_gaps

FIELDS: Fields = {
    "op": typed("innermost CPU op running on the launching thread when the GPU went idle (null: none)", "text"),
    "op_label": typed("op, or 'no recorded CPU op' when nothing was running on that thread", "text"),
    "op_stack": typed("ops from outermost to innermost at the gap start", "list"),
    "count": typed("gaps >= 1 ms that started under this op", "integer"),
    "longest_gap_us": "longest such gap",
    "longest_gap_ms": "longest such gap in ms",
    "total_gap_ms": "all such gaps together, ms",
    "total_gap_us": "all such gaps together, µs",
    "longest_step": typed("step of the longest gap (null without steps)", "integer"),
    "longest_where": typed("'step N' or 'whole trace' for the longest gap", "text"),
    "gaps_ms": typed("the five longest gaps, ms", "list", unit="ms"),
    "window_ms": "total analysis window (steps, or the whole trace)",
    "window_kernels": typed("kernels launched in the analysis window", "integer"),
}


def _ops_on_threads(ctx: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ops sorted by (thread, ts, -dur), with their threads and start times in that order."""
    t = ctx.trace
    order = ops_by_thread_ts(t)  # link sorted them so (no NaN there: same order)
    if order is None or np.isnan(t.ops.ts).any() or np.isnan(t.ops.dur).any():
        order = _by_thread_ts(t.ops.thread, t.ops.ts, t.ops.dur)
    return order, t.ops.thread[order], t.ops.ts[order]


def _by_thread_ts(thread: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """np.lexsort((-dur, ts, thread)), faster: (ts, -dur) as one complex key (numpy orders complex
    numbers by real, then imaginary part) in one stable sort, which runs fast on nearly sorted
    times, then a stable sort by thread."""
    if np.isnan(ts).any() or np.isnan(dur).any():
        return np.lexsort((-dur, ts, thread))
    z = np.empty(len(ts), dtype=np.complex128)
    z.real = ts
    z.imag = -dur
    order = np.argsort(z, kind="stable")
    th = thread[order]
    if len(th) and -(2**15) <= th.min() and th.max() < 2**15:
        th = th.astype(np.int16)  # a small-int key sorts by radix
    return order[np.argsort(th, kind="stable")]


def _busiest_op_time(ctx: Context, threads: np.ndarray, lo: np.ndarray, hi: np.ndarray, ask: np.ndarray) -> np.ndarray:
    """Per asked gap [lo, hi) on its thread: the middle of the longest overlap of a top-level CPU
    op with the gap (what the thread spent most of the gap in), -1 where none overlaps."""
    t = ctx.trace
    ops = t.ops
    out = np.full(len(lo), -1.0)
    cpu = ops.kind == OP_CPU
    outer = np.ones(len(ops), dtype=bool)
    has = ops.parent != NONE
    outer[has] = ~cpu[ops.parent[has]]  # under an annotation at most
    top = np.flatnonzero(cpu & outer)
    asked = np.flatnonzero(ask & (threads != NONE))
    if not len(asked) or not len(top):
        return out
    for th in distinct(threads[asked]):
        mine = top[ops.thread[top] == th]
        mine = mine[np.argsort(ops.ts[mine], kind="stable")]
        starts = ops.ts[mine]
        ends = np.maximum.accumulate(starts + ops.dur[mine])  # sorted, for the search below
        for i in asked[threads[asked] == th].tolist():
            j0 = int(np.searchsorted(ends, lo[i], side="right"))
            j1 = int(np.searchsorted(starts, hi[i], side="left"))
            if j1 <= j0:
                continue
            a = np.maximum(starts[j0:j1], lo[i])
            b = np.minimum(starts[j0:j1] + ops.dur[mine[j0:j1]], hi[i])
            if (b > a).any():
                k = int(np.argmax(b - a))
                out[i] = (a[k] + b[k]) / 2
    return out


def _ops_at(ctx: Context, threads: np.ndarray, when: np.ndarray) -> list[int]:
    """Per query: the innermost non-step-marker op on `thread` whose span covers `when`
    (start <= when < end), NONE when none.

    Ops are sorted once per trace by (thread, ts, -dur): the last op starting at or before `when`
    on the thread is the innermost candidate; walking up its parents finds the innermost op that
    still covers `when` (nesting makes every covering op an ancestor of that candidate).
    """
    t = ctx.trace
    ops = t.ops
    out = [NONE] * len(when)
    ask = np.flatnonzero(threads != NONE)
    if len(ask) == 0 or len(ops) == 0:
        return out
    order, s_thr, s_ts = ctx.memo.get(_ops_on_threads, ctx)
    cand = np.full(len(when), NONE, dtype=np.int64)
    for th in distinct(threads[ask]):
        q = ask[threads[ask] == th]
        lo, hi = np.searchsorted(s_thr, [th, th + 1])
        k = np.searchsorted(s_ts[lo:hi], when[q], side="right") - 1
        ok = k >= 0
        cand[q[ok]] = order[lo + k[ok]]
    end = ops.ts + ops.dur
    parent = ops.parent
    for i, (c, w) in enumerate(zip(cand.tolist(), when.tolist())):
        while c != NONE and (end[c] <= w or is_step_marker(t, c)):
            c = int(parent[c])
        out[i] = c
    return out


_RUN = 1 << 16  # busy intervals per window_gaps call, GPU rows per _next_work slice
_CUT_TRIES = 16  # intervals tried for each cut between runs


def _gaps_by_run(ms: np.ndarray, me: np.ndarray, lo: float, hi: float) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """`window_gaps(ms, me, lo, hi)` a run of busy intervals at a time, laid end to end the same
    gaps: the window is cut at starts t = ms[j] of intervals with me[j - 1] < t < me[j] (and
    ms[j - 1] < t), where no gap begins or ends; the left piece's last gap then ends at t as the
    window's does, and the right piece's first gap is the empty [t, t], which window_gaps drops."""
    j0, j1 = np.searchsorted(ms, [lo, hi], side="left").tolist()
    # Near every _RUN-th interval, the first one (of a few) that can take a cut.
    j = np.arange(max(j0, 1) + _RUN, j1, _RUN)[:, None] + np.arange(_CUT_TRIES)
    j = np.minimum(j, max(j1 - 1, 1))
    t = ms[j]
    ok = (lo < t) & (t < hi) & (me[j - 1] < t) & (t < me[j]) & (ms[j - 1] < t)
    first = ok.argmax(axis=1)
    has = ok[np.arange(len(ok)), first]
    edges = [lo, *t[np.flatnonzero(has), first[has]].tolist(), hi]
    for a, b in zip(edges[:-1], edges[1:]):
        yield window_gaps(ms, me, a, b)


def _next_work(t: Trace, when: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per time in `when`: the device work row starting first at or after it (the lowest such
    row among equal starts; -1 when none) and its start. What a stable sort of all work by start
    and a search would find, a slice of rows at a time: no sorted copy of the column."""
    g = t.gpu
    work = device_work(t)
    row = np.full(len(when), -1, dtype=np.int64)
    start = np.zeros(len(when))
    for lo in range(0, len(g), _RUN):
        idx = np.flatnonzero(work[lo : lo + _RUN])
        s = g.ts[lo : lo + _RUN][idx]
        order = np.argsort(s, kind="stable")
        s = s[order]
        k = np.searchsorted(s, when, side="left")
        q = np.flatnonzero(k < len(s))
        cand = s[k[q]]
        # NaN starts (sorted last) never qualify; an earlier slice keeps a tie (its rows are lower).
        better = (cand >= when[q]) & ((row[q] < 0) | (cand < start[q]))
        q = q[better]
        row[q] = lo + idx[order[k[q]]]
        start[q] = cand[better]
    return row, start


@fact("gpu_gaps", key=("op",), fields=FIELDS)
def gpu_gaps(ctx: Context) -> list[Row]:
    """Device idle gaps >= 1 ms in the analysis window, grouped per CPU op at the gap start."""
    t = ctx.trace
    m = model(ctx)
    ms, me = m.spans.work
    total_window = 0.0
    a_parts, b_parts, his, default_threads, counts, steps = [], [], [], [], [], []
    for w in m.steps:
        total_window += w.hi - w.lo
        count = 0
        for gs, ge in _gaps_by_run(ms, me, w.lo, w.hi):
            keep = (ge - gs) >= GAP_FLOOR_US
            a_parts.append(gs[keep])
            b_parts.append(ge[keep])
            count += int(np.count_nonzero(keep))
        his.append(w.hi)
        default_threads.append(w.thread)
        counts.append(count)
        steps += [w.number if m.window.has_steps else None] * count
    if not steps:
        return []
    a_all, b_all = np.concatenate(a_parts), np.concatenate(b_parts)
    # The GPU work that ends the gap starts at b; its launching thread was busy elsewhere (the
    # window's own thread when nothing in the window ends the gap, or the work has no launch).
    row, start = _next_work(t, b_all)
    found = row >= 0
    found[found] &= start[found] <= np.repeat(his, counts)[found]
    launch = t.gpu.launch[row[found]].astype(np.int64)
    linked = launch != NONE
    th = np.full(len(launch), NONE, dtype=np.int64)
    th[linked] = t.runtime.thread[launch[linked]]
    thread = np.full(len(b_all), NONE, dtype=np.int64)
    thread[found] = th
    unknown = thread == NONE
    thread[unknown] = np.repeat(np.asarray(default_threads, dtype=np.int64), counts)[unknown]
    ops_at = _ops_at(ctx, thread, a_all)
    sk = op_arrays(ctx).stack_key
    # A gap that opened under no CPU op (the trace's head, before the first GPU work) is put on the
    # op the thread spent most of it in: what kept the GPU without work.
    bare = np.array([c == NONE or not stack_names(ctx, int(sk[c])) for c in ops_at], dtype=bool)
    when = _busiest_op_time(ctx, thread, a_all, b_all, bare)
    for i, c in zip(np.flatnonzero(when >= 0).tolist(), _ops_at(ctx, thread[when >= 0], when[when >= 0])):
        ops_at[i] = c
    # Group by the op's stack of names: the same op in every step is one finding.
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    canon = thread_index(t)
    lanes = [int(canon[th]) if th != NONE else NONE for th in thread.tolist()]
    for op, a, b, step, lane in zip(ops_at, a_all.tolist(), b_all.tolist(), steps, lanes):
        stack = stack_names(ctx, int(sk[op])) if op != NONE else ()
        grp = groups.setdefault(stack, {"gaps": [], "steps": [], "spans": []})
        grp["gaps"].append(b - a)
        grp["steps"].append(step)
        grp["spans"].append((lane, a, b))
    kernels = sum(u.kernel_count for u in m.usage)
    out: list[Row] = []
    for stack, grp in groups.items():
        gaps = np.asarray(grp["gaps"])
        i = int(np.argmax(gaps))
        out.append(
            {
                "_spans": tuple(grp["spans"]),  # the gaps on their threads, for the step model's what-if
                "op": stack[-1] if stack else None,
                "op_label": stack[-1] if stack else "no recorded CPU op",
                "op_stack": list(stack),
                "count": len(gaps),
                "longest_gap_us": float(gaps[i]),
                "longest_gap_ms": float(gaps[i]) / 1000.0,
                "total_gap_ms": float(gaps.sum()) / 1000.0,
                "total_gap_us": float(gaps.sum()),
                "longest_step": grp["steps"][i],
                "longest_where": "whole trace" if grp["steps"][i] is None else f"step {grp['steps'][i]}",
                "gaps_ms": [round(x / 1000.0, 1) for x in sorted(gaps.tolist(), reverse=True)[:5]],
                "window_ms": total_window / 1000.0,
                "window_kernels": kernels,
            }
        )
    out.sort(key=lambda r: -r["longest_gap_us"])
    return out
