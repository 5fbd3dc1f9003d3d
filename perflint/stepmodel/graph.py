"""The dependency graph of one analysed step, from what the trace recorded.

Nodes: each runtime call on a CPU thread (a call that waits for the GPU is two nodes: its issue
and its return), each GPU activity (kernel, memcpy, memset), and the step's end. Edges, each with
a delay:
- CPU program order: a thread's calls follow each other with the measured CPU time between them
  (Python, op dispatch, data loading: CPU work keeps its measured durations and order); a call made
  inside another (a driver call under a runtime call) hangs off its start;
- launch: a GPU activity starts no earlier than its launch call's start plus the trace's typical
  launch latency for its kind (never its own measured delay: a late start must be explained by an
  edge, or it is replay error);
- stream order: a stream runs its activities one after the other;
- host waits: a call that waits for the GPU (device/stream/event synchronize, synchronous and
  pageable copies, and any long call that returned right when GPU work ended: a full launch queue,
  an allocator call that synchronized) returns when the awaited work ends, plus the measured time
  it took to return after it;
- cross-stream waits: an activity that started later than its launch, its stream and its
  latency allow, right when work on another stream ended, waits for that work (an event);
- the step ends when its CPU span ends (the marker thread's last call plus the CPU time after it)
  and when all its GPU work ends.
A GPU activity whose launch call the trace does not hold keeps its measured start (the only
measured GPU time the replay uses, and it says how much of the step's GPU work that is).
Nothing of the step starts on the GPU before the step's window opens (the earlier steps' work ran
until then) nor before earlier work on its stream ended: those are release times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflint.ids import distinct
from perflint.memo import once
from perflint.metrics.apis import is_kernel_launch, is_launch, is_sync_copy, sync_kind
from perflint.metrics.steps import launch_ts
from perflint.model import GPU_SYNC, KERNEL, MEMCPY, MEMSET, NONE, Trace

CALL, RETURN, GPU, END, MARK, MARK_END = 0, 1, 2, 3, 4, 5
E_CPU, E_NEST, E_LAUNCH, E_STREAM, E_WAIT, E_EVENT, E_END, E_THREAD = range(8)
EDGE_NAMES = ("cpu", "nested", "launch", "stream", "host wait", "cross-stream wait", "step end", "thread")

# Runtime call classes.
PLAIN, LAUNCH, SYNC, KLAUNCH = 0, 1, 2, 3
EPS_US = 2.0  # clock granularity between host and device timestamps
INFER_MIN_US = 50.0  # a call this long that returned right after GPU work ended waited for it
EVENT_SLACK_US = 20.0  # an activity this much later than its edges allow waited for something
DEFAULT_LATENCY_US = 5.0  # a kernel starts a few us after its launch call on an idle GPU
STREAM_GAP_MAX_US = 5.0  # back-to-back kernels on NVIDIA and AMD GPUs start 1-3 us apart
EVENT_LAG_US = 10.0  # an event recorded after work on one stream releases a waiting stream this soon


@dataclass(frozen=True)
class TraceFacts:
    """What the graphs of every step of a trace share."""

    call_class: np.ndarray  # int8 per runtime row
    sync_stream: np.ndarray  # int64 per runtime row: the stream a sync waits on, NONE: any
    latency: tuple[float, float, float]  # typical launch -> start delay per GPU kind (kernel, memcpy, memset)
    stream_gap: float  # typical gap between back-to-back activities on a stream
    lts: np.ndarray  # launch time per GPU row
    canon: np.ndarray  # int32 per thread index: the one index of its (pid, tid)
    thread: np.ndarray  # int32 per runtime row: its thread, one index per (pid, tid)
    op_thread: np.ndarray  # int32 per op: its thread, the same indices
    work: np.ndarray  # GPU rows that are work (not sync records), by (stream, ts)
    prev_on_stream: np.ndarray  # per GPU row: the previous work row on its stream, NONE first


@once
def trace_facts(t: Trace) -> TraceFacts:
    rt, g = t.runtime, t.gpu
    # Per distinct API name: its class.
    table = np.zeros(len(t.strings) + 1, dtype=np.int8)
    for sid in distinct(rt.name):
        api = t.s(int(sid))
        table[sid] = SYNC if sync_kind(api) or is_sync_copy(api) else KLAUNCH if is_kernel_launch(api) else LAUNCH if is_launch(api) else PLAIN
    call_class = table[rt.name] if len(rt) else np.zeros(0, dtype=np.int8)
    sync_stream = np.full(len(rt), NONE, dtype=np.int64)
    linked = g.launch != NONE
    # A sync's own GPU record names the stream it waited on (Kineto's cuda_sync, nsys sync rows).
    recs = np.flatnonzero(linked & (g.kind == GPU_SYNC) & (g.stream >= 0))
    sync_stream[g.launch[recs]] = g.stream[recs]
    # An async copy to pageable host memory waits for the copy: it is a sync on the copy's stream.
    cp = np.flatnonzero(linked & (g.kind == MEMCPY))
    if len(cp):
        pageable = np.zeros(len(t.strings) + 1, dtype=bool)
        for sid in distinct(g.name[cp]):
            name = t.s(int(sid))
            pageable[sid] = "Pageable" in name and ("DtoH" in name or "Device -> Pageable" in name)
        hit = cp[pageable[g.name[cp]]]
        call_class[g.launch[hit]] = SYNC
        sync_stream[g.launch[hit]] = g.stream[hit]
    lts = launch_ts(t)
    work = np.flatnonzero(g.kind != GPU_SYNC)
    work = work[np.lexsort((g.ts[work], g.stream[work]))]
    prev = np.full(len(g), NONE, dtype=np.int64)
    if len(work) > 1:
        same = g.stream[work[1:]] == g.stream[work[:-1]]
        prev[work[1:][same]] = work[:-1][same]
    # One index per (pid, tid): a reader may give ops and runtime calls of one thread two entries.
    first: dict[tuple[str, str], int] = {}
    canon = np.asarray([first.setdefault(th, i) for i, th in enumerate(t.threads)] or [0], dtype=np.int32)
    return TraceFacts(
        call_class, sync_stream, _latencies(t, prev), _stream_gap(t, prev, lts), lts, canon, canon[rt.thread], canon[t.ops.thread], work, prev
    )


def _stream_gap(t: Trace, prev: np.ndarray, lts: np.ndarray) -> float:
    """The gap a GPU leaves between back-to-back kernels on a stream: the median over the kernels
    launched before the kernel ahead of them started (queued: the stream alone set their start),
    at most STREAM_GAP_MAX_US. Larger typical gaps are not a dispatch cost but waits the trace
    does not show, which the replay must not hide."""
    g = t.gpu
    rows = np.flatnonzero((prev != NONE) & (g.kind == KERNEL))
    if not len(rows):
        return 0.0
    p = prev[rows]
    queued = (lts[rows] < g.ts[p]) & (g.kind[p] == KERNEL)
    gap = g.ts[rows][queued] - (g.ts[p] + g.dur[p])[queued]
    gap = gap[gap >= 0]
    return min(float(np.median(gap)), STREAM_GAP_MAX_US) if len(gap) >= 3 else 0.0


def _latencies(t: Trace, prev: np.ndarray) -> tuple[float, float, float]:
    """Per GPU kind, the delay from launch call start to start of the activities whose stream was
    idle when they were launched (nothing queued ahead: the pure launch latency), its 10th
    percentile, as an activity that also waited for an event shows a longer one;
    DEFAULT_LATENCY_US where fewer than three such activities show it."""
    g, rt = t.gpu, t.runtime
    out = []
    for kind in (KERNEL, MEMCPY, MEMSET):
        rows = np.flatnonzero((g.kind == kind) & (g.launch != NONE))
        if not len(rows):
            out.append(DEFAULT_LATENCY_US)
            continue
        call = rt.ts[g.launch[rows]]
        p = prev[rows]
        idle = (p == NONE) | ((g.ts[np.maximum(p, 0)] + g.dur[np.maximum(p, 0)]) <= call)
        delay = g.ts[rows] - call
        pure = delay[idle & (delay >= 0)]
        # The 10th percentile, taken from below (np.percentile would import numpy.ma here).
        out.append(float(np.partition(pure, (len(pure) - 1) // 10)[(len(pure) - 1) // 10]) if len(pure) >= 3 else DEFAULT_LATENCY_US)
    return out[0], out[1], out[2]


@dataclass
class StepGraph:
    """The graph of a run of consecutive analysed steps (the whole trace without steps)."""

    kind: np.ndarray  # int8 node kind
    ref: np.ndarray  # int64: runtime row (CALL, RETURN), GPU row (GPU), step index (MARK, END)
    dur: np.ndarray  # float64
    release: np.ndarray  # float64, -inf: none
    m_start: np.ndarray  # float64 measured start
    indptr: np.ndarray  # int64 CSR of predecessors
    pred: np.ndarray  # int64
    delay: np.ndarray  # float64
    etype: np.ndarray  # int8
    from_start: np.ndarray  # bool: the edge counts from its predecessor's start
    step_lo: np.ndarray  # float64 per step: its measured window
    step_hi: np.ndarray
    step_mark: np.ndarray  # int64 per step: its MARK node (where its CPU span starts), NONE for the whole trace
    step_end: np.ndarray  # int64 per step: its END node
    step_thread: np.ndarray  # int64 per step: its marker's thread (NONE for the whole trace)

    @property
    def lo(self) -> float:
        return float(self.step_lo[0])

    def replayed_windows(self, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each step's replayed window from the replayed node starts: it ends when its END node
        starts, and starts when its CPU span starts or the step before it ended, whichever is
        later (the first step where it was measured to)."""
        hi = start[self.step_end]
        lo = np.empty(len(hi))
        lo[0] = self.step_lo[0]
        if len(hi) > 1:
            lo[1:] = np.maximum(start[self.step_mark[1:]], hi[:-1])
        return lo, hi


class _Builder:
    def __init__(self) -> None:
        self.kind: list[int] = []
        self.ref: list[int] = []
        self.dur: list[float] = []
        self.release: list[float] = []
        self.m_start: list[float] = []
        self.preds: list[list[tuple[int, float, int, bool]]] = []

    def node(self, kind: int, ref: int, dur: float, m_start: float, release: float = -np.inf) -> int:
        self.kind.append(kind)
        self.ref.append(ref)
        self.dur.append(dur)
        self.release.append(release)
        self.m_start.append(m_start)
        self.preds.append([])
        return len(self.kind) - 1

    def edge(self, src: int, dst: int, delay: float, etype: int, from_start: bool = False) -> None:
        """`dst` starts no earlier than `delay` after `src` ends (after it starts: `from_start`)."""
        self.preds[dst].append((src, delay, etype, from_start))

    def done(self, steps: list[tuple[float, float, int, int, int]]) -> StepGraph:
        counts = [len(p) for p in self.preds]
        flat = [e for p in self.preds for e in p]
        return StepGraph(
            kind=np.asarray(self.kind, dtype=np.int8),
            ref=np.asarray(self.ref, dtype=np.int64),
            dur=np.asarray(self.dur, dtype=np.float64),
            release=np.asarray(self.release, dtype=np.float64),
            m_start=np.asarray(self.m_start, dtype=np.float64),
            indptr=np.concatenate(([0], np.cumsum(counts, dtype=np.int64))),
            pred=np.asarray([e[0] for e in flat], dtype=np.int64),
            delay=np.asarray([e[1] for e in flat], dtype=np.float64),
            etype=np.asarray([e[2] for e in flat], dtype=np.int8),
            from_start=np.asarray([e[3] for e in flat], dtype=bool),
            step_lo=np.asarray([s[0] for s in steps], dtype=np.float64),
            step_hi=np.asarray([s[1] for s in steps], dtype=np.float64),
            step_mark=np.asarray([s[2] for s in steps], dtype=np.int64),
            step_end=np.asarray([s[3] for s in steps], dtype=np.int64),
            step_thread=np.asarray([s[4] for s in steps], dtype=np.int64),
        )


@dataclass(frozen=True)
class StepSpec:
    """One step of a run of steps: its measured window, its calls and GPU work, and its marker's
    thread and CPU span (None for the whole trace, which has none)."""

    lo: float
    hi: float
    calls: np.ndarray
    gpu: np.ndarray
    marker: tuple[int, float, float] | None  # (thread, CPU start, CPU end)


def build_block(t: Trace, tf: TraceFacts, steps: list[StepSpec]) -> StepGraph:
    """One graph over consecutive steps: each thread's calls chain across them (a call waiting at
    the end of a step holds back the next step's CPU work), each stream runs on."""
    rt, g = t.runtime, t.gpu
    b = _Builder()
    lo0 = steps[0].lo
    main = _main_thread(tf, steps)
    # CPU events in time order per thread: calls, and on the main thread each step's marker start
    # and end (zero-length points of its CPU span). Sort key: (thread, time, -length).
    events: list[tuple[int, float, float, int, int, int]] = []  # (thread, ts, -dur, kind, ref, step)
    for i, sp in enumerate(steps):
        for r in sp.calls.tolist():
            events.append((int(tf.thread[r]), float(rt.ts[r]), -float(rt.dur[r]), CALL, r, i))
        if sp.marker is not None:
            th, m0, m1 = sp.marker
            events.append((th, m0, 0.0, MARK, i, i))
            events.append((th, m1, 0.0, MARK_END, i, i))
    events.sort(key=lambda e: (e[0], e[1], e[2], e[3] != MARK))
    all_calls = np.concatenate([sp.calls for sp in steps]) if steps else np.zeros(0, dtype=np.int64)
    all_gpu = np.concatenate([sp.gpu for sp in steps]) if steps else np.zeros(0, dtype=np.int64)
    waits = _waits(t, tf, all_calls, all_gpu)
    call_node: dict[int, int] = {}  # runtime row -> its issue node
    ret_node: dict[int, int] = {}  # runtime row -> the node its thread continues from
    last_of_thread: dict[int, tuple[int, float, int]] = {}  # thread -> (node, measured end, step)
    firsts: list[tuple[int, int, int, int]] = []  # (thread, runtime row, node, step): a thread set going in a step
    mark_node: dict[int, int] = {}
    mark_end: dict[int, int] = {}
    for th, ts, neg, kind, ref, step in events:
        du = -neg
        prev = last_of_thread.get(th)
        if kind in (MARK, MARK_END):
            v = b.node(kind, ref, 0.0, ts)
            (mark_node if kind == MARK else mark_end)[ref] = v
            if prev is None:
                b.release[v] = ts
            else:
                b.edge(prev[0], v, max(0.0, ts - prev[1]), E_CPU)
            last_of_thread[th] = (v, max(ts, prev[1]) if prev else ts, step)
            continue
        r = ref
        nested = prev is not None and ts < prev[1] - 1e-9 and int(b.kind[prev[0]]) in (CALL, RETURN)
        awaited = waits.get(r)
        if awaited is None or nested:
            v = b.node(CALL, r, du, ts)
            call_node[r] = ret_node[r] = v
        else:
            v = b.node(CALL, r, 0.0, ts)
            tail = max(0.0, ts + du - max(float(g.ts[w] + g.dur[w]) for w in awaited))
            ret = b.node(RETURN, r, tail, ts + du - tail)
            b.edge(v, ret, 0.0, E_WAIT)
            call_node[r], ret_node[r] = v, ret
        if nested:
            assert prev is not None
            outer = call_node[int(b.ref[prev[0]])]
            b.edge(outer, v, ts - float(b.m_start[outer]), E_NEST, from_start=True)
            continue
        if th != main and (prev is None or prev[2] != step):
            firsts.append((th, r, v, step))  # set going again by the main thread in this step
            if prev is None:
                b.release[v] = ts
        elif prev is None:
            b.release[v] = ts
        else:
            b.edge(prev[0], v, max(0.0, ts - prev[1]), E_CPU)
        last_of_thread[th] = (ret_node[r], ts + du, step)
    _thread_edges(t, tf, b, all_calls, firsts, call_node, ret_node, main)
    # GPU: stream order, launch edges, earlier work on the stream as a release time.
    gpu = all_gpu[np.lexsort((g.ts[all_gpu], g.stream[all_gpu]))]
    lat = tf.latency
    gpu_node: dict[int, int] = {}
    for k in gpu.tolist():
        # Nothing runs on the GPU before the first step's window opens: the GPU ran the earlier
        # steps' work until then.
        gpu_node[k] = b.node(GPU, k, float(g.dur[k]), float(g.ts[k]), lo0)
    for k in gpu.tolist():
        v = gpu_node[k]
        p = int(tf.prev_on_stream[k])
        if p != NONE and p in gpu_node:
            b.edge(gpu_node[p], v, tf.stream_gap, E_STREAM)
        elif p != NONE:
            b.release[v] = max(b.release[v], float(g.ts[p] + g.dur[p]))
        r = int(g.launch[k])
        if r != NONE and r in call_node:
            b.edge(call_node[r], v, lat[min(int(g.kind[k]), 2)], E_LAUNCH, from_start=True)
        else:  # no launch call in the trace: the activity keeps its measured start
            b.release[v] = max(b.release[v], float(g.ts[k]))
    for r, awaited in waits.items():
        if r in ret_node and ret_node[r] != call_node[r]:
            for w in awaited:
                b.edge(gpu_node[w], ret_node[r], 0.0, E_WAIT)
    _event_edges(t, tf, b, gpu, gpu_node, call_node)
    # Each step ends when its CPU span ends and its GPU work is done.
    spec: list[tuple[float, float, int, int, int]] = []
    for i, sp in enumerate(steps):
        end = b.node(END, i, 0.0, sp.hi)
        if sp.marker is not None:
            b.edge(mark_end[i], end, 0.0, E_END)
        else:
            # The whole trace ends with its last recorded activity: each thread's last call plus
            # the CPU time recorded after it on that thread; a thread without calls at its own end.
            ends = _thread_ends(t, tf, sp.lo, sp.hi)
            for th, (node, m_end, _) in last_of_thread.items():
                b.edge(node, end, max(0.0, ends.pop(th, m_end) - m_end), E_END)
            b.release[end] = max(ends.values(), default=-np.inf)
        tails: dict[int, int] = {}
        for k in sp.gpu[np.argsort(g.ts[sp.gpu], kind="stable")].tolist():
            tails[int(g.stream[k])] = k
        for k in tails.values():
            b.edge(gpu_node[k], end, 0.0, E_END)
        spec.append((sp.lo, sp.hi, mark_node.get(i, NONE), end, sp.marker[0] if sp.marker is not None else NONE))
    return b.done(spec)


def _main_thread(tf: TraceFacts, steps: list[StepSpec]) -> int:
    """The thread that runs the loop: the markers' (the thread with the most calls without)."""
    for sp in steps:
        if sp.marker is not None:
            return sp.marker[0]
    calls = np.concatenate([sp.calls for sp in steps])
    return int(np.argmax(np.bincount(tf.thread[calls]))) if len(calls) else NONE


def _thread_edges(
    t: Trace,
    tf: TraceFacts,
    b: _Builder,
    calls: np.ndarray,
    firsts: list[tuple[int, int, int, int]],
    call_node: dict[int, int],
    ret_node: dict[int, int],
    main: int,
) -> None:
    """A thread's first call in a step follows the main thread's last call before it (the main
    thread set it going: PyTorch runs the backward pass on an autograd thread once the main thread
    calls backward), with the measured CPU time in between."""
    mine = calls[tf.thread[calls] == main]
    if not len(firsts) or not len(mine):
        return
    mine = mine[np.argsort(t.runtime.ts[mine], kind="stable")]
    starts = t.runtime.ts[mine]
    for th, r, v, _ in firsts:
        ts = float(t.runtime.ts[r])
        i = int(np.searchsorted(starts, ts, side="right")) - 1
        if i < 0:
            continue
        p = int(mine[i])
        p_end = float(t.runtime.ts[p] + t.runtime.dur[p])
        b.release[v] = -np.inf  # the edge, not the measured start, places the call
        if p_end <= ts:
            b.edge(ret_node[p], v, ts - p_end, E_THREAD)
        else:  # the other thread started while the main thread was inside the call
            b.edge(call_node[p], v, ts - float(t.runtime.ts[p]), E_THREAD, from_start=True)


def _thread_ends(t: Trace, tf: TraceFacts, lo: float, hi: float) -> dict[int, float]:
    """Per CPU thread, the last end of its ops and Python functions inside [lo, hi]."""
    out: dict[int, float] = {}
    for th, ts, dur in ((tf.op_thread, t.ops.ts, t.ops.dur), (t.pyfn.thread, t.pyfn.ts, t.pyfn.dur)):
        e = ts + dur
        inside = (e <= hi) & (ts >= lo)
        if not inside.any():
            continue
        last = np.full(int(th.max()) + 1, -np.inf)
        np.maximum.at(last, th[inside], e[inside])
        for i in np.flatnonzero(np.isfinite(last)).tolist():
            out[i] = max(out.get(i, -np.inf), float(last[i]))
    return out


def _waits(t: Trace, tf: TraceFacts, calls: np.ndarray, gpu: np.ndarray) -> dict[int, list[int]]:
    """Per call that waits for the GPU: the GPU rows it waits for (one per stream, the last one
    launched before it that ended by its return)."""
    rt, g = t.runtime, t.gpu
    out: dict[int, list[int]] = {}
    if not len(gpu):
        return out
    cls = tf.call_class[calls]
    long = calls[(cls != SYNC) & (rt.dur[calls] >= INFER_MIN_US)]
    cand = calls[cls == SYNC]
    if not len(cand) and not len(long):
        return out
    ends = g.ts[gpu] + g.dur[gpu]
    lts = tf.lts[gpu]
    streams = g.stream[gpu]
    for r, explicit in [(int(r), True) for r in cand] + [(int(r), False) for r in long]:
        ts, re = float(rt.ts[r]), float(rt.ts[r] + rt.dur[r])
        ok = (lts < ts) & (ends > ts) & (ends <= re + EPS_US)
        s = int(tf.sync_stream[r])
        if explicit and s != NONE:
            ok &= streams == s
        if not ok.any():
            continue
        rows = gpu[ok]
        e = ends[ok]
        if not explicit:
            top = float(e.max())
            if re - top > max(10.0, 0.1 * (re - ts)) or top < ts + 0.5 * (re - ts):
                continue
        best: dict[int, tuple[float, int]] = {}
        for k, ek, sk in zip(rows.tolist(), e.tolist(), g.stream[rows].tolist()):
            if sk not in best or ek > best[sk][0]:
                best[sk] = (ek, k)
        out[r] = [k for _, k in best.values()]
    return out


def _event_edges(t: Trace, tf: TraceFacts, b: _Builder, gpu: np.ndarray, gpu_node: dict[int, int], call_node: dict[int, int]) -> None:
    """Cross-stream waits: an activity that started more than EVENT_SLACK_US after its own edges
    allowed, right when an activity on another stream ended, waits for that activity."""
    g = t.gpu
    if len(gpu) < 2 or len(distinct(g.stream[gpu])) < 2:
        return
    ends = g.ts[gpu] + g.dur[gpu]
    order = np.argsort(ends, kind="stable")
    s_ends = ends[order]
    lat = tf.latency
    for k in gpu.tolist():
        ready = -np.inf
        p = int(tf.prev_on_stream[k])
        if p != NONE:
            ready = max(ready, float(g.ts[p] + g.dur[p]))
        r = int(g.launch[k])
        if r != NONE and r in call_node:
            ready = max(ready, float(t.runtime.ts[r]) + lat[min(int(g.kind[k]), 2)])
        start = float(g.ts[k])
        if not np.isfinite(ready) or start - ready <= EVENT_SLACK_US:
            continue
        i = int(np.searchsorted(s_ends, start + EPS_US, side="right")) - 1
        while i >= 0 and s_ends[i] >= start - EVENT_LAG_US:
            w = int(gpu[order[i]])
            if g.stream[w] != g.stream[k]:
                b.edge(gpu_node[w], gpu_node[k], 0.0, E_EVENT)
                break
            i -= 1


def node_threads(t: Trace, g: StepGraph) -> np.ndarray:
    """Per node: its CPU thread as the graphs number them (NONE for GPU work)."""
    out = np.full(len(g.kind), NONE, dtype=np.int64)
    cpu = np.isin(g.kind, (CALL, RETURN))
    out[cpu] = trace_facts(t).thread[g.ref[cpu]]
    step = np.isin(g.kind, (MARK, MARK_END, END))
    out[step] = g.step_thread[g.ref[step]]
    return out


def op_spans(t: Trace, ops: np.ndarray) -> tuple[tuple[int, float, float], ...]:
    """(thread, start, end) of these ops, threads as the step graphs number them."""
    th = trace_facts(t).op_thread[ops].tolist()
    return tuple(zip(th, t.ops.ts[ops].tolist(), (t.ops.ts[ops] + t.ops.dur[ops]).tolist()))


def calls_inside(t: Trace, ops: np.ndarray) -> np.ndarray:
    """The runtime calls that started inside these ops' spans on their threads."""
    tf = trace_facts(t)
    rt = t.runtime
    if not len(ops) or not len(rt):
        return np.zeros(0, dtype=np.int64)
    out = []
    for th in distinct(tf.op_thread[ops]):
        mine = np.flatnonzero(tf.thread == th)
        if not len(mine):
            continue
        mine = mine[np.argsort(rt.ts[mine], kind="stable")]
        ts = rt.ts[mine]
        o = ops[tf.op_thread[ops] == th]
        a = np.searchsorted(ts, t.ops.ts[o], side="left")
        b = np.searchsorted(ts, t.ops.ts[o] + t.ops.dur[o], side="right")
        out += [mine[i:j] for i, j in zip(a.tolist(), b.tolist()) if j > i]
    return np.concatenate(out).astype(np.int64) if out else np.zeros(0, dtype=np.int64)
