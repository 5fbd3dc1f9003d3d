"""`gpu_gaps`: device idle gaps inside the analysis steps (the whole trace without steps),
grouped by the CPU op stack that was running when the GPU went idle.

The op is the innermost CPU op (ProfilerStep markers skipped) whose span covers the gap start
on the thread that launched the GPU work ending the gap (the step marker's thread for a gap
that runs to the end of a step): what that thread was busy with instead of launching work.
Only gaps >= 1 ms are kept; rules pick their own, larger, threshold from `longest_gap_us`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.facts import Context, Row, fact
from perflint.facts.steps import GAP_FLOOR_US, busy_intervals, device_work, window_gaps, windows
from perflint.graph.build import is_step_marker, op_stack
from perflint.model import NONE, Trace

FIELDS = {
    "op": "innermost CPU op running on the launching thread when the GPU went idle (null: none)",
    "op_label": "op, or 'no recorded CPU op' when nothing was running on that thread",
    "op_stack": "ops from outermost to innermost at the gap start",
    "count": "gaps >= 1 ms that started under this op",
    "longest_gap_us": "longest such gap",
    "longest_gap_ms": "longest such gap in ms",
    "total_gap_ms": "all such gaps together, ms",
    "longest_step": "step of the longest gap (null without steps)",
    "longest_where": "'step N' or 'whole trace' for the longest gap",
    "gaps_ms": "the five longest gaps, ms",
    "window_ms": "total analysis window (steps, or the whole trace)",
}


def _launch_thread(t: Trace, gpu_row: int) -> int:
    launch = int(t.gpu.launch[gpu_row])
    return int(t.runtime.thread[launch]) if launch != NONE else NONE


def _op_at(t: Trace, thread: int, when: float, cache: dict[str, Any]) -> int:
    """Innermost non-step-marker op on `thread` whose span covers `when` (start <= when < end).

    Ops are sorted once per trace by (thread, ts, -dur): the last op starting at or before `when`
    on the thread is the innermost candidate; walking up its parents finds the innermost op that
    still covers `when` (nesting makes every covering op an ancestor of that candidate).
    """
    if thread == NONE:
        return NONE
    ops = t.ops
    idx = cache.get("ops_by_thread_ts")
    if idx is None:
        order = np.lexsort((-ops.dur, ops.ts, ops.thread))
        idx = (order, ops.thread[order], ops.ts[order], (ops.ts + ops.dur).tolist(), ops.parent.tolist())
        cache["ops_by_thread_ts"] = idx
    order, s_thr, s_ts, end, parent = idx
    lo, hi = np.searchsorted(s_thr, [thread, thread + 1])
    k = int(np.searchsorted(s_ts[lo:hi], when, side="right")) - 1
    if k < 0:
        return NONE
    c = int(order[lo + k])
    while c != NONE and (end[c] <= when or is_step_marker(t, c)):
        c = parent[c]
    return c


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
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    total_window = 0.0
    for w in windows(ctx):
        total_window += w.hi - w.lo
        gs, ge = window_gaps(ms, me, w.lo, w.hi)
        keep = (ge - gs) >= GAP_FLOOR_US
        for a, b in zip(gs[keep].tolist(), ge[keep].tolist()):
            # The GPU work that ends the gap starts at b; its launching thread was busy elsewhere.
            k = int(np.searchsorted(starts, b, side="left"))
            thread = _launch_thread(t, int(work[k])) if k < len(work) and starts[k] <= w.hi else NONE
            if thread == NONE:
                thread = w.thread
            op = _op_at(t, thread, a, ctx.cache)
            # Group by the op's stack of names: the same op in every step is one finding.
            stack = tuple(t.s(int(t.ops.name[o])) for o in op_stack(t, op)) if op != NONE else ()
            grp = groups.setdefault(stack, {"gaps": [], "steps": []})
            grp["gaps"].append(b - a)
            grp["steps"].append(w.step)
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
                "longest_step": grp["steps"][i],
                "longest_where": "whole trace" if grp["steps"][i] is None else f"step {grp['steps'][i]}",
                "gaps_ms": [round(x / 1000.0, 1) for x in sorted(gaps.tolist(), reverse=True)[:5]],
                "window_ms": total_window / 1000.0,
            }
        )
    out.sort(key=lambda r: -r["longest_gap_us"])
    return out
