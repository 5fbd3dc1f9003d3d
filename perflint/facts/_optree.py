"""Op structure for fact sources, for every op at once: numpy passes level by level down
`ops.parent` (nesting depth), never a Python walk per op or per event. An OpInfo (stack, shapes,
dtype, source, direction of a launching op) is built once per distinct value: tiled or long
traces have millions of ops but a few thousand distinct launch sites.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from perflint.facts import Context
from perflint.facts._group import factorize, unique_inverse
from perflint.graph.build import stack_member
from perflint.graph.nesting import depths
from perflint.memo import once
from perflint.metrics.dtypes import op_dtype
from perflint.model import NONE


@dataclass(frozen=True)
class OpInfo:
    op: int  # bottom-level op index (NONE if unlinked)
    top: int
    stack: tuple[str, ...]
    shape_op: int  # the op whose Input Dims describe the work (forward op for backward kernels)
    dims: Any
    dtype: str | None
    source: str | None
    is_backward: bool


_NO_OP = OpInfo(NONE, NONE, (), NONE, None, None, None, False)


@dataclass(frozen=True)
class Levels:
    """Ops laid out level by level (nesting depth, outermost first): each level is a contiguous
    slice of `order`, and a top-down pass over the slices sees every parent before its children."""

    order: np.ndarray  # op indices by depth (stable)
    bounds: list[int]  # level k is order[bounds[k] : bounds[k + 1]]
    parent_pos: list[np.ndarray]  # per level: positions in `order` of the ops' parents

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def ops(self, k: int) -> np.ndarray:
        return self.order[self.bounds[k] : self.bounds[k + 1]]


@once
def depth_is_nesting(ctx: Context) -> bool:
    """ops.depth is the nesting depth of ops.parent (it is after the graph step); checked once."""
    ops = ctx.trace.ops
    parent, depth = ops.parent, ops.depth
    has = parent != NONE
    return bool(len(depth) == len(parent) and not (depth[~has] != 0).any() and np.array_equal(depth[has], depth[parent[has]] + 1))


@once
def op_levels(ctx: Context) -> Levels:
    """The ops' levels, from ops.depth when it is the nesting depth of ops.parent (it is after the
    graph step), else recomputed."""
    parent = ctx.trace.ops.parent
    depth = ctx.trace.ops.depth
    if not depth_is_nesting(ctx):
        depth = depths(parent)
    if len(parent) == 0:
        return Levels(np.zeros(0, dtype=np.int64), [0], [])
    order = np.argsort(depth.astype(np.int16 if depth.max() < 2**15 else np.int64), kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(depth)))).tolist()
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    ppos = [pos[parent[order[a:b]]] if k else np.zeros(0, dtype=np.int64) for k, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    return Levels(order, bounds, ppos)


def propagate(ctx: Context, own: np.ndarray) -> np.ndarray:
    """Per op: own[o] where it is not NONE, else its parent's result: the innermost value on the
    op's chain (itself first)."""
    lv = op_levels(ctx)
    out = np.asarray(own, dtype=np.int64)[lv.order]
    b = lv.bounds
    for k in range(1, len(lv)):
        mine = out[b[k] : b[k + 1]]
        np.copyto(mine, out[lv.parent_pos[k]], where=mine == NONE)
    res: np.ndarray = np.empty_like(out)
    res[lv.order] = out
    return res


def on_chain(ctx: Context, flag: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """Per op of `ops` (NONE: False): `flag` holds for it or for one of its ancestors. What
    `propagate` answers for every op, for a few asked ops: a walk up their chains only."""
    parent = ctx.trace.ops.parent
    cur = np.asarray(ops, dtype=np.int64)
    out = np.zeros(len(cur), dtype=bool)
    live = np.flatnonzero(cur != NONE)
    for _ in range(len(parent) + 1):  # bounded: a parent cycle cannot hang the walk
        if len(live) == 0:
            break
        c = cur[live]
        got = flag[c]
        out[live[got]] = True
        live, c = live[~got], c[~got]
        nxt = parent[c]
        cur[live] = nxt
        live = live[nxt != NONE]
    return out


@dataclass(frozen=True)
class OpArrays:
    """What op_info depends on, for every op (NONE where missing)."""

    stack_key: np.ndarray  # id of the tuple of stack names (cpu ops, no ProfilerStep markers); NONE: empty
    shape_op: np.ndarray  # op whose Input Dims describe the work (innermost stack op with dims, else fwd)
    dims: np.ndarray  # dims string id of shape_op
    types: np.ndarray  # types string id of shape_op
    source: np.ndarray  # source string id (innermost stack op with one, else the forward op's)
    fwd: np.ndarray  # forward op (graph.build.forward_op), NONE for forward ops
    member: np.ndarray  # bool: the op is a stack member (cpu op, not a ProfilerStep marker)
    stack_links: list[tuple[int, int]]  # stack key -> (parent stack key, name string id)


@once
def op_arrays(ctx: Context) -> OpArrays:
    """OpArrays for the context's trace (once per context): one pass per level for the stack ids,
    three `propagate` passes for the innermost dims / source / forward op on each chain."""
    t = ctx.trace
    o = t.ops
    n = len(o)
    member = stack_member(t)
    idx = np.arange(n, dtype=np.int64)
    # Stack identity: (parent's stack id, own name) pairs are numbered in a table shared by all
    # levels (the same stack can sit at different depths under annotations and step markers).
    lv = op_levels(ctx)
    sk = np.full(n, NONE, dtype=np.int64)  # in level order
    table: dict[int, int] = {}
    width = len(t.strings) + 2
    code = o.name.astype(np.int64)[lv.order] + 1
    mem_lo = member[lv.order]
    b = lv.bounds
    for k in range(len(lv)):
        cur = sk[b[k] : b[k + 1]]
        if k:
            cur[:] = sk[lv.parent_pos[k]]
        mem = mem_lo[b[k] : b[k + 1]]
        if mem.any():
            u, inv = unique_inverse((cur[mem] + 1) * width + code[b[k] : b[k + 1]][mem])
            ids = np.asarray([table.setdefault(c, len(table)) for c in u.tolist()], dtype=np.int64)
            cur[mem] = ids[inv]
    stack_key = np.empty(n, dtype=np.int64)
    stack_key[lv.order] = sk
    dims_op = propagate(ctx, np.where(member & (o.dims != NONE), idx, NONE))
    src_op = propagate(ctx, np.where(member & (o.source != NONE), idx, NONE))
    fwd = propagate(ctx, o.fwd_op)
    bwd = fwd != NONE
    fwd_safe = np.where(bwd, fwd, 0)
    shape = dims_op.copy()
    if n:
        use_fwd = (shape == NONE) & bwd & (o.dims[fwd_safe] != NONE)
        shape[use_fwd] = fwd[use_fwd]
    has = shape != NONE
    shape_safe = np.where(has, shape, 0)
    dims = np.where(has, o.dims[shape_safe], NONE) if n else shape
    types = np.where(has, o.types[shape_safe], NONE) if n else shape
    source = np.where(src_op != NONE, o.source[np.where(src_op != NONE, src_op, 0)], NONE) if n else shape
    if n:
        source = np.where((source == NONE) & bwd, o.source[fwd_safe], source)
    links = [(c // width - 1, c % width - 1) for c in table]  # table keys are numbered in insertion order
    return OpArrays(stack_key, shape, dims.astype(np.int64), types.astype(np.int64), source.astype(np.int64), fwd, member, links)


def _info_key(a: OpArrays, op: int) -> tuple[int, ...]:
    return (int(a.stack_key[op]), int(a.dims[op]), int(a.types[op]), int(a.source[op]), int(a.fwd[op] != NONE))


def stack_names(ctx: Context, key: int) -> tuple[str, ...]:
    """The op-stack names behind a stack key (see OpArrays.stack_key), outermost first."""
    memo = ctx.memo.get(_stack_names_memo, ctx)
    got = memo.get(key)
    if got is None:
        a = op_arrays(ctx)
        parent_key, name = a.stack_links[key]
        got = memo[key] = stack_names(ctx, parent_key) + (ctx.trace.s(name),)
    return got


def _stack_names_memo(ctx: Context) -> dict[int, tuple[str, ...]]:
    return {NONE: ()}


def _op_info_memo(ctx: Context) -> dict[tuple[int, ...], OpInfo]:
    """op_info's infos by their key (`_info_key`), shared with op_infos."""
    return {}


def _build(ctx: Context, op: int) -> OpInfo:
    t = ctx.trace
    a = op_arrays(ctx)
    top = op
    o = op
    while o != NONE:  # outermost stack member on the chain
        if a.member[o]:
            top = o
        o = int(t.ops.parent[o])
    shape_op = int(a.shape_op[op])
    src = int(a.source[op])
    return OpInfo(
        op=op,
        top=top,
        stack=stack_names(ctx, int(a.stack_key[op])),
        shape_op=shape_op,
        dims=t.decoded(int(a.dims[op])) if shape_op != NONE else None,
        dtype=op_dtype(t.decoded(int(a.types[op])) if shape_op != NONE else None),
        source=t.s(src) if src != NONE else None,
        is_backward=bool(a.fwd[op] != NONE),
    )


def op_info(ctx: Context, op: int) -> OpInfo:
    """Stack, shapes, dtype and source of a launching op, built once per distinct
    (stack, dims, types, source, is_backward). `op`, `top` and `shape_op` are those of the first
    op seen with the same info: use them as representatives only."""
    if op == NONE:
        return _NO_OP
    known = ctx.memo.get(_op_info_memo, ctx)
    key = _info_key(op_arrays(ctx), op)
    got = known.get(key)
    if got is None:
        got = known[key] = _build(ctx, op)
    return got


def op_infos(ctx: Context, ops: np.ndarray) -> tuple[np.ndarray, list[OpInfo]]:
    """op_info for a whole column of ops: an info id per element (numbered by first appearance;
    int32 below 2**31 elements) and the distinct infos, each built once."""
    if len(ops) == 0:
        return np.zeros(0, dtype=np.int32), []
    a = op_arrays(ctx)
    if len(a.stack_key) == 0:  # no ops: every element is NONE
        return np.zeros(len(ops), dtype=np.int32), [_NO_OP]
    ops = np.asarray(ops, dtype=np.int64)
    valid = ops != NONE
    safe = np.where(valid, ops, 0)
    cols = [
        np.where(valid, a.stack_key[safe], -2),
        np.where(valid, a.dims[safe], NONE),
        np.where(valid, a.types[safe], NONE),
        np.where(valid, a.source[safe], NONE),
        np.where(valid, a.fwd[safe] != NONE, False).astype(np.int64),
    ]
    ids, first = factorize(cols)
    # The cache key of each group's first op, read off the columns in bulk (op_info's key:
    # _info_key of a linked op is exactly its row of `cols`).
    known = ctx.memo.get(_op_info_memo, ctx)
    infos = []
    for op, key in zip(ops[first].tolist(), zip(*(c[first].tolist() for c in cols))):
        if op == NONE:
            infos.append(_NO_OP)
            continue
        got = known.get(key)
        if got is None:
            got = known[key] = _build(ctx, op)
        infos.append(got)
    return ids, infos
