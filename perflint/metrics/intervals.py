"""Interval arithmetic on device timelines (union, clipping, bucketing), vectorized."""

from __future__ import annotations

import threading

import numpy as np


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted, disjoint (start, end) arrays.

    Touching intervals (start == running end) are merged, as HTA and the TB plugin do.
    """
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    starts = np.asarray(starts, dtype=np.float64)
    ends = np.asarray(ends, dtype=np.float64)
    if ascending(starts):  # a stable sort would keep every row where it is
        return _merge_sorted(starts, np.maximum.accumulate(ends))
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    e = ends[order]
    del order
    return _merge_sorted(s, np.maximum.accumulate(e, out=e))


def merge_spans(ts: np.ndarray, dur: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`merge(ts[rows], ts[rows] + dur[rows])` (every row when `rows` is None: an index or mask
    array) without an end column: the ends are added after the sort, only for the rows taken."""
    s = ts if rows is None else ts[rows]
    if len(s) == 0:
        return np.zeros(0), np.zeros(0)
    s = np.asarray(s, dtype=np.float64)
    if ascending(s):
        e = dur.astype(np.float64) if rows is None else np.asarray(dur[rows], dtype=np.float64)
    else:
        order = np.argsort(s, kind="stable")
        s = s[order]
        if rows is not None:
            order = (np.flatnonzero(rows) if rows.dtype == np.bool_ else rows)[order]
        e = np.asarray(dur[order], dtype=np.float64)
        del order
    e += s  # the same sum as ts + dur (float addition commutes)
    return _merge_sorted(s, np.maximum.accumulate(e, out=e))


def ascending(x: np.ndarray) -> bool:
    """Whether `x` never decreases (False where it holds NaN), a chunk at a time: no (n,) mask."""
    for i in range(0, len(x) - 1, _CHUNK):
        a = x[i : i + _CHUNK + 1]
        if not (a[1:] >= a[:-1]).all():
            return False
    return True


_CHUNK = 1 << 16


def _merge_sorted(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`merge` of rows sorted by start, `e` the running maximum of their ends."""
    # A new block starts where an interval begins after everything before it ended.
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    np.greater(s[1:], e[:-1], out=new[1:])
    ms = s[new]
    # The running max is non-decreasing, so a block's end is the running max at its last row
    # (the row before the next block's first).
    new[:-1] = new[1:].copy()
    new[-1] = True
    return ms, e[new]


def reduce_at(ufunc: np.ufunc, out: np.ndarray, ids: np.ndarray, values: np.ndarray) -> None:
    """`ufunc.at(out, ids, values)` for np.minimum / np.maximum: the same result (order does not
    change a min or max) from one stable sort and a reduceat. ufunc.at runs an order of magnitude
    slower on real timestamps, where nearly every value replaces the running extreme."""
    if len(ids) == 0:
        return
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    first = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    at = s[first]
    out[at] = ufunc(out[at], ufunc.reduceat(values[order], first))


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    ms, me = merge(starts, ends)
    return float((me - ms).sum())


_SCRATCH = threading.local()  # per thread (executors run traces in threads): all zeros between calls


def clip_length(ms: np.ndarray, me: np.ndarray, lo: float, hi: float) -> float:
    """Length of merged (sorted, disjoint) intervals inside [lo, hi].

    Only the spans that reach into [lo, hi] are clipped: the others would clip to +0.0, so a
    zero array with the inside spans filled in is the same array, and its sum (numpy's pairwise
    sum over the same length) the same float as clipping every span."""
    if hi <= lo or len(ms) == 0:
        return 0.0
    i0 = int(np.searchsorted(me, lo, side="right"))
    i1 = max(int(np.searchsorted(ms, hi, side="left")), i0)
    zeros = getattr(_SCRATCH, "zeros", None)
    if zeros is None or len(zeros) < len(ms):
        zeros = _SCRATCH.zeros = np.zeros(len(ms))
    v = zeros[: len(ms)]
    try:
        v[i0:i1] = np.clip(np.minimum(me[i0:i1], hi) - np.maximum(ms[i0:i1], lo), 0, None)
        return float(v.sum())
    finally:
        v[i0:i1] = 0.0  # back to all zeros for the next call


def covered_before(ms: np.ndarray, me: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time in `t`, the length of the merged intervals lying before it.

    Differences of this function give the covered length of many windows at once
    (the utilization buckets) without a loop over windows or intervals.
    """
    t = np.asarray(t, dtype=np.float64)
    if len(ms) == 0:
        return np.zeros(len(t))
    lengths = me - ms
    before = np.concatenate(([0.0], np.cumsum(lengths)))
    k = np.searchsorted(ms, t, side="right") - 1
    kk = np.maximum(k, 0)
    partial = np.clip(t - ms[kk], 0.0, lengths[kk])
    return np.where(k >= 0, before[kk] + partial, 0.0)
