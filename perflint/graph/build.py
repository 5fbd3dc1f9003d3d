"""Link a freshly read trace into the kernel/operator graph (DESIGN §4).

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

import numpy as np

from perflint.graph.intervals import enclosing, nest
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
    rt.op = enclosing(ops.thread, ops.ts, ops.dur, parent, order, rt.thread, rt.ts)
    gpu.launch = _by_correlation(rt.correlation, gpu.correlation)
    _link_counter_ranges(trace)
    _link_forward(trace)
    _sources(trace)
    trace.steps = _steps(trace)
    return trace


def _by_correlation(rt_corr: np.ndarray, gpu_corr: np.ndarray) -> np.ndarray:
    out = np.full(len(gpu_corr), NONE, dtype=np.int32)
    if len(rt_corr) == 0 or len(gpu_corr) == 0:
        return out
    order = np.argsort(rt_corr, kind="stable")
    sorted_corr = rt_corr[order]
    pos = np.searchsorted(sorted_corr, gpu_corr)
    pos_c = np.minimum(pos, len(sorted_corr) - 1)
    hit = (sorted_corr[pos_c] == gpu_corr) & (gpu_corr != NONE)
    out[hit] = order[pos_c[hit]]
    return out


def _link_counter_ranges(trace: Trace) -> None:
    """CUPTI profiler-mode ranges carry no correlation id: pair them with kernel launches by
    order (both sorted by time), as HTA does. A count mismatch leaves them unlinked, with a warning."""
    ranges = trace.counter_ranges
    if not ranges:
        return
    rt = trace.runtime
    launch_ids = [i for i, s in enumerate(trace.strings) if s.startswith("cudaLaunchKernel")]
    idx = np.flatnonzero(np.isin(rt.name, np.asarray(launch_ids, dtype=np.int32)))
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
    if len(fwd_idx) == 0:
        return
    by_seq: dict[int, list[int]] = {}
    for i in fwd_idx[np.lexsort((ops.ts[fwd_idx], -ops.depth[fwd_idx]))].tolist():
        by_seq.setdefault(int(ops.seq[i]), []).append(i)  # deepest first
    for i in np.flatnonzero(is_bwd).tolist():
        cands = by_seq.get(int(ops.seq[i]))
        if not cands:
            continue
        bname = strings[int(ops.name[i])].rsplit(": ", 1)[-1]
        want = _canon(_BWD_SUFFIX.sub("", bname))
        match = next((c for c in cands if _canon(strings[int(ops.name[c])]) == want), cands[0])
        ops.fwd_op[i] = match


def forward_op(trace: Trace, op: int) -> int:
    """The forward op a (possibly nested) backward op belongs to, or NONE."""
    ops = trace.ops
    while op != NONE:
        f = int(ops.fwd_op[op])
        if f != NONE:
            return f
        op = int(ops.parent[op])
    return NONE


def _sources(trace: Trace) -> None:
    """The innermost user frame for each op: python_function events first, else Call stack."""
    ops, py = trace.ops, trace.pyfn
    strings = trace.strings
    src_ids: dict[str, int] = {}

    def sid(text: str) -> int:
        got = src_ids.get(text)
        if got is None:
            got = len(strings)
            strings.append(text)
            src_ids[text] = got
        return got

    if len(py):
        user_sid: dict[int, int] = {}
        for name in np.unique(py.name).tolist():
            fr = parse_frame(strings[name])
            if fr is not None and is_user_frame(fr[0]):
                user_sid[name] = sid(f"{fr[0]}:{fr[1]}")
        if user_sid:
            keep = np.flatnonzero(np.isin(py.name, np.fromiter(user_sid, dtype=np.int32)))
            thr, ts, dur = py.thread[keep], py.ts[keep], py.dur[keep]
            par, _, order = nest(thr, ts, dur)
            hit = enclosing(thr, ts, dur, par, order, ops.thread, ops.ts)
            ok = hit != NONE
            names = py.name[keep][hit[ok]].tolist()
            ops.source[np.flatnonzero(ok)] = np.asarray([user_sid[n] for n in names], dtype=np.int32)
    need = (ops.source == NONE) & (ops.stack != NONE)
    if need.any():
        stack_src: dict[int, int] = {}
        for st in np.unique(ops.stack[need]).tolist():
            src = NONE
            for frame in strings[st].split(";"):
                fr = parse_frame(frame)
                if fr is not None and is_user_frame(fr[0]):
                    src = sid(f"{fr[0]}:{fr[1]}")
                    break
            stack_src[st] = src
        idx = np.flatnonzero(need)
        ops.source[idx] = np.asarray([stack_src[s] for s in ops.stack[idx].tolist()], dtype=np.int32)


def _steps(trace: Trace) -> list[Step]:
    ops = trace.ops
    step_names = {i: int(m.group(1)) for i, name in enumerate(trace.strings) if (m := _STEP_RE.match(name))}
    steps: list[Step] = []
    if not step_names:
        return steps
    # Old traces record ProfilerStep#N as an Operator, new ones as a user_annotation: match by name.
    idx = np.flatnonzero(np.isin(ops.name, np.fromiter(step_names, dtype=np.int32)))
    seen: set[int] = set()
    for i in idx[np.argsort(ops.ts[idx], kind="stable")].tolist():
        num = step_names[int(ops.name[i])]
        if num in seen:  # one record per step (several threads may annotate it)
            continue
        seen.add(num)
        steps.append(Step(number=num, name=trace.strings[int(ops.name[i])], ts=float(ops.ts[i]), dur=float(ops.dur[i]), op=i))
    return steps


def _parents(trace: Trace) -> list[int]:
    """ops.parent as a Python list, cached while the array is the same object (walks are hot)."""
    parent = trace.ops.parent
    got = trace.cache.get("_graph_parents")
    if got is None or got[0] is not parent:
        got = (parent, parent.tolist())
        trace.cache["_graph_parents"] = got
    return got[1]  # type: ignore[no-any-return]


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


def _stack_member(trace: Trace) -> list[bool]:
    """Per op: a cpu_op that is not a ProfilerStep marker (cached like `_parents`)."""
    ops = trace.ops
    got = trace.cache.get("_graph_stack_member")
    if got is None or got[0] is not ops.kind or got[1] is not ops.name or got[2] != len(trace.strings):
        marker = np.asarray([s.startswith("ProfilerStep#") for s in trace.strings], dtype=bool)
        member = (ops.kind == OP_CPU) & ~marker[ops.name] if len(ops) else np.zeros(0, dtype=bool)
        got = (ops.kind, ops.name, len(trace.strings), member.tolist())
        trace.cache["_graph_stack_member"] = got
    return got[3]  # type: ignore[no-any-return]


def op_stack(trace: Trace, op: int) -> list[int]:
    """The op stack HTA reports: the cpu_op ancestors (no user annotations, no ProfilerStep
    markers, which old traces record as operators), outermost first."""
    member = _stack_member(trace)
    return [o for o in op_chain(trace, op) if member[o]]
