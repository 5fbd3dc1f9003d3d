"""Interval arithmetic on device timelines (union, clipping), vectorized."""

from __future__ import annotations

import numpy as np


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted, disjoint (start, end) arrays."""
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    e = np.maximum.accumulate(ends[order])
    # A new block starts where an interval begins after everything before it ended.
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > e[:-1]
    block = np.cumsum(new) - 1
    ms = s[new]
    me = np.zeros(len(ms))
    np.maximum.at(me, block, e)
    return ms, me


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    ms, me = merge(starts, ends)
    return float((me - ms).sum())


def clip_length(ms: np.ndarray, me: np.ndarray, lo: float, hi: float) -> float:
    """Length of merged intervals inside [lo, hi]."""
    if hi <= lo or len(ms) == 0:
        return 0.0
    return float(np.clip(np.minimum(me, hi) - np.maximum(ms, lo), 0, None).sum())
