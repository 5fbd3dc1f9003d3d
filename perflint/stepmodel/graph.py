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
- cross-stream waits: where the trace records an event wait (Kineto's "Stream Wait Event" sync
  records name the stream the event was recorded on and its cudaEventRecord call), the first
  activity the waiting stream was given after the wait starts no earlier than the end of the last
  activity launched on the recording stream before the record; elsewhere they are inferred: an
  activity that started later than its launch, its stream and its latency allow, right when work
  on another stream ended, waits for that work;
- the step ends when its CPU span ends (the marker thread's last call plus the CPU time after it)
  and when all its GPU work ends.
A GPU activity whose launch call the trace does not hold keeps its measured start (the only
measured GPU time the replay uses, and it says how much of the step's GPU work that is).
Nothing of the step starts on the GPU before the step's window opens (the earlier steps' work ran
until then) nor before earlier work on its stream ended: those are release times.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from perflint.ids import distinct
from perflint.memo import once
from perflint.metrics.apis import is_kernel_launch, is_launch, is_sync_copy, sync_kind
from perflint.metrics.steps import launch_ts
from perflint.model import EVENT_SYNC, GPU_SYNC, KERNEL, MEMCPY, MEMSET, NONE, STREAM_WAIT_EVENT, GpuTable, Trace

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
    event_src: np.ndarray  # recorded event waits: the GPU row the event stood for ...
    event_dst: np.ndarray  # ... and the first GPU row its waiting stream got after the wait


@once
def thread_index(t: Trace) -> np.ndarray:
    """Per entry of Trace.threads, the one index of its (pid, tid): a reader may give ops and
    runtime calls of one thread two entries. The graphs number CPU threads so."""
    first: dict[tuple[str, str], int] = {}
    return np.asarray([first.setdefault(th, i) for i, th in enumerate(t.threads)] or [0], dtype=np.int32)


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
    # An event synchronize waits on the stream its event was recorded on.
    ev = np.flatnonzero(linked & _named(t, g.kind == GPU_SYNC, EVENT_SYNC) & (g.wait_stream != NONE))
    sync_stream[g.launch[ev]] = g.wait_stream[ev]
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
    canon = thread_index(t)
    src, dst = _event_waits(t, lts, work)
    return TraceFacts(
        call_class, sync_stream, _latencies(t, prev), _stream_gap(t, prev, lts), lts, canon, canon[rt.thread], canon[t.ops.thread], work, prev,
        src, dst,
    )  # fmt: skip


def _event_waits(t: Trace, lts: np.ndarray, work: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The recorded stream-waits-for-event pairs (GPU rows): a wait's event stands for the last
    activity launched on the recording stream before its cudaEventRecord call; the wait holds back
    the first activity launched on the waiting stream after the cudaStreamWaitEvent call. A wait
    whose record call, launch call or either activity the trace lacks gives no pair."""
    g, rt = t.gpu, t.runtime
    none = np.zeros(0, dtype=np.int64)
    if g.wait_corr.strides == (0,) and (not len(g) or int(g.wait_corr[0]) == NONE):
        return none, none  # the usual broadcast column: no event waits recorded
    w = np.flatnonzero(_named(t, (g.kind == GPU_SYNC) & (g.wait_corr != NONE) & (g.stream >= 0) & (g.launch != NONE), STREAM_WAIT_EVENT))
    if not len(w) or not len(work):
        return none, none
    # The record calls by correlation id.
    order = np.argsort(rt.correlation, kind="stable")
    corr = rt.correlation[order]
    i = np.minimum(np.searchsorted(corr, g.wait_corr[w]), len(corr) - 1)
    found = corr[i] == g.wait_corr[w]
    w, rec = w[found], order[i[found]]
    src = _on_stream(g.stream, lts, work, g.wait_stream[w], rt.ts[rec], before=True)
    dst = _on_stream(g.stream, lts, work, g.stream[w], rt.ts[g.launch[w]], before=False)
    ok = (src != NONE) & (dst != NONE)
    return src[ok], dst[ok]


def _named(t: Trace, rows: np.ndarray, name: str) -> np.ndarray:
    """`rows` (a bool per GPU row) narrowed to the rows called `name`."""
    sid = [i for i in distinct(t.gpu.name[rows]) if t.s(int(i)) == name] if rows.any() else []
    return rows & (t.gpu.name == sid[0]) if sid else np.zeros(len(rows), dtype=bool)


def _on_stream(stream: np.ndarray, lts: np.ndarray, work: np.ndarray, on: np.ndarray, at: np.ndarray, before: bool) -> np.ndarray:
    """Per query (stream `on`, time `at`): the last work row on that stream launched before `at`
    (before=True) or the first launched at or after it; NONE where there is none."""
    out = np.full(len(on), NONE, dtype=np.int64)
    ws = stream[work]
    for s in np.unique(on).tolist():
        rows = work[ws == s]
        rows = rows[np.argsort(lts[rows], kind="stable")]
        q = np.flatnonzero(on == s)
        k = np.searchsorted(lts[rows], at[q], side="left")
        if before:
            k = k - 1
            hit = k >= 0
        else:
            hit = k < len(rows)
        out[q[hit]] = rows[k[hit]]
    return out


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
    _tables: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def nodes_of(self, kinds: tuple[int, ...], rows: np.ndarray) -> np.ndarray:
        """Bool per node: the nodes of those kinds whose row (`ref`) is one of `rows` (each row is
        one node of a kind: a table per kind, made on first use, looks them up)."""
        out = np.zeros(len(self.kind), dtype=bool)
        rows = np.asarray(rows, dtype=np.int64)
        for k in kinds:
            table = self._tables.get(k)
            if table is None:
                mine = np.flatnonzero(self.kind == k)
                table = np.full(int(self.ref[mine].max()) + 1 if len(mine) else 0, -1, dtype=np.int64)
                table[self.ref[mine]] = mine
                self._tables[k] = table
            r = rows[(rows >= 0) & (rows < len(table))]
            hit = table[r]
            out[hit[hit >= 0]] = True
        return out

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


@dataclass(frozen=True)
class StepSpec:
    """One step of a run of steps: its measured window, its calls and GPU work, and its marker's
    thread and CPU span (None for the whole trace, which has none)."""

    lo: float
    hi: float
    calls: np.ndarray
    gpu: np.ndarray
    marker: tuple[int, float, float] | None  # (thread, CPU start, CPU end)


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


PAIRS_PER_CHUNK = 1 << 22  # (call, GPU row) candidates looked at at once: bounds the memory


def _waits(t: Trace, tf: TraceFacts, calls: np.ndarray, gpu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The calls that wait for the GPU and what each waits for, as parallel arrays (call row, GPU
    row): per call, one GPU row per stream, the last one launched before the call that ended by
    its return (explicit syncs on a stream: that stream only; long calls that are not syncs: only
    where GPU work ended right before they returned). Calls in `calls` order, syncs first; a
    call's rows by stream, in the order their streams' work ended."""
    rt, g = t.runtime, t.gpu
    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    if not len(gpu) or not len(calls):
        return none
    cls = tf.call_class[calls]
    q = np.concatenate([calls[cls == SYNC], calls[(cls != SYNC) & (rt.dur[calls] >= INFER_MIN_US)]]).astype(np.int64)
    if not len(q):
        return none
    explicit = np.zeros(len(q), dtype=bool)
    explicit[: int((cls == SYNC).sum())] = True
    order = np.argsort(g.ts[gpu] + g.dur[gpu], kind="stable")
    rows_by_end = gpu[order]
    ends = (g.ts + g.dur)[rows_by_end]
    ts = rt.ts[q]
    re = ts + rt.dur[q]
    a = np.searchsorted(ends, ts, side="right")
    b = np.searchsorted(ends, re + EPS_US, side="right")
    live = np.flatnonzero(b > a)
    if not len(live):
        return none
    out_c: list[np.ndarray] = []
    out_g: list[np.ndarray] = []
    cum = np.cumsum(b[live] - a[live])
    lo = 0
    while lo < len(live):
        hi = max(lo + 1, int(np.searchsorted(cum, (cum[lo - 1] if lo else 0) + PAIRS_PER_CHUNK, side="right")))
        c, r = _waits_of(g, tf, live[lo:hi], q, explicit, ts, re, a, b, rows_by_end, ends)
        out_c.append(c)
        out_g.append(r)
        lo = hi
    return np.concatenate(out_c), np.concatenate(out_g)


def _waits_of(
    g: GpuTable, tf: TraceFacts, idx: np.ndarray, q: np.ndarray, explicit: np.ndarray, ts: np.ndarray, re: np.ndarray,
    a: np.ndarray, b: np.ndarray, rows_by_end: np.ndarray, ends: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """`_waits` for the candidate calls q[idx]: every GPU row that ended inside each one, judged
    at once."""
    cnt = b[idx] - a[idx]
    qi = np.repeat(idx, cnt)
    k = np.repeat(a[idx] - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt) + np.arange(int(cnt.sum()))
    rows, e = rows_by_end[k], ends[k]
    s = tf.sync_stream[q[qi]]
    ok = (tf.lts[rows] < ts[qi]) & (~(explicit[qi] & (s != NONE)) | (g.stream[rows] == s))
    qi, k, rows, e = qi[ok], k[ok], rows[ok], e[ok]
    # A long call that is not a sync waited only if GPU work ended right before it returned.
    top = np.full(len(q), -np.inf)
    np.maximum.at(top, qi, e)
    span = re - ts
    waited = explicit | ~((re - top > np.maximum(10.0, 0.1 * span)) | (top < ts + 0.5 * span))
    keep = waited[qi]
    qi, k, rows, e = qi[keep], k[keep], rows[keep], e[keep]
    if not len(qi):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    st = g.stream[rows]
    # Per (call, stream): the row that ended last (the first such in end order), placed where the
    # stream's first row of the call was.
    o = np.lexsort((k, -e, st, qi))
    grp = np.ones(len(o), dtype=bool)
    grp[1:] = (qi[o][1:] != qi[o][:-1]) | (st[o][1:] != st[o][:-1])
    starts = np.flatnonzero(grp)
    best = o[starts]
    first_k = np.minimum.reduceat(k[o], starts)
    place = np.lexsort((first_k, qi[best]))
    best = best[place]
    return q[qi[best]], rows[best]


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
    th = thread_index(t)[t.ops.thread[ops]].tolist()
    return tuple(zip(th, t.ops.ts[ops].tolist(), (t.ops.ts[ops] + t.ops.dur[ops]).tolist()))


def calls_inside(t: Trace, ops: np.ndarray) -> np.ndarray:
    """The runtime calls that started inside these ops' spans on their threads (the trace's
    thread entries read as the graphs number threads)."""
    rt = t.runtime
    if not len(ops) or not len(rt):
        return np.zeros(0, dtype=np.int64)
    canon = thread_index(t)
    op_thread = canon[t.ops.thread[ops]]
    out = []
    if _in_time_order(t):
        # Calls in time order: each op's calls are a range of rows, kept where on its thread.
        a = np.searchsorted(rt.ts, t.ops.ts[ops], side="left")
        b = np.searchsorted(rt.ts, t.ops.ts[ops] + t.ops.dur[ops], side="right")
        for i, j, th in zip(a.tolist(), b.tolist(), op_thread.tolist()):
            if j > i:
                rows = np.arange(i, j, dtype=np.int64)
                out.append(rows[canon[rt.thread[i:j]] == th])
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
    for th in distinct(op_thread):
        mine = np.flatnonzero(np.isin(rt.thread, np.flatnonzero(canon == th)))
        if not len(mine):
            continue
        mine = mine[np.argsort(rt.ts[mine], kind="stable")]
        ts = rt.ts[mine]
        o = ops[op_thread == th]
        a = np.searchsorted(ts, t.ops.ts[o], side="left")
        b = np.searchsorted(ts, t.ops.ts[o] + t.ops.dur[o], side="right")
        out += [mine[i:j] for i, j in zip(a.tolist(), b.tolist()) if j > i]
    return np.concatenate(out).astype(np.int64) if out else np.zeros(0, dtype=np.int64)


@once
def _in_time_order(t: Trace) -> bool:
    """Whether the runtime calls are stored in start order (a slice at a time)."""
    ts = t.runtime.ts
    for i in range(0, max(len(ts) - 1, 0), 1 << 18):
        a = ts[i : i + (1 << 18) + 1]
        if not bool((a[1:] >= a[:-1]).all()):
            return False
    return True
