"""Replaying a step graph: every node starts when its latest predecessor edge allows (the
predecessor's end plus the edge's delay, and no earlier than the node's release time) and ends its
duration later. That is the longest path through a DAG, taken in topological order (Kahn's); the
binding edge of each node is kept, for the critical path."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Replayed:
    start: np.ndarray  # float64 per node
    end: np.ndarray  # float64 per node
    binding: np.ndarray  # int64 per node: the index (into the edge arrays) of its binding edge, -1: its release time


try:
    import perflint.stepmodel._replay as native
except ImportError:  # built without a C compiler: the pure-Python twin below
    native = None  # type: ignore[assignment]


def longest_path(
    indptr: np.ndarray, pred: np.ndarray, delay: np.ndarray, from_start: np.ndarray, release: np.ndarray, dur: np.ndarray
) -> Replayed:
    """Start and end of every node. Edges are given per node as the CSR of its predecessors:
    pred[indptr[v]:indptr[v + 1]] with their delays, counted from the predecessor's end, or from
    its start where `from_start` (a kernel follows its launch call's start, not its return).
    Nodes on a cycle (a wrong edge) start when the edges done so far allow. The C extension when
    it is built, else `longest_path_py`: the same results."""
    if native is None:
        return longest_path_py(indptr, pred, delay, from_start, release, dur)
    n = len(dur)
    start, end, bind = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
    native.longest_path(
        np.ascontiguousarray(indptr, dtype=np.int64), np.ascontiguousarray(pred, dtype=np.int64),
        np.ascontiguousarray(delay, dtype=np.float64), np.ascontiguousarray(from_start, dtype=np.uint8),
        np.ascontiguousarray(release, dtype=np.float64), np.ascontiguousarray(dur, dtype=np.float64), start, end, bind,
    )  # fmt: skip
    return Replayed(start, end, bind)


def longest_path_py(
    indptr: np.ndarray, pred: np.ndarray, delay: np.ndarray, from_start: np.ndarray, release: np.ndarray, dur: np.ndarray
) -> Replayed:
    """`longest_path` in Python (where the C extension is not built)."""
    n = len(dur)
    npred = np.diff(indptr)
    # Successor lists by a stable sort of the edges by their predecessor.
    src = pred.astype(np.int64)
    owner = np.repeat(np.arange(n, dtype=np.int64), npred)
    order = np.argsort(src, kind="stable")
    succ = owner[order].tolist()
    sptr = np.concatenate(([0], np.cumsum(np.bincount(src, minlength=n)))).tolist()
    indeg = npred.tolist()
    ip = indptr.tolist()
    pl = pred.tolist()
    dl = delay.tolist()
    fs = from_start.tolist()
    rel = release.tolist()
    du = dur.tolist()
    start = [0.0] * n
    end = [0.0] * n
    bind = [-1] * n
    ready = [v for v in range(n) if indeg[v] == 0]
    done = 0
    while True:
        while ready:
            v = ready.pop()
            done += 1
            s = rel[v]
            b = -1
            for e in range(ip[v], ip[v + 1]):
                t = (start[pl[e]] if fs[e] else end[pl[e]]) + dl[e]
                if t > s:
                    s, b = t, e
            start[v] = s
            end[v] = s + du[v]
            bind[v] = b
            for k in range(sptr[v], sptr[v + 1]):
                w = succ[k]
                indeg[w] -= 1
                if indeg[w] == 0:
                    ready.append(w)
        if done == n:
            break
        # A cycle: release the earliest waiting node (by release time) with the edges done so far.
        v = min((w for w in range(n) if indeg[w] > 0), key=lambda w: rel[w])
        indeg[v] = 0
        ready.append(v)
    return Replayed(np.asarray(start), np.asarray(end), np.asarray(bind, dtype=np.int64))


def walk(
    binding: np.ndarray, pred: np.ndarray, from_start: np.ndarray, start: np.ndarray, end: np.ndarray, lo: float, v0: int,
    seen: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """The critical path back from node v0 as node indices: v0, the predecessor of its binding
    edge, and so on, stopping after a node that starts at or before `lo`, has no binding edge, or
    whose binding edge counts from a time at or before `lo`, and before a node marked in `seen`
    (uint8 per node, marked as the walk goes: walks that share it visit each node once). C where
    built, else the same loop in Python."""
    n = len(start)
    if seen is None:
        seen = np.zeros(n, dtype=np.uint8)
    if native is not None:
        out = np.empty(n, dtype=np.int64)
        k = native.walk(
            np.ascontiguousarray(binding, dtype=np.int64), np.ascontiguousarray(pred, dtype=np.int64),
            np.ascontiguousarray(from_start, dtype=np.uint8), np.ascontiguousarray(start, dtype=np.float64),
            np.ascontiguousarray(end, dtype=np.float64), float(lo), int(v0), out, seen,
        )  # fmt: skip
        got: np.ndarray = out[:k].copy()
        return got
    return walk_py(binding, pred, from_start, start, end, lo, v0, seen)


def walk_py(
    binding: np.ndarray, pred: np.ndarray, from_start: np.ndarray, start: np.ndarray, end: np.ndarray, lo: float, v0: int,
    seen: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """`walk` in Python."""
    n, m = len(start), len(pred)
    got: list[int] = []
    v = int(v0)
    while 0 <= v < n and len(got) < n and not seen[v]:
        seen[v] = 1
        got.append(v)
        if start[v] <= lo:
            break
        e = int(binding[v])
        if e < 0 or e >= m:
            break
        p = int(pred[e])
        if not 0 <= p < n or (start[p] if from_start[e] else end[p]) <= lo:
            break
        v = p
    return np.asarray(got, dtype=np.int64)
