"""Interval arithmetic on device timelines (union, clipping, bucketing), vectorized."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

import numpy as np

from perflint.ids import rows_of


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted, disjoint (start, end) arrays.

    Touching intervals (start == running end) are merged, as HTA and the TB plugin do.
    """
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    starts = np.asarray(starts, dtype=np.float64)
    ends = np.asarray(ends, dtype=np.float64)
    n = len(starts)
    if ascending(starts):  # a stable sort would keep every row where it is
        return _merge_sorted(n, ((starts[i : i + _CHUNK], ends[i : i + _CHUNK].copy()) for i in range(0, n, _CHUNK)))
    order = np.argsort(starts, kind="stable")
    return _merge_sorted(n, ((starts[o], ends[o]) for o in _slices(order)))


def merge_spans(ts: np.ndarray, dur: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`merge(ts[rows], ts[rows] + dur[rows])` (every row when `rows` is None: an index or mask
    array) without column-sized copies: rows already in time order are merged a slice at a time;
    others are sorted once (by a float copy of their starts, as `merge` sorts) into int32 row
    numbers, then gathered a slice at a time."""
    pieces: Iterable[tuple[np.ndarray, np.ndarray]]
    if _ascending_pieces(_gathered(ts, rows)):
        n = len(ts) if rows is None else int(np.count_nonzero(rows)) if rows.dtype == np.bool_ else len(rows)
        pieces = zip(_gathered(ts, rows), _gathered(dur, rows))
    else:
        sorted_rows = _sorted_rows(ts, rows)
        n = len(sorted_rows)
        pieces = ((ts[r], dur[r]) for r in _slices(sorted_rows))
    if n == 0:
        return np.zeros(0), np.zeros(0)
    return _merge_sorted(n, _with_ends(pieces))


def _with_ends(pieces: Iterable[tuple[np.ndarray, np.ndarray]]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(start, duration) pieces as (start, end) in float64, as `merge` takes them; a fresh end
    array each (the merge overwrites it)."""
    for ts, dur in pieces:
        s = np.asarray(ts, dtype=np.float64)
        yield s, np.asarray(dur, dtype=np.float64) + s  # the same sum as ts + dur (addition commutes)


def _gathered(col: np.ndarray, rows: np.ndarray | None) -> Iterator[np.ndarray]:
    """`col[rows]` (all of `col` when `rows` is None) a slice of rows at a time, in row order."""
    n = len(col) if rows is None else len(rows)
    for i in range(0, n, _CHUNK):
        if rows is None:
            yield col[i : i + _CHUNK]
        elif rows.dtype == np.bool_:
            yield col[i : i + _CHUNK][rows[i : i + _CHUNK]]
        else:
            yield col[rows[i : i + _CHUNK]]


def _sorted_rows(ts: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """The rows taken (all when None), stably sorted by their start as float64: int32 where the
    column allows. Only the argsort's key and result are column-sized at once."""
    s = ts if rows is None else ts[rows]
    order = np.argsort(np.asarray(s, dtype=np.float64), kind="stable")
    del s
    idx = rows if rows is None or rows.dtype != np.bool_ else rows_of(rows)
    out = np.empty(len(order), dtype=np.int32 if len(ts) < 2**31 else np.int64)
    for i in range(0, len(order), _CHUNK):
        o = order[i : i + _CHUNK]
        out[i : i + _CHUNK] = o if idx is None else idx[o]
    return out


def _slices(a: np.ndarray) -> Iterator[np.ndarray]:
    for i in range(0, len(a), _CHUNK):
        yield a[i : i + _CHUNK]


def ascending(x: np.ndarray) -> bool:
    """Whether `x` never decreases (False where it holds NaN), a chunk at a time: no (n,) mask."""
    return _ascending_pieces(_slices(x))


def _ascending_pieces(pieces: Iterable[np.ndarray]) -> bool:
    """`ascending` of the pieces laid end to end."""
    last = None
    for a in pieces:
        if len(a) == 0:
            continue
        if last is not None and not a[0] >= last:
            return False
        if not (a[1:] >= a[:-1]).all():
            return False
        last = a[-1]
    return True


_CHUNK = 1 << 16


def _merge_sorted(n: int, pieces: Iterable[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """`merge` of at most `n` rows sorted by start, given as (starts, ends) pieces in that order
    (each piece's ends are overwritten). The output is allocated once at `n` and shrunk in place."""
    ms = np.empty(n)
    me = np.empty(n)
    k = 0  # blocks so far
    top = 0.0  # running maximum of the ends so far
    for s, e in pieces:
        m = len(s)
        if m == 0:
            continue
        # run[i] = the running max before row i of the piece: the same left fold over all rows
        # as np.maximum.accumulate over the whole column.
        run = np.empty(m + 1)
        run[0] = e[0] if k == 0 else top
        run[1:] = e
        np.maximum.accumulate(run, out=run)
        # A new block starts where an interval begins after everything before it ended.
        new = np.greater(s, run[:-1])
        if k == 0:
            new[0] = True
        c = int(np.count_nonzero(new))
        np.compress(new, s, out=ms[k : k + c])
        # The running max is non-decreasing, so a block's end is the running max just before the
        # next block's first row (the first block closes none).
        closed = run[:-1][new]
        if k == 0:
            me[: c - 1] = closed[1:]
        else:
            me[k - 1 : k + c - 1] = closed
        k += c
        top = float(run[-1])
    me[k - 1] = top
    if k < n:  # in place: no second copy of the output
        ms.resize(k, refcheck=False)
        me.resize(k, refcheck=False)
    return ms, me


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
    sum over the same length) the same float as clipping every span. A window that every span
    reaches into fills a fresh array instead, so no column-sized scratch outlives the call."""
    if hi <= lo or len(ms) == 0:
        return 0.0
    i0 = int(np.searchsorted(me, lo, side="right"))
    i1 = max(int(np.searchsorted(ms, hi, side="left")), i0)
    whole = i0 == 0 and i1 == len(ms)
    v = np.empty(len(ms)) if whole else _zeros(len(ms))
    try:
        for a in range(i0, i1, _CHUNK):  # a slice at a time: no span-sized temporaries
            b = min(a + _CHUNK, i1)
            d = np.minimum(me[a:b], hi, out=v[a:b])
            d -= np.maximum(ms[a:b], lo)
            np.clip(d, 0, None, out=d)
        return float(v.sum())
    finally:
        if not whole:
            v[i0:i1] = 0.0  # back to all zeros for the next call


def _zeros(n: int) -> np.ndarray:
    """This thread's zero scratch, at least `n` long; the caller leaves it all zeros."""
    zeros = getattr(_SCRATCH, "zeros", None)
    if zeros is None or len(zeros) < n:
        zeros = _SCRATCH.zeros = np.zeros(n)
    out: np.ndarray = zeros[:n]
    return out


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
