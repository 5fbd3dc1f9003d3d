"""pyprof's kernel attribution, computed from a linked trace's tables (any format).

pyprof (`pyprof.parse`) gives every kernel the NVTX ranges open on its launching thread when the
launch ran, and reads from them: the Python call (`mod`, `op`) and its arguments, the user's call
`trace`, `layer` markers, the autograd sequence number (`seq`, `altseq`, `sub`) and the direction
(`dir`: "bprop" when an autograd node's range is open). Here the same fields come from the graph:
the ranges open at a launch are the ops on the chain of its runtime call's op. pyprof's markers are
ops with a `pycall`; emit_nvtx's `name, seq = N` ranges are ops with a sequence number (on a Kineto
trace: the aten ops with "Sequence number"); other annotations are pyprof's "other" markers.

Everything that depends only on the open ranges is computed once per distinct launching op. The
sequence-number fields follow pyprof's walk over the kernels in trace order (a kernel's seq
depends on the previous kernel's), one small step per kernel that has sequence numbers.

Where this differs from pyprof: pyprof moves extra sequence numbers into `altSeqId` while iterating
over the same list, which skips some (a kernel may keep two `seqId`s); here `seq` is the one pyprof
picks and `altseq` all the others. pyprof takes a range as open when it strictly encloses the whole
runtime call; the graph links a call to the innermost op open at its start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from perflint.graph.build import first_on_chain
from perflint.model import KERNEL, NONE, OP_ANNOTATION, Trace

FPROP, BPROP = "fprop", "bprop"
# pyprof's direction test: an open range named like an autograd node.
_BPROP_SUFFIXES = ("Backward", "backward", "Backward0")
_RNN_CELLS = ("LSTMCell", "GRUCell", "RNNCell")
# Frames pyprof drops from a call trace (PyTorch's and its own plumbing).
_TRACE_DROP = (
    "/torch/nn/modules/", "/torch/nn/functional.py", "/torch/tensor.py", "/torch/autograd/__init__.py",
    "/torch/_jit_internal.py", "/pyprof/nvtx/nvmarker.py", "/apex/optimizers/", "/torch/_utils.py", "/torch/optim/",
)  # fmt: skip


@dataclass(frozen=True)
class Site:
    """What every kernel launched under the same op shares."""

    mod: tuple[str, ...]
    op: tuple[str, ...]
    dir: str
    seq_ids: tuple[int, ...]  # sorted sequence numbers of the open emit_nvtx ranges
    layer: tuple[str, ...]
    trace: tuple[str, ...]  # "file.py:LINE", outermost first
    params: tuple[tuple[dict[str, Any], ...], ...]  # per pyprof call: its arguments
    marked: bool  # a pyprof argument marker is open (pyprof's prof then needs no forward lookup)


_NO_SITE = Site(("na",), (), FPROP, (), (), (), (), False)


@dataclass
class Attribution:
    """pyprof's fields for the kernels of a trace, in trace order."""

    kernels: np.ndarray  # GPU row of each kernel
    site: np.ndarray  # index into `sites`
    sites: list[Site]
    seq: np.ndarray  # int64, NONE: no sequence number
    sub: np.ndarray  # int64 pyprof's subSeqId
    tid: np.ndarray  # int64 launching thread id (NONE: unlinked)
    fprop: np.ndarray  # bprop kernels without a pyprof marker: position of the fprop kernel pyprof's prof takes the op from
    altseq: dict[int, tuple[int, ...]] = field(default_factory=dict)  # position -> other sequence numbers

    def __len__(self) -> int:
        return len(self.kernels)

    def record(self, i: int) -> dict[str, Any]:
        """Kernel `i`'s fields as pyprof names them."""
        s = self.sites[int(self.site[i])]
        seq = int(self.seq[i])
        return {
            "seq": [] if seq == NONE else [seq], "altseq": list(self.altseq.get(i, ())), "tid": int(self.tid[i]),
            "layer": list(s.layer), "trace": list(s.trace), "dir": s.dir, "sub": int(self.sub[i]),
            "mod": list(s.mod), "op": list(s.op), "params": [list(p) for p in s.params],
        }  # fmt: skip

    def shown(self, i: int) -> tuple[str, str]:
        """(mod, op) as pyprof's prof table shows kernel `i`: a bprop kernel without its own marker
        takes the op of the fprop kernel with its sequence number."""
        j = int(self.fprop[i])
        s = self.sites[int(self.site[j if j != NONE else i])]
        return (s.mod[0] if s.mod else "", s.op[0] if s.op else "")

    def marked_site(self, i: int) -> bool:
        """Whether the site `shown` takes kernel `i`'s op from has a pyprof argument marker."""
        j = int(self.fprop[i])
        return self.sites[int(self.site[j if j != NONE else i])].marked


def attribute(trace: Trace) -> Attribution:
    """pyprof's attribution of every kernel of a linked trace."""
    g, rt = trace.gpu, trace.runtime
    kernels = np.flatnonzero(g.kind == KERNEL)
    launch = g.launch[kernels]
    linked = launch != NONE
    op = np.full(len(kernels), NONE, dtype=np.int64)
    op[linked] = rt.op[launch[linked]]
    tid = np.full(len(kernels), NONE, dtype=np.int64)
    thread_ids = np.asarray([_int(t) for _, t in trace.threads] or [NONE], dtype=np.int64)
    tid[linked] = thread_ids[rt.thread[launch[linked]]]
    uniq, inv = np.unique(op, return_inverse=True)
    o = trace.ops
    walk = _Walk(trace, _OpCols(o.parent, o.name, o.stack, o.pycall, o.seq, o.kind))
    # A launching op's site is that of its nearest ancestor-or-self that adds to the chain's state:
    # most launch sites share one, and each is walked once.
    near = _nearest_marking(trace)
    linked_ops = uniq[uniq != NONE]
    marks, back = np.unique(near[linked_ops], return_inverse=True)
    by_mark = [walk.site(int(m)) if m != NONE else walk.site_of(_ROOT) for m in marks.tolist()]
    sites = ([_NO_SITE] if len(linked_ops) < len(uniq) else []) + [by_mark[k] for k in back.reshape(-1).tolist()]
    site = inv.reshape(-1)
    seq, sub, fprop, altseq = _sequence(sites, site)
    return Attribution(kernels, site, sites, seq, sub, tid, fprop, altseq)


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return NONE


class _OpCols(NamedTuple):
    parent: np.ndarray
    name: np.ndarray
    stack: np.ndarray
    pycall: np.ndarray
    seq: np.ndarray
    kind: np.ndarray


# What the ops on a chain, outermost first, tell pyprof: its calls (module, function, op), its
# sequence-number marks (name, seq), its layer and other annotations, and the innermost stack.
_State = tuple[tuple[tuple[str, str, int], ...], tuple[tuple[str, int], ...], tuple[str, ...], tuple[str, ...], int]
_ROOT: _State = ((), (), (), (), NONE)


class _Walk:
    """The state of every op's chain, each op folded once onto its parent's state (a trace's
    launch sites share most of their ancestors), and one Site per distinct state."""

    def __init__(self, t: Trace, ops: _OpCols) -> None:
        self.t, self.ops = t, ops
        self.states: dict[int, _State] = {}
        self.sites: dict[_State, Site] = {}

    def state(self, op: int) -> _State:
        states, parent = self.states, self.ops.parent
        path: list[int] = []
        while op != NONE and op not in states:
            path.append(op)
            op = int(parent[op])
        st = states[op] if op != NONE else _ROOT
        ops, t = self.ops, self.t
        for o in reversed(path):
            name = t.s(int(ops.name[o]))
            if "CheckpointFunctionBackward" not in name:
                calls, marks, layers, others, stack = st
                if ops.stack[o] != NONE:
                    stack = int(ops.stack[o])  # the innermost one wins, as pyprof keeps the last trace marker
                if ops.pycall[o] != NONE:
                    module, _, fn = t.s(int(ops.pycall[o])).rpartition(".")
                    calls = (*calls, (module, fn, o))
                elif ops.seq[o] != NONE:
                    marks = (*marks, (name, int(ops.seq[o])))
                elif ops.kind[o] == OP_ANNOTATION:
                    if name.startswith("layer:"):
                        layers = (*layers, name)
                    else:
                        others = (*others, name)
                st = (calls, marks, layers, others, stack)
            states[o] = st
        return st

    def site(self, op: int) -> Site:
        return self.site_of(self.state(op))

    def site_of(self, st: _State) -> Site:
        got = self.sites.get(st)
        if got is None:
            got = self.sites[st] = _site(self.t, st)
        return got


def _nearest_marking(t: Trace) -> np.ndarray:
    """Per op: the nearest op on its chain (itself first) that adds to the chain's state in
    `_Walk.state` (a stack, a pyprof call, a sequence number, an annotation), NONE when none does."""
    o = t.ops
    skip = [i for i, s in enumerate(t.strings) if "CheckpointFunctionBackward" in s]
    marking = (o.stack != NONE) | (o.pycall != NONE) | (o.seq != NONE) | (o.kind == OP_ANNOTATION)
    if skip:
        marking &= ~np.isin(o.name, skip)
    return first_on_chain(o.parent, np.where(marking, np.arange(len(o)), NONE))


def _site(t: Trace, st: _State) -> Site:
    calls, seq_marks, layers, others, stack = st
    marks = _prune(sorted(set(seq_marks), key=lambda m: f"{m[1]}{m[0]}, seq"))
    direction = BPROP if any(n.endswith(_BPROP_SUFFIXES) for n, _ in marks) else FPROP
    ids = sorted({s for _, s in marks})
    if 0 in ids and any(s != 0 for s in ids):
        ids.remove(0)
    if calls:
        mod, opn = tuple(c[0] for c in calls), tuple(c[1] for c in calls)
    else:
        names = [_sanitize(n) for n, _ in marks if n.endswith(("backward", "Backward"))]
        if not names:
            names = [n for n, _ in marks]
        if not names:
            # The outermost annotation, as pyprof takes it; a profiler's step marker wraps every
            # kernel of the step and names none of them.
            names = [n for n in others if not n.startswith("ProfilerStep#")][:1]
        mod, opn = ("na",) * max(len(names), 1), tuple(names)
    return Site(
        mod=mod,
        op=opn,
        dir=direction,
        seq_ids=tuple(ids),
        layer=tuple(x.split(":")[1] for x in layers),
        trace=_trace(t.s(stack)) if stack != NONE else (),
        params=tuple(_params(t, o) for _, _, o in calls),
        marked=bool(calls),
    )


def _prune(marks: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """pyprof's pruning: drop a range with the same sequence number as the one before it when one
    name contains the other (aten::dropout and _fused_dropout stay; add and add_ do not)."""
    out = marks[:1]
    for prev, cur in zip(marks, marks[1:]):
        if cur[1] == prev[1] and (cur[0] in prev[0] or prev[0] in cur[0]):
            continue
        out.append(cur)
    return out


def _sanitize(name: str) -> str:
    for junk in ("torch", "autograd", "_backward", "::", "jit", "(anonymous namespace)"):
        name = name.replace(junk, "")
    return name.partition("Backward")[0]


def _trace(stack: str) -> tuple[str, ...]:
    """A Kineto call stack (innermost first, "file.py(LINE): func") as pyprof's trace: outermost
    first "file.py:LINE", PyTorch's and pyprof's frames dropped."""
    out = []
    for frame in reversed(stack.split(";")):
        path, _, rest = frame.strip().partition("(")
        line = rest.split(")", 1)[0]
        text = f"{path}:{line}" if line.isdigit() else frame.strip()
        if text and not any(d in text for d in _TRACE_DROP):
            out.append(text)
    return tuple(out)


def _params(t: Trace, o: int) -> tuple[dict[str, Any], ...]:
    """An op's arguments as pyprof lists them: tensors by shape and dtype, others by value."""
    dims, types, conc = t.decoded(int(t.ops.dims[o])), t.decoded(int(t.ops.types[o])), t.decoded(int(t.ops.concrete[o]))
    if not isinstance(dims, list):
        return ()
    types = types if isinstance(types, list) else []
    conc = conc if isinstance(conc, list) else []
    out = []
    for i, d in enumerate(dims):
        ty = types[i] if i < len(types) else ""
        if isinstance(d, list) and d:
            out.append({"type": "tensor", "shape": tuple(d), "dtype": ty})
        else:
            out.append({"type": ty or "NoneType", "value": conc[i] if i < len(conc) else None})
    return tuple(out)


def _sequence(sites: list[Site], site: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, tuple[int, ...]]]:
    """pyprof's walk over the kernels: a forward kernel takes the first of its sequence numbers
    above the previous kernel's (else that one), a backward kernel its first; `sub` counts kernels
    of the same op under one sequence number. Also, per bprop kernel without a pyprof marker, the
    last fprop kernel before it with its sequence number (seq, else an alternative one)."""
    n = len(site)
    seq = np.full(n, NONE, dtype=np.int64)
    sub = np.zeros(n, dtype=np.int64)
    fprop = np.full(n, NONE, dtype=np.int64)
    altseq: dict[int, tuple[int, ...]] = {}
    has = np.asarray([bool(s.seq_ids) for s in sites], dtype=bool)
    prev_seq, prev_sub, prev_op = -1, -1, None
    last_fwd: dict[int, int] = {}
    last_alt: dict[int, int] = {}
    for i in np.flatnonzero(has[site]).tolist():
        s = sites[int(site[i])]
        ids = s.seq_ids
        if s.dir == FPROP:
            cur = next(x for x in ids if x > prev_seq) if ids[-1] > prev_seq else prev_seq
        else:
            cur = ids[0]
        if (cur == prev_seq and s.op == prev_op) or (s.op[:1] == ("forward",) and s.op == prev_op and s.mod[:1] and s.mod[0] in _RNN_CELLS):
            sub[i] = prev_sub + 1
        prev_seq, prev_sub, prev_op = cur, int(sub[i]), s.op
        if cur in ids:  # a forward kernel whose numbers are all below the previous one keeps none
            seq[i] = cur
        alt = tuple(x for x in ids if x != cur)
        if alt:
            altseq[i] = alt
        if s.dir == FPROP:
            last_fwd[cur] = i
            for a in alt:
                last_alt[a] = i
        elif not s.marked:
            fprop[i] = last_fwd.get(cur, last_alt.get(cur, NONE))
    return seq, sub, fprop, altseq


__all__ = ["BPROP", "FPROP", "Attribution", "Site", "attribute"]
