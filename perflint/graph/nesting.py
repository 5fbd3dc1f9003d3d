"""Interval nesting on one timeline: the containment tree of CPU events per thread.

Both functions are vectorized (a trace holds hundreds of thousands of ops); each keeps a
sequential reference loop for inputs outside the fast path's assumptions (negative or NaN
durations, NaN times), so results never depend on which path ran.
"""

from __future__ import annotations

import numpy as np

from perflint.ids import distinct
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
    order = _sort_order(thread, ts, dur)
    end = ts + dur
    s_end = end[order]
    # With dur >= 0 and no NaN, the stack walk of _nest_loop is "nearest earlier interval on the
    # thread (in sorted order) ending at or after this one" (a start can never pass an end first).
    if not (np.all(dur >= 0) and not np.isnan(s_end).any() and not np.isnan(ts).any()):
        return _nest_loop(thread, ts, end, order, parent, depth)
    s_thr = thread[order]
    seg = np.zeros(n, dtype=bool)
    seg[0] = True
    seg[1:] = s_thr[1:] != s_thr[:-1]
    seg_lo = np.maximum.accumulate(np.where(seg, np.arange(n), 0))
    ppos = _prev_ge(s_end, seg_lo, np.flatnonzero(seg))
    has = ppos >= 0
    s_par = np.full(n, NONE, dtype=np.int32)
    s_par[has] = order[ppos[has]]
    parent[order] = s_par
    depth[order] = depths(ppos).astype(np.int16)
    return parent, depth, order


_CHASE_ROUNDS = 48  # pointer-chasing rounds before the remaining queries switch to a search
_CLIMB_ROUNDS = 16  # one-level climbing rounds in `enclosing` before binary lifting takes over
_MAX_SEGMENT_LOOPS = 1024  # threads beyond which _prev_ge skips its per-thread root pre-pass


def _sort_order(thread: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """np.lexsort((-dur, ts, thread)), several times faster on real traces: their times come
    nearly sorted (a stable sort on them is almost linear), so sort by time, order only the tied
    times by -dur, then stably by thread."""
    if np.isnan(ts).any():  # lexsort's NaN ties are ordered by -dur; == cannot find them
        nan_order: np.ndarray = np.lexsort((-dur, ts, thread))
        return nan_order
    order = np.argsort(ts, kind="stable")
    s = ts[order]
    same = s[1:] == s[:-1]
    if same.any():
        tied = np.zeros(len(s), dtype=bool)
        tied[1:] = same
        tied[:-1] |= same
        pos = np.flatnonzero(tied)
        sub = order[pos]
        # The (sorted, NaN-free) times themselves key the tie groups: equal times, one group.
        order[pos] = sub[np.lexsort((-dur[sub], s[pos]))]  # stable: equal durations keep index order
    return order[np.argsort(thread[order], kind="stable")]


def _prev_ge(v: np.ndarray, lo: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    """For each i, the largest j in [lo[i], i) with v[j] >= v[i], else -1.

    Pointer chasing: p starts at i - 1; while v[p] < v[i], everything between p's own answer
    (or its pointer so far) and i is below v[i] too, so p jumps there. Real op trees finish in a
    few dozen vectorized rounds; queries left after _CHASE_ROUNDS finish by a search (_search_ge).
    """
    n = len(v)
    ptr = np.arange(-1, n - 1, dtype=np.int64)
    ptr[ptr < lo] = -1
    # Roots (above everything before them on their thread) would otherwise chase through every
    # earlier root: find them by a running max per thread (few threads: one call each).
    if starts is None:  # the segments' first positions (lo[i] == i), when the caller has none
        starts = np.flatnonzero(lo == np.arange(n))
    if len(starts) <= _MAX_SEGMENT_LOOPS:
        root = np.zeros(n, dtype=bool)
        for a, b in zip(starts.tolist(), [*starts[1:].tolist(), n]):
            root[a + 1 : b] = np.maximum.accumulate(v[a : b - 1]) < v[a + 1 : b]
        ptr[root] = -1
    live = np.flatnonzero(ptr >= 0)
    for _ in range(_CHASE_ROUNDS):
        if len(live) == 0:
            return ptr
        below = v[ptr[live]] < v[live]
        live = live[below]
        ptr[live] = ptr[ptr[live]]
        live = live[ptr[live] >= lo[live]]
    live = live[v[ptr[live]] < v[live]]  # the rest: every v[ptr[i] .. i-1] < v[i]
    if len(live):
        ptr[live] = _search_ge(v, lo[live], ptr[live], v[live])
    return ptr


def _search_ge(v: np.ndarray, lo: np.ndarray, cur: np.ndarray, target: np.ndarray) -> np.ndarray:
    """For queries with every v[cur .. i-1] < target: the largest j in [lo, cur) with
    v[j] >= target, else -1. Exponential then binary search over a sparse table of window maxima,
    all queries at once per level: O(log distance) vectorized steps."""
    tables = [v]  # tables[l][k] = max(v[k : k + 2**l])

    def table(lvl: int) -> np.ndarray:
        while len(tables) <= lvl:
            t, w = tables[-1], 1 << (len(tables) - 1)
            tables.append(np.maximum(t[:-w], t[w:]))
        return tables[lvl]

    cur = cur.copy()
    stop = np.zeros(len(cur), dtype=np.int64)  # level at which the upward search stopped
    live = np.arange(len(cur))
    lvl = 0
    while len(live):
        c = cur[live] - (1 << lvl)
        ok = c >= lo[live]
        ok[ok] = table(lvl)[c[ok]] < target[live[ok]]
        cur[live[ok]] = c[ok]
        stop[live[~ok]] = lvl
        live = live[ok]
        lvl += 1
    # Less than 2**stop remains to cover: binary descent from the level below.
    for lvl in range(int(stop.max(initial=0)) - 1, -1, -1):
        live = np.flatnonzero(stop > lvl)
        c = cur[live] - (1 << lvl)
        ok = c >= lo[live]
        ok[ok] = tables[lvl][c[ok]] < target[live[ok]]
        cur[live[ok]] = c[ok]
    j = cur - 1
    return np.where(j >= lo, j, -1)


def depths(ppos: np.ndarray) -> np.ndarray:
    """Number of ancestors of each node of a parent-pointer forest (-1 = root), by pointer jumping."""
    d = (ppos >= 0).astype(np.int64)
    p = ppos.copy()
    live = np.flatnonzero(p >= 0)
    for _ in range(64):  # each pass halves every path: a forest of any size ends well within this
        if not len(live):
            break
        pl = p[live]
        # d[i] counts the steps from i to p[i]: jump to p[p[i]] and add p[i]'s count.
        d[live] += d[pl]
        p[live] = p[pl]
        live = live[p[live] >= 0]
    return d


def _nest_loop(
    thread: np.ndarray, ts: np.ndarray, end: np.ndarray, order: np.ndarray, parent: np.ndarray, depth: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference stack walk, for inputs with negative or NaN durations or NaN times."""
    n = len(order)
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
    """For each query point, the innermost interval on the same thread that contains it (or NONE).
    Without intervals: one read-only NONE for all (millions of runtime calls in a trace without
    CPU ops would otherwise cost a column of NONE)."""
    nq = len(q_ts)
    if nq == 0 or len(ts) == 0:
        return np.broadcast_to(np.int32(NONE), (nq,))
    out = np.full(nq, NONE, dtype=np.int32)
    # Key (thread, ts) as one sortable pair: search per thread block.
    s_thr = thread[order]
    s_ts = ts[order]
    end = ts + dur
    # Last interval starting at or before the query point (ties: the innermost, sorted last).
    cand = np.full(nq, NONE, dtype=np.int64)
    for t in distinct(q_thread):
        lo, hi = np.searchsorted(s_thr, [t, t + 1])
        if lo == hi:
            continue
        qpos = np.flatnonzero(q_thread == t)
        k = np.searchsorted(s_ts[lo:hi], q_ts[qpos], side="right") - 1
        cand[qpos] = np.where(k >= 0, order[lo:hi][np.maximum(k, 0)], NONE)
    has = parent != NONE
    if np.isnan(end).any() or not bool((end[parent[has]] >= end[has]).all()):
        return _enclosing_loop(cand, q_ts, parent, end, out)
    # Ends never decrease up a parent chain, so "climb while the interval ends before the query"
    # stops at one point. Few queries climb and real trees are shallow: climb a level at a time
    # over the climbers only; binary lifting (O(log depth) steps, a table over all intervals)
    # finishes what is left after _CLIMB_ROUNDS.
    valid = np.flatnonzero(cand != NONE)
    c = cand[valid]
    q = q_ts[valid]
    climb = end[c] < q
    sel = np.flatnonzero(climb)
    cc, qq = c[sel], q[sel]
    live = np.arange(len(sel))
    for _ in range(_CLIMB_ROUNDS):
        if len(live) == 0:
            break
        a = parent[cc[live]]
        mv = (a >= 0) & (end[np.maximum(a, 0)] < qq[live])
        cc[live[mv]] = a[mv]
        live = live[mv]
    if len(live):
        up = [parent.astype(np.int64)]
        while True:
            u = up[-1]
            nxt = np.where(u >= 0, u[np.maximum(u, 0)], NONE)
            if not (nxt >= 0).any():
                break
            up.append(nxt)
        cl, ql = cc[live], qq[live]
        for u in reversed(up):
            a = u[cl]
            mv = (a >= 0) & (end[np.maximum(a, 0)] < ql)
            cl[mv] = a[mv]
        cc[live] = cl
    c[sel] = parent[cc]  # the first ancestor that does not end before the query
    out[valid] = c
    return out


def _enclosing_loop(
    cand: np.ndarray, q_ts: np.ndarray, parent: np.ndarray, end: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """The reference parent walk, for parent arrays whose ends can decrease upwards (or NaN)."""
    par = parent.tolist()
    end_l = end.tolist()
    found = []
    for c, q in zip(cand.tolist(), q_ts.tolist()):
        while c != NONE and end_l[c] < q:
            c = par[c]
        found.append(c)
    out[:] = np.asarray(found, dtype=np.int32)
    return out
