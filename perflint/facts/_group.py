"""Vectorized grouping for fact sources: rows are grouped by integer key columns with numpy and
Python runs once per group, never once per event.

Groups are numbered by first appearance, so iterating them reproduces a dict filled row by row
(fact rows sort stably by time, ties keep that order). A group's rows keep their original order,
so `v[sl].sum()` over a group's slice of `v[order]` adds the same values in the same order (same
float result) as `v[idx].sum()` over the group's row indices.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

import numpy as np

from perflint.ids import unique_inverse as unique_inverse  # re-exported
from perflint.metrics.stats import np_median

K = TypeVar("K", bound=Hashable)

_LIMIT = 1 << 62
_TABLE = 8  # presence tables of up to 8 slots per row (plus 1024) renumber codes densely
_SMALL = 1 << 16  # codes up to this many (or up to the row count) are looked up in tables
_SLICE = 1 << 16  # rows per slice: what a pass holds besides its outputs stays about a MB


def _index_dtype(n: int) -> type[np.signedinteger]:
    """Row indexes and group ids of n rows: int32 where they fit (half the memory of int64)."""
    return np.int32 if n < 2**31 else np.int64


def _slices(n: int, first: int = _SLICE) -> list[slice]:
    """Consecutive slices over n rows: `first` rows, then twice as many each time up to _SLICE."""
    out, a, size = [], 0, min(first, _SLICE)
    while a < n:
        out.append(slice(a, min(a + size, n)))
        a += size
        size = min(2 * size, _SLICE)
    return out


def _dense(col: np.ndarray) -> tuple[np.ndarray, int]:
    """Non-negative codes for a column and their range: an offset when the values are dense
    enough, else their ranks (a sort)."""
    lo, hi = int(col.min()), int(col.max())
    span = hi - lo + 1
    if span <= 4 * len(col) + 1024:
        code = col.astype(np.int64)
        code -= lo
        return code, span
    u, inv = np.unique(col, return_inverse=True)
    return inv.astype(np.int64), len(u)


def _compress(code: np.ndarray, card: int) -> tuple[np.ndarray, int]:
    """The codes renumbered densely (same order) through a presence table of `card` slots."""
    present = np.zeros(card, dtype=bool)
    present[code] = True
    rank = np.cumsum(present, dtype=np.int32 if card < 2**31 else np.int64)  # 1-based
    return rank[code].astype(np.int64) - 1, int(rank[-1])


def _small_key(code: np.ndarray, card: int) -> np.ndarray:
    """`code` in the narrowest unsigned type that holds `card` values: numpy's stable argsort is a
    radix sort (linear) for 16-bit keys, a merge sort for wider ones; the order is the same."""
    return code.astype(np.uint16) if card <= 1 << 16 else code


class _Code:
    """One int64 code per row that is equal exactly where all key columns are, read a slice at a
    time: a mixed-radix number of the columns' offsets, so no full-length code is built unless
    the columns' ranges multiply past 2**62 (then it is built once, ranked and compressed)."""

    def __init__(self, cols: Sequence[np.ndarray]) -> None:
        self.parts: list[tuple[np.ndarray, int, int]] = []  # (column, offset, weight)
        card = 1
        for col in cols:
            col = np.asarray(col)
            lo, hi = int(col.min()), int(col.max())
            self.parts.append((col, lo, card))
            card *= hi - lo + 1
            if card >= _LIMIT:
                code, card = _full_code(cols)
                self.parts = [(code, 0, 1)]
                break
        self.card = card

    def __call__(self, s: slice) -> np.ndarray:
        code: np.ndarray | None = None
        for col, lo, weight in self.parts:
            c = col[s].astype(np.int64)
            if lo:
                c -= lo
            if weight != 1:
                c *= weight
            if code is None:
                code = c
            else:
                code += c
        assert code is not None
        return code


def _full_code(cols: Sequence[np.ndarray]) -> tuple[np.ndarray, int]:
    """The combined code of columns whose ranges multiply past 2**62, built whole: the columns
    so far are ranked or compressed whenever the product would overflow."""
    n = len(cols[0])
    table = _TABLE * n + 1024
    code, card = _dense(np.asarray(cols[0]))  # the codes are this function's own: updated in place
    for col in cols[1:]:
        c, span = _dense(np.asarray(col))
        if card > 1 and card * span > table and card <= table:
            code, card = _compress(code, card)
        if card * span >= _LIMIT:  # re-rank the codes so far (at most n of them)
            u, code = np.unique(code, return_inverse=True)
            code, card = code.astype(np.int64).reshape(-1), len(u)
        code *= span
        code += c
        del c
        card *= span
    return code, card


class _Seen:
    """The codes met so far: a presence table when there are few possible codes, else a sorted
    array of at most _SMALL codes."""

    def __init__(self, card: int, n: int) -> None:
        self.table = np.zeros(card, dtype=bool) if card <= max(_SMALL, n) else None
        self.known = np.zeros(0, dtype=np.int64)

    def new(self, code: np.ndarray) -> np.ndarray:
        new: np.ndarray = ~self.table[code] if self.table is not None else ~_member(self.known, code)
        return new

    def add(self, codes: np.ndarray) -> bool:
        """Adds new codes; False where a sorted array would pass _SMALL codes (none added)."""
        if self.table is not None:
            self.table[codes] = True
        elif len(self.known) + len(codes) > _SMALL:
            return False
        else:
            self.known = np.insert(self.known, np.searchsorted(self.known, codes), codes)
        return True


def _member(known: np.ndarray, code: np.ndarray) -> np.ndarray:
    """Per code: it is in the sorted array `known`."""
    if not len(known):
        return np.zeros(len(code), dtype=bool)
    at = np.searchsorted(known, code)
    np.minimum(at, len(known) - 1, out=at)
    hit: np.ndarray = known[at] == code
    return hit


def factorize(cols: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Group id of each row (0.. in order of first appearance; int32 below 2**31 rows) and each
    group's first row (ascending).

    Only the partition matters (ids follow first appearance), so the combined code may be any
    one-to-one function of the key columns. Two passes a slice at a time: the codes' first rows
    (only rows whose code is new are sorted, and slices start small, so a handful of distinct
    codes costs no sort of the column), then each row's code mapped to its group id. Sparse codes
    with more than _SMALL distinct values are numbered by one sort of the whole code instead."""
    n = len(cols[0]) if cols else 0
    dt = _index_dtype(n)
    if n == 0:
        return np.zeros(0, dtype=dt), np.zeros(0, dtype=np.int64)
    code = _Code(cols)
    seen = _Seen(code.card, n)
    codes, firsts = [], []
    for s in _slices(n, 1 << 10):
        c = code(s)
        new = seen.new(c)
        if not new.any():
            continue
        at = np.flatnonzero(new)
        u, k = _first_each(c[at])
        if not seen.add(u):
            return _factorize_sorted(code, n)
        at = at[k]
        by_row = np.argsort(at, kind="stable")
        codes.append(u[by_row])
        firsts.append(at[by_row] + s.start)
    del seen
    code_of = np.concatenate(codes)  # per group, its code
    gid = np.empty(n, dtype=dt)
    if code.card <= max(_SMALL, n):
        table = np.zeros(code.card, dtype=dt)
        table[code_of] = np.arange(len(code_of), dtype=dt)
        for s in _slices(n):
            np.take(table, code(s), out=gid[s])
    else:
        by_code = np.argsort(code_of, kind="stable")
        known = code_of[by_code]
        ids = by_code.astype(dt)
        for s in _slices(n):
            np.take(ids, np.searchsorted(known, code(s)), out=gid[s])
    return gid, np.concatenate(firsts)


def _first_each(code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(code, return_index=True) by a stable argsort (np.unique's first call in a
    process imports numpy.ma)."""
    o = np.argsort(code, kind="stable")
    sc = code[o]
    head = np.empty(len(sc), dtype=bool)
    head[:1] = True
    np.not_equal(sc[1:], sc[:-1], out=head[1:])
    return sc[head], o[head]


def _factorize_sorted(code: _Code, n: int) -> tuple[np.ndarray, np.ndarray]:
    """factorize by one stable sort of the whole code: for many distinct sparse codes."""
    full = np.empty(n, dtype=np.int64)
    for s in _slices(n):
        full[s] = code(s)
    o = np.argsort(full, kind="stable")
    sc = full[o]
    del full
    head = np.empty(n, dtype=bool)
    head[0] = True
    np.not_equal(sc[1:], sc[:-1], out=head[1:])
    del sc
    first = o[head]  # per code (ascending), its first row
    rank = np.argsort(first, kind="stable")
    renum = np.empty(len(first), dtype=_index_dtype(n))
    renum[rank] = np.arange(len(first))
    gid = np.empty(n, dtype=renum.dtype)
    gid[o] = renum[np.cumsum(head) - 1]  # each row's code's place among the codes, then its group
    return gid, first[rank]


def _grouped_order(gid: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The rows sorted by group id, stably (np.argsort(gid, kind="stable"), as int32 below 2**31
    rows): a counting sort that places a slice at a time, each slice sorted on its own."""
    n = len(gid)
    order = np.empty(n, dtype=_index_dtype(n))
    nxt = np.cumsum(counts) - counts  # per group, where its next row goes
    for s in _slices(n):
        g = gid[s]
        o = np.argsort(_small_key(g, len(counts)), kind="stable")
        sg = g[o]
        starts = np.flatnonzero(np.concatenate(([True], sg[1:] != sg[:-1])))
        lens = np.diff(np.append(starts, len(sg)))
        runs = sg[starts]
        dest = np.repeat(nxt[runs] - starts, lens)
        dest += np.arange(len(sg))
        o += s.start
        order[dest] = o
        nxt[runs] += lens
    return order


def _counts(gid: np.ndarray, ng: int) -> np.ndarray:
    """np.bincount(gid, minlength=ng), a slice at a time (bincount copies int32 ids to int64)."""
    counts = np.zeros(ng, dtype=np.int64)
    for s in _slices(len(gid)):
        counts += np.bincount(gid[s], minlength=ng)
    return counts


class Groups:
    """Rows grouped by key columns; groups in order of first appearance. `gid` and `order` are
    int32 below 2**31 rows."""

    def __init__(self, *cols: np.ndarray) -> None:
        self.gid, self.first = factorize(cols)
        counts = _counts(self.gid, len(self.first))
        self.counts = counts
        self.order = _grouped_order(self.gid, counts)
        self.bounds = np.concatenate(([0], np.cumsum(counts))).tolist()

    def __len__(self) -> int:
        return len(self.first)

    def slices(self) -> list[slice]:
        b = self.bounds
        return [slice(b[i], b[i + 1]) for i in range(len(self.first))]


def dense_ids(items: Iterable[K]) -> tuple[np.ndarray, dict[K, int]]:
    """Ids for hashable items (equal items, equal ids), numbered by first appearance."""
    table: dict[K, int] = {}
    ids = [table.setdefault(x, len(table)) for x in items]
    return np.asarray(ids, dtype=np.int64), table


def present_ids(col: np.ndarray) -> list[int]:
    """Distinct non-negative ids in an int column, ascending (a presence table, not a sort; the
    column is indexed as it is, not copied to int64 as bincount would)."""
    col = np.asarray(col)
    if len(col) == 0:
        return []
    hi = int(col.max())
    if hi < 0:
        return []
    present = np.zeros(hi + 1, dtype=bool)
    present[col if int(col.min()) >= 0 else col[col >= 0]] = True
    used: list[int] = np.flatnonzero(present).tolist()
    return used


def id_table(col: np.ndarray, fn: Callable[[int], object], dtype: type = np.int64, fill: object = -1) -> np.ndarray:
    """Array indexed by id (shifted by one so NONE = -1 maps to slot 0) of fn(id) for the ids in `col`
    (string ids or NONE, never below -1); `table[col + 1]` then maps a whole column at once."""
    col = np.asarray(col)
    size = int(col.max()) + 2 if len(col) else 1
    out: np.ndarray = np.full(size, fill, dtype=dtype)
    for i in present_ids(col):
        out[i + 1] = fn(i)
    return out


def labels(col: np.ndarray, fn: Callable[[int], K]) -> tuple[np.ndarray, list[K]]:
    """fn over an int column of ids (NONE = -1 included, never below), called once per distinct id:
    per row the index of its value in the returned list of distinct values (equal values share one)."""
    col = np.asarray(col)
    if len(col) == 0:
        return np.zeros(0, dtype=np.int64), []
    ids = ([-1] if (col < 0).any() else []) + present_ids(col)
    table, values = label_table(ids, int(col.max()), fn)
    return table[col + 1], values


def label_table(ids: Iterable[int], hi: int, fn: Callable[[int], K]) -> tuple[np.ndarray, list[K]]:
    """fn over ids (NONE = -1 included, none above `hi`), called once per id in the given order:
    a table indexed by id + 1 of the index of fn(id) in the returned list of distinct values
    (`table[col + 1]` labels a column, or a slice of one, at once)."""
    table = np.zeros(hi + 2, dtype=np.int32)  # fewer distinct values than ids
    index: dict[K, int] = {}
    for i in ids:
        table[i + 1] = index.setdefault(fn(i), len(index))
    return table, list(index)


def sums(ids: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """Per id, the weights added in row order starting from 0.0 (what a `total += w` loop over
    the rows gives, bit for bit). float64 even when there are no rows (bincount then gives ints)."""
    return np.bincount(ids, weights=weights, minlength=n).astype(np.float64, copy=False)


def group_medians(values: np.ndarray, counts: np.ndarray, scratch: bool = False) -> list[float | None]:
    """float(np.median(v[~isnan(v)])) of each group of `values` (grouped: consecutive runs of
    `counts`), None for a group without a number. np.median is the mean of the one or two middle
    values, which is that value or (a + b) / 2, except for a zero sum (the sign of a zero depends
    on how the mean adds): those groups ask np.median itself. The middle values are order
    statistics, found by a partition of the group's own rows (no sort of all rows). `scratch`:
    `values` is the caller's to reorder, partitioned in place instead of in a copy."""
    bounds = np.concatenate(([0], np.cumsum(np.asarray(counts, dtype=np.int64)))).tolist()
    out: list[float | None] = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        part = values[a:b]
        nan = np.isnan(part)
        own = scratch
        if nan.any():
            part, own = part[~nan], True
        del nan
        k = len(part)
        if k == 0:
            out.append(None)
            continue
        mid = k // 2
        kth = mid if k % 2 else (mid - 1, mid)
        if own:  # the caller's scratch, or our own copy of its numbers: reordered in place
            part.partition(kth)
            p = part
        else:
            p = np.partition(part, kth)
        m = float(p[mid]) if k % 2 else float(p[mid - 1]) + float(p[mid])
        if m == 0.0:
            out.append(float(np_median(part)))
        else:
            out.append(m if k % 2 else m / 2.0)
    return out
