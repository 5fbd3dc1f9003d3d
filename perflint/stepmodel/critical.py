"""The critical path of a replayed step and what it is made of.

Walking back from the step's end along each node's binding edge gives the chain of work and
delays the step waited on; its pieces tile the replayed step exactly. Each piece gets a category:
GPU work by its kernel category (memcpy, memset and communication apart), launch overhead (launch
calls, the launch latency, the GPU's gap between back-to-back kernels), CPU time between calls
(data loading inside the DataLoader's ops, CPU op dispatch and Python elsewhere), host-sync waits
(a blocking call's return after the GPU work it waited for), cross-stream waits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflint.graph.names import dataloader_ops
from perflint.ids import distinct
from perflint.metrics.apis import is_launch
from perflint.metrics.intervals import covered_before, merge, merged_length, merged_pieces, overlap_length, window_lengths
from perflint.metrics.kernel_classes import CATEGORIES, classify
from perflint.model import NONE, Trace
from perflint.stepmodel.graph import (
    CALL,
    E_CPU,
    E_END,
    E_EVENT,
    E_LAUNCH,
    E_NEST,
    E_STREAM,
    E_THREAD,
    END,
    GPU,
    MARK,
    MARK_END,
    RETURN,
    StepGraph,
    trace_facts,
)  # fmt: skip
from perflint.stepmodel.replay import Replayed, walk

# Bound-by categories, in the order reports list them.
COMPUTE = tuple(f"gpu_{c}" for c in CATEGORIES if c not in ("memcpy", "memset", "communication"))
# comm_wait: the part of communication spent waiting for the last rank to arrive, known only where
# the ranks of a run are joined (perflint.stepmodel.join).
BOUND = (*COMPUTE, "memcpy", "memset", "communication", "comm_wait", "launch", "cpu", "data_loading", "sync", "event", "other")
LABELS = {
    **{f"gpu_{c}": f"GPU {c.replace('_', ' ')}" for c in CATEGORIES},
    "memcpy": "memcpy",
    "memset": "memset",
    "communication": "communication",
    "comm_wait": "communication wait (late rank)",
    "launch": "kernel launch overhead",
    "cpu": "CPU op dispatch / Python",
    "data_loading": "data loading",
    "sync": "host sync wait",
    "event": "cross-stream wait",
    "other": "not explained by the trace",
}


@dataclass(frozen=True)
class Segment:
    category: str
    lane: str
    start: float
    end: float
    name: str

    @property
    def us(self) -> float:
        return self.end - self.start


_CAT = {c: i for i, c in enumerate(BOUND)}
# The bound-by category of each kernel category (index CATEGORIES; the last slot: unclassified).
_GPU_CAT = np.array([_CAT[c if c in ("memcpy", "memset", "communication") else f"gpu_{c}"] for c in CATEGORIES] + [_CAT["gpu_other"]], dtype=np.int16)
# Names of the pieces that are delays, not recorded events (Pieces.name < 0 indexes them, -1 first).
FIXED_NAMES = ("launch latency", "gap between kernels", "cross-stream wait", "DataLoader", "CPU between calls", "wait")
_LATENCY, _GAP, _XWAIT, _LOADER, _CPU, _WAIT = (-1 - i for i in range(len(FIXED_NAMES)))
LANE_THREAD, LANE_STREAM, LANE_STEP = 0, 1, 2
_SLICE = 1 << 18  # GPU rows looked at at once


@dataclass(frozen=True)
class Pieces:
    """A critical path as columns, in time order: per piece its category (index into BOUND), its
    lane (kind: LANE_*, and the thread index or stream id), replayed start and end, its name
    (a string id of the trace, or -1 - i for FIXED_NAMES[i]) and its GPU row (a piece of GPU
    work; NONE for the others)."""

    cat: np.ndarray
    lane_kind: np.ndarray
    lane_id: np.ndarray
    start: np.ndarray
    end: np.ndarray
    name: np.ndarray
    row: np.ndarray

    def __len__(self) -> int:
        return len(self.cat)

    def lane(self, t: Trace, k: int) -> str:
        kind, lid = int(self.lane_kind[k]), int(self.lane_id[k])
        return f"GPU stream {lid}" if kind == LANE_STREAM else f"CPU thread {t.threads[lid][1]}" if kind == LANE_THREAD else "step"

    def label(self, t: Trace, k: int) -> str:
        nid = int(self.name[k])
        return FIXED_NAMES[-1 - nid] if nid < 0 else t.s(nid)

    def segments(self, t: Trace) -> list[Segment]:
        return [Segment(BOUND[int(c)], self.lane(t, k), float(self.start[k]), float(self.end[k]), self.label(t, k)) for k, c in enumerate(self.cat)]


def critical_path(t: Trace, g: StepGraph, rp: Replayed, i: int) -> Pieces:
    """Step i's critical path as pieces from its replayed start to its replayed end: the walk back
    from the step's end along each node's binding edge, each node's own time and each edge's delay
    a piece, categorized a column at a time."""
    lo = float(g.replayed_windows(rp.start)[0][i])
    path = walk(rp.binding, g.pred, g.from_start, rp.start, rp.end, lo, int(g.step_end[i]))[::-1]  # forward in time
    s, e = rp.start[path], rp.end[path]
    kind, ref = g.kind[path], g.ref[path]
    thread = _node_thread(t, g, path)
    lane_kind, lane_id = _lanes(t, g, path, thread)
    cpu_node = (kind == CALL) | (kind == RETURN)
    is_gpu = kind == GPU
    parts: list[tuple[np.ndarray, ...]] = []  # (order key, cat, lane kind, lane id, start, end, name, GPU row)

    # Each node's own time.
    own = (e > s) & (e > lo) & (is_gpu | (kind == CALL) | (kind == RETURN))
    ncat = np.full(len(path), _CAT["cpu"], dtype=np.int16)
    name = np.zeros(len(path), dtype=np.int64)
    if is_gpu.any():
        kc = classify(t).category[ref[is_gpu]]
        ncat[is_gpu] = _GPU_CAT[np.where(kc >= 0, kc, len(CATEGORIES))]
        name[is_gpu] = t.gpu.name[ref[is_gpu]]
    ret = kind == RETURN
    ncat[ret] = _CAT["sync"]
    calls = kind == CALL
    name[cpu_node] = t.runtime.name[ref[cpu_node]]
    if calls.any():
        # A copy call's own time is the host side of the copy (staging through pageable memory).
        ids = name[calls]
        table = {sid: _call_cat(t.s(sid)) for sid in distinct(ids)}
        ncat[calls] = np.asarray([table[x] for x in ids.tolist()], dtype=np.int16) if len(table) > 1 else table[int(ids[0])]
    k = np.flatnonzero(own)
    order = np.arange(len(path), dtype=np.float64)
    parts.append((order[k] + 0.5, ncat[k], lane_kind[k], lane_id[k], np.maximum(s[k], lo), e[k], name[k], np.where(is_gpu[k], ref[k], NONE)))

    # The delay before each node: its binding edge's (or, for the first node, its release since
    # the step's start: CPU time before the thread's first call).
    b = rp.binding[path]
    has = b >= 0
    bh = b[has]
    p = path.copy()
    p[has] = g.pred[bh]
    fs = np.zeros(len(path), dtype=bool)
    fs[has] = g.from_start[bh]
    from_t = np.where(has, np.where(fs, rp.start[p], rp.end[p]), lo)
    delay = (s > from_t) & (s > lo)
    # The first node only has a delay before it when the walk stopped on its edge or release.
    delay[0] &= ~(s[0] <= lo)
    et = np.full(len(path), E_CPU, dtype=np.int8)
    et[has] = g.etype[bh]
    released = ~has
    cut = np.maximum(from_t, lo)
    d = np.flatnonzero(delay)
    if len(d):
        etd = et[d]
        # A step-end edge's delay is on its predecessor's lane (the time after the last call).
        from_end = etd == E_END
        pk, pi = _lanes(t, g, p[d], _node_thread(t, g, p[d]))
        lk = np.where(from_end, pk, lane_kind[d])
        li = np.where(from_end, pi, lane_id[d])
        fixed = {E_LAUNCH: (_CAT["launch"], _LATENCY), E_STREAM: (_CAT["launch"], _GAP), E_EVENT: (_CAT["event"], _XWAIT)}
        cat = np.full(len(d), _CAT["other"], dtype=np.int16)
        nm = np.full(len(d), _WAIT, dtype=np.int64)
        for etype, (c, nmx) in fixed.items():
            sel = etd == etype
            cat[sel], nm[sel] = c, nmx
        cpu = np.isin(etd, (E_CPU, E_END, E_NEST, E_THREAD)) | released[d]
        rest = ~cpu
        parts.append((order[d[rest]], cat[rest], lk[rest], li[rest], cut[d[rest]], s[d[rest]], nm[rest], np.full(int(rest.sum()), NONE)))
        if cpu.any():
            dc = d[cpu]
            # CPU time on the thread between two events: data loading where the DataLoader ran.
            pn = p[dc]
            src_thread = np.where(released[dc], thread[dc], _node_thread(t, g, pn))
            m0 = np.where(released[dc], lo, np.where(fs[dc], g.m_start[pn], g.m_start[pn] + g.dur[pn]) + (cut[dc] - from_t[dc]))
            length = s[dc] - cut[dc]
            loading = np.minimum(_loader_overlap(t, src_thread, m0, m0 + length), length)
            lkc, lic = lk[cpu], li[cpu]
            ld = loading > 0
            parts.append((order[dc[ld]] - 0.25, np.full(int(ld.sum()), _CAT["data_loading"], dtype=np.int16), lkc[ld], lic[ld],
                          cut[dc[ld]], cut[dc[ld]] + loading[ld], np.full(int(ld.sum()), _LOADER, dtype=np.int64), np.full(int(ld.sum()), NONE)))  # fmt: skip
            busy = length - loading > 0
            parts.append((order[dc[busy]] - 0.1, np.full(int(busy.sum()), _CAT["cpu"], dtype=np.int16), lkc[busy], lic[busy],
                          cut[dc[busy]] + loading[busy], s[dc[busy]], np.full(int(busy.sum()), _CPU, dtype=np.int64), np.full(int(busy.sum()), NONE)))  # fmt: skip
    cols = [np.concatenate([q[j] for q in parts]) for j in range(8)]
    o = np.argsort(cols[0], kind="stable")
    return Pieces(
        cols[1][o].astype(np.int16), cols[2][o].astype(np.int8), cols[3][o].astype(np.int64), cols[4][o], cols[5][o], cols[6][o].astype(np.int64),
        cols[7][o].astype(np.int64),
    )  # fmt: skip


def _lanes(t: Trace, g: StepGraph, nodes: np.ndarray, thread: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lane kind, lane id) of each node: its GPU stream, its CPU thread, else the step's own."""
    is_gpu = g.kind[nodes] == GPU
    kind = np.where(is_gpu, LANE_STREAM, np.where(thread != NONE, LANE_THREAD, LANE_STEP)).astype(np.int8)
    lid = np.maximum(thread, 0).astype(np.int64)
    lid[is_gpu] = t.gpu.stream[g.ref[nodes[is_gpu]]]
    return kind, lid


def _call_cat(name: str) -> int:
    return _CAT["memcpy"] if "Memcpy" in name or "memcpy" in name else _CAT["launch"] if is_launch(name) else _CAT["cpu"]


def _node_thread(t: Trace, g: StepGraph, nodes: np.ndarray) -> np.ndarray:
    """The CPU thread (as the graphs number them) of each node, NONE for GPU nodes."""
    kind, ref = g.kind[nodes], g.ref[nodes]
    out = np.full(len(nodes), NONE, dtype=np.int64)
    cpu = (kind == CALL) | (kind == RETURN)
    out[cpu] = trace_facts(t).thread[ref[cpu]]
    mark = (kind == MARK) | (kind == MARK_END) | (kind == END)
    out[mark] = g.step_thread[ref[mark]]
    return out


def _loader_overlap(t: Trace, thread: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per interval [lo, hi] (measured clock) on its thread: the time the DataLoader's ops ran in it."""
    out = np.zeros(len(lo))
    idx = dataloader_ops(t)
    if not len(idx) or not len(lo):
        return out
    ops = t.ops
    op_thread = trace_facts(t).op_thread[idx]
    for th in distinct(op_thread):
        mine = idx[op_thread == th]
        ms, me = merge(ops.ts[mine], ops.ts[mine] + ops.dur[mine])
        sel = thread == th
        if sel.any():
            out[sel] = np.clip(covered_before(ms, me, hi[sel]) - covered_before(ms, me, lo[sel]), 0.0, None)
    return out


def attribution(p: Pieces) -> dict[str, float]:
    """Time per category along the path (categories in BOUND order; zero ones left out)."""
    got = np.bincount(p.cat.astype(np.int64), weights=p.end - p.start, minlength=len(BOUND)) if len(p) else np.zeros(len(BOUND))
    return {c: float(got[k]) for k, c in enumerate(BOUND) if got[k] > 0}


@dataclass(frozen=True)
class Run:
    """Consecutive pieces of the path on one lane: its main category (the most time), the time
    per category, and the name of its longest piece."""

    lane: str
    start: float
    end: float
    category: str
    categories: dict[str, float]
    name: str
    pieces: int


MAX_RUNS = 400  # runs a summary lists: the longest ones, in time order


def runs(t: Trace, p: Pieces, limit: int | None = MAX_RUNS) -> tuple[list[Run], int]:
    """The path's runs (consecutive pieces on one lane), at most `limit` of them (the longest, in
    time order), and how many there are in all."""
    n = len(p)
    if not n:
        return [], 0
    new = np.ones(n, dtype=bool)
    new[1:] = (p.lane_kind[1:] != p.lane_kind[:-1]) | (p.lane_id[1:] != p.lane_id[:-1])
    first = np.flatnonzero(new)
    last = np.concatenate([first[1:], [n]]) - 1
    span = p.end[last] - p.start[first]
    keep = np.arange(len(first)) if limit is None or len(first) <= limit else np.sort(np.argsort(-span, kind="stable")[:limit])
    out = []
    us = p.end - p.start
    for r in keep.tolist():
        a, z = int(first[r]), int(last[r]) + 1
        cats = np.bincount(p.cat[a:z].astype(np.int64), weights=us[a:z], minlength=len(BOUND))
        main = int(np.argmax(cats))
        top = a + int(np.argmax(np.where(p.cat[a:z] == main, us[a:z], -1.0)))
        out.append(Run(p.lane(t, a), float(p.start[a]), float(p.end[z - 1]), BOUND[main],
                       {BOUND[c]: float(cats[c]) for c in np.flatnonzero(cats > 0).tolist()}, p.label(t, top), z - a))  # fmt: skip
    return out, len(first)


def recorded_attribution(t: Trace, lo: float, hi: float) -> dict[str, float]:
    """Where a step cannot be replayed: its window shared out by what the trace recorded, each
    instant to one category: GPU work first (by category, most time first), then data loading,
    then the rest ("other"). A category's time is what it adds to the union of those before it,
    each union's length streamed from the rows (no spans are kept), a slice of rows at a time:
    a whole trace in one window holds nothing column-sized beside a few masks."""
    g = t.gpu
    kc = classify(t).category
    inside = np.zeros(len(g), dtype=bool)
    cat = np.full(len(g), -1, dtype=np.int16)
    total = np.zeros(len(BOUND))
    for a in range(0, len(g), _SLICE):
        sl = slice(a, a + _SLICE)
        m = (g.ts[sl] < hi) & (g.ts[sl] + g.dur[sl] > lo) & (kc[sl] >= 0)
        inside[sl] = m
        cat[sl][m] = _GPU_CAT[kc[sl][m]]
        total += np.bincount(cat[sl][m].astype(np.int64), weights=g.dur[sl][m], minlength=len(BOUND))
    got: dict[str, float] = {}
    upto = np.zeros(len(g), dtype=bool)  # the categories so far
    before = 0.0
    for c in np.argsort(-total, kind="stable").tolist():
        if total[c] <= 0:
            continue
        upto |= inside & (cat == c)
        length = merged_length(g.ts, g.dur, upto, (lo, hi))[2]
        if length > before:
            got[BOUND[c]] = length - before
        before = max(before, length)
    del cat, inside
    dl = dataloader_ops(t)
    if len(dl):
        idx = np.asarray(dl)
        loader = merge(np.clip(t.ops.ts[idx], lo, hi), np.clip(t.ops.ts[idx] + t.ops.dur[idx], lo, hi))
        (add,) = window_lengths(*loader, [(lo, hi)])
        # Less the GPU work under it, a merged piece of the GPU's union at a time.
        add -= sum(overlap_length([loader], piece, lo, hi) for piece in merged_pieces(g.ts, g.dur, upto)) if upto.any() else 0.0
        if add > 0:
            got["data_loading"] = add
    rest = (hi - lo) - sum(got.values())
    if rest > 0:
        got["other"] = rest
    return got


MAX_LANES = 12  # lanes drawn beside the critical path: the busiest CPU threads and streams


def lane_activity(t: Trace, g: StepGraph, rp: Replayed, i: int, resolution: int = 600) -> list[tuple[str, list[tuple[float, float]]]]:
    """What ran on each lane (CPU thread, GPU stream) during replayed step i: its merged busy
    intervals, gaps under 1/`resolution` of the step closed (what a picture can show), the busiest
    MAX_LANES lanes, CPU threads first."""
    lo_all, hi_all = g.replayed_windows(rp.start)
    lo, hi = float(lo_all[i]), float(hi_all[i])
    if hi <= lo:
        return []
    s, e = np.maximum(rp.start, lo), np.minimum(rp.end, hi)
    on = ((g.kind == GPU) | (g.kind == CALL)) & (e > s)
    tf = trace_facts(t)
    nodes = np.flatnonzero(on)
    gpu = nodes[g.kind[nodes] == GPU]
    cpu = nodes[g.kind[nodes] == CALL]
    close = (hi - lo) / resolution
    lanes: list[tuple[bool, float, str, list[tuple[float, float]]]] = []
    for is_gpu, rows, key in ((True, gpu, t.gpu.stream[g.ref[gpu]]), (False, cpu, tf.thread[g.ref[cpu]])):
        for k in distinct(key):
            mine = rows[key == k]
            ms, me = merge(s[mine], e[mine])
            keep = np.concatenate([[True], ms[1:] - me[:-1] > close])
            starts, ends = ms[keep], np.maximum.reduceat(me, np.flatnonzero(keep))
            name = f"GPU stream {k}" if is_gpu else f"CPU thread {t.threads[int(k)][1]}"
            lanes.append((is_gpu, float((me - ms).sum()), name, list(zip(starts.tolist(), ends.tolist()))))
    lanes.sort(key=lambda x: (x[0], -x[1]))
    threads = [x for x in lanes if not x[0]][: MAX_LANES // 2]
    streams = [x for x in lanes if x[0]][: MAX_LANES - len(threads)]
    return [(name, iv) for _, _, name, iv in threads + streams]
