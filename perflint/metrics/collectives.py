"""Collectives as a trace recorded them: what each one was (its type, process group, size) and how
long its kernels ran, one `Collective` per collective call.

A call is known from a collective record (the model's comms table: PyTorch's record_param_comms
op, and from PyTorch 2.4 the collective's kernel itself), from the kernels it ran, or both:
- a kernel takes the record on itself (linked by correlation id), else the record of its launching
  op (the op with the kernel's External id, else the nearest enclosing op that has one);
- a record no kernel took is a call without GPU time (a group of one rank runs no kernel; gloo
  runs on the host; its kernels may lie outside the profiled window);
- a communication kernel no record describes is a call of its own, known by the collective name a
  reader set on it (gpu.collective), its launching collective op's name (c10d::allreduce_,
  nccl:all_reduce, an NVTX ncclAllReduce range) or its own name (ncclDevKernel_AllReduce_Sum_f32_RING_LL).

Sizes follow the nccl-tests convention (doc/PERFORMANCE.md of NVIDIA/nccl-tests): the bytes of an
all-reduce, broadcast or reduce are its buffer; of an all-gather its output; of a reduce-scatter
its input; of an all-to-all the whole input a rank sends; of a send or receive its message. They
come only from recorded element counts and a recorded element type: never from a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflint.memo import once
from perflint.metrics.dtypes import dtype_size, scalar_dtype
from perflint.metrics.kernel_classes import CAT_INDEX, classify
from perflint.metrics.steps import launch_ts
from perflint.model import COMM_GPU, COMM_OP, KERNEL, NONE, Trace

# Collective (recorded name, op name or kernel name) -> its kind; all-to-all first: NCCL runs it as
# SendRecv kernels, which only the recorded collective name tells from pipeline send/recv.
_KINDS = (
    ("all_to_all", ("alltoall", "deepep", "dispatch", "combine", "nvshmem")),
    ("all_reduce", ("allreduce",)),
    ("reduce_scatter", ("reducescatter",)),
    ("all_gather", ("allgather",)),
    ("send_recv", ("sendrecv", "send", "recv", "receive")),
    ("broadcast", ("broadcast", "bcast")),
)
# Types the communication rules do not tell apart, in the order they are tried after _KINDS.
_MORE = (("barrier", ("barrier",)), ("reduce", ("reduce",)), ("gather", ("gather",)), ("scatter", ("scatter",)))


def _norm(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "").replace(" ", "")


def collective_kind(name: str) -> str | None:
    """all_to_all | all_reduce | reduce_scatter | all_gather | send_recv | broadcast, from a
    collective or kernel name in any spelling (all_reduce, AllReduce, all-reduce, allreduce)."""
    low = _norm(name)
    for kind, words in _KINDS:
        if any(w in low for w in words):
            return kind
    return None


def collective_type(name: str) -> str | None:
    """The collective a name says, finer than collective_kind: send and recv apart (send_recv
    where a name says both, NCCL's SendRecv kernels), and barrier, reduce, gather, scatter."""
    kind = collective_kind(name)
    low = _norm(name)
    if kind == "send_recv" and "sendrecv" not in low:
        return "recv" if "recv" in low else "send"
    if kind is not None:
        return kind
    for kind, words in _MORE:
        if any(w in low for w in words):
            return kind
    return None


# Bus bandwidth = algorithm bandwidth x this factor of the group size n (nccl-tests'
# doc/PERFORMANCE.md): the data each rank's link carries for the collective, over the data size.
BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send": lambda n: 1.0,
    "recv": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
_NEEDS_N = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all"})


def bus_factor(kind: str | None, n: int | None) -> float | None:
    """nccl-tests' bus bandwidth factor of a collective over n ranks; None when the type has none
    (gather, scatter, barrier, unknown) or it needs n and n is unknown."""
    fn = BUS_FACTORS.get(kind or "")
    if fn is None or (kind in _NEEDS_N and not n):
        return None
    return fn(n or 1)


def message_bytes(kind: str | None, in_nelems: int | None, out_nelems: int | None, n: int | None, elem: int | None) -> int | None:
    """A collective's size in bytes as nccl-tests counts it; None when the record does not give it."""
    if elem is None or kind is None:
        return None
    if kind in ("all_reduce", "broadcast", "reduce", "all_to_all", "send"):
        count = in_nelems if in_nelems is not None else out_nelems
    elif kind == "recv":
        count = out_nelems if out_nelems is not None else in_nelems
    elif kind == "all_gather":  # the output: every rank's part
        count = out_nelems if out_nelems is not None else (in_nelems * n if in_nelems is not None and n else None)
    elif kind == "reduce_scatter":  # the input: every rank's part
        count = in_nelems if in_nelems is not None else (out_nelems * n if out_nelems is not None and n else None)
    else:
        return None
    return None if count is None else count * elem


def gbps(nbytes: float, us: float) -> float | None:
    """nccl-tests' GB/s (10^9 bytes per second) of `nbytes` moved in `us` microseconds."""
    return nbytes / us / 1e3 if us > 0 else None


# ------------------------------------------------------------------ NCCL / RCCL kernel names


@dataclass(frozen=True)
class NcclKernel:
    """What a NCCL (RCCL, MSCCL) kernel's name says: ncclDevKernel_AllReduce_Sum_f32_RING_LL (NCCL
    2.12 and later), ncclKernel_AllReduce_RING_LL_Sum_float (earlier). The element type is the one
    a reduction computes in; copies (all-gather, broadcast, send/recv) name a byte type or none."""

    collective: str | None  # collective_type of the name's collective; None for Generic kernels
    dtype: str | None
    algorithm: str | None  # RING, TREE, NVLS, NVLS_TREE, COLLNET_DIRECT, COLLNET_CHAIN, PAT
    protocol: str | None  # LL, LL128, SIMPLE


_NCCL_FN = re.compile(r"^(?:void\s+)?(?P<prefix>ncclDevKernel|ncclKernel|mscclKernel)_(?P<coll>[A-Za-z]+)(?P<rest>[\w]*)")
_ALGO_PROTO = re.compile(r"_(RING|TREE|NVLS_TREE|NVLS|COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|PAT)_(LL128|LL|SIMPLE)(?=_|$)")
_NCCL_DTYPES = {
    "i8": "int8", "u8": "uint8", "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64", "f16": "fp16",
    "f32": "fp32", "f64": "fp64", "bf16": "bf16", "f8e4m3": "fp8", "f8e5m2": "fp8", "int8_t": "int8", "uint8_t": "uint8",
    "int32_t": "int32", "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64", "half": "fp16", "float": "fp32",
    "double": "fp64", "__nv_bfloat16": "bf16", "rccl_bfloat16": "bf16", "hip_bfloat16": "bf16",
}  # fmt: skip
_DTYPE_TOKEN = re.compile(r"_(" + "|".join(sorted(map(re.escape, _NCCL_DTYPES), key=len, reverse=True)) + r")(?=_|$)")


def nccl_kernel(name: str) -> NcclKernel | None:
    """The parts of a NCCL-family kernel name; None for any other kernel."""
    m = _NCCL_FN.match(name)
    if m is None:
        return None
    fn = m.group(0)
    coll = m.group("coll")
    ap = _ALGO_PROTO.search(fn)
    dt = _DTYPE_TOKEN.search(fn[m.end("coll") :])
    return NcclKernel(
        collective=None if coll == "Generic" else collective_type(coll),
        dtype=_NCCL_DTYPES[dt.group(1)] if dt else None,
        algorithm=ap.group(1) if ap else None,
        protocol=ap.group(2) if ap else None,
    )


# ------------------------------------------------------------------ the calls


@dataclass
class Collective:
    """One collective call: its record's values where it had one (None: not recorded), its
    kernels (GPU rows, in time order) and their summed time."""

    kind: str | None  # collective_type
    recorded: str | None  # the name the record gives ("allreduce", "_allgather_base")
    process_group: str | None  # the group's name, else description, else rank list, as recorded
    pg_desc: str | None
    group_size: int | None
    seq: int | None
    dtype: str | None  # short name (dtypes.SCALAR_TYPES), else what a reduction kernel's name says
    nbytes: int | None
    cpu_ts: float  # when the host issued it: its record op's start, else its first kernel's launch
    kernels: list[int] = field(default_factory=list)
    time_us: float | None = None  # its kernels' summed duration (None: no kernel)
    algorithm: str | None = None
    protocol: str | None = None
    kernel_name: str | None = None  # its first kernel's function name

    @property
    def name(self) -> str:
        """The row name: the type, else what was recorded, else the kernel's name."""
        return self.kind or self.recorded or self.kernel_name or "unknown"

    @property
    def p2p(self) -> bool:
        return self.kind in ("send", "recv", "send_recv")


# Recorded names that are no collective: work.wait() is recorded with the collectives' key.
NOT_COLLECTIVES = frozenset({"wait"})
_COLLECTIVE_OP = re.compile(r"^(?:c10d::|c10d_functional::|_c10d_functional::|nccl:|gloo:|mpi:|ucc:|nccl[A-Z])")
_RANKS = re.compile(r"^\[\s*\d+(?:\s*,\s*\d+)*\s*\]$")


def _ranks_in(text: str | None) -> int | None:
    """The number of ranks a complete recorded rank list names ("[0, 1, 2, 3]"; truncated lists
    end in "..." and say nothing)."""
    if text is None or not _RANKS.match(text.strip()):
        return None
    return text.count(",") + 1


def _count(x: int) -> int | None:
    return None if x == NONE else int(x)


class _Records:
    """The comms table read once: per row its values; lookups by correlation and External id."""

    def __init__(self, t: Trace) -> None:
        c = t.comms
        self.t = t
        self.n = len(c)
        side = c.side.tolist()
        self.by_corr = {k: i for i, (s, k) in enumerate(zip(side, c.correlation.tolist())) if s == COMM_GPU and k != NONE}
        self.by_ext: dict[int, int] = {}
        for i, (s, k) in enumerate(zip(side, c.ext_id.tolist())):
            if s == COMM_OP and k != NONE:
                self.by_ext.setdefault(k, i)
        self.gpu_ext = {k for s, k in zip(side, c.ext_id.tolist()) if s == COMM_GPU and k != NONE}
        self.side = side

    def text(self, col: np.ndarray, i: int) -> str | None:
        sid = int(col[i])
        return self.t.s(sid) if sid != NONE else None

    def values(self, i: int) -> dict[str, Any]:
        c, t = self.t.comms, self.t
        recorded = self.text(c.name, i)
        pg_name, pg_desc, pg_ranks = self.text(c.pg_name, i), self.text(c.pg_desc, i), self.text(c.pg_ranks, i)
        n = _count(int(c.group_size[i])) or _ranks_in(pg_ranks)
        if n is None and pg_desc == "default_pg" and t.world_size:
            n = t.world_size  # the default group is every rank of the job
        kind = collective_type(recorded) if recorded else None
        dtype = scalar_dtype(self.text(c.dtype, i))
        size = message_bytes(kind, _count(int(c.in_nelems[i])), _count(int(c.out_nelems[i])), n, dtype_size(dtype))
        return {
            "kind": kind, "recorded": recorded, "process_group": pg_name or pg_desc or pg_ranks, "pg_desc": pg_desc,
            "group_size": n, "seq": _count(int(c.seq[i])), "dtype": dtype, "nbytes": size,
        }  # fmt: skip


def _function(name: str) -> str:
    """A kernel's function name: no return type, template or parameter list."""
    base = name[5:] if name.startswith("void ") else name
    return re.split(r"[<(]", base, maxsplit=1)[0]


def _launching_record(t: Trace, rec: _Records, row: int) -> int:
    """The op-side record of a kernel: its External id's, else its launching op's or the nearest
    enclosing op's that has one (NONE: none)."""
    got = rec.by_ext.get(int(t.gpu.ext_id[row]), NONE)
    if got != NONE:
        return got
    launch = int(t.gpu.launch[row])
    op = int(t.runtime.op[launch]) if launch != NONE else NONE
    ops = t.ops
    while op != NONE:
        got = rec.by_ext.get(int(ops.ext_id[op]), NONE)
        if got != NONE:
            return got
        op = int(ops.parent[op])
    return NONE


def _op_kind(t: Trace, row: int) -> str | None:
    """The collective its launching collective op names (c10d::allreduce_, nccl:all_reduce, an
    NVTX ncclAllReduce range), innermost first."""
    launch = int(t.gpu.launch[row])
    op = int(t.runtime.op[launch]) if launch != NONE else NONE
    while op != NONE:
        name = t.s(int(t.ops.name[op]))
        if _COLLECTIVE_OP.match(name):
            kind = collective_type(name)
            if kind:
                return kind
        op = int(t.ops.parent[op])
    return None


@once
def collectives(t: Trace) -> list[Collective]:
    """The trace's collective calls, in the order the host issued them (a call with kernels: its
    first kernel's launch; one without: its record op's start)."""
    g = t.gpu
    rec = _Records(t)
    comm = np.flatnonzero((g.kind == KERNEL) & (classify(t).category == CAT_INDEX["communication"])) if len(g) else np.zeros(0, np.int64)
    if not len(comm) and not rec.n:
        return []
    comm = comm[np.argsort(g.ts[comm], kind="stable")]
    launched = launch_ts(t)
    calls: dict[tuple[str, int], Collective] = {}
    taken: set[int] = set()  # op-side records a kernel took
    for row in comm.tolist():
        own = rec.by_corr.get(int(g.correlation[row]), NONE)
        by_op = _launching_record(t, rec, row)
        if by_op != NONE:
            taken.add(by_op)
        r = own if own != NONE else by_op
        ext = int(g.ext_id[row])
        key = ("ext", ext) if r != NONE and ext != NONE else ("rec", r) if r != NONE else ("kernel", row)
        call = calls.get(key)
        if call is None:
            call = calls[key] = _call(rec.values(r) if r != NONE else {}, float(launched[row]))
        _add_kernel(t, call, row)
    ops = _record_ops(t, rec)
    for r in range(rec.n):
        if rec.side[r] != COMM_OP or r in taken or int(t.comms.ext_id[r]) in rec.gpu_ext:
            continue
        vals = rec.values(r)
        if vals["recorded"] in NOT_COLLECTIVES:
            continue
        op = ops.get(r, NONE)
        calls[("rec", r)] = _call(vals, float(t.ops.ts[op]) if op != NONE else float("nan"))
    return sorted(calls.values(), key=lambda c: c.cpu_ts)


def _call(vals: dict[str, Any], cpu_ts: float) -> Collective:
    return Collective(
        kind=vals.get("kind"), recorded=vals.get("recorded"), process_group=vals.get("process_group"),
        pg_desc=vals.get("pg_desc"), group_size=vals.get("group_size"), seq=vals.get("seq"), dtype=vals.get("dtype"),
        nbytes=vals.get("nbytes"), cpu_ts=cpu_ts,
    )  # fmt: skip


def _add_kernel(t: Trace, call: Collective, row: int) -> None:
    g = t.gpu
    fn = _function(t.s(int(g.name[row])))
    call.kernels.append(row)
    call.time_us = (call.time_us or 0.0) + float(g.dur[row])
    nk = nccl_kernel(fn)
    if call.kernel_name is None:
        call.kernel_name = fn
    if call.recorded is None and int(g.collective[row]) != NONE:  # a name a reader set on the kernel alone
        call.recorded = t.s(int(g.collective[row]))
        call.kind = call.kind or collective_type(call.recorded)
    if call.kind is None:  # no record: its launching collective op, else its own name
        call.kind = _op_kind(t, row) or (nk.collective if nk else None)
    if nk is not None:
        call.algorithm = call.algorithm or nk.algorithm
        call.protocol = call.protocol or nk.protocol
        if call.dtype is None and nk.collective in ("all_reduce", "reduce_scatter", "reduce"):
            call.dtype = nk.dtype


def _record_ops(t: Trace, rec: _Records) -> dict[int, int]:
    """Op-side record -> its op's row (the first op with its External id), for the records no
    kernel took: one pass over the op column in numpy."""
    exts = np.asarray([int(t.comms.ext_id[r]) for r in range(rec.n) if rec.side[r] == COMM_OP], dtype=np.int64)
    if not len(exts) or not len(t.ops):
        return {}
    rows = np.flatnonzero(np.isin(t.ops.ext_id, exts))
    first: dict[int, int] = {}
    for row, k in zip(rows.tolist(), t.ops.ext_id[rows].tolist()):
        first.setdefault(k, row)
    return {r: first.get(int(t.comms.ext_id[r]), NONE) for r in range(rec.n) if rec.side[r] == COMM_OP}


@once
def kernel_calls(t: Trace) -> dict[int, int]:
    """GPU row -> index in `collectives(t)` of the call it ran."""
    return {row: i for i, c in enumerate(collectives(t)) for row in c.kernels}


__all__ = [
    "BUS_FACTORS", "Collective", "NcclKernel", "bus_factor", "collective_kind", "collective_type", "collectives",
    "gbps", "kernel_calls", "message_bytes", "nccl_kernel",
]  # fmt: skip
