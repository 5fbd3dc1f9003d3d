"""Interval unions streamed a slice of rows at a time.

`merged_slices` yields the same merged spans as `intervals.merge_spans` (or, `rounded`, as
`intervals.merge(ceil(ts), floor(ts + dur))`, HTA's order), but never holds the whole list of spans,
nor a sorted copy of the start and end columns: callers that only reduce the spans (a sum, a
filter) keep what they reduce to. The sort, where the rows are not in start order already, is one
int32 row order.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from perflint.metrics.intervals import ascending

_SLICE = 1 << 16


def _selected_rows(rows: np.ndarray) -> np.ndarray:
    """np.flatnonzero(rows) as int32 for a mask over fewer than 2**31 rows (int64 otherwise), a
    slice at a time: no int64 index list of the whole mask."""
    out = np.empty(int(np.count_nonzero(rows)), dtype=np.int32 if len(rows) < 2**31 else np.int64)
    k = 0
    for at in _indexers(rows, len(rows)):
        assert not isinstance(at, slice)
        out[k : k + len(at)] = at
        k += len(at)
    return out


def _indexers(rows: np.ndarray | None, n: int) -> Iterator[np.ndarray | slice]:
    """The rows `rows` (a mask or an index array; all `n` when None) in their order, as one
    indexer per slice."""
    if rows is None:
        for i in range(0, n, _SLICE):
            yield slice(i, i + _SLICE)
    elif rows.dtype == np.bool_:
        for i in range(0, len(rows), _SLICE):
            at = np.flatnonzero(rows[i : i + _SLICE])
            if len(at):
                at += i
                yield at
    else:
        for i in range(0, len(rows), _SLICE):
            yield rows[i : i + _SLICE]


def _starts(ts: np.ndarray, at: np.ndarray | slice, rounded: bool) -> np.ndarray:
    s: np.ndarray = np.asarray(ts[at], dtype=np.float64)
    if not rounded:
        return s
    up: np.ndarray = np.ceil(s) if isinstance(at, slice) else np.ceil(s, out=s)  # a slice: a view of ts
    return up


def _ends(ts: np.ndarray, dur: np.ndarray, at: np.ndarray | slice, rounded: bool) -> np.ndarray:
    e: np.ndarray = np.add(ts[at], dur[at], dtype=np.float64)  # ts + dur, as merge_spans and HTA add
    if rounded:
        np.floor(e, out=e)
    return e


def _in_order(ts: np.ndarray, rows: np.ndarray | None, rounded: bool) -> bool:
    """Whether the starts of the rows already ascend (a stable sort would leave them)."""
    last = -np.inf
    for at in _indexers(rows, len(ts)):
        s = _starts(ts, at, rounded)
        if not (s[0] >= last and ascending(s)):
            return False
        last = s[-1]
    return True


def _row_order(ts: np.ndarray, rows: np.ndarray | None, rounded: bool) -> np.ndarray:
    """The rows (indexes into the columns, int32 where they fit) in stable start order."""
    s = _starts(ts, slice(None) if rows is None else rows, rounded)
    order64 = np.argsort(s, kind="stable")
    del s
    order = order64.astype(np.int32) if len(ts) < 2**31 else order64
    del order64
    if rows is not None:  # positions among the rows taken, to rows of the columns
        order = (_selected_rows(rows) if rows.dtype == np.bool_ else rows)[order]
    return order


def merged_slices(
    ts: np.ndarray, dur: np.ndarray, rows: np.ndarray | None = None, rounded: bool = False
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Merged (sorted, disjoint) spans of the rows in `rows` (a mask or an index array; every row
    when None), in order, as successive (starts, ends) pieces; together they are exactly the
    arrays `merge_spans(ts, dur, rows)` returns. `rounded`: each row spans ceil(ts) to
    floor(ts + dur) (HTA's whole-µs rounding: such a span can be inverted, and the stable start
    order is kept for it as `merge` keeps it)."""
    if rows is not None and rows.dtype == np.bool_ and rows.all():
        rows = None
    if not _in_order(ts, rows, rounded):
        rows = _row_order(ts, rows, rounded)
    run = np.nan  # running maximum end of the rows so far; the open span's end
    open_start: float | None = None  # start of the span still open after the previous slice
    for at in _indexers(rows, len(ts)):
        s = _starts(ts, at, rounded)
        e = _ends(ts, dur, at, rounded)
        np.maximum.accumulate(e, out=e)
        if open_start is not None:
            np.maximum(e, run, out=e)  # the running maximum over every row so far, as merge's
        # prev[j]: the running maximum end before row j, which closes the span open there.
        prev = np.empty(len(e))
        prev[0] = run
        prev[1:] = e[:-1]
        new = np.empty(len(s), dtype=bool)
        np.greater(s[1:], prev[1:], out=new[1:])
        new[0] = open_start is None or s[0] > run
        starts = s[new]
        ends = prev[new]
        if open_start is None:
            ends = ends[1:]  # the first row opens the first span; nothing closes there
        else:
            starts = np.concatenate(([open_start], starts))
        open_start = float(starts[-1])
        run = float(e[-1])
        if len(ends):
            yield starts[:-1], ends
    if open_start is not None:
        yield np.array([open_start]), np.array([run])
