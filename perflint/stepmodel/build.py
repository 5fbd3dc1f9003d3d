"""Building the graph of a run of consecutive steps (perflint.stepmodel.graph says what its nodes
and edges are), a column at a time: the per-event work is array operations, and only the few
events that need a look at their neighbours (host waits, late GPU starts, threads set going) are
visited one by one."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

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
    E_WAIT,
    END,
    EPS_US,
    EVENT_LAG_US,
    EVENT_SLACK_US,
    GPU,
    MARK,
    MARK_END,
    RETURN,
    StepGraph,
    StepSpec,
    TraceFacts,
    _thread_ends,
    _waits,
)  # fmt: skip

I64 = np.int64


class _Edges:
    """Edges gathered as array pieces: (source, target, delay, type, from start)."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]] = []

    def add(self, src: np.ndarray, dst: np.ndarray, delay: np.ndarray | float, etype: int, from_start: bool = False) -> None:
        src = np.asarray(src, dtype=I64)
        if len(src):
            self.parts.append((src, np.asarray(dst, dtype=I64), np.broadcast_to(np.asarray(delay, dtype=np.float64), src.shape), etype, from_start))

    def csr(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, pred, delay, etype, from_start), edges grouped by target in the order added."""
        if not self.parts:
            z = np.zeros(0, dtype=I64)
            return np.zeros(n + 1, dtype=I64), z, np.zeros(0), np.zeros(0, dtype=np.int8), np.zeros(0, dtype=bool)
        src = np.concatenate([p[0] for p in self.parts])
        dst = np.concatenate([p[1] for p in self.parts])
        delay = np.concatenate([p[2] for p in self.parts])
        etype = np.concatenate([np.full(len(p[0]), p[3], dtype=np.int8) for p in self.parts])
        fs = np.concatenate([np.full(len(p[0]), p[4], dtype=bool) for p in self.parts])
        order = np.argsort(dst, kind="stable")
        indptr = np.concatenate(([0], np.cumsum(np.bincount(dst, minlength=n)))).astype(I64)
        return indptr, src[order], delay[order], etype[order], fs[order]


def build_block(t: Trace, tf: TraceFacts, steps: list[StepSpec]) -> StepGraph:
    """One graph over consecutive steps: each thread's calls chain across them (a call waiting at
    the end of a step holds back the next step's CPU work), each stream runs on."""
    rt, g = t.runtime, t.gpu
    lo0 = steps[0].lo
    main = _main_thread(tf, steps)
    calls = np.concatenate([sp.calls for sp in steps]).astype(I64)
    call_step = np.repeat(np.arange(len(steps)), [len(sp.calls) for sp in steps])
    gpu = np.concatenate([sp.gpu for sp in steps]).astype(I64)
    gpu_step = np.repeat(np.arange(len(steps)), [len(sp.gpu) for sp in steps])
    waits = _waits(t, tf, calls, gpu)

    # CPU events: the calls, and each step's marker start and end on the main thread.
    marks = [(i, sp.marker) for i, sp in enumerate(steps) if sp.marker is not None]
    m_th = np.asarray([m[0] for _, m in marks] * 2, dtype=I64)
    m_ts = np.asarray([m[1] for _, m in marks] + [m[2] for _, m in marks], dtype=np.float64)
    m_step = np.asarray([i for i, _ in marks] * 2, dtype=I64)
    m_kind = np.repeat(np.asarray([MARK, MARK_END], dtype=np.int8), len(marks))
    th = np.concatenate([tf.thread[calls].astype(I64), m_th])
    ts = np.concatenate([rt.ts[calls], m_ts])
    dur = np.concatenate([rt.dur[calls], np.zeros(len(m_ts))])
    kind = np.concatenate([np.full(len(calls), CALL, dtype=np.int8), m_kind])
    ref = np.concatenate([calls, m_step])
    step = np.concatenate([call_step, m_step])
    order = np.lexsort((kind != MARK, -dur, ts, th))  # a marker start before a call at its time
    th, ts, dur, kind, ref, step = th[order], ts[order], dur[order], kind[order], ref[order], step[order]
    ne = len(ts)
    is_call = kind == CALL
    blocking = np.zeros(ne, dtype=bool)
    wait_call, wait_gpu = waits
    if len(wait_call):
        blocking[is_call] = np.isin(ref[is_call], wait_call)
    # A call that starts inside an earlier call on its thread is nested in it (a driver call under
    # a runtime call): it hangs off that call's start, off the thread's chain.
    new_thread = np.ones(ne, dtype=bool)
    new_thread[1:] = th[1:] != th[:-1]
    end = np.where(is_call, ts + dur, ts)
    run_end = _segmented_cummax(np.where(is_call, end, -np.inf), new_thread)
    prev_end = np.full(ne, -np.inf)
    prev_end[1:] = run_end[:-1]
    prev_end[new_thread] = -np.inf
    nested = is_call & (ts < prev_end - 1e-9)
    blocking &= ~nested

    # Node numbers: a blocking call is two nodes (its issue, its return).
    width = 1 + blocking.astype(I64)
    first_node = (np.cumsum(width) - width).astype(I64)
    cont_node = first_node + width - 1  # the node the thread continues from
    n_cpu = int(width.sum())
    ngpu = len(gpu)
    n = n_cpu + ngpu + len(steps)
    node_kind = np.empty(n, dtype=np.int8)
    node_ref = np.empty(n, dtype=I64)
    node_dur = np.zeros(n)
    release = np.full(n, -np.inf)
    m_start = np.empty(n)
    node_kind[first_node] = kind
    node_ref[first_node] = ref
    node_dur[first_node] = np.where(blocking, 0.0, dur)
    m_start[first_node] = ts
    ret = first_node[blocking] + 1
    if len(ret):
        # Each blocking call returns after the last of the work it waited for.
        at = _lookup(ref[blocking])(wait_call)
        mine = at != NONE
        awaited_end = np.full(len(ret), -np.inf)
        np.maximum.at(awaited_end, at[mine], g.ts[wait_gpu[mine]] + g.dur[wait_gpu[mine]])
        tail = np.maximum(0.0, ts[blocking] + dur[blocking] - awaited_end)
        node_kind[ret] = RETURN
        node_ref[ret] = ref[blocking]
        node_dur[ret] = tail
        m_start[ret] = ts[blocking] + dur[blocking] - tail
    e = _Edges()
    e.add(first_node[blocking], ret, 0.0, E_WAIT)

    # The chain: each event on its thread (nested calls aside) after the one before it.
    chain = np.flatnonzero(~nested)
    c_new = np.ones(len(chain), dtype=bool)
    c_new[1:] = th[chain[1:]] != th[chain[:-1]]
    prev = np.full(len(chain), NONE, dtype=I64)
    prev[1:] = chain[:-1]
    prev[c_new] = NONE
    # A thread other than the main one is set going afresh in each step (by the main thread).
    restart = (th[chain] != main) & is_call[chain] & ((prev == NONE) | (step[np.maximum(prev, 0)] != step[chain]))
    linked = (prev != NONE) & ~restart
    cur = chain[linked]
    before = prev[linked]
    e.add(cont_node[before], first_node[cur], np.maximum(0.0, ts[cur] - end[before]), E_CPU)
    first = chain[(prev == NONE) & ~restart]
    release[first_node[first]] = ts[first]
    # Nested calls: off the start of the chain call before them.
    nest = np.flatnonzero(nested)
    if len(nest):
        outer = chain[np.searchsorted(chain, nest) - 1]
        e.add(first_node[outer], first_node[nest], ts[nest] - ts[outer], E_NEST, from_start=True)
    _thread_edges(ts, end, th, chain[restart], first_node, cont_node, is_call, main, release, e)

    # GPU work: stream order, launch edges, earlier work on the stream as a release time.
    gpu_base = n_cpu
    gnode = gpu_base + np.arange(ngpu, dtype=I64)
    node_kind[gnode] = GPU
    node_ref[gnode] = gpu
    node_dur[gnode] = g.dur[gpu]
    m_start[gnode] = g.ts[gpu]
    release[gnode] = lo0  # nothing runs on the GPU before the first step's window opens
    pos_of = _lookup(gpu)
    p = tf.prev_on_stream[gpu]
    has_p = p != NONE
    inside = np.zeros(ngpu, dtype=bool)
    inside[has_p] = pos_of(p[has_p]) >= 0
    src_pos = pos_of(p[inside])
    e.add(gnode[src_pos], gnode[inside], tf.stream_gap, E_STREAM)
    outside = has_p & ~inside
    po = p[outside]
    release[gnode[outside]] = np.maximum(release[gnode[outside]], g.ts[po] + g.dur[po])
    call_of = _lookup(ref[is_call])
    call_nodes = first_node[is_call]
    launch = g.launch[gpu].astype(I64)
    lpos = np.full(ngpu, NONE, dtype=I64)
    lk = launch != NONE
    lpos[lk] = call_of(launch[lk])
    got = lpos != NONE
    lat = np.asarray(tf.latency)[np.minimum(g.kind[gpu[got]], 2)]
    e.add(call_nodes[lpos[got]], gnode[got], lat, E_LAUNCH, from_start=True)
    anchored = gnode[~got]  # no launch call in the trace: the activity keeps its measured start
    release[anchored] = np.maximum(release[anchored], m_start[anchored])
    # Host waits: the GPU work a blocking call waited for, into its return.
    if len(wait_call):
        at = _lookup(ref[blocking])(wait_call)
        src = pos_of(wait_gpu)
        ok = (at != NONE) & (src != NONE)
        e.add(gnode[src[ok]], ret[at[ok]], 0.0, E_WAIT)
    held = _recorded_event_edges(t, tf, gpu, gnode, pos_of, release, e)
    _event_edges(t, tf, gpu, gnode, launch, rt.ts, held, e)

    # Each step ends when its CPU span ends and its GPU work is done.
    end_nodes = n_cpu + ngpu + np.arange(len(steps), dtype=I64)
    node_kind[end_nodes] = END
    node_ref[end_nodes] = np.arange(len(steps))
    m_start[end_nodes] = [sp.hi for sp in steps]
    mark_node = np.full(len(steps), NONE, dtype=I64)
    is_mark = kind == MARK
    mark_node[ref[is_mark]] = first_node[is_mark]
    is_mend = kind == MARK_END
    e.add(first_node[is_mend], end_nodes[ref[is_mend]], 0.0, E_END)
    for i, sp in enumerate(steps):
        if sp.marker is None:
            # The whole trace ends with its last recorded activity: each thread's last call plus
            # the CPU time recorded after it on that thread; a thread without calls at its own end.
            ends = _thread_ends(t, tf, sp.lo, sp.hi)
            last = chain[np.concatenate((c_new[1:], [True]))] if len(chain) else chain
            srcs = cont_node[last]
            delays = [max(0.0, ends.pop(int(x), float(end[j])) - float(end[j])) for x, j in zip(th[last].tolist(), last.tolist())]
            e.add(srcs, np.full(len(srcs), end_nodes[i]), np.asarray(delays), E_END)
            release[end_nodes[i]] = max(ends.values(), default=-np.inf)
    # Every stream's last activity of each step.
    if ngpu:
        by = np.lexsort((g.ts[gpu], g.stream[gpu], gpu_step))
        last_of = np.ones(ngpu, dtype=bool)
        last_of[:-1] = (gpu_step[by][1:] != gpu_step[by][:-1]) | (g.stream[gpu][by][1:] != g.stream[gpu][by][:-1])
        tails = by[last_of]
        e.add(gnode[tails], end_nodes[gpu_step[tails]], 0.0, E_END)

    indptr, pred, delay, etype, fs = e.csr(n)
    return StepGraph(
        kind=node_kind, ref=node_ref, dur=node_dur, release=release, m_start=m_start, indptr=indptr, pred=pred, delay=delay,
        etype=etype, from_start=fs, step_lo=np.asarray([sp.lo for sp in steps]), step_hi=np.asarray([sp.hi for sp in steps]),
        step_mark=mark_node, step_end=end_nodes, step_thread=np.asarray([sp.marker[0] if sp.marker else NONE for sp in steps], dtype=I64),
    )  # fmt: skip


def _segmented_cummax(x: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Running maximum of x restarting where `new` is set."""
    out = np.empty(len(x))
    starts = np.flatnonzero(new).tolist() + [len(x)]
    for a, b in zip(starts[:-1], starts[1:]):
        out[a:b] = np.maximum.accumulate(x[a:b])
    return out


def _lookup(keys: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A function from values to their position in `keys` (NONE where absent)."""
    order = np.argsort(keys, kind="stable")
    sk = keys[order]

    def find(q: np.ndarray) -> np.ndarray:
        out = np.full(len(q), NONE, dtype=I64)
        if not len(sk) or not len(q):
            return out
        i = np.minimum(np.searchsorted(sk, q), len(sk) - 1)
        hit = sk[i] == q
        out[hit] = order[i[hit]]
        return out

    return find


def _main_thread(tf: TraceFacts, steps: list[StepSpec]) -> int:
    """The thread that runs the loop: the markers' (the thread with the most calls without)."""
    for sp in steps:
        if sp.marker is not None:
            return sp.marker[0]
    calls = np.concatenate([sp.calls for sp in steps])
    return int(np.argmax(np.bincount(tf.thread[calls]))) if len(calls) else NONE


def _thread_edges(
    ts: np.ndarray,
    end: np.ndarray,
    th: np.ndarray,
    restarts: np.ndarray,
    first_node: np.ndarray,
    cont_node: np.ndarray,
    is_call: np.ndarray,
    main: int,
    release: np.ndarray,
    e: _Edges,
) -> None:
    """A thread's first call in a step follows the main thread's last call before it (the main
    thread set it going: PyTorch runs the backward pass on an autograd thread once the main thread
    calls backward), with the measured CPU time in between; without one it keeps its start."""
    mine = np.flatnonzero((th == main) & is_call)
    if not len(restarts):
        return
    i = np.searchsorted(ts[mine], ts[restarts], side="right") - 1
    ok = i >= 0
    release[first_node[restarts[~ok]]] = ts[restarts[~ok]]
    r, p = restarts[ok], mine[i[ok]]
    after = end[p] <= ts[r]
    e.add(cont_node[p[after]], first_node[r[after]], ts[r[after]] - end[p[after]], E_THREAD)
    during = ~after  # set going while the main thread was inside the call
    e.add(first_node[p[during]], first_node[r[during]], ts[r[during]] - ts[p[during]], E_THREAD, from_start=True)


def _recorded_event_edges(
    t: Trace, tf: TraceFacts, gpu: np.ndarray, gnode: np.ndarray, pos_of: Callable[[np.ndarray], np.ndarray], release: np.ndarray, e: _Edges
) -> np.ndarray:
    """The event waits the trace records (TraceFacts.event_src/event_dst) as edges into this
    block's activities (an event standing for work of an earlier block is a release time).
    Returns, per activity of the block, the end of the work it waits for (-inf: none)."""
    held = np.full(len(gpu), -np.inf)
    if not len(tf.event_dst):
        return held
    g = t.gpu
    dst = pos_of(tf.event_dst)
    mine = dst != NONE
    src_row, dst = tf.event_src[mine], dst[mine]
    src = pos_of(src_row)
    np.maximum.at(held, dst, g.ts[src_row] + g.dur[src_row])
    inside = src != NONE
    e.add(gnode[src[inside]], gnode[dst[inside]], 0.0, E_EVENT)
    out = gnode[dst[~inside]]
    np.maximum.at(release, out, (g.ts[src_row] + g.dur[src_row])[~inside])
    return held


def _event_edges(
    t: Trace, tf: TraceFacts, gpu: np.ndarray, gnode: np.ndarray, launch: np.ndarray, call_ts: np.ndarray, held: np.ndarray, e: _Edges
) -> None:
    """Cross-stream waits the trace does not record: an activity that started more than
    EVENT_SLACK_US after its own edges (and the event waits recorded for it, `held`) allowed,
    right when an activity on another stream ended, waits for that activity."""
    g = t.gpu
    if len(gpu) < 2:
        return
    streams = g.stream[gpu]
    if (streams == streams[0]).all():
        return
    ready = held.copy()
    p = tf.prev_on_stream[gpu]
    hp = p != NONE
    ready[hp] = g.ts[p[hp]] + g.dur[p[hp]]
    hl = launch != NONE
    lat = np.asarray(tf.latency)[np.minimum(g.kind[gpu[hl]], 2)]
    ready[hl] = np.maximum(ready[hl], call_ts[launch[hl]] + lat)
    start = g.ts[gpu]
    late = np.flatnonzero(np.isfinite(ready) & (start - ready > EVENT_SLACK_US))
    if not len(late):
        return
    ends = g.ts[gpu] + g.dur[gpu]
    order = np.argsort(ends, kind="stable")
    s_ends = ends[order]
    src, dst = [], []
    for k in late.tolist():
        i = int(np.searchsorted(s_ends, start[k] + EPS_US, side="right")) - 1
        while i >= 0 and s_ends[i] >= start[k] - EVENT_LAG_US:
            w = int(order[i])
            if streams[w] != streams[k]:
                src.append(int(gnode[w]))
                dst.append(int(gnode[k]))
                break
            i -= 1
    e.add(np.asarray(src, dtype=I64), np.asarray(dst, dtype=I64), 0.0, E_EVENT)
