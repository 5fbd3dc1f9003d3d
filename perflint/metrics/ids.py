"""Distinct values of integer id columns (string ids, op ids, codes) without a sort where the
values are dense: a presence table over their range is one linear pass."""

from __future__ import annotations

import numpy as np


def unique_inverse(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(col, return_inverse=True) for an int column (inverse flattened to int64): a
    presence table instead of a sort when the values span a range of at most ~8 slots per row."""
    col = np.asarray(col)
    if len(col):
        lo, hi = int(col.min()), int(col.max())
        if hi - lo < 8 * len(col) + 1024:
            present = np.zeros(hi - lo + 1, dtype=bool)
            off = col - lo
            present[off] = True
            rank = np.cumsum(present) - 1
            return np.flatnonzero(present).astype(col.dtype) + lo, rank[off]
    u, inv = np.unique(col, return_inverse=True)
    return u, inv.reshape(-1).astype(np.int64)
