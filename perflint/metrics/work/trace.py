"""FLOPs and bytes per op call and per GPU row of a trace (the models: metrics.work.models).

`op_work` runs a model once per distinct (op name, Input Dims, Input type, Concrete Inputs).
`kernel_work` gives each kernel the work of the op it ran for: the innermost op on its launching
op's chain that has a model; for a backward kernel whose chain has none (pyprof's nvprof ranges
carry no shapes), the gradient of its forward op (the same autograd sequence number). Within one
op call, each matrix kernel (GEMM, convolution, attention) gets one product's worth, the op's
first other kernel gets the rest (a linear's bias addition; a whole elementwise or normalization
op) and later kernels of the call get 0: summed over kernels, an op call counts once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.ids import unique_inverse
from perflint.metrics.kernel_classes import CAT_INDEX, classify
from perflint.metrics.work.models import OTHER, UNKNOWN, Work, model
from perflint.model import GPU_SYNC, KERNEL, NONE, Trace

_MATRIX = np.asarray([CAT_INDEX["gemm"], CAT_INDEX["conv"], CAT_INDEX["attention"]])


def _op_models(t: Trace) -> tuple[np.ndarray, list[Work]]:
    """Per op: an index into the list of distinct Works (one model call per distinct key), kept
    while the op table's columns are the same arrays."""
    o = t.ops
    return t.memo.fresh(_compute_op_models, t, (o.name, o.dims, o.types, o.concrete))


def _compute_op_models(t: Trace) -> tuple[np.ndarray, list[Work]]:
    o = t.ops
    if not len(o):
        return np.zeros(0, np.int64), []
    # Distinct (name, dims, types, concrete) through pairs of string ids packed into int64s and
    # ranked: a 4-column np.unique(axis=0) sorts rows as void records, several times slower.
    width = len(t.strings) + 1
    _, a = unique_inverse(o.name.astype(np.int64) * width + (o.dims.astype(np.int64) + 1))
    ub, b = unique_inverse(o.types.astype(np.int64) * width + (o.concrete.astype(np.int64) + 1))
    _, first, inv = np.unique(a * len(ub) + b, return_index=True, return_inverse=True)
    cols = np.stack([o.name[first], o.dims[first], o.types[first], o.concrete[first]], axis=1).astype(np.int64)
    works = [_model(t, *row) for row in cols.tolist()]
    return inv.reshape(-1).astype(np.int64), works


def _decoded(t: Trace, sid: int) -> Any:
    return t.decoded(sid) if sid != NONE else None


def _model(t: Trace, name: int, dims: int, types: int, concrete: int, backward: bool = False) -> Work:
    if dims == NONE:
        return UNKNOWN
    return model(t.s(name), _decoded(t, dims), _decoded(t, types), _decoded(t, concrete), backward)


def op_work(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """FLOPs and bytes of every op call (float64 arrays in op-table order; nan: not modelled or
    shapes unknown)."""
    idx, works = _op_models(trace)
    flops = np.asarray([w.flops for w in works], dtype=np.float64)
    nbytes = np.asarray([w.bytes for w in works], dtype=np.float64)
    if not len(idx):
        return np.zeros(0), np.zeros(0)
    return flops[idx], nbytes[idx]


def _known(w: Work) -> bool:
    return w.flops == w.flops or w.bytes == w.bytes


def work_ops(trace: Trace, launch_ops: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[Work]]:
    """Per launching op (an op index, NONE allowed): the op whose work its kernels get, whether that
    is the gradient of a forward op, and that Work (one walk per distinct launching op)."""
    idx, works = _op_models(trace)
    parent = trace.ops.parent
    fwd_op = trace.ops.fwd_op
    uniq, inv = np.unique(launch_ops, return_inverse=True)
    out_op = np.full(len(uniq), NONE, dtype=np.int64)
    out_bwd = np.zeros(len(uniq), dtype=bool)
    out_work: list[Work] = []
    bwd_cache: dict[int, Work] = {}

    def innermost(op: int) -> int:
        while op != NONE:
            if _known(works[idx[op]]):
                return op
            op = int(parent[op])
        return NONE

    def forward(op: int) -> int:
        # the first op up the chain whose forward op (same sequence number) has a model
        while op != NONE:
            if fwd_op[op] != NONE:
                f = innermost(int(fwd_op[op]))
                if f != NONE:
                    return f
            op = int(parent[op])
        return NONE

    for u, op in enumerate(uniq.tolist()):
        w, found, backward = UNKNOWN, innermost(op) if op != NONE else NONE, False
        if found != NONE:
            w = works[idx[found]]
        elif op != NONE:
            f = forward(op)
            if f != NONE:
                backward = True
                k = int(idx[f])
                if k not in bwd_cache:
                    o = trace.ops
                    bwd_cache[k] = _model(trace, int(o.name[f]), int(o.dims[f]), int(o.types[f]), int(o.concrete[f]), True)
                w, found = bwd_cache[k], f
        out_op[u], out_bwd[u] = found, backward
        out_work.append(w)
    inv = inv.reshape(-1)
    return out_op[inv], out_bwd[inv], [out_work[i] for i in inv.tolist()]


def kernel_work(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """FLOPs and bytes of every GPU row (float64 arrays in GPU-table order): a kernel's share of its
    op call's work (module docstring), a memcpy/memset its bytes and 0 FLOPs; nan: unknown."""
    g = trace.gpu
    n = len(g)
    flops = np.full(n, np.nan)
    nbytes = np.full(n, np.nan)
    if n == 0:
        return flops, nbytes
    moves = (g.kind != KERNEL) & (g.kind != GPU_SYNC)
    flops[moves] = 0.0
    nbytes[moves] = g.nbytes[moves].astype(np.float64)
    kern = np.flatnonzero(g.kind == KERNEL)
    if not len(kern):
        return flops, nbytes
    kern = kern[np.argsort(g.ts[kern], kind="stable")]
    launch = np.full(len(kern), NONE, dtype=np.int64)
    linked = g.launch[kern] != NONE
    launch[linked] = trace.runtime.op[g.launch[kern][linked]]
    # Work per distinct launching op, then per kernel.
    lu, linv = np.unique(launch, return_inverse=True)
    wop, wbwd, wks = work_ops(trace, lu)
    linv = linv.reshape(-1)
    op_k, bwd_k = wop[linv], wbwd[linv]
    matrix = np.isin(classify(trace).category[kern], _MATRIX)
    kinds = np.asarray([w.kind != OTHER for w in wks], dtype=bool)[linv]
    as_unit = matrix & kinds
    # The first kernel of each (work op call, direction, role) takes the call's (rest of the) work.
    key = (op_k * 2 + bwd_k) * 2 + as_unit
    _, first = np.unique(key, return_index=True)
    is_first = np.zeros(len(kern), dtype=bool)
    is_first[first] = True
    col = {a: np.asarray([getattr(w, a) for w in wks], dtype=np.float64)[linv] for a in ("flops", "bytes", "unit_flops", "unit_bytes", "aux_flops", "aux_bytes")}
    # A call holds as many products as its work says (one forward; a backward's data and weight
    # gradients, two): its longest matrix kernels take them, and further matrix kernels of the call
    # (a cuDNN offsets or split-K helper the classification counts as conv/gemm) take none.
    with np.errstate(divide="ignore", invalid="ignore"):
        units = np.where(col["unit_flops"] > 0, np.rint((col["flops"] - col["aux_flops"]) / col["unit_flops"]), np.inf)
    cand = np.flatnonzero(as_unit)
    if len(cand):
        dur = g.dur[kern[cand]]
        by = np.lexsort((-dur, key[cand]))
        ck = key[cand][by]
        start = np.r_[0, np.flatnonzero(ck[1:] != ck[:-1]) + 1]
        rank = np.arange(len(by)) - np.repeat(start, np.diff(np.r_[start, len(by)]))
        surplus = cand[by][rank >= np.maximum(units[cand][by], 1)]
        as_unit[surplus] = False
        kinds[surplus] = False  # neither the product nor the auxiliary work
        is_first[surplus] = False
    whole = ~kinds & is_first  # an elementwise, normalization... op's first kernel
    aux = kinds & ~as_unit & is_first
    f = np.where(as_unit, col["unit_flops"], np.where(whole, col["flops"], np.where(aux, col["aux_flops"], 0.0)))
    b = np.where(as_unit, col["unit_bytes"], np.where(whole, col["bytes"], np.where(aux, col["aux_bytes"], 0.0)))
    known = op_k != NONE
    f[~known] = np.nan
    b[~known] = np.nan
    flops[kern], nbytes[kern] = f, b
    return flops, nbytes
