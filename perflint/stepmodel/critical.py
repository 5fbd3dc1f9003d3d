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
from perflint.metrics.intervals import clip_length, merge
from perflint.metrics.kernels import CATEGORIES, classify
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
from perflint.stepmodel.replay import Replayed

# Bound-by categories, in the order reports list them.
COMPUTE = tuple(f"gpu_{c}" for c in CATEGORIES if c not in ("memcpy", "memset", "communication"))
BOUND = (*COMPUTE, "memcpy", "memset", "communication", "launch", "cpu", "data_loading", "sync", "event", "other")
LABELS = {
    **{f"gpu_{c}": f"GPU {c.replace('_', ' ')}" for c in CATEGORIES},
    "memcpy": "memcpy",
    "memset": "memset",
    "communication": "communication",
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


def gpu_category(t: Trace, row: int) -> str:
    c = CATEGORIES[int(classify(t).category[row])] if classify(t).category[row] >= 0 else "other"
    return c if c in ("memcpy", "memset", "communication") else f"gpu_{c}"


def _cpu_name(t: Trace, r: int) -> str:
    return t.s(int(t.runtime.name[r]))


def critical_path(t: Trace, g: StepGraph, rp: Replayed, i: int) -> list[Segment]:
    """Step i's critical path as segments from its replayed start to its replayed end."""
    lo = float(g.replayed_windows(rp.start)[0][i])
    out: list[Segment] = []
    v = int(g.step_end[i])
    while True:
        k, ref = int(g.kind[v]), int(g.ref[v])
        s, e = float(rp.start[v]), float(rp.end[v])
        if e > s and e > lo:
            out.append(_node_segment(t, g, v, k, ref, max(s, lo), e))
        if s <= lo:
            break
        b = int(rp.binding[v])
        if b < 0:  # the node's release: CPU time before the first call, since the step's start
            out.extend(reversed(_cpu_split(t, _thread_of(t, g, v), _lane(t, g, v), lo, s, lo)))
            break
        p = int(g.pred[b])
        from_t = float(rp.start[p] if g.from_start[b] else rp.end[p])
        if s > from_t:
            out.extend(reversed(_edge_segments(t, g, b, p, v, from_t, s, lo)))
        if from_t <= lo:
            break
        v = p
    out.reverse()
    return out


def _thread_of(t: Trace, g: StepGraph, v: int) -> int:
    """The CPU thread (as the graphs number them) of a CPU node, NONE for GPU nodes."""
    k, ref = int(g.kind[v]), int(g.ref[v])
    if k in (CALL, RETURN):
        return int(trace_facts(t).thread[ref])
    if k in (MARK, MARK_END, END):
        return int(g.step_thread[ref])
    return NONE


def _lane(t: Trace, g: StepGraph, v: int) -> str:
    k, ref = int(g.kind[v]), int(g.ref[v])
    if k == GPU:
        return f"GPU stream {int(t.gpu.stream[ref])}"
    th = _thread_of(t, g, v)
    return f"CPU thread {t.threads[th][1]}" if th != NONE else "step"


def _node_segment(t: Trace, g: StepGraph, v: int, k: int, ref: int, s: float, e: float) -> Segment:
    if k == GPU:
        return Segment(gpu_category(t, ref), _lane(t, g, v), s, e, t.s(int(t.gpu.name[ref])))
    if k == RETURN:
        return Segment("sync", _lane(t, g, v), s, e, _cpu_name(t, ref))
    name = _cpu_name(t, ref)
    # A copy call's own time is the host side of the copy (staging through pageable memory).
    cat = "memcpy" if "Memcpy" in name or "memcpy" in name else "launch" if is_launch(name) else "cpu"
    return Segment(cat, _lane(t, g, v), s, e, name)


def _edge_segments(t: Trace, g: StepGraph, b: int, p: int, v: int, a: float, z: float, lo: float) -> list[Segment]:
    """The edge's delay [a, z] (replayed), the part after `lo`, by what the time was."""
    et = int(g.etype[b])
    lane = _lane(t, g, p if et == E_END else v)
    cut = max(a, lo)
    if et == E_LAUNCH:
        return [Segment("launch", lane, cut, z, "launch latency")]
    if et == E_STREAM:
        return [Segment("launch", lane, cut, z, "gap between kernels")]
    if et == E_EVENT:
        return [Segment("event", lane, cut, z, "cross-stream wait")]
    if et in (E_CPU, E_END, E_NEST, E_THREAD):
        # CPU time on the thread between two events: data loading where the DataLoader ran.
        m0 = float(g.m_start[p] if g.from_start[b] else g.m_start[p] + g.dur[p]) + (cut - a)
        return _cpu_split(t, _thread_of(t, g, p), lane, cut, z, m0)
    return [Segment("other", lane, cut, z, "wait")]


def _cpu_split(t: Trace, thread: int, lane: str, a: float, z: float, m0: float) -> list[Segment]:
    """CPU time [a, z] (replayed) that began at m0 on the measured clock: data loading where the
    DataLoader's ops ran, CPU op dispatch and Python elsewhere."""
    loading = _dataloader_overlap(t, thread, m0, m0 + (z - a))
    out = []
    if loading > 0:
        out.append(Segment("data_loading", lane, a, a + loading, "DataLoader"))
    if z - a - loading > 0:
        out.append(Segment("cpu", lane, a + loading, z, "CPU between calls"))
    return out


def _dataloader_overlap(t: Trace, thread: int, lo: float, hi: float) -> float:
    """Time the DataLoader's ops on `thread` ran inside [lo, hi] (measured clock)."""
    if thread == NONE or hi <= lo:
        return 0.0
    idx = dataloader_ops(t)
    if not len(idx):
        return 0.0
    ops = t.ops
    mine = idx[trace_facts(t).op_thread[idx] == thread]
    if not len(mine):
        return 0.0
    a = np.maximum(ops.ts[mine], lo)
    b = np.minimum(ops.ts[mine] + ops.dur[mine], hi)
    return float(np.clip(b - a, 0.0, None).max())


def attribution(segments: list[Segment]) -> dict[str, float]:
    """Time per category along the path (categories in BOUND order; zero ones left out)."""
    got = dict.fromkeys(BOUND, 0.0)
    for s in segments:
        got[s.category] += s.us
    return {k: v for k, v in got.items() if v > 0}


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


def runs(segments: list[Segment]) -> list[Run]:
    out: list[Run] = []
    group: list[Segment] = []
    for s in [*segments, None]:
        if group and (s is None or s.lane != group[-1].lane):
            cats: dict[str, float] = {}
            for p in group:
                cats[p.category] = cats.get(p.category, 0.0) + p.us
            main = max(cats, key=lambda c: cats[c])
            top = max(group, key=lambda p: p.us if p.category == main else -1.0)
            out.append(Run(group[0].lane, group[0].start, group[-1].end, main, cats, top.name, len(group)))
            group = []
        if s is not None:
            group.append(s)
    return out


def recorded_attribution(t: Trace, lo: float, hi: float) -> dict[str, float]:
    """Where a step cannot be replayed: its window shared out by what the trace recorded, each
    instant to one category: GPU work first (by category, most time first), then data loading,
    then the rest ("other")."""
    g = t.gpu
    inside = (g.ts < hi) & (g.ts + g.dur > lo) & (classify(t).category >= 0)
    taken = (np.zeros(0), np.zeros(0))
    got: dict[str, float] = {}
    cats = [gpu_category(t, int(r)) for r in np.flatnonzero(inside)]
    rows = np.flatnonzero(inside)
    by: dict[str, list[int]] = {}
    for c, r in zip(cats, rows.tolist()):
        by.setdefault(c, []).append(r)
    pieces = [(c, np.asarray(rs)) for c, rs in by.items()]
    pieces.sort(key=lambda cr: -float(g.dur[cr[1]].sum()))
    dl = dataloader_ops(t)
    if len(dl):
        pieces.append(("data_loading", np.asarray(dl)))
    for cat, idx in pieces:
        src = t.ops if cat == "data_loading" else g
        s, e = merge(np.clip(src.ts[idx], lo, hi), np.clip(src.ts[idx] + src.dur[idx], lo, hi))
        before = clip_length(*taken, lo, hi)
        taken = merge(np.concatenate([taken[0], s]), np.concatenate([taken[1], e]))
        add = clip_length(*taken, lo, hi) - before
        if add > 0:
            got[cat] = got.get(cat, 0.0) + add
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
