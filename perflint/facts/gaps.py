"""`gpu_gaps`: device idle gaps inside the analysis steps (the whole trace without steps),
grouped by the CPU op stack that was running when the GPU went idle.

The op is the innermost CPU op (ProfilerStep markers skipped) whose span covers the gap start
on the thread that launched the GPU work ending the gap (the step marker's thread for a gap
that runs to the end of a step): what that thread was busy with instead of launching work.
Only gaps >= 1 ms are kept; rules pick their own, larger, threshold from `longest_gap_us`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from perflint.facts import Context, Row, fact
from perflint.facts._optree import op_arrays, stack_names
from perflint.facts.steps import GAP_FLOOR_US, busy_intervals, device_work, window_gaps, windows
from perflint.graph.build import is_step_marker, ops_by_thread_ts
from perflint.ids import distinct
from perflint.model import NONE, Trace

FIELDS = {
    "op": "innermost CPU op running on the launching thread when the GPU went idle (null: none)",
    "op_label": "op, or 'no recorded CPU op' when nothing was running on that thread",
    "op_stack": "ops from outermost to innermost at the gap start",
    "count": "gaps >= 1 ms that started under this op",
    "longest_gap_us": "longest such gap",
    "longest_gap_ms": "longest such gap in ms",
    "total_gap_ms": "all such gaps together, ms",
    "total_gap_us": "all such gaps together, µs",
    "longest_step": "step of the longest gap (null without steps)",
    "longest_where": "'step N' or 'whole trace' for the longest gap",
    "gaps_ms": "the five longest gaps, ms",
    "window_ms": "total analysis window (steps, or the whole trace)",
}


def _ops_on_threads(t: Trace, cache: dict[Hashable, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ops sorted by (thread, ts, -dur), with their threads and start times in that order."""
    got = cache.get("ops_by_thread_ts")
    if got is None:
        order = ops_by_thread_ts(t)  # link sorted them so (no NaN there: same order)
        if order is None or np.isnan(t.ops.ts).any() or np.isnan(t.ops.dur).any():
            order = _by_thread_ts(t.ops.thread, t.ops.ts, t.ops.dur)
        got = (order, t.ops.thread[order], t.ops.ts[order])
        cache["ops_by_thread_ts"] = got
    return got


def _by_thread_ts(thread: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """np.lexsort((-dur, ts, thread)), faster: (ts, -dur) as one complex key (numpy orders complex
    numbers by real, then imaginary part) in one stable sort, which runs fast on nearly sorted
    times, then a stable sort by thread."""
    if np.isnan(ts).any() or np.isnan(dur).any():
        nan_order: np.ndarray = np.lexsort((-dur, ts, thread))
        return nan_order
    z = np.empty(len(ts), dtype=np.complex128)
    z.real = ts
    z.imag = -dur
    order = np.argsort(z, kind="stable")
    th = thread[order]
    if len(th) and -(2**15) <= th.min() and th.max() < 2**15:
        th = th.astype(np.int16)  # a small-int key sorts by radix
    return order[np.argsort(th, kind="stable")]


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
    order, s_thr, s_ts = _ops_on_threads(t, ctx.cache)
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


@fact("gpu_gaps", key=("op",), fields=FIELDS)
def gpu_gaps(ctx: Context) -> list[Row]:
    """Device idle gaps >= 1 ms in the analysis window, grouped per CPU op at the gap start."""
    t = ctx.trace
    g = t.gpu
    ms, me = busy_intervals(ctx)
    work = np.flatnonzero(device_work(t))
    starts = g.ts[work]
    order = np.argsort(starts, kind="stable")
    work, starts = work[order], starts[order]
    total_window = 0.0
    a_parts, b_parts, thread_parts, steps = [], [], [], []
    for w in windows(ctx):
        total_window += w.hi - w.lo
        gs, ge = window_gaps(ms, me, w.lo, w.hi)
        keep = (ge - gs) >= GAP_FLOOR_US
        a, b = gs[keep], ge[keep]
        # The GPU work that ends the gap starts at b; its launching thread was busy elsewhere.
        k = np.searchsorted(starts, b, side="left")
        found = k < len(work)
        found[found] &= starts[k[found]] <= w.hi
        thread = np.full(len(b), NONE, dtype=np.int64)
        launch = g.launch[work[k[found]]].astype(np.int64)
        linked = launch != NONE
        th = np.full(len(launch), NONE, dtype=np.int64)
        th[linked] = t.runtime.thread[launch[linked]]
        thread[found] = th
        thread[thread == NONE] = w.thread
        a_parts.append(a)
        b_parts.append(b)
        thread_parts.append(thread)
        steps += [w.step] * len(b)
    if not steps:
        return []
    a_all, b_all = np.concatenate(a_parts), np.concatenate(b_parts)
    ops_at = _ops_at(ctx, np.concatenate(thread_parts), a_all)
    # Group by the op's stack of names: the same op in every step is one finding.
    sk = op_arrays(ctx).stack_key
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    for op, a, b, step in zip(ops_at, a_all.tolist(), b_all.tolist(), steps):
        stack = stack_names(ctx, int(sk[op])) if op != NONE else ()
        grp = groups.setdefault(stack, {"gaps": [], "steps": []})
        grp["gaps"].append(b - a)
        grp["steps"].append(step)
    out: list[Row] = []
    for stack, grp in groups.items():
        gaps = np.asarray(grp["gaps"])
        i = int(np.argmax(gaps))
        out.append(
            {
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
            }
        )
    out.sort(key=lambda r: -r["longest_gap_us"])
    return out
