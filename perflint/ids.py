"""Integer id columns (string ids, op ids, codes): distinct values and membership without a sort
or a hash where the values are dense: a table over their range is one linear pass."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def unique_inverse(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(col, return_inverse=True) for an int column (inverse flattened to int64): a
    presence table instead of a sort when the values span a range of at most ~8 slots per row."""
    col = np.asarray(col)
    if len(col):
        lo, hi = int(col.min()), int(col.max())
        if hi - lo < 8 * len(col) + 1024:
            present = np.zeros(hi - lo + 1, dtype=bool)
            off = np.subtract(col, lo, dtype=np.int64)
            present[off] = True
            rank = np.cumsum(present, dtype=np.int32 if len(present) < 2**31 else np.int64)  # 1-based
            return np.flatnonzero(present).astype(col.dtype) + lo, rank[off].astype(np.int64) - 1
    u, inv = np.unique(col, return_inverse=True)
    return u, inv.reshape(-1).astype(np.int64)


_SLICE = 1 << 18


def rows_of(mask: np.ndarray) -> np.ndarray:
    """np.flatnonzero(mask) as int32 (int64 past 2**31 rows), a slice at a time: no
    full-length int64 positions on the way."""
    if len(mask) >= 2**31:
        return np.flatnonzero(mask)
    out = np.empty(int(np.count_nonzero(mask)), dtype=np.int32)
    k = 0
    for i in range(0, len(mask), _SLICE):
        nz = np.flatnonzero(mask[i : i + _SLICE])
        out[k : k + len(nz)] = nz + i
        k += len(nz)
    return out


def compress_in_place(a: np.ndarray, keep: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """`a[keep(a)]` written over the front of `a` itself, a slice at a time (`keep` is asked per
    slice; the write position never passes the slice being read): no second full-length array.
    Returns that front as a view; `a` is the caller's own, and its tail is left as it was."""
    k = 0
    for i in range(0, len(a), _SLICE):
        part = a[i : i + _SLICE]
        kept = part[keep(part)]
        a[k : k + len(kept)] = kept
        k += len(kept)
    return a[:k]


def isin_ids(col: np.ndarray, members: np.ndarray | list[int]) -> np.ndarray:
    """np.isin(col, members) for int columns: a boolean table over the values' range when it is
    compact (string ids are), several times faster than np.isin on long columns."""
    col = np.asarray(col)
    members = np.asarray(members)
    if len(col) == 0 or len(members) == 0:
        return np.zeros(len(col), dtype=bool)
    lo = min(int(col.min()), int(members.min()))
    hi = max(int(col.max()), int(members.max()))
    if hi - lo >= 8 * len(col) + 1024:
        return np.isin(col, members)
    table = np.zeros(hi - lo + 1, dtype=bool)
    table[members.astype(np.int64) - lo] = True
    return table[np.subtract(col, lo, dtype=np.int64) if lo else col]  # type: ignore[no-any-return]


def distinct(col: np.ndarray) -> list[int]:
    """np.unique(col).tolist() for an int column, by a presence table when the values are dense.
    Never a plain np.unique: in numpy 2.x its first call imports numpy.ma (~20 ms)."""
    col = np.asarray(col)
    if len(col) == 0:
        return []
    lo, hi = int(col.min()), int(col.max())
    if hi - lo < 8 * len(col) + 1024:
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[np.subtract(col, lo, dtype=np.int64) if lo else col] = True
        ids: list[int] = (np.flatnonzero(present) + lo).tolist()
        return ids
    return np.unique(col, return_counts=True)[0].tolist()  # type: ignore[no-any-return]
