"""The TensorBoard profiler plugin's GPU Summary metrics (GPU Utilization, Est. SM Efficiency,
Est. Achieved Occupancy) and its bucketed counter series (spec: docs/metrics.md, "gpu").

perflint follows the last kineto-repository version of the plugin, which recognizes `cuda_runtime`
launches (the released 0.4.3 only knows the old `Runtime` category, so on modern traces it never
extends steps to their device work). On old-format traces both agree.

Window W: the ProfilerStep#N spans, each extended to the end of the device work launched inside it
(launch fully inside the step), trailing steps that launched nothing (or < 80 % of the previous
step's device work) dropped; W = first step start .. last step end. Without steps: the CPU op span.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from perflint.ids import distinct
from perflint.memo import once
from perflint.metrics.intervals import covered_before, merge, merge_spans, reduce_at, window_lengths
from perflint.model import KERNEL, MEMCPY, MEMSET, NONE, OP_CPU, Trace

TAIL_RATIO = 0.8  # plugin: a last step with < 80 % of the previous step's device work is dropped
BUCKETS_MAX = 100  # plugin: bucket size grows by 10x until there are at most 100 buckets


def _host_steps(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    if trace.steps:
        return np.array([s.ts for s in trace.steps]), np.array([s.end for s in trace.steps])
    ops = trace.ops
    cpu = ops.kind == OP_CPU
    if not cpu.any():
        return np.zeros(0), np.zeros(0)
    return np.array([ops.ts[cpu].min()]), np.array([(ops.ts + ops.dur)[cpu].max()])


def tb_window(trace: Trace) -> tuple[float, float] | None:
    """The plugin's step window W (None when the trace has no step and no CPU op)."""
    steps = tb_steps(trace)
    return None if steps is None else (float(steps[0][0]), float(steps[1][-1]))


@once
def tb_steps(trace: Trace) -> tuple[np.ndarray, np.ndarray] | None:
    """The plugin's steps: starts and ends of each ProfilerStep kept, extended to its device work
    (or the CPU op span as one step without steps); None without steps and CPU ops."""
    starts, ends = _host_steps(trace)
    got: tuple[np.ndarray, np.ndarray] | None = None
    if len(starts):
        got = _extend_to_device(trace, starts.astype(np.float64), ends.astype(np.float64))
    return got


def _extend_to_device(trace: Trace, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(starts)
    rt, g = trace.runtime, trace.gpu
    # A runtime call belongs to the first step (in order) that ends after the call starts - the
    # plugin's merge-walk over time-sorted runtimes and steps - and counts only if it lies wholly
    # inside that step.
    # Only the calls that launched device work are asked: their step, not every call's.
    dev = (g.kind == KERNEL) | (g.kind == MEMCPY) | (g.kind == MEMSET)
    linked = dev & (g.launch != NONE)
    li = g.launch[linked]
    r_ts = rt.ts[li]
    r_end = r_ts + rt.dur[li]
    k = np.searchsorted(np.maximum.accumulate(ends), r_ts, side="right")
    kk = np.minimum(k, n - 1)
    inside = (k < n) & (r_ts >= starts[kk]) & (r_end <= ends[kk])
    step_of_dev = np.full(len(g), NONE, dtype=np.int64)
    step_of_dev[linked] = np.where(inside, k, NONE)
    matched = step_of_dev != NONE
    if not matched.any():
        return starts, ends

    d_end = g.ts + g.dur
    ms = step_of_dev[matched]
    count = np.bincount(ms, minlength=n)
    dmin = np.full(n, np.inf)
    dmax = np.full(n, -np.inf)
    reduce_at(np.minimum, dmin, ms, g.ts[matched])
    reduce_at(np.maximum, dmax, ms, d_end[matched])

    prev = float(starts[0])
    if count[0]:
        # Device work queued before the first step (launched outside it) delays the first step.
        early = dev & ~matched & (d_end < dmin[0])
        if early.any():
            prev = max(prev, float(d_end[early].max()))
    new_s = np.empty(n)
    new_e = np.empty(n)
    for i in range(n):  # one iteration per step, not per event
        s = max(prev, float(starts[i]))
        e = max(float(ends[i]), s) if count[i] == 0 else max(float(ends[i]), float(dmax[i]), s)
        new_s[i], new_e[i] = s, e
        prev = e
    keep = n
    if n > 1:
        nz = np.flatnonzero(count)
        last = int(nz[-1])
        keep = last + 1
        if last > 0 and count[last - 1] * TAIL_RATIO > count[last]:
            keep = last
    return new_s[:keep], new_e[:keep]


def kernel_device(trace: Trace) -> int | None:
    """The device the summary reports: the one running most kernels (the plugin reports per device)."""
    g = trace.gpu
    kern = g.kind == KERNEL
    if not kern.any():
        return None
    devs, counts = np.unique(g.device[kern], return_counts=True)
    return int(devs[int(np.argmax(counts))])


_SLICE = 1 << 18  # step-function points worked through at once (bounds the temporaries)

@dataclass(frozen=True)
class _DeviceKernels:
    """A device's kernels: their starts and ends, and the rows they are of the GPU table (None:
    every row), whose blocks/SM and occupancy are read a slice at a time."""

    ts: np.ndarray
    end: np.ndarray
    rows: np.ndarray | None
    bps_col: np.ndarray
    occ_col: np.ndarray

    def blocks_per_sm(self, at: np.ndarray | slice) -> np.ndarray:
        return self.bps_col[at if self.rows is None else self.rows[at]]

    def occupancy(self, at: np.ndarray | slice) -> np.ndarray:
        return self.occ_col[at if self.rows is None else self.rows[at]]


def _device_kernels(trace: Trace, device: int) -> _DeviceKernels:
    g = trace.gpu
    m = (g.kind == KERNEL) & (g.device == device)
    if m.all():
        return _DeviceKernels(g.ts, g.ts + g.dur, None, g.blocks_per_sm, g.occupancy)
    rows = np.flatnonzero(m)
    return _DeviceKernels(g.ts[rows], g.ts[rows] + g.dur[rows], rows.astype(np.int32) if len(rows) < 2**31 else rows, g.blocks_per_sm, g.occupancy)


def _sm_chunks(k: _DeviceKernels) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The kernel start/end points in time order with the running sum of blocks/SM in flight
    from each (only kernels with blocks/SM > 0), a slice at a time. The order is the stable sort
    of the starts then the ends (a start before an end at the same time): each slice takes the
    next starts and the ends before the start after them, so only sorted starts and sorted ends
    are needed (exports hold kernels in start order, and on one stream their ends too: then
    nothing is sorted or copied). The running sum carries from slice to slice in sequence, as
    the plugin adds (the same float residue)."""
    n = len(k.ts)
    has = np.empty(n, dtype=bool)
    for i in range(0, n, _SLICE):
        has[i : i + _SLICE] = k.blocks_per_sm(slice(i, i + _SLICE)) > 0  # nan compares False
    sel = None if bool(has.all()) else np.flatnonzero(has)
    del has
    starts, ends = (k.ts, k.end) if sel is None else (k.ts[sel], k.end[sel])
    s_order = None if _sorted(starts) else np.argsort(starts, kind="stable")
    e_order = None if _sorted(ends) else np.argsort(ends, kind="stable")
    S = starts if s_order is None else starts[s_order]
    E = ends if e_order is None else ends[e_order]
    del starts, ends

    def v(order: np.ndarray | None, a: int, b: int) -> np.ndarray:
        at: np.ndarray | slice = slice(a, b) if order is None else order[a:b]
        if sel is not None:
            at = sel[at]
        return k.blocks_per_sm(at)

    m, j, carry = len(S), 0, 0.0
    for i in range(0, m, _SLICE):
        i2 = min(i + _SLICE, m)
        j2 = m if i2 == m else int(np.searchsorted(E, S[i2], side="left"))
        tt = np.concatenate((S[i:i2], E[j:j2]))
        order = np.argsort(tt, kind="stable")
        run = np.concatenate(([carry], np.concatenate((v(s_order, i, i2), -v(e_order, j, j2)))[order]))
        np.cumsum(run, out=run)
        carry = float(run[-1])
        yield tt[order], run[1:]
        j = j2


def _sm_points(k: _DeviceKernels) -> tuple[np.ndarray, np.ndarray]:
    """All of `_sm_chunks` at once."""
    parts = list(_sm_chunks(k))
    if not parts:
        return np.zeros(0), np.zeros(0)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _sorted(x: np.ndarray) -> bool:
    """Whether x is in non-decreasing order, a slice at a time."""
    for i in range(0, max(len(x) - 1, 0), _SLICE):
        a = x[i : i + _SLICE + 1]
        if not bool((a[1:] >= a[:-1]).all()):
            return False
    return True


def sm_segments(k: _DeviceKernels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plugin's SM-efficiency step function: between consecutive kernel start/end points, the
    sum of blocks/SM of the kernels in flight, capped at 1 (only kernels with blocks/SM > 0)."""
    t, running = _sm_points(k)
    if not len(t):
        return np.zeros(0), np.zeros(0), np.zeros(0)
    seg = (t[1:] > t[:-1]) & (running[:-1] > 0)
    return t[:-1][seg], t[1:][seg], np.minimum(running[:-1][seg], 1.0)


def _sm_in_windows(k: _DeviceKernels, windows: list[tuple[float, float]]) -> tuple[float, bool]:
    """The SM-efficiency step function's integral over the windows, and whether any of it lies
    inside them: the segments' sum without making them, a slice of points at a time."""
    sm, any_in = 0.0, False
    prev_t, prev_run = np.zeros(0), np.zeros(0)
    for tt, run in _sm_chunks(k):
        # This slice's pairs of consecutive points, the one across from the slice before included;
        # of each window, only the pairs that reach into it.
        t2, r2 = np.concatenate((prev_t, tt)), np.concatenate((prev_run, run))
        for lo, hi in windows:
            if hi <= t2[0] or lo >= t2[-1]:
                continue
            a = max(0, int(np.searchsorted(t2, lo, side="right")) - 1)
            b = min(len(t2), int(np.searchsorted(t2, hi, side="left")) + 1)
            ts, te, r = t2[a : b - 1], t2[a + 1 : b], r2[a : b - 1]
            cs, ce = np.maximum(ts, lo), np.minimum(te, hi)
            in_w = (te > ts) & (r > 0) & (ce > cs)
            any_in = any_in or bool(in_w.any())
            sm += float((np.minimum(r[in_w], 1.0) * (ce[in_w] - cs[in_w])).sum())
        prev_t, prev_run = tt[-1:], run[-1:]
    return sm, any_in


def gpu_metrics(trace: Trace, device: int | None = None, windows: list[tuple[float, float]] | None = None) -> dict[str, float | None]:
    """Fractions (0..1) for utilization / SM efficiency and percent for occupancy, as the plugin
    computes them for `device` (default: `kernel_device`), over the plugin's window W or over
    `windows` (disjoint (start, end) pairs, added up)."""
    out: dict[str, float | None] = {"utilization": None, "sm_efficiency": None, "achieved_occupancy": None}
    dev = kernel_device(trace) if device is None else device
    if windows is None:
        win = tb_window(trace)
        windows = [] if win is None else [win]
    windows = [(lo, hi) for lo, hi in windows if hi > lo]
    total = float(sum(hi - lo for lo, hi in windows))
    if dev is None or total <= 0:
        return out
    g = trace.gpu
    ms, me = merge_spans(g.ts, g.dur, (g.kind == KERNEL) & (g.device == dev))
    out["utilization"] = sum(window_lengths(ms, me, windows)) / total
    del ms, me  # column-sized: gone before the kernels' columns are taken
    k = _device_kernels(trace, dev)
    sm, any_in = _sm_in_windows(k, windows)
    # Occupancy weighted by each kernel's time inside the windows, a slice of kernels at a time
    # (kernels in start order: only those that reach into a window are read).
    by_start = None if _sorted(k.ts) else np.argsort(k.ts, kind="stable")
    starts = k.ts if by_start is None else k.ts[by_start]
    ends = k.end if by_start is None else k.end[by_start]
    latest_end = ends if _sorted(ends) else np.maximum.accumulate(ends)
    num = den = 0.0
    for lo, hi in windows:
        ka = int(np.searchsorted(latest_end, lo, side="right"))
        kb = int(np.searchsorted(starts, hi, side="left"))
        for i in range(ka, kb, _SLICE):
            j = min(i + _SLICE, kb)
            w = np.clip(np.minimum(ends[i:j], hi) - np.maximum(starts[i:j], lo), 0.0, None)
            occ = k.occupancy(slice(i, j) if by_start is None else by_start[i:j])
            use = (occ >= 0) & (w > 0)  # nan compares False; 0 is kept
            num += float((occ[use] * w[use]).sum())
            den += float(w[use].sum())
    if any_in:
        out["sm_efficiency"] = sm / total
    if den > 0:
        out["achieved_occupancy"] = num / den
    return out


def gpu_summary(trace: Trace, windows: list[tuple[float, float]] | None = None) -> dict[str, float | None]:
    """Utilization, est. SM efficiency and est. achieved occupancy in percent, over `windows`
    (default: the plugin's own window W, which the result then keeps for the trace)."""
    if windows is None:
        return dict(_tensorboard_summary(trace))
    return _percent(gpu_metrics(trace, windows=windows))


@once
def _tensorboard_summary(trace: Trace) -> dict[str, float | None]:
    return _percent(gpu_metrics(trace))


def _percent(m: dict[str, float | None]) -> dict[str, float | None]:
    return {
        "utilization_pct": None if m["utilization"] is None else 100.0 * m["utilization"],
        "sm_efficiency_pct": None if m["sm_efficiency"] is None else 100.0 * m["sm_efficiency"],
        "achieved_occupancy_pct": m["achieved_occupancy"],
    }


def profiler_range(trace: Trace) -> tuple[float, float] | None:
    """The counter series' global range: the profiler's own `PyTorch Profiler (0)` span when the
    reader kept it (trace.meta["profiler_range"]), else the span of all host and device events."""
    pr = trace.meta.get("profiler_range")
    if isinstance(pr, (tuple, list)) and len(pr) == 2:
        return float(pr[0]), float(pr[1])
    g = trace.gpu
    dev = (g.kind == KERNEL) | (g.kind == MEMCPY) | (g.kind == MEMSET)
    lo, hi = np.inf, -np.inf
    for ts, dur in ((trace.ops.ts, trace.ops.dur), (trace.runtime.ts, trace.runtime.dur),
                    (trace.pyfn.ts, trace.pyfn.dur), (g.ts[dev], g.dur[dev])):
        if len(ts):
            lo, hi = min(lo, float(ts.min())), max(hi, float((ts + dur).max()))
    return (lo, hi) if hi > lo else None


def _bucket_size(span: float) -> int:
    size = 1
    while span / size > BUCKETS_MAX:
        size *= 10
    return size


@dataclass(frozen=True)
class UtilizationSeries:
    """The plugin's bucketed GPU utilization: bucket starts (the last bucket runs to `end`), and per
    device with kernels the busy fraction of each bucket."""

    start: float
    end: float
    bucket_us: int
    starts: np.ndarray
    by_device: dict[int, np.ndarray]


def utilization_series(trace: Trace) -> UtilizationSeries | None:
    """Utilization per time bucket over the whole profiled range (not clipped to W); None without
    kernels or a range."""
    rng = profiler_range(trace)
    g = trace.gpu
    kern = g.kind == KERNEL
    if rng is None or not kern.any():
        return None
    start, end = rng
    size = _bucket_size(end - start)
    nb = int((end - start) / size)
    b0 = start + size * np.arange(nb, dtype=np.float64)
    b1 = np.append(b0[1:], end)
    by_device = {}
    for dev in distinct(g.device[kern]):
        k = _device_kernels(trace, int(dev))
        ms, me = merge(k.ts, k.end)
        by_device[int(dev)] = (covered_before(ms, me, b1) - covered_before(ms, me, b0)) / (b1 - b0) if nb else np.zeros(0)
    return UtilizationSeries(start, end, size, b0, by_device)


def gpu_timeline(trace: Trace) -> dict[str, Any]:
    """The plugin's counter series, per device with kernels: `utilization_series` and the
    SM-efficiency step function.

    `events` are the Chrome counter events in the plugin's order (ready to append to a trace);
    values are the real fractions. (The plugin's own fixture gpu_metrics_expected.json stores
    hand-scaled values, utilization x100 and SM efficiency x10; see tests/metrics/test_metrics_tb.py.)
    """
    out: dict[str, Any] = {"range_us": None, "bucket_us": None, "devices": {}, "events": []}
    series = utilization_series(trace)
    if series is None:
        return out
    start, b0 = series.start, series.starts
    nb = len(b0)
    out["range_us"] = [start, series.end]
    out["bucket_us"] = series.bucket_us
    # The plugin emits the utilization series of every device first, then the SM-efficiency ones.
    util_events: list[dict[str, Any]] = []
    sm_events: list[dict[str, Any]] = []
    for dev, util in series.by_device.items():
        s, e, v = sm_segments(_device_kernels(trace, dev))
        out["devices"][str(dev)] = {
            "utilization": [[float(t), float(x)] for t, x in zip(b0.tolist(), util.tolist())],
            "sm_efficiency": [[float(a), float(b), float(x)] for a, b, x in zip(s.tolist(), e.tolist(), v.tolist())],
        }
        name = f"GPU {dev} Utilization"
        if nb:
            series_pts = [(start, 1.0), (start, 0.0)] + list(zip(b0.tolist(), util.tolist())) + [(series.end, 0.0)]
            util_events += [_counter(name, dev, t, "GPU Utilization", x) for t, x in series_pts]
        if len(s):
            name = f"GPU {dev} Est. SM Efficiency"
            pts = [(start, 1.0), (start, 0.0)]
            for a, b, x in zip(s.tolist(), e.tolist(), v.tolist()):
                pts += [(a, x), (b, 0.0)]
            sm_events += [_counter(name, dev, t, "Est. SM Efficiency", x) for t, x in pts]
    out["events"] = util_events + sm_events
    return out


def _counter(name: str, pid: int, ts: float, key: str, value: float) -> dict[str, Any]:
    return {"ph": "C", "name": name, "pid": pid, "ts": ts, "args": {key: value}}
