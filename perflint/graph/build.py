"""Link a freshly read trace into the kernel/operator graph.

- CPU ops form a tree per thread by time containment;
- each runtime call hangs off its innermost enclosing op;
- each GPU activity links to its launching runtime call by correlation id;
- backward ops link to their forward op by autograd sequence number;
- ops get the user's source line from python_function events or the Call stack arg;
- steps come from ProfilerStep#N annotations.
"""

from __future__ import annotations

import re
import sys
from typing import Callable

import numpy as np

from perflint.graph.nesting import enclosing, nest
from perflint.ids import distinct, isin_ids
from perflint.model import NONE, OP_CPU, Step, Trace

_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
_PYFN_RE = re.compile(r"^(.*)\((\d+)\): (.*)$")
# Top-level packages whose frames are framework plumbing, not where a user would fix their model.
_FRAMEWORK = frozenset({"torch", "triton", "functorch", "torchgen", "typing_extensions"}) | frozenset(
    sys.stdlib_module_names
)


def is_user_frame(path: str) -> bool:
    """False for built-ins, the standard library and PyTorch itself; Kineto often strips
    site-packages prefixes, so the first path component decides."""
    if not path or path.startswith("<"):
        return False
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            path = path.rsplit(marker, 1)[1]
            break
    else:
        if "/lib/python3" in path:
            return False
    first = path.lstrip("/").split("/", 1)[0]
    if first.endswith(".py"):
        first = first[:-3]
    return first not in _FRAMEWORK


def parse_frame(frame: str) -> tuple[str, int, str] | None:
    """'path/file.py(LINE): func' -> (path, line, func)."""
    m = _PYFN_RE.match(frame.strip())
    if not m:
        return None
    return m.group(1), int(m.group(2)), m.group(3)


def link(trace: Trace) -> Trace:
    ops, rt, gpu = trace.ops, trace.runtime, trace.gpu
    parent, depth, order = nest(ops.thread, ops.ts, ops.dur)
    ops.parent, ops.depth = parent, depth
    trace.memo.put(ops_by_thread_ts, order, (ops.thread, ops.ts, ops.dur))
    rt.op = enclosing(ops.thread, ops.ts, ops.dur, parent, order, rt.thread, rt.ts)
    gpu.launch, unique = _match_correlation(rt.correlation, gpu.correlation)
    trace.memo.put(unique_correlation_launch, gpu.launch if unique else None, (rt.correlation, gpu.correlation, gpu.launch))
    _link_counter_ranges(trace)
    _link_forward(trace)
    _sources(trace)
    trace.steps = _steps(trace)
    return trace


def _by_correlation(rt_corr: np.ndarray, gpu_corr: np.ndarray) -> np.ndarray:
    return _match_correlation(rt_corr, gpu_corr)[0]


def _match_correlation(rt_corr: np.ndarray, gpu_corr: np.ndarray) -> tuple[np.ndarray, bool]:
    """Launching runtime call of each GPU row (NONE when none), and whether the runtime ids other
    than NONE are unique (read off the sort the match needs anyway)."""
    out = np.full(len(gpu_corr), NONE, dtype=np.int32)
    if len(rt_corr) == 0:
        return out, True
    # Calls usually come in correlation order already (ids are handed out as calls are made):
    # then the column is its own sort, without a permutation and a sorted copy of it.
    order: np.ndarray | None = None
    sorted_corr = rt_corr
    if not bool((rt_corr[1:] >= rt_corr[:-1]).all()):
        order = np.argsort(rt_corr, kind="stable")
        sorted_corr = rt_corr[order]
    unique = not bool(((sorted_corr[1:] == sorted_corr[:-1]) & (sorted_corr[1:] != NONE)).any())
    last = len(sorted_corr) - 1
    for i in range(0, len(gpu_corr), _SLICE):  # a slice at a time: no full-size int64 positions
        g = gpu_corr[i : i + _SLICE]
        pos = np.minimum(np.searchsorted(sorted_corr, g), last)
        hit = (sorted_corr[pos] == g) & (g != NONE)
        out[i : i + _SLICE][hit] = pos[hit] if order is None else order[pos[hit]]
    return out, unique


_SLICE = 1 << 20


def ops_by_thread_ts(trace: Trace) -> np.ndarray | None:
    """The ops in np.lexsort((-dur, ts, thread)) order, as the nesting step sorted them (None when
    the columns changed since, or never went through link)."""
    ops = trace.ops
    return trace.memo.peek(ops_by_thread_ts, (ops.thread, ops.ts, ops.dur))


def unique_correlation_launch(trace: Trace) -> np.ndarray | None:
    """gpu.launch when it is the whole correlation match: no two runtime calls share a
    correlation id, so a GPU row's id (other than NONE) occurs on its launch call and on no other
    runtime call. None when that is not known (ids repeat, or the columns changed since link)."""
    rt, gpu = trace.runtime, trace.gpu
    return trace.memo.peek(unique_correlation_launch, (rt.correlation, gpu.correlation, gpu.launch))


def _link_counter_ranges(trace: Trace) -> None:
    """CUPTI profiler-mode ranges carry no correlation id: pair them with kernel launches by
    order (both sorted by time), as HTA does. A count mismatch leaves them unlinked, with a warning."""
    ranges = trace.counter_ranges
    if not ranges:
        return
    rt = trace.runtime
    launch_ids = [i for i, s in enumerate(trace.strings) if s.startswith("cudaLaunchKernel")]
    idx = np.flatnonzero(isin_ids(rt.name, np.asarray(launch_ids, dtype=np.int32)))
    if len(idx) != len(ranges):
        trace.warnings.append(
            f"{len(ranges)} CUPTI counter ranges but {len(idx)} kernel launches: counters not attributed to ops"
        )
        return
    launches = idx[np.argsort(rt.ts[idx], kind="stable")].tolist()
    for cr, r in zip(sorted(ranges, key=lambda c: c.ts), launches):
        cr.launch = int(r)


_BWD_SUFFIX = re.compile(r"Backward\d*$")


def _canon(name: str) -> str:
    return name.rsplit("::", 1)[-1].replace("_", "").lower()


def _link_forward(trace: Trace) -> None:
    """Backward op -> the forward op that created its autograd node (same Sequence number).

    Forward ops carry `Fwd thread id` 0 and backward ops the forward thread's id (> 0).
    Several nested forward ops share one sequence number; the node's creator is the one whose
    name matches the backward node (AddmmBackward0 -> aten::addmm), else the deepest.
    """
    ops = trace.ops
    has_seq = ops.seq != NONE
    if not has_seq.any():
        return
    strings = trace.strings
    is_bwd = has_seq & (ops.fwd_tid > 0)
    fwd_idx = np.flatnonzero(has_seq & ~is_bwd & (ops.kind == OP_CPU))
    bwd_idx = np.flatnonzero(is_bwd)
    if len(fwd_idx) == 0 or len(bwd_idx) == 0:
        return
    # Candidates per sequence number, deepest first (then by time, then by index).
    cands = fwd_idx[np.lexsort((ops.ts[fwd_idx], -ops.depth[fwd_idx], ops.seq[fwd_idx]))]
    c_seq = ops.seq[cands]
    starts = np.concatenate(([True], c_seq[1:] != c_seq[:-1]))
    first = np.flatnonzero(starts)  # each group's first (deepest) candidate
    group = np.cumsum(starts) - 1
    g_seq = c_seq[first]
    b_seq = ops.seq[bwd_idx]
    gi = np.minimum(np.searchsorted(g_seq, b_seq), len(g_seq) - 1)
    found = g_seq[gi] == b_seq
    bwd_idx, gi = bwd_idx[found], gi[found]
    if len(bwd_idx) == 0:
        return
    # Canonical names, one string operation per distinct name id.
    canon_id: dict[str, int] = {}
    c_names, c_inv = np.unique(ops.name[cands], return_inverse=True)
    c_canon = np.asarray(
        [canon_id.setdefault(_canon(strings[n]), len(canon_id)) for n in c_names.tolist()], dtype=np.int64
    )[c_inv.reshape(-1)]
    b_names, b_inv = np.unique(ops.name[bwd_idx], return_inverse=True)
    want = np.asarray(
        [canon_id.get(_canon(_BWD_SUFFIX.sub("", strings[n].rsplit(": ", 1)[-1])), -1) for n in b_names.tolist()],
        dtype=np.int64,
    )[b_inv.reshape(-1)]
    # The first candidate of the group whose canonical name is the wanted one, else the first.
    width = len(canon_id) + 1
    keys, at = np.unique(group * width + c_canon, return_index=True)
    b_key = gi * width + want
    k = np.minimum(np.searchsorted(keys, b_key), len(keys) - 1)
    named = (keys[k] == b_key) & (want >= 0)
    match = np.where(named, cands[at[k]], cands[first[gi]])
    ops.fwd_op[bwd_idx] = match


def first_on_chain(parent: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Per node: `value` of the nearest node on its chain to the root (itself first) whose value is
    not NONE, else NONE. Pointer jumping: O(n log depth)."""
    res = value.astype(np.int64)
    nxt = np.where(res == NONE, parent, NONE).astype(np.int64)
    live = np.flatnonzero(nxt != NONE)
    while len(live):
        j = nxt[live]
        rj = res[j]
        res[live] = rj
        # Where j had no value, skip the stretch j already knows to be empty.
        nxt[live] = np.where(rj == NONE, nxt[j], NONE)
        live = live[nxt[live] != NONE]
    return res


def forward_ops(trace: Trace) -> np.ndarray:
    """`forward_op` of every op (int64, NONE for forward ops), cached."""
    ops = trace.ops
    return trace.memo.fresh(_forward_ops, trace, (ops.parent, ops.fwd_op))


def _forward_ops(trace: Trace) -> np.ndarray:
    return first_on_chain(trace.ops.parent, trace.ops.fwd_op)


def _forward_list(trace: Trace) -> list[int]:
    return forward_ops(trace).tolist()  # type: ignore[no-any-return]


def forward_op(trace: Trace, op: int) -> int:
    """The forward op a (possibly nested) backward op belongs to, or NONE."""
    if op < 0:
        return NONE
    ops = trace.ops
    return trace.memo.fresh(_forward_list, trace, (ops.parent, ops.fwd_op))[op]


def _sources(trace: Trace) -> None:
    """The innermost user frame for each op: python_function events first, else Call stack."""
    ops = trace.ops
    strings = trace.strings
    src_ids: dict[str, int] = {}

    def sid(text: str) -> int:
        got = src_ids.get(text)
        if got is None:
            got = len(strings)
            strings.append(text)
            src_ids[text] = got
        return got

    frames = _user_frames(trace, sid)
    if frames is not None:
        ops.source[:] = frames.source_at(ops.thread, ops.ts)
    need = (ops.source == NONE) & (ops.stack != NONE)
    if need.any():
        stack_src: dict[int, int] = {}
        for st in distinct(ops.stack[need]):
            src = NONE
            for frame in strings[st].split(";"):
                fr = parse_frame(frame)
                if fr is not None and is_user_frame(fr[0]):
                    src = sid(f"{fr[0]}:{fr[1]}")
                    break
            stack_src[st] = src
        idx = np.flatnonzero(need)
        ops.source[idx] = np.asarray([stack_src[s] for s in ops.stack[idx].tolist()], dtype=np.int32)


class _UserFrames:
    """The python_function events of user code (not torch, not the standard library), nested per
    thread, with the "file.py:LINE" string id of each."""

    def __init__(self, thread: np.ndarray, ts: np.ndarray, dur: np.ndarray, src: np.ndarray) -> None:
        self.thread, self.ts, self.dur, self.src = thread, ts, dur, src
        self.parent, _, self.order = nest(thread, ts, dur)

    def source_at(self, thread: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Per query: the innermost user frame running on that thread at that time (NONE: none)."""
        hit = enclosing(self.thread, self.ts, self.dur, self.parent, self.order, thread, ts)
        out = np.full(len(thread), NONE, dtype=np.int32)
        ok = hit != NONE
        out[ok] = self.src[hit[ok]]
        return out


def _user_frames(trace: Trace, sid: Callable[[str], int]) -> _UserFrames | None:
    py, strings = trace.pyfn, trace.strings
    if not len(py):
        return None
    user_sid: dict[int, int] = {}
    for name in distinct(py.name):
        fr = parse_frame(strings[name])
        if fr is not None and is_user_frame(fr[0]):
            user_sid[name] = sid(f"{fr[0]}:{fr[1]}")
    if not user_sid:
        return None
    keep = np.flatnonzero(isin_ids(py.name, np.fromiter(user_sid, dtype=np.int32)))
    src = np.asarray([user_sid[n] for n in py.name[keep].tolist()], dtype=np.int32)
    frames = _UserFrames(py.thread[keep], py.ts[keep], py.dur[keep], src)
    trace.memo.put(_user_frames, frames, ())
    return frames


def runtime_source(trace: Trace) -> np.ndarray:
    """Per runtime call: the string id of the user's "file.py:LINE" running it, from
    python_function events (NONE without them). For calls no CPU op with a source encloses:
    torch.cuda.synchronize() called in the step (only the ProfilerStep annotation around it), the
    allocator's cudaFree under torch.cuda.empty_cache()."""

    return trace.memo.fresh(_runtime_source, trace, (trace.runtime.ts,))


def _runtime_source(trace: Trace) -> np.ndarray:
    rt = trace.runtime
    frames = trace.memo.peek(_user_frames, ())
    if frames is None or not len(rt):
        return np.broadcast_to(np.int32(NONE), (len(rt),))  # read-only: no column of NONE to keep
    return frames.source_at(rt.thread, rt.ts)


def _steps(trace: Trace) -> list[Step]:
    ops = trace.ops
    step_names = {i: int(m.group(1)) for i, name in enumerate(trace.strings) if (m := _STEP_RE.match(name))}
    steps: list[Step] = []
    if not step_names:
        return steps
    # Old traces record ProfilerStep#N as an Operator, new ones as a user_annotation: match by name.
    idx = np.flatnonzero(isin_ids(ops.name, np.fromiter(step_names, dtype=np.int32)))
    seen: set[int] = set()
    for i in idx[np.argsort(ops.ts[idx], kind="stable")].tolist():
        num = step_names[int(ops.name[i])]
        if num in seen:  # one record per step (several threads may annotate it)
            continue
        seen.add(num)
        steps.append(Step(number=num, name=trace.strings[int(ops.name[i])], ts=float(ops.ts[i]), dur=float(ops.dur[i]), op=i))
    return steps


def _parents(trace: Trace) -> list[int]:
    """ops.parent as a Python list, kept while the array is the same object (walks are hot)."""
    return trace.memo.fresh(_parent_list, trace, (trace.ops.parent,))


def _parent_list(trace: Trace) -> list[int]:
    return trace.ops.parent.tolist()  # type: ignore[no-any-return]


def op_chain(trace: Trace, op: int) -> list[int]:
    """Ancestors of `op`, outermost first, ending with `op` itself."""
    chain: list[int] = []
    parent = _parents(trace)
    while op != NONE:
        chain.append(op)
        op = parent[op]
    chain.reverse()
    return chain


def is_step_marker(trace: Trace, op: int) -> bool:
    return trace.s(int(trace.ops.name[op])).startswith("ProfilerStep#")


def stack_member(trace: Trace) -> np.ndarray:
    """Per op: a cpu_op that is not a ProfilerStep marker (cached while the columns are the same)."""
    ops = trace.ops
    return trace.memo.fresh(_stack_member, trace, (ops.kind, ops.name, len(trace.strings)))


def _stack_member(trace: Trace) -> np.ndarray:
    ops = trace.ops
    marker = np.asarray([s.startswith("ProfilerStep#") for s in trace.strings], dtype=bool)
    return (ops.kind == OP_CPU) & ~marker[ops.name] if len(ops) else np.zeros(0, dtype=bool)


def _stack_links(trace: Trace) -> tuple[list[int], list[int]]:
    """Per op: the nearest stack member on its chain (itself first), and per member its nearest
    member ancestor, as lists (NONE where none): op_stack walks members only, once per launch site."""
    ops = trace.ops
    return trace.memo.fresh(_stack_link_lists, trace, (ops.parent, ops.kind, ops.name, len(trace.strings)))


def _stack_link_lists(trace: Trace) -> tuple[list[int], list[int]]:
    ops = trace.ops
    member = stack_member(trace)
    near = first_on_chain(ops.parent, np.where(member, np.arange(len(ops)), NONE))
    up = np.full(len(ops), NONE, dtype=np.int64)
    has = ops.parent != NONE
    up[has] = near[ops.parent[has]]
    return near.tolist(), up.tolist()


def op_stack(trace: Trace, op: int) -> list[int]:
    """The op stack HTA reports: the cpu_op ancestors (no user annotations, no ProfilerStep
    markers, which old traces record as operators), outermost first."""
    if op == NONE:
        return []
    near, up = _stack_links(trace)
    stack: list[int] = []
    o = near[op]
    while o != NONE:
        stack.append(o)
        o = up[o]
    stack.reverse()
    return stack


def top_ops(trace: Trace) -> np.ndarray:
    """Per op: `op_stack(trace, op)[0]`, the outermost stack member on its chain (NONE if none).
    int64, cached; index it with an op array to get many launches' top-level ops at once."""
    return trace.memo.fresh(_top_ops, trace, (trace.ops.parent, stack_member(trace)))


def _top_ops(trace: Trace) -> np.ndarray:
    ops = trace.ops
    best = np.where(stack_member(trace), np.arange(len(ops)), NONE).astype(np.int64)
    jp = ops.parent.astype(np.int64)
    live = np.flatnonzero(jp != NONE)
    while len(live):
        j = jp[live]
        bj = best[j]
        # best[i]: the outermost member from i up to (not including) jp[i].
        best[live] = np.where(bj != NONE, bj, best[live])
        jp[live] = jp[j]
        live = live[jp[live] != NONE]
    return best


def top_ops_of(trace: Trace, op: np.ndarray) -> np.ndarray:
    """`top_ops(trace)[op]` for an array of op indices (none NONE), without the whole-trace
    table: walks up the asked ops' chains only, one vectorized step per level (the summary asks
    for the launching ops of a few kernels, a small share of the ops)."""
    member = stack_member(trace)
    parent = trace.ops.parent
    op = np.asarray(op, dtype=np.int64)
    best = np.where(member[op], op, NONE).astype(np.int64)
    cur = parent[op].astype(np.int64)
    live = np.flatnonzero(cur != NONE)
    for _ in range(len(parent)):  # bounded: a parent cycle cannot hang the walk
        if len(live) == 0:
            break
        c = cur[live]
        up = member[c]
        best[live[up]] = c[up]  # later (outer) members overwrite inner ones
        nxt = parent[c]
        cur[live] = nxt
        live = live[nxt != NONE]
    return best
