"""`steps`: one row per analysis step with its GPU busy time, memcpy/memset time and gaps; and a
per-trace summary of step busy time added to the `trace` row (the UTIL rules run over it). Every
number is the step model's (perflint.stepmodel): the window, busy and idle are defined there once.
Without step markers one row covers the whole trace (first to last recorded activity).
"""

from __future__ import annotations

import numpy as np

from perflint.facts import Context, Fields, Row, enricher, fact, typed
from perflint.facts._common import model
from perflint.metrics.stats import np_median
from perflint.stepmodel.critical import LABELS
from perflint.units import plural

FIELDS: Fields = {
    "step": typed("ProfilerStep number (null: the whole trace, which has no step markers)", "integer"),
    "whole_trace": typed("true when the row is the whole trace (no ProfilerStep markers)", "bool"),
    "dur_us": "step CPU duration (its marker)",
    "window_us": "step window: max(CPU start, previous step's window end) to max(CPU end, end of the GPU work it launched)",
    "gpu_busy_us": "union of the kernels on the primary device inside the window",
    "gpu_busy_pct": "gpu_busy_us / window_us",
    "memcpy_us": "union of the memcpys inside the window",
    "memset_us": "union of the memsets inside the window",
    "gpu_active_pct": "kernels, memcpy and memset together / window_us",
    "kernel_count": typed("kernels launched in the step", "integer"),
    "kernel_time_us": "sum of the step's kernel durations",
    "longest_gap_us": "largest device idle gap inside the window",
    "gap_count": typed("device idle gaps >= 1 ms inside the window", "integer"),
    "long_gap_count": typed("device idle gaps >= 500 ms (nsys gpu_gaps default) inside the window", "integer"),
    "idle_us": "window_us - time any GPU work ran",
}


@fact("steps", key=("step",), fields=FIELDS)
def steps_rows(ctx: Context) -> list[Row]:
    """GPU busy time, memcpy/memset time and idle gaps of each analysis step."""
    m = model(ctx)
    whole = not m.window.has_steps
    out: list[Row] = []
    for s, u in zip(m.steps, m.usage):
        out.append(
            {
                "step": s.number,
                "whole_trace": whole,
                "dur_us": s.cpu_dur,
                "window_us": u.window_us,
                "gpu_busy_us": u.busy_us,
                "gpu_busy_pct": u.busy_pct,
                "memcpy_us": u.memcpy_us,
                "memset_us": u.memset_us,
                "gpu_active_pct": u.active_pct,
                "kernel_count": u.kernel_count,
                "kernel_time_us": u.kernel_time_us,
                "longest_gap_us": u.longest_gap_us,
                "gap_count": u.gap_count,
                "long_gap_count": u.long_gap_count,
                "idle_us": u.idle_us,
            }
        )
    return out


SUMMARY_FIELDS: Fields = {
    "step_busy_median_pct": "median GPU busy % over the analysis steps (the whole trace without steps)",
    "step_busy_min_pct": "GPU busy % of the least busy step",
    "step_busy_max_pct": "GPU busy % of the busiest step",
    "step_busy_worst": typed("number of the least busy step (null without steps)", "integer"),
    "step_busy_pct": "kernel busy time / window time over all analysis steps together",
    "step_idle_us": "window time without kernels over all analysis steps (upper bound of recoverable time)",
    "step_window_us": "total step window time",
    "step_count": typed("steps the busy numbers cover (0: whole trace)", "integer"),
    "step_busy_scope": typed("where the busy numbers come from, in words", "text"),
    "step_bound_by": typed("what the median step's critical path is made of: its three largest categories with their share of the step, in words (null without steps)", "text"),
    "host_pace": typed("the host-side category that leads the median step's critical path (kernel launch overhead, CPU op dispatch / Python, data loading, host sync wait, cross-stream wait), null when GPU work leads it", "text"),
    "host_pace_pct": "that category's share of the median step, %",
}

# Critical-path categories of host-side time: when one of them leads, the host sets the pace.
HOST_SIDE = ("launch", "cpu", "data_loading", "sync", "event")


@enricher("trace", fields=SUMMARY_FIELDS)
def step_busy_summary(ctx: Context, row: Row) -> Row:
    m = model(ctx)
    busy = [(s, u.busy_pct) for s, u in zip(m.steps, m.usage) if u.busy_pct is not None]
    if not busy or not m.has_gpu:
        return {k: None for k in SUMMARY_FIELDS}
    pct = np.array([p for _, p in busy])
    worst, worst_pct = busy[int(np.argmin(pct))]
    if m.window.has_steps:
        scope = f"median of {plural(len(busy), 'analysis step')}; least busy step #{worst.number} at {worst_pct:.1f}%"
    else:
        scope = m.window.describe()
    return {
        "step_busy_median_pct": float(np_median(pct)),
        "step_busy_min_pct": float(pct.min()),
        "step_busy_max_pct": float(pct.max()),
        "step_busy_worst": worst.number,
        "step_busy_pct": m.busy_pct,
        "step_idle_us": m.window_us - m.busy_us,
        "step_window_us": m.window_us,
        "step_count": len(busy) if m.window.has_steps else 0,
        "step_busy_scope": scope,
        **_bound_by(m.bound_by()),
    }


def _bound_by(bound: list[tuple[str, float]]) -> Row:
    total = sum(us for _, us in bound)
    if total <= 0:
        return {"step_bound_by": None, "host_pace": None, "host_pace_pct": None}
    text = ", ".join(f"{100.0 * us / total:.0f}% {LABELS[c]}" for c, us in bound[:3] if us >= 0.005 * total)
    lead = bound[0][0]
    host = lead in HOST_SIDE
    return {"step_bound_by": text, "host_pace": LABELS[lead] if host else None, "host_pace_pct": 100.0 * bound[0][1] / total if host else None}
