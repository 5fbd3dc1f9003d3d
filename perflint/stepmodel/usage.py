"""What the GPU did in each analysed step: busy, idle, copy time, gaps, and kernel time per
category. Every "GPU busy %" perflint reports is `busy_us / window` from here.

Busy is the union of the kernels on the trace's primary device inside the step's window (the
TensorBoard profiler plugin's GPU Utilization and Nsight Systems' gpu_time_util count kernels, not
copies); compute leaves communication kernels out; active adds memcpy and memset; idle is the
window without any GPU work, and gaps are its pieces (as nsys `gpu_gaps` finds them). So busy +
idle <= 100% of the window, and compute + non-compute + idle = 100%. Kernel counts and time per category are of the GPU work
each step launched.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from perflint.ids import compress_in_place
from perflint.metrics.intervals import merge_spans, window_lengths
from perflint.metrics.kernel_classes import CATEGORIES, SYNC_CATEGORY, classify
from perflint.metrics.steps import launch_ts
from perflint.model import KERNEL, MEMCPY, MEMSET, Trace
from perflint.stepmodel.window import Window, device_work, step_at

GAP_FLOOR_US = 1000.0  # gaps at least this long are counted
LONG_GAP_US = 500_000.0  # nsys gpu_gaps default minimum gap (500 ms)
_SLICE = 1 << 18

Spans = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class StepUsage:
    """One analysed step's GPU use (µs)."""

    window_us: float
    busy_us: float
    compute_us: float
    active_us: float
    memcpy_us: float
    memset_us: float
    kernel_count: int
    kernel_time_us: float
    longest_gap_us: float
    gap_count: int
    long_gap_count: int
    category_us: tuple[float, ...]  # per CATEGORIES entry: GPU time launched in the step

    @property
    def idle_us(self) -> float:
        return max(0.0, self.window_us - self.active_us)

    @property
    def busy_pct(self) -> float | None:
        return 100.0 * self.busy_us / self.window_us if self.window_us > 0 else None

    @property
    def active_pct(self) -> float | None:
        return 100.0 * self.active_us / self.window_us if self.window_us > 0 else None


@dataclass(frozen=True)
class DeviceSpans:
    """Merged spans of all the primary device's work (kernels, copies, memsets): the idle time
    between them is what the gap facts read."""

    work: Spans


def device_spans(t: Trace) -> DeviceSpans:
    return DeviceSpans(merge_spans(t.gpu.ts, t.gpu.dur, device_work(t)))


def _kind_spans(t: Trace) -> Iterator[Spans]:
    """Merged spans of the device's kernels, its compute kernels (not communication), copies and
    memsets, one at a time: each is reduced to per-step lengths and dropped."""
    g = t.gpu
    work = device_work(t)
    kern = work & (g.kind == KERNEL)
    comm = kern & (classify(t).category == CATEGORIES.index("communication"))
    kernels = merge_spans(g.ts, g.dur, kern)
    yield kernels
    yield merge_spans(g.ts, g.dur, kern & ~comm) if comm.any() else kernels
    del kernels
    yield merge_spans(g.ts, g.dur, work & (g.kind == MEMCPY))
    yield merge_spans(g.ts, g.dur, work & (g.kind == MEMSET))


def window_gaps(ms: np.ndarray, me: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Idle (start, end) pairs inside [lo, hi] given sorted disjoint busy spans."""
    if hi <= lo:
        return np.zeros(0), np.zeros(0)
    a = int(np.searchsorted(me, lo, side="right"))
    b = max(a, int(np.searchsorted(ms, hi, side="left")))
    gs = np.empty(b - a + 1)
    gs[0] = lo
    np.clip(me[a:b], lo, hi, out=gs[1:])
    ge = np.empty(b - a + 1)
    np.clip(ms[a:b], lo, hi, out=ge[:-1])
    ge[-1] = hi
    keep = ge > gs
    return gs[keep], ge[keep]


def gap_lengths(ms: np.ndarray, me: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Lengths of the idle pieces of [lo, hi] between sorted disjoint busy spans (positive ones)."""
    if hi <= lo:
        return np.zeros(0)
    a = int(np.searchsorted(me, lo, side="right"))  # first span ending after lo
    b = max(a, int(np.searchsorted(ms, hi, side="left")))  # spans starting before hi
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


def _per_step(t: Trace, w: Window) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per analysed step: kernels launched, their time, and GPU time per category (n x
    len(CATEGORIES)), a slice of GPU rows at a time (no column-sized temporaries)."""
    g = t.gpu
    n, nc = len(w.steps), len(CATEGORIES)
    counts = np.zeros(n, dtype=np.int64)
    ktime = np.zeros(n)
    per_cat = np.zeros(n * nc)
    # Without step markers every row is the whole trace's: no launch times needed.
    lts = launch_ts(t) if w.has_steps else g.ts
    dev, category = device_work(t), classify(t).category
    for i in range(0, len(g), _SLICE):
        sl = slice(i, i + _SLICE)
        owner = step_at(t, w, lts[sl])
        rows = np.flatnonzero(dev[sl] & (owner >= 0))
        owner, dur, cats = owner[rows], g.dur[sl][rows], category[sl][rows]
        kern = g.kind[sl][rows] == KERNEL
        counts += np.bincount(owner[kern], minlength=n)
        # add.at adds in row order, slice after slice: the floats of one bincount over all rows.
        np.add.at(ktime, owner[kern], dur[kern])
        work = cats != SYNC_CATEGORY
        np.add.at(per_cat, owner[work].astype(np.int64) * nc + cats[work], dur[work])
    return counts, ktime, per_cat.reshape(n, nc)


def step_usage(t: Trace, w: Window, spans: DeviceSpans) -> list[StepUsage]:
    counts, ktime, per_cat = _per_step(t, w)
    windows = [(st.lo, st.hi) for st in w.steps]

    def inside(sp: Spans) -> list[float]:
        return window_lengths(sp[0], sp[1], windows)

    busy, compute, memcpy, memset = (inside(x) for x in _kind_spans(t))
    active = inside(spans.work)
    out: list[StepUsage] = []
    for i, s in enumerate(w.steps):
        gaps = gap_lengths(*spans.work, s.lo, s.hi)
        out.append(
            StepUsage(
                window_us=s.us,
                busy_us=busy[i],
                compute_us=compute[i],
                active_us=active[i],
                memcpy_us=memcpy[i],
                memset_us=memset[i],
                kernel_count=int(counts[i]),
                kernel_time_us=float(ktime[i]),
                longest_gap_us=float(gaps.max()) if len(gaps) else 0.0,
                gap_count=int((gaps >= GAP_FLOOR_US).sum()),
                long_gap_count=int((gaps >= LONG_GAP_US).sum()),
                category_us=tuple(float(x) for x in per_cat[i]),
            )
        )
    return out
