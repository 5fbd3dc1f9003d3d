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


def factorize(cols: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Group id of each row (0.. in order of first appearance) and each group's first row.

    Only the partition matters (ids follow first appearance), so the combined code may be
    renumbered freely: it is kept dense with presence tables, then sorted by radix."""
    n = len(cols[0]) if cols else 0
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
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
    if card > 1 << 16 and card <= table:
        code, card = _compress(code, card)
    if card <= 1 << 16:
        key = _small_key(code, card)
        order = np.argsort(key, kind="stable")
        s = key[order]
        new = np.empty(n, dtype=bool)
        new[0] = True
        new[1:] = s[1:] != s[:-1]
        del s
        first = order[new]  # per code (ascending), its first row: what np.unique's return_index gives
        del order, new
        present = np.zeros(card, dtype=bool)
        present[key] = True
        place = np.cumsum(present, dtype=np.int64) - 1  # per code: its place among the codes present
        inv = np.take(place, key, out=code)  # the codes are not read again: their buffer takes the inverse
        del key
    else:
        _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    rank = np.argsort(first, kind="stable")
    renum = np.empty(len(first), dtype=np.int64)
    renum[rank] = np.arange(len(first))
    return renum[inv.reshape(-1)], first[rank]


class Groups:
    """Rows grouped by key columns; groups in order of first appearance."""

    def __init__(self, *cols: np.ndarray) -> None:
        self.gid, self.first = factorize(cols)
        self.order = np.argsort(_small_key(self.gid, len(self.first)), kind="stable")
        counts = np.bincount(self.gid, minlength=len(self.first))
        self.counts = counts
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
    table = np.zeros(int(col.max()) + 2, dtype=np.int32)  # fewer distinct values than ids
    index: dict[K, int] = {}
    ids = ([-1] if (col < 0).any() else []) + present_ids(col)
    for i in ids:
        table[i + 1] = index.setdefault(fn(i), len(index))
    return table[col + 1], list(index)


def sums(ids: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """Per id, the weights added in row order starting from 0.0 (what a `total += w` loop over
    the rows gives, bit for bit). float64 even when there are no rows (bincount then gives ints)."""
    return np.bincount(ids, weights=weights, minlength=n).astype(np.float64, copy=False)


def group_medians(values: np.ndarray, counts: np.ndarray) -> list[float | None]:
    """float(np.median(v[~isnan(v)])) of each group of `values` (grouped: consecutive runs of
    `counts`), None for a group without a number. np.median is the mean of the one or two middle
    values, which is that value or (a + b) / 2, except for a zero sum (the sign of a zero depends
    on how the mean adds): those groups ask np.median itself. The middle values are order
    statistics, found by a partition of the group's own rows (no sort of all rows)."""
    bounds = np.concatenate(([0], np.cumsum(np.asarray(counts, dtype=np.int64)))).tolist()
    out: list[float | None] = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        part = values[a:b]
        nan = np.isnan(part)
        if nan.any():
            part = part[~nan]
        k = len(part)
        if k == 0:
            out.append(None)
            continue
        mid = k // 2
        if k % 2:
            m = float(np.partition(part, mid)[mid])
        else:
            p = np.partition(part, (mid - 1, mid))
            m = float(p[mid - 1]) + float(p[mid])
        if m == 0.0:
            out.append(float(np_median(part)))
        else:
            out.append(m if k % 2 else m / 2.0)
    return out
