"""`steps`: one row per analysis step with its GPU busy time, memcpy/memset time and gaps; and a
per-trace summary of step busy time added to the `trace` row (the UTIL rules run over it).

A step's window is its CPU span extended to the end of the GPU work it launched (a step is not
done until its kernels are), starting no earlier than the end of the previous step's window (the
GPU was still running that step's work). Busy = union of the kernels launched in the step, clipped to the
window (TensorBoard plugin GPU utilization / nsys `gpu_time_util` count kernels); memcpy and
memset are reported separately. Gaps are device idle time: the complement, inside the window, of
the union of ALL GPU work on the device (whichever step launched it), as nsys `gpu_gaps` does.
Without ProfilerStep markers one row covers the whole trace (first to last GPU activity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflint.facts import Context, Row, enricher, fact
from perflint.facts._spans import step_windows
from perflint.ids import compress_in_place, rows_of
from perflint.memo import once
from perflint.metrics.intervals import extent, merge_spans, merged_length
from perflint.metrics.stats import np_median
from perflint.metrics.steps import clipped, launch_ts, step_of
from perflint.model import GPU_SYNC, KERNEL, MEMCPY, MEMSET, Trace

LONG_GAP_US = 500_000.0  # nsys gpu_gaps default minimum gap (500 ms)

FIELDS = {
    "step": "ProfilerStep number (null: the whole trace, which has no step markers)",
    "whole_trace": "true when the row is the whole trace (no ProfilerStep markers)",
    "dur_us": "step CPU duration",
    "window_us": "step window: max(CPU start, previous step's window end) to max(CPU end, end of the GPU work it launched)",
    "gpu_busy_us": "union of the step's kernels inside the window",
    "gpu_busy_pct": "gpu_busy_us / window_us",
    "memcpy_us": "union of the step's memcpys inside the window",
    "memset_us": "union of the step's memsets inside the window",
    "gpu_active_pct": "kernels, memcpy and memset together / window_us",
    "kernel_count": "kernels launched in the step",
    "kernel_time_us": "sum of the step's kernel durations",
    "longest_gap_us": "largest device idle gap inside the window",
    "gap_count": "device idle gaps >= 1 ms inside the window",
    "long_gap_count": "device idle gaps >= 500 ms (nsys gpu_gaps default) inside the window",
    "idle_us": "window_us - time any GPU work ran",
}

GAP_FLOOR_US = 1000.0
_SLICE = 1 << 18  # rows per slice where a column is worked through a slice at a time


@dataclass(frozen=True)
class Window:
    step: int | None
    lo: float
    hi: float
    cpu_dur: float
    thread: int  # CPU thread of the step marker (NONE for the whole trace)
    rows: np.ndarray  # int32 GPU rows launched in the step (kernels, memcpy, memset)


def device_work(t: Trace) -> np.ndarray:
    """GPU work rows (not device-side sync records) on the trace's primary device."""
    g = t.gpu
    work: np.ndarray = g.kind != GPU_SYNC
    dev = t.primary_device
    if dev is not None and _several_devices(g.device, work):
        work &= g.device == dev.id
    return work


def _several_devices(device: np.ndarray, rows: np.ndarray) -> bool:
    """Whether the rows of the mask `rows` name more than one device, a slice at a time."""
    first = None
    for i in range(0, len(device), _SLICE):
        d = device[i : i + _SLICE][rows[i : i + _SLICE]]
        if len(d):
            first = d[0] if first is None else first
            if (d != first).any():
                return True
    return False


@once
def windows(ctx: Context) -> list[Window]:
    t = ctx.trace
    g = t.gpu
    work = device_work(t)
    out: list[Window] = []
    if ctx.steps:
        sid = step_of(t, ctx.steps, launch_ts(t))
        end = g.ts + g.dur
        # Rows of each step in index order: one stable sort instead of a scan per step.
        cand = np.flatnonzero(work & (sid >= 0))
        cand = cand[np.argsort(sid[cand], kind="stable")].astype(np.int32)
        bounds = np.searchsorted(sid[cand], np.arange(len(ctx.steps) + 1), side="left").tolist()
        # A step starts no earlier than the GPU finished the steps before it: where the CPU runs
        # ahead of a saturated GPU, the start of a step's CPU span overlaps the previous step's
        # kernels, and counting that as this step's idle time made a GPU that never idled look 60%
        # busy (fixtures/gpu/clean_bf16). The TensorBoard plugin's step windows, shared with the
        # time-share facts.
        spans = step_windows(ctx)
        for i, s in enumerate(ctx.steps):
            rows = cand[bounds[i] : bounds[i + 1]]
            lo = spans[i][0]
            hi = max(s.end, float(end[rows].max()) if len(rows) else s.end, lo)
            lo, hi = clipped(t, lo, hi)
            out.append(Window(s.number, lo, hi, s.dur, int(t.ops.thread[s.op]), rows))
    elif (got := extent(g.ts, g.dur, work)) is not None:
        lo, hi = got
        out.append(Window(None, lo, hi, hi - lo, -1, rows_of(work)))  # kept for the whole check: int32, half the bytes
    return out


@once
def busy_intervals(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """Merged intervals of all GPU work on the device (the complement is idle)."""
    t = ctx.trace
    work = device_work(t)
    return merge_spans(t.gpu.ts, t.gpu.dur, work)


def window_gaps(ms: np.ndarray, me: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Idle (start, end) pairs inside [lo, hi] given sorted disjoint busy intervals."""
    if hi <= lo:
        return np.zeros(0), np.zeros(0)
    a, b = _inside(ms, me, lo, hi)
    gs = np.empty(b - a + 1)
    gs[0] = lo
    np.clip(me[a:b], lo, hi, out=gs[1:])
    ge = np.empty(b - a + 1)
    np.clip(ms[a:b], lo, hi, out=ge[:-1])
    ge[-1] = hi
    keep = ge > gs
    return gs[keep], ge[keep]


def gap_lengths(ms: np.ndarray, me: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """`ge - gs` of `window_gaps` (a gap is kept where its end is past its start, that is where
    the difference is positive) without the two endpoint arrays."""
    if hi <= lo:
        return np.zeros(0)
    a, b = _inside(ms, me, lo, hi)
    gap = np.empty(b - a + 1)
    np.clip(ms[a:b], lo, hi, out=gap[:-1])
    gap[-1] = hi
    gap[0] -= lo
    # A slice at a time, the positive gaps kept in the same buffer: no second full-length array.
    for i in range(0, len(gap), _SLICE):
        part = gap[i : i + _SLICE]
        if i:
            part -= np.clip(me[a + i - 1 : a + i - 1 + len(part)], lo, hi)
        else:
            part[1:] -= np.clip(me[a : a + len(part) - 1], lo, hi)
    return compress_in_place(gap, lambda part: part > 0)


def _inside(ms: np.ndarray, me: np.ndarray, lo: float, hi: float) -> tuple[int, int]:
    """The busy intervals reaching into [lo, hi]: ms/me[a:b]."""
    a = int(np.searchsorted(me, lo, side="right"))  # first interval ending after lo
    b = int(np.searchsorted(ms, hi, side="left"))  # intervals starting before hi
    return a, max(a, b)


def _union_in(t: Trace, rows: np.ndarray, lo: float, hi: float) -> float:
    if len(rows) == 0:
        return 0.0
    return merged_length(t.gpu.ts, t.gpu.dur, rows, (lo, hi))[2]


@fact("steps", key=("step",), fields=FIELDS)
def steps_rows(ctx: Context) -> list[Row]:
    """GPU busy time, memcpy/memset time and idle gaps of each analysis step."""
    t = ctx.trace
    g = t.gpu
    ms, me = busy_intervals(ctx)
    out: list[Row] = []
    for w in windows(ctx):
        kind = g.kind[w.rows]
        kern = w.rows[kind == KERNEL]
        span = w.hi - w.lo
        busy = _union_in(t, kern, w.lo, w.hi)
        active = _union_in(t, w.rows, w.lo, w.hi)
        gaps = gap_lengths(ms, me, w.lo, w.hi)
        out.append(
            {
                "step": w.step,
                "whole_trace": w.step is None,
                "dur_us": w.cpu_dur,
                "window_us": span,
                "gpu_busy_us": busy,
                "gpu_busy_pct": 100.0 * busy / span if span > 0 else None,
                "memcpy_us": _union_in(t, w.rows[kind == MEMCPY], w.lo, w.hi),
                "memset_us": _union_in(t, w.rows[kind == MEMSET], w.lo, w.hi),
                "gpu_active_pct": 100.0 * active / span if span > 0 else None,
                "kernel_count": len(kern),
                "kernel_time_us": float(g.dur[kern].sum()),
                "longest_gap_us": float(gaps.max()) if len(gaps) else 0.0,
                "gap_count": int((gaps >= GAP_FLOOR_US).sum()),
                "long_gap_count": int((gaps >= LONG_GAP_US).sum()),
                "idle_us": float(gaps.sum()),
            }
        )
    return out


SUMMARY_FIELDS = {
    "step_busy_median_pct": "median GPU busy % over the analysis steps (the whole trace without steps)",
    "step_busy_min_pct": "GPU busy % of the least busy step",
    "step_busy_max_pct": "GPU busy % of the busiest step",
    "step_busy_worst": "number of the least busy step (null without steps)",
    "step_busy_pct": "kernel busy time / window time over all analysis steps together",
    "step_idle_us": "window time without kernels over all analysis steps (upper bound of recoverable time)",
    "step_window_us": "total step window time",
    "step_count": "steps the busy numbers cover (0: whole trace)",
    "step_busy_scope": "where the busy numbers come from, in words",
}


@enricher("trace", fields=SUMMARY_FIELDS)
def step_busy_summary(ctx: Context, row: Row) -> Row:
    from perflint.facts import rows

    srows = [r for r in rows(ctx, "steps") if r["gpu_busy_pct"] is not None]
    if not srows:
        return {k: None for k in SUMMARY_FIELDS}
    pct = np.array([r["gpu_busy_pct"] for r in srows])
    worst = srows[int(np.argmin(pct))]
    win = float(sum(r["window_us"] for r in srows))
    busy = float(sum(r["gpu_busy_us"] for r in srows))
    whole = srows[0]["whole_trace"]
    if whole:
        scope = "whole trace from first to last GPU activity; no ProfilerStep markers"
    else:
        scope = f"median of {len(srows)} analysis step(s); least busy step #{worst['step']} at {worst['gpu_busy_pct']:.1f}%"
    return {
        "step_busy_median_pct": float(np_median(pct)),
        "step_busy_min_pct": float(pct.min()),
        "step_busy_max_pct": float(pct.max()),
        "step_busy_worst": worst["step"],
        "step_busy_pct": 100.0 * busy / win if win > 0 else None,
        "step_idle_us": win - busy,
        "step_window_us": win,
        "step_count": 0 if whole else len(srows),
        "step_busy_scope": scope,
    }
