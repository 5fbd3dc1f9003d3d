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
    order = None if ascending(starts) else np.argsort(starts, kind="stable")  # ascending: a stable sort keeps every row
    # Fresh ends for `_merged` to overwrite: a slice would be a view of the caller's.
    pieces = ((starts[at], ends[at].copy() if order is None else ends[at]) for at in _indexers(order, len(starts)))
    return _collected(len(starts), _merged(pieces))


def merge_spans(ts: np.ndarray, dur: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`merge(ts[rows], ts[rows] + dur[rows])` (every row when `rows` is None: an index or mask
    array) without column-sized copies: `merged_pieces` collected into one output."""
    return _collected(_taken(rows, len(ts)), merged_pieces(ts, dur, rows))


def _taken(rows: np.ndarray | None, n: int) -> int:
    """How many rows `rows` takes (a mask or an index array; all `n` when None)."""
    return n if rows is None else int(np.count_nonzero(rows)) if rows.dtype == np.bool_ else len(rows)


def merged_pieces(ts: np.ndarray, dur: np.ndarray, rows: np.ndarray | None = None, rounded: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The merged (sorted, disjoint) spans of `merge_spans(ts, dur, rows)`, in order, as successive
    (starts, ends) pieces, a slice of rows at a time: callers that only reduce the spans keep what
    they reduce to. `rounded`: each row spans ceil(ts) to floor(ts + dur) (HTA's whole-µs rounding,
    which can invert a span), sorted by the rounded start as `merge` sorts. Rows already in start
    order are read in place; others are sorted once into int32 row numbers."""
    if not _ascending_pieces(_starts(ts, at, rounded) for at in _indexers(rows, len(ts))):
        rows = _sorted_rows(ts, rows, rounded)
    return _merged(_piece(ts, dur, at, rounded) for at in _indexers(rows, len(ts)))


def _starts(ts: np.ndarray, at: np.ndarray | slice, rounded: bool) -> np.ndarray:
    s: np.ndarray = np.asarray(ts[at], dtype=np.float64)
    return _ceil(s, at) if rounded else s


def _ceil(s: np.ndarray, at: np.ndarray | slice) -> np.ndarray:
    """ceil(s) for s = column[at]: in place, unless `at` is a slice (s is then a view of the column)."""
    up: np.ndarray = np.ceil(s) if isinstance(at, slice) else np.ceil(s, out=s)
    return up


def _piece(ts: np.ndarray, dur: np.ndarray, at: np.ndarray | slice, rounded: bool) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the rows `at` as `merged_pieces` reads them; the ends a fresh array. The
    end is the exact ts + dur, rounded (down) after the sum, as HTA rounds it."""
    t = np.asarray(ts[at], dtype=np.float64)
    # dur + ts as a new array, as over whole columns: an in-place add can keep the other NaN.
    e: np.ndarray = np.asarray(dur[at], dtype=np.float64) + t
    if not rounded:
        return t, e
    np.floor(e, out=e)
    return _ceil(t, at), e


def _indexers(rows: np.ndarray | None, n: int) -> Iterator[np.ndarray | slice]:
    """The rows `rows` (a mask or an index array; all `n` when None) in their order, one indexer
    per slice: a slice where the slice takes every row (a view, no gather)."""
    if rows is None:
        for i in range(0, n, _CHUNK):
            yield slice(i, i + _CHUNK)
    elif rows.dtype == np.bool_:
        for i in range(0, len(rows), _CHUNK):
            at = np.flatnonzero(rows[i : i + _CHUNK])
            if len(at) == min(_CHUNK, len(rows) - i):
                yield slice(i, i + _CHUNK)
            elif len(at):
                at += i
                yield at
    else:
        for i in range(0, len(rows), _CHUNK):
            yield rows[i : i + _CHUNK]


def _sorted_rows(ts: np.ndarray, rows: np.ndarray | None, rounded: bool) -> np.ndarray:
    """The rows taken (all when None) in stable order of their start as `_starts` reads it: int32
    where the column allows. Only the sort's key and result are column-sized at once."""
    if rows is not None and rows.dtype == np.bool_ and rows.all():
        rows = None  # sort the column itself: no gathered copy of it
    order64 = np.argsort(_starts(ts, slice(None) if rows is None else rows, rounded), kind="stable")
    order = order64.astype(np.int32) if len(ts) < 2**31 else order64
    del order64
    if rows is not None:  # positions among the rows taken, to rows of the columns, in place
        idx = rows_of(rows) if rows.dtype == np.bool_ else rows
        for i in range(0, len(order), _CHUNK):
            order[i : i + _CHUNK] = idx[order[i : i + _CHUNK]]
    return order


def ascending(x: np.ndarray) -> bool:
    """Whether `x` never decreases (False where it holds NaN), a chunk at a time: no (n,) mask."""
    return _ascending_pieces(x[at] for at in _indexers(None, len(x)))


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


def _merged(pieces: Iterable[tuple[np.ndarray, np.ndarray]]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """`merge` of rows sorted by start, given as (starts, ends) pieces in that order (each piece's
    ends are overwritten), as (starts, ends) pieces of the merged spans: each piece's spans closed
    so far, then the one left open."""
    opened: float | None = None  # start of the open span
    top = np.nan  # running maximum of the ends so far: the open span's end
    for s, e in pieces:
        if len(s) == 0:
            continue
        starts, ends, opened, top = _merge_piece(s, e, opened, top)
        del s, e  # nothing of a piece is held while the next one is read
        if len(ends):
            yield starts, ends
        del starts, ends
    if opened is not None:
        yield np.array([opened]), np.array([top])


def _merge_piece(s: np.ndarray, e: np.ndarray, opened: float | None, top: float) -> tuple[np.ndarray, np.ndarray, float | None, float]:
    """One piece of `_merged`, after the span open at `opened` (None: the first piece) whose
    running maximum end is `top`: the spans the piece closes, then the open span and its end."""
    # e becomes the running max of the ends through each row: the same left fold over all rows
    # as np.maximum.accumulate over the whole column (ties keep the later value).
    if opened is not None:
        e[0] = np.maximum(top, e[0])
    np.maximum.accumulate(e, out=e)
    # A new span starts where an interval begins after everything before it ended; the running
    # max just before it is the end of the span it closes.
    new = np.empty(len(s), dtype=bool)
    new[0] = opened is None or bool(s[0] > top)
    np.greater(s[1:], e[:-1], out=new[1:])
    c = int(np.count_nonzero(new))
    if c == 0:
        return np.zeros(0), np.zeros(0), opened, float(e[-1])
    lead = int(opened is not None)  # the span open before the piece closes in it
    starts = np.empty(c + lead)  # the spans closed here, then the one left open
    if opened is not None:
        starts[0] = opened
    np.compress(new, s, out=starts[lead:])
    at_0 = int(opened is not None and bool(new[0]))  # row 0 closes it, at the end before the piece
    ends = np.empty(c + lead - 1)
    if at_0:
        ends[0] = top
    np.compress(new[1:], e[:-1], out=ends[at_0:])
    return starts[:-1], ends, float(starts[-1]), float(e[-1])


def _collected(n: int, pieces: Iterable[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The (starts, ends) pieces of at most `n` spans laid end to end: the output is allocated
    once at `n` and shrunk in place (no second copy of it)."""
    ms = np.empty(n)
    me = np.empty(n)
    k = 0
    for s, e in pieces:
        ms[k : k + len(s)] = s
        me[k : k + len(e)] = e
        k += len(s)
        del s, e  # not held while the next piece is made
    if k < n:
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


def merged_length(
    ts: np.ndarray, dur: np.ndarray, rows: np.ndarray | None = None, window: tuple[float, float] | None = None, rounded: bool = False
) -> tuple[float, float, float]:
    """(first start, last end, total length) of the merged spans of the rows (`rows`: a mask or an
    index array; every row when None; `rounded` as `merged_pieces` takes it), 0.0 each without
    spans. The length is `float((me - ms).sum())`, or with `window` (lo, hi) `clip_length(ms, me,
    lo, hi)`: the same floats, from one float per merged span instead of its start and end."""
    if window is not None and window[1] <= window[0]:
        return 0.0, 0.0, 0.0
    v = np.empty(_taken(rows, len(ts)))  # at most one span per row: the pages past the spans are never touched
    k = 0
    first = last = 0.0
    for s, e in merged_pieces(ts, dur, rows, rounded):
        if k == 0:
            first = float(s[0])
        last = float(e[-1])
        if window is None:
            d = e - s
        else:
            lo, hi = window
            d = np.minimum(e, hi)
            d -= np.maximum(s, lo)
            np.clip(d, 0, None, out=d)
            d[(e <= lo) | (s >= hi)] = 0.0  # outside the window: clip_length's zeros
        v[k : k + len(d)] = d
        k += len(d)
    return first, last, float(v[:k].sum()) if k else 0.0


def extent(ts: np.ndarray, dur: np.ndarray, rows: np.ndarray | None = None, skip_nan: bool = False) -> tuple[float, float] | None:
    """(ts[rows].min(), (ts[rows] + dur[rows]).max()) (`rows`: a mask or an index array; every row
    when None), None without rows, a slice at a time: no column-long copy or sum (a min or max is
    exact in any order). `skip_nan`: np.nanmin and np.nanmax instead, NaN (with their warning)
    only where every value is."""
    low, high = (np.fmin, np.fmax) if skip_nan else (np.minimum, np.maximum)
    firsts: list[float] = []
    lasts: list[float] = []
    for at in _indexers(rows, len(ts)):
        t = ts[at]
        if len(t):
            firsts.append(low.reduce(t))
            lasts.append(high.reduce(t + dur[at]))
    if not firsts:
        return None
    if skip_nan:
        return float(np.nanmin(firsts)), float(np.nanmax(lasts))
    return float(np.min(firsts)), float(np.max(lasts))


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


def overlap_length(sets: list[tuple[np.ndarray, np.ndarray]], b: tuple[np.ndarray, np.ndarray], lo: float, hi: float) -> float:
    """Length of the merged (sorted, disjoint) spans `b` inside [lo, hi] that the union of the
    merged span sets `sets` covers: a slice of `b` at a time, against only the spans of each set
    that the slice reaches, merged there (no union of the sets is made)."""
    bs, be = b
    out = 0.0
    if hi <= lo or not len(bs):
        return out
    for i in range(0, len(bs), _CHUNK):
        s, e = np.clip(bs[i : i + _CHUNK], lo, hi), np.clip(be[i : i + _CHUNK], lo, hi)
        near_s, near_e = [], []
        for as_, ae in sets:
            j0 = max(0, int(np.searchsorted(ae, s[0], side="right")) - 1)
            j1 = int(np.searchsorted(as_, e[-1], side="right"))
            if j1 > j0:
                near_s.append(as_[j0:j1])
                near_e.append(ae[j0:j1])
        if not near_s:
            continue
        ms, me = (near_s[0], near_e[0]) if len(near_s) == 1 else merge(np.concatenate(near_s), np.concatenate(near_e))
        cov = covered_before(ms, me, np.concatenate((s, e)))
        out += float((cov[len(s) :] - cov[: len(s)]).sum())
    return out


def window_lengths(ms: np.ndarray, me: np.ndarray, windows: list[tuple[float, float]]) -> list[float]:
    """Per (lo, hi) window, the length of the merged (sorted, disjoint) spans inside it: only the
    spans that reach into each window are read, a slice at a time (many windows over many spans
    cost one pass, with no span-sized scratch)."""
    out = []
    for lo, hi in windows:
        total = 0.0
        if hi > lo and len(ms):
            i0 = int(np.searchsorted(me, lo, side="right"))
            i1 = max(int(np.searchsorted(ms, hi, side="left")), i0)
            for a in range(i0, i1, _CHUNK):
                b = min(a + _CHUNK, i1)
                d = np.minimum(me[a:b], hi)
                d -= np.maximum(ms[a:b], lo)
                total += float(np.clip(d, 0, None, out=d).sum())
        out.append(total)
    return out
