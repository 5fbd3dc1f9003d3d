"""Interval nesting on one timeline: the containment tree of CPU events per thread."""

from __future__ import annotations

import numpy as np

from perflint.model import NONE


def nest(thread: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parent index and depth of each interval (innermost strict container on its thread).

    Returns (parent, depth, order) where `order` sorts by (thread, ts, -dur): outer before inner.
    Overlapping-but-not-nested intervals (clock skew) are treated as siblings.
    """
    n = len(ts)
    parent = np.full(n, NONE, dtype=np.int32)
    depth = np.zeros(n, dtype=np.int16)
    if n == 0:
        return parent, depth, np.zeros(0, dtype=np.int64)
    order = np.lexsort((-dur, ts, thread))
    end = ts + dur
    thr_l = thread[order].tolist()
    ts_l = ts[order].tolist()
    end_l = end[order].tolist()
    idx_l = order.tolist()
    par_l = [NONE] * n
    dep_l = [0] * n
    stack: list[int] = []  # positions in sorted order
    cur_thr = None
    for pos in range(n):
        t = thr_l[pos]
        if t != cur_thr:
            stack.clear()
            cur_thr = t
        start = ts_l[pos]
        while stack and end_l[stack[-1]] < start:
            stack.pop()
        # A sibling that overlaps without containing us is not our parent.
        while stack and end_l[stack[-1]] < end_l[pos]:
            stack.pop()
        if stack:
            top = stack[-1]
            par_l[pos] = idx_l[top]
            dep_l[pos] = dep_l[top] + 1
        stack.append(pos)
    parent[order] = np.asarray(par_l, dtype=np.int32)
    depth[order] = np.asarray(dep_l, dtype=np.int16)
    return parent, depth, order


def enclosing(
    thread: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
    parent: np.ndarray,
    order: np.ndarray,
    q_thread: np.ndarray,
    q_ts: np.ndarray,
) -> np.ndarray:
    """For each query point, the innermost interval on the same thread that contains it (or NONE)."""
    nq = len(q_ts)
    out = np.full(nq, NONE, dtype=np.int32)
    if nq == 0 or len(ts) == 0:
        return out
    # Key (thread, ts) as one sortable pair: search per thread block.
    s_thr = thread[order]
    s_ts = ts[order]
    end = ts + dur
    threads = np.unique(q_thread)
    par = parent.tolist()
    end_l = end.tolist()
    for t in threads.tolist():
        lo, hi = np.searchsorted(s_thr, [t, t + 1])
        if lo == hi:
            continue
        block_ts = s_ts[lo:hi]
        block_idx = order[lo:hi]
        qmask = q_thread == t
        qpos = np.flatnonzero(qmask)
        qts = q_ts[qpos]
        # Last interval starting at or before the query point (ties: the innermost, sorted last).
        k = np.searchsorted(block_ts, qts, side="right") - 1
        cand = np.where(k >= 0, block_idx[np.maximum(k, 0)], NONE).tolist()
        qts_l = qts.tolist()
        found = []
        for c, q in zip(cand, qts_l):
            while c != NONE and end_l[c] < q:
                c = par[c]
            found.append(c)
        out[qpos] = np.asarray(found, dtype=np.int32)
    return out
