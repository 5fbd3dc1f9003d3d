"""What a fix changes in a step's graph, and how much shorter the replayed step gets.

A fix names the work it changes (GPU rows, runtime calls, CPU spans) and how:
- `shorten_gpu`: its GPU activities run `1 - factor` of their time (factor: the share saved);
- `overlap_gpu`: its GPU activities leave their stream's order for one of their own (a copy
  prefetched on a side stream, communication overlapped with independent compute);
- `unblock_calls`: its calls no longer wait for the GPU;
- `remove_calls`: its calls take no time and wait for nothing (allocator calls);
- `cap_calls`: its calls take at most `to_us` each;
- `pin_copies`: its copies run `1 - factor` of their time and their calls return at once;
- `remove_cpu`: the CPU time inside its spans is gone (data loading, a slow host op);
- `fast_launches`: per-launch host overhead is gone: launch calls take `to_us` and the CPU time
  between launch calls shorter than a millisecond (op dispatch, Python) disappears (CUDA graphs);
- `host_keeps_up`: all CPU time and call durations are gone except waits for the GPU: the step
  the GPU alone sets.
The saving of a step is its replay minus the replay with the fix: changes that only shorten
work or drop edges cannot shorten a step through work off its critical path, so steps where a
fix touches nothing critical are not replayed again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from perflint.metrics.apis import is_launch
from perflint.model import NONE, Trace
from perflint.stepmodel.graph import (
    CALL,
    E_CPU,
    E_END,
    E_EVENT,
    E_NEST,
    E_STREAM,
    E_THREAD,
    E_WAIT,
    GPU,
    MARK,
    RETURN,
    StepGraph,
    node_threads,
    trace_facts,
)  # fmt: skip
from perflint.stepmodel.replay import Replayed, longest_path, walk

Change = Literal[
    "shorten_gpu", "overlap_gpu", "unblock_calls", "remove_calls", "cap_calls", "pin_copies",
    "remove_cpu", "fast_launches", "host_keeps_up",
]  # fmt: skip
CHANGES: tuple[str, ...] = get_args(Change)
OP_GAP_US = 1000.0  # CPU time between launch calls up to this long is per-op overhead
_CPU_EDGES = (E_CPU, E_END, E_THREAD)


@dataclass(frozen=True)
class Fix:
    change: Change
    gpu: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # GPU rows
    calls: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # runtime rows
    spans: tuple[tuple[int, float, float], ...] = ()  # (thread, start, end) of CPU time removed, measured clock
    factor: float = 0.0
    to_us: float = 0.0

    @property
    def empty(self) -> bool:
        """It names no work the step graphs hold (host collectives, counter ranges): the model
        cannot play it."""
        if self.change in ("shorten_gpu", "overlap_gpu"):
            return not len(self.gpu)
        if self.change in ("unblock_calls", "remove_calls", "cap_calls"):
            return not len(self.calls)
        if self.change == "pin_copies":
            return not len(self.gpu) and not len(self.calls)
        if self.change == "remove_cpu":
            return not self.spans
        return False


@dataclass
class _Inputs:
    indptr: np.ndarray
    pred: np.ndarray
    delay: np.ndarray
    from_start: np.ndarray
    release: np.ndarray
    dur: np.ndarray
    touched_nodes: np.ndarray  # bool per node
    touched_edges: np.ndarray  # bool per edge of the graph
    extra: list[tuple[np.ndarray, np.ndarray, float]] = field(default_factory=list)  # new edges: (sources, targets, delay)


def _inputs(g: StepGraph) -> _Inputs:
    return _Inputs(
        g.indptr, g.pred, g.delay.copy(), g.from_start, g.release.copy(), g.dur.copy(),
        np.zeros(len(g.dur), dtype=bool), np.zeros(len(g.delay), dtype=bool),
    )  # fmt: skip


def _edge_dst(g: StepGraph) -> np.ndarray:
    return np.repeat(np.arange(len(g.dur), dtype=np.int64), np.diff(g.indptr))


def _nodes(g: StepGraph, kinds: tuple[int, ...], rows: np.ndarray) -> np.ndarray:
    return g.nodes_of(kinds, rows)


def _apply_one(t: Trace, g: StepGraph, f: Fix, x: _Inputs, dst: np.ndarray) -> None:
    if f.change in ("shorten_gpu", "pin_copies"):
        sel = _nodes(g, (GPU,), f.gpu)
        x.dur[sel] *= max(0.0, 1.0 - f.factor)
        x.touched_nodes |= sel
    if f.change in ("unblock_calls", "remove_calls", "pin_copies"):
        ret = _nodes(g, (RETURN,), f.calls)
        waits = ret[dst] & (g.etype == E_WAIT) & (g.kind[g.pred] == GPU)
        x.delay[waits] = -np.inf
        x.touched_edges |= waits
        x.touched_nodes |= ret
    if f.change == "remove_calls":
        sel = _nodes(g, (CALL, RETURN), f.calls)
        x.dur[sel] = 0.0
        x.touched_nodes |= sel
    if f.change in ("cap_calls", "pin_copies"):
        sel = _nodes(g, (CALL,), f.calls)
        x.dur[sel] = np.minimum(x.dur[sel], f.to_us)
        x.touched_nodes |= sel
    if f.change == "overlap_gpu":
        _overlap(t, g, f, x, dst)
    if f.change == "remove_cpu":
        _remove_cpu(t, g, f.spans, x, dst)
    if f.change == "fast_launches":
        _fast_launches(t, g, f.to_us, x, dst)
    if f.change == "host_keeps_up":
        cpu = np.isin(g.kind, (CALL,))
        x.dur[cpu] = 0.0
        x.dur[g.kind == RETURN] = 0.0
        gaps = np.isin(g.etype, (*_CPU_EDGES, E_NEST))
        x.delay[gaps] = np.minimum(x.delay[gaps], 0.0)
        first = np.isfinite(x.release) & np.isin(g.kind, (CALL, MARK))
        x.release[first] = g.lo
        x.touched_nodes |= cpu | (g.kind == RETURN)
        x.touched_edges |= gaps


def _overlap(t: Trace, g: StepGraph, f: Fix, x: _Inputs, dst: np.ndarray) -> None:
    """The fix's GPU activities run on a stream of their own, in their order: the stream edges
    between them and the other activities are cut, and each side is chained on its own."""
    moved = _nodes(g, (GPU,), f.gpu)
    if not moved.any():
        return
    stream_e = g.etype == E_STREAM
    # Work overlapped with compute no longer holds the compute back: its stream edges to the other
    # work and the cross-stream waits on it are cut.
    cut = (stream_e & (moved[g.pred] != moved[dst])) | ((g.etype == E_EVENT) & moved[g.pred] & ~moved[dst])
    x.delay[cut] = -np.inf
    x.touched_edges |= cut
    x.touched_nodes |= moved
    # New stream edges: each activity after the previous one of its own side on its stream (where
    # no edge already links the two).
    gpu = np.flatnonzero(g.kind == GPU)
    streams = t.gpu.stream[g.ref[gpu]]
    side = moved[gpu]
    order = np.lexsort((g.m_start[gpu], side, streams))
    v = gpu[order]
    same = (streams[order][1:] == streams[order][:-1]) & (side[order][1:] == side[order][:-1])
    src, dst_new = v[:-1][same], v[1:][same]
    existing = set(zip(g.pred[stream_e].tolist(), dst[stream_e].tolist()))
    keep = np.asarray([(a, b) not in existing for a, b in zip(src.tolist(), dst_new.tolist())], dtype=bool)
    if keep.any():
        _add_edges(x, g, src[keep], dst_new[keep], trace_facts(t).stream_gap, E_STREAM)


def _add_edges(x: _Inputs, g: StepGraph, src: np.ndarray, dst_new: np.ndarray, delay: float, etype: int) -> None:
    """New edges, merged into the graph's edges when the fix is replayed (the graph's own edges
    keep their positions: the masks of other fixes index them)."""
    x.extra.append((src, dst_new, delay))


def _merged(x: _Inputs) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, pred, delay, from_start) with the extra edges merged in, sorted by target."""
    if not x.extra:
        return x.indptr, x.pred, x.delay, x.from_start
    n = len(x.dur)
    dst = np.concatenate([np.repeat(np.arange(n, dtype=np.int64), np.diff(x.indptr)), *(d for _, d, _ in x.extra)])
    pred = np.concatenate([x.pred, *(s for s, _, _ in x.extra)])
    delay = np.concatenate([x.delay, *(np.full(len(s), dl) for s, _, dl in x.extra)])
    fs = np.concatenate([x.from_start, *(np.zeros(len(s), dtype=bool) for s, _, _ in x.extra)])
    order = np.argsort(dst, kind="stable")
    indptr = np.concatenate(([0], np.cumsum(np.bincount(dst, minlength=n))))
    return indptr, pred[order], delay[order], fs[order]


def _gap_from(g: StepGraph) -> tuple[np.ndarray, np.ndarray]:
    """Per edge: the measured time its delay starts at, and the CPU thread it runs on (NONE for
    edges that are not CPU time)."""
    p = g.pred
    start = np.where(g.from_start, g.m_start[p], g.m_start[p] + g.dur[p])
    return start, p


def _remove_cpu(t: Trace, g: StepGraph, spans: tuple[tuple[int, float, float], ...], x: _Inputs, dst: np.ndarray) -> None:
    """CPU time between calls (and before a thread's first call) that falls inside the spans,
    on their threads, is removed."""
    if not spans:
        return
    threads = node_threads(t, g)
    cpu_edges = np.flatnonzero(np.isin(g.etype, (*_CPU_EDGES, E_NEST)) & (threads[g.pred] != NONE))
    a, _ = _gap_from(g)
    thread = threads[g.pred[cpu_edges]]
    lo = a[cpu_edges]
    hi = lo + np.maximum(g.delay[cpu_edges], 0.0)
    cut = _inside(spans, thread, lo, hi)
    x.delay[cpu_edges] -= cut
    x.touched_edges[cpu_edges[cut > 0]] = True
    # Calls that ran inside the spans (a long allocator or initialisation call) lose that time too.
    calls = np.flatnonzero((g.kind == CALL) & (g.dur > 0))
    if len(calls):
        th = threads[calls]
        cut1 = _inside(spans, th, g.m_start[calls], g.m_start[calls] + g.dur[calls])
        x.dur[calls] -= cut1
        x.touched_nodes[calls[cut1 > 0]] = True
    # A thread's first call placed at its measured start: the CPU time before it in the step.
    first = np.flatnonzero(np.isfinite(g.release) & np.isin(g.kind, (CALL, MARK)))
    if len(first):
        th = threads[first]
        cut0 = _inside(spans, th, np.full(len(first), g.lo), g.release[first])
        x.release[first] -= cut0
        x.touched_nodes[first[cut0 > 0]] = True


def _inside(spans: tuple[tuple[int, float, float], ...], thread: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per interval [lo, hi] on its thread: its overlap with the spans on that thread."""
    out = np.zeros(len(lo))
    for th, a, b in spans:
        mine = thread == th
        if mine.any():
            out[mine] += np.clip(np.minimum(hi[mine], b) - np.maximum(lo[mine], a), 0.0, None)
    got: np.ndarray = np.minimum(out, np.maximum(hi - lo, 0.0))
    return got


def _fast_launches(t: Trace, g: StepGraph, to_us: float, x: _Inputs, dst: np.ndarray) -> None:
    calls = np.flatnonzero(g.kind == CALL)
    names = t.runtime.name[g.ref[calls]]
    launch = np.zeros(len(calls), dtype=bool)
    for sid in np.asarray(sorted(set(names.tolist()))).tolist():
        if is_launch(t.s(int(sid))):
            launch |= names == sid
    lc = calls[launch]
    x.dur[lc] = np.minimum(x.dur[lc], to_us)
    x.touched_nodes[lc] = True
    is_launch_node = np.zeros(len(g.dur), dtype=bool)
    is_launch_node[lc] = True
    short = (g.etype == E_CPU) & is_launch_node[g.pred] & is_launch_node[dst] & (g.delay < OP_GAP_US)
    x.delay[short] = np.minimum(x.delay[short], 0.0)
    x.touched_edges |= short


def critical_mask(g: StepGraph, rp: Replayed) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, edges) on the steps' critical paths: back from each step's end along the binding
    edges to a release (the steps' paths share what they have in common, walked once)."""
    seen = np.zeros(len(g.dur), dtype=np.uint8)
    edges = np.zeros(len(g.delay), dtype=bool)
    for end in g.step_end.tolist():
        path = walk(rp.binding, g.pred, g.from_start, rp.start, rp.end, -np.inf, int(end), seen)
        b = rp.binding[path]
        edges[b[b >= 0]] = True
    return seen.astype(bool), edges


def replayed_us(g: StepGraph, x: _Inputs) -> float:
    """The steps' replayed time with the inputs `x`."""
    indptr, pred, delay, fs = _merged(x)
    rp = longest_path(indptr, pred, delay, fs, x.release, x.dur)
    lo, hi = g.replayed_windows(rp.start)
    return float((hi - lo).sum())


# Changes that stand for a symptom rather than one cause (the host is slow): their saving is what
# is left once every other fix of the trace is made, so they never claim a cause's time.
RESIDUAL = ("host_keeps_up",)


@dataclass(frozen=True)
class Savings:
    """Step time a set of fixes wins: each alone (a residual change: on top of all the others),
    and all together, over the replayed steps."""

    alone: tuple[float, ...]  # per fix: the analysed steps' time it saves
    together: float  # all fixes at once
    replayed_us: float  # the analysed steps' replayed time without any fix
    steps: int  # analysed steps the times cover
    replayed_steps: int  # steps replayed (a run of them when there are many)


def _saving(t: Trace, g: StepGraph, base: float, crit: tuple[np.ndarray, np.ndarray], dst: np.ndarray, fixes: list[Fix]) -> float:
    x = _inputs(g)
    for f in fixes:
        _apply_one(t, g, f, x, dst)
    nodes, edges = crit
    if not ((x.touched_nodes & nodes).any() or (x.touched_edges & edges).any()):
        return 0.0
    return max(0.0, base - replayed_us(g, x))


def savings(t: Trace, g: StepGraph, rp: Replayed, fixes: list[Fix], steps: int) -> Savings:
    """What the fixes save on the replayed steps, taken per step over the `steps` analysed ones."""
    lo, hi = g.replayed_windows(rp.start)
    base = float((hi - lo).sum())
    crit = critical_mask(g, rp)
    dst = _edge_dst(g)
    causes = [f for f in fixes if f.change not in RESIDUAL]
    without = _saving(t, g, base, crit, dst, causes) if len(causes) < len(fixes) else 0.0
    alone = []
    for f in fixes:
        if f.change in RESIDUAL:
            alone.append(max(0.0, _saving(t, g, base, crit, dst, [*causes, f]) - without))
        else:
            alone.append(_saving(t, g, base, crit, dst, [f]))
    together = _saving(t, g, base, crit, dst, fixes) if fixes else 0.0
    scale = steps / len(lo)
    return Savings(tuple(a * scale for a in alone), together * scale, base * scale, steps, len(lo))
