"""`pytorch_patterns`: PyTorch anti-patterns an exported trace shows, the ones torch.profiler's
own pattern matcher looks for in a live profile, judged from the ops, annotations and Python
frames the trace recorded (and the device it was recorded on, never the analysing machine).

One row per pattern x where it happens (source line, else op):
- `single_tensor_optimizer`: an `Optimizer.step#<Cls>.step` of a torch optimizer that has a
  foreach/fused implementation ran per-parameter ops (no `_foreach_*` / `_fused_*` op inside);
- `zero_grad_not_none`: `zero_grad` filled the gradients with zeros (`aten::zero_` or
  `aten::_foreach_zero_` inside `Optimizer.zero_grad#...` or a Python `zero_grad` frame) instead
  of setting them to None;
- `conv_bias_before_batchnorm`: a convolution with a bias whose next op on the same level is a
  batch norm, which subtracts the per-channel mean and so cancels the bias;
- `cpu_tensor_to_gpu`: a tensor made and filled on the CPU (a factory op or an in-place fill)
  whose next op copies it to the GPU;
- `loop_indexing`: a Python loop over a tensor's rows: the same short op sequence starting with
  `aten::select` repeated at least `LOOP_MIN` times under one parent.
The synchronous DataLoader pattern is the `dataloader` facts' `dataloader_in_main_process`; fp32
matmuls without TF32 and unaligned half-precision matmul dims are TC002's and DIM001's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from perflint.facts import Context, Fields, Row, fact, typed
from perflint.facts._common import in_steps, window_us
from perflint.facts._optree import on_chain
from perflint.facts.memcpy import parse_memcpy
from perflint.graph.names import dataloader_ops
from perflint.ids import distinct, isin_ids
from perflint.metrics.apis import is_launch
from perflint.model import MEMCPY, NONE, OP_ANNOTATION, OP_CPU, Trace
from perflint.stepmodel.graph import calls_inside, op_spans, thread_index

# torch.optim classes with a multi-tensor (foreach) implementation; the fused ones too.
FOREACH_OPTIMIZERS = frozenset({"Adadelta", "Adafactor", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "NAdam", "RAdam", "RMSprop", "Rprop", "SGD"})
FUSED_OPTIMIZERS = frozenset({"Adagrad", "Adam", "AdamW", "SGD"})
_BATCHED_PREFIXES = ("aten::_foreach_", "aten::_fused_")
ZERO_OPS = frozenset({"aten::zero_", "aten::_foreach_zero_"})
CONV_OPS = frozenset({"aten::conv1d", "aten::conv2d", "aten::conv3d"})
NORM_OPS = frozenset({"aten::batch_norm"})
# Ops that make a tensor on the CPU and fill it (factories), or fill one in place.
FILL_OPS = frozenset({
    "aten::zeros", "aten::ones", "aten::full", "aten::rand", "aten::randn", "aten::randint", "aten::randperm",
    "aten::arange", "aten::linspace", "aten::eye", "aten::zeros_like", "aten::ones_like", "aten::full_like",
    "aten::rand_like", "aten::randn_like", "aten::fill_", "aten::zero_", "aten::normal_", "aten::uniform_",
})  # fmt: skip
COPY_OPS = frozenset({"aten::to", "aten::_to_copy", "aten::copy_"})
LOOP_MIN = 10  # iterations, as torch's matcher counts them
LOOP_MAX_PERIOD = 8  # ops per iteration: longer repeats are layers of a model, not indexing

FIELDS: Fields = {
    "pattern": typed("single_tensor_optimizer | zero_grad_not_none | conv_bias_before_batchnorm | cpu_tensor_to_gpu | loop_indexing", "text"),
    "what": typed("what matched: the optimizer class, the zeroing ops, the op pair, the repeated op sequence", "text"),
    "op": typed("the op the pattern is about (the optimizer annotation, the zeroing op, the convolution, the copy, aten::select)", "text"),
    "source": typed("user's file:line, when stacks were recorded", "text"),
    "count": typed("times it happened in the analysis steps (whole trace without steps)", "integer"),
    "per_step": typed("count / steps (null without steps)", "number"),
    "ops_per_step": typed("ops the pattern ran per analysis step (the optimizer's per-parameter ops, the zeroing ops)", "number"),
    "iterations": typed("loop iterations per analysis step (loop_indexing; null otherwise)", "number"),
    "launches": typed("kernel launches the pattern made in the analysis steps (null when the trace has no runtime calls)", "integer"),
    "launch_us": "time in the launch calls the fix removes (single_tensor_optimizer)",
    "saved_us": "the rule's own estimate of the CPU time the fix removes (the step model's replay decides the impact)",
    "time_us": "CPU time of the matched ops in the analysis steps",
    "share_pct": "the rule's own saving estimate (saved_us, or launch_us) / analysed time, %",
    "bytes": typed("bytes copied to the GPU (cpu_tensor_to_gpu; null otherwise)", "integer"),
    "fused": typed("the optimizer also has a fused implementation (fused=True), null for other patterns", "bool"),
    "steps": typed("number of analysis steps", "integer"),
}


def _ids(t: Trace, test: Callable[[str], bool]) -> list[int]:
    return [i for i in distinct(t.ops.name) if i >= 0 and test(t.strings[i])]


def _rows_named(t: Trace, test: Callable[[str], bool]) -> np.ndarray:
    ids = _ids(t, test)
    if not ids:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(isin_ids(t.ops.name, ids))


@dataclass
class _ByThread:
    """Ops in (thread, start) order: the ops inside a span on a thread are one range."""

    order: np.ndarray
    thread: np.ndarray
    ts: np.ndarray

    def inside(self, thread: int, lo: float, hi: float) -> np.ndarray:
        a = np.searchsorted(self.thread, thread, side="left")
        b = np.searchsorted(self.thread, thread, side="right")
        ts = self.ts[a:b]
        i = a + np.searchsorted(ts, lo, side="left")
        j = a + np.searchsorted(ts, hi, side="right")
        return self.order[i:j]


def _by_thread(t: Trace) -> _ByThread:
    o = np.lexsort((t.ops.ts, t.ops.thread))
    return _ByThread(o, t.ops.thread[o], t.ops.ts[o])


def _siblings(t: Trace, ops: np.ndarray, step: int) -> np.ndarray:
    """Per op: the op beside it on its level (same parent and thread) in time order, the next
    one (step 1) or the previous one (step -1); NONE where there is none."""
    out = np.full(len(ops), NONE, dtype=np.int64)
    if not len(ops):
        return out
    o = t.ops
    peers = np.flatnonzero(np.isin(o.parent, distinct(o.parent[ops])))
    order = peers[np.lexsort((o.ts[peers], o.thread[peers], o.parent[peers]))]
    pos = np.empty(len(o), dtype=np.int64)
    pos[order] = np.arange(len(order))
    at = pos[ops] + step
    ok = (at >= 0) & (at < len(order))
    nb = order[np.clip(at, 0, len(order) - 1)]
    ok &= (o.parent[nb] == o.parent[ops]) & (o.thread[nb] == o.thread[ops])
    out[ok] = nb[ok]
    return out


def _source(t: Trace, rows: Iterable[int]) -> str | None:
    for r in rows:
        s = int(t.ops.source[r])
        if s != NONE:
            return t.s(s)
    return None


def _launch_calls(t: Trace, ops: np.ndarray) -> np.ndarray:
    calls = calls_inside(t, ops)
    if not len(calls):
        return calls
    launch = np.asarray([is_launch(t.s(int(n))) for n in t.runtime.name[calls]], dtype=bool)
    return np.asarray(distinct(calls[launch]), dtype=np.int64)


def _row(ctx: Context, pattern: str, what: str, op: str, rows: list[int], count: int, **extra: object) -> Row:
    t = ctx.trace
    steps = len(ctx.steps)
    return {
        "pattern": pattern,
        "what": what,
        "op": op,
        "source": _source(t, rows),
        "count": count,
        "per_step": count / steps if steps else None,
        "time_us": float(t.ops.dur[np.asarray(rows, dtype=np.int64)].sum()) if rows else 0.0,
        "steps": steps,
        "ops_per_step": None,
        "iterations": None,
        "launches": None,
        "launch_us": None,
        "saved_us": None,
        "bytes": None,
        "fused": None,
        "_spans": (),
        "_calls": np.zeros(0, dtype=np.int64),
        **extra,
    }


def _optimizer_class(name: str, prefix: str) -> str | None:
    """'Adam' from 'Optimizer.step#Adam.step' (prefix 'Optimizer.step#')."""
    if not name.startswith(prefix):
        return None
    return name[len(prefix) :].split(".", 1)[0]


def _single_tensor(ctx: Context, bt: _ByThread) -> list[Row]:
    t = ctx.trace
    o = t.ops
    steps = _rows_named(t, lambda n: _optimizer_class(n, "Optimizer.step#") in FOREACH_OPTIMIZERS)
    steps = steps[in_steps(ctx, o.ts[steps])]
    by_class: dict[str, list[tuple[int, np.ndarray]]] = {}
    for s in steps.tolist():
        inner = bt.inside(int(o.thread[s]), float(o.ts[s]), float(o.ts[s] + o.dur[s]))
        inner = inner[(inner != s) & (o.kind[inner] == OP_CPU)]
        names = [t.s(int(n)) for n in distinct(o.name[inner])]
        if len(inner) < 2 or any(n.startswith(_BATCHED_PREFIXES) for n in names):
            continue
        cls = _optimizer_class(t.s(int(o.name[s])), "Optimizer.step#") or ""
        by_class.setdefault(cls, []).append((s, inner[o.parent[inner] == s]))
    out = []
    for cls, found in by_class.items():
        top = np.concatenate([kids for _, kids in found])
        removed, launches = [], 0
        for _, kids in found:
            calls = _launch_calls(t, kids)
            launches += len(calls)
            if len(calls):
                # foreach still launches one kernel per op kind (per chunk of tensors) each step.
                _, first = np.unique(o.name[t.runtime.op[calls]], return_index=True)
                removed.append(np.delete(calls, first))
        gone = np.concatenate(removed) if removed else np.zeros(0, dtype=np.int64)
        out.append(_row(
            ctx, "single_tensor_optimizer", f"torch.optim.{cls}",
            f"Optimizer.step#{cls}.step", [s for s, _ in found], len(found),
            ops_per_step=len(top) / len(found), launches=launches if len(t.runtime) else None,
            launch_us=float(t.runtime.dur[gone].sum()), fused=cls in FUSED_OPTIMIZERS, _calls=gone,
        ))  # fmt: skip
    return out


def _zero_grad(ctx: Context, bt: _ByThread) -> list[Row]:
    t = ctx.trace
    o = t.ops
    spans: list[tuple[int, float, float]] = []
    for s in _rows_named(t, lambda n: n.startswith("Optimizer.zero_grad#")).tolist():
        spans.append((int(o.thread[s]), float(o.ts[s]), float(o.ts[s] + o.dur[s])))
    p = t.pyfn
    for n in distinct(p.name):
        if n >= 0 and t.s(int(n)).endswith(": zero_grad"):
            for r in np.flatnonzero(p.name == n).tolist():
                spans.append((int(p.thread[r]), float(p.ts[r]), float(p.ts[r] + p.dur[r])))
    if not spans:
        return []
    zero_ids = _ids(t, lambda n: n in ZERO_OPS)
    zeros_parent = set(_ids(t, lambda n: n == "aten::zeros"))
    found: set[int] = set()
    for th, lo, hi in spans:
        inner = bt.inside(th, lo, hi)
        inner = inner[isin_ids(o.name[inner], zero_ids)] if zero_ids else inner[:0]
        for z in inner.tolist():
            par = int(o.parent[z])
            # aten::zeros fills a new tensor; a zero_ inside _foreach_zero_ is counted as it
            if par != NONE and (int(o.name[par]) in zeros_parent or int(o.name[par]) in zero_ids):
                continue
            found.add(z)
    rows = np.asarray(sorted(found), dtype=np.int64)
    rows = rows[in_steps(ctx, o.ts[rows])]
    if not len(rows):
        return []
    names = sorted({t.s(int(n)) for n in o.name[rows]})
    return [_row(
        ctx, "zero_grad_not_none", ", ".join(names),
        names[0], rows.tolist(), len(rows), ops_per_step=len(rows) / len(ctx.steps) if ctx.steps else None, launches=len(_launch_calls(t, rows)) if len(t.runtime) else None, saved_us=float(o.dur[rows].sum()), _spans=op_spans(t, rows),
    )]  # fmt: skip


def _has_bias(t: Trace, op: int) -> bool:
    """The convolution's third argument (bias) is a tensor: `Input type` names a dtype there."""
    types = t.ops.types[op]
    if types == NONE:
        return False
    entries = t.s(int(types)).strip("[]").split(",")
    return len(entries) >= 3 and entries[2].strip().strip('"') not in ("", "None")


_BOOKKEEPING_MAX = 3


def _bookkeeping(t: Trace, op: int) -> bool:
    """An op on a scalar or a vector (BatchNorm's `num_batches_tracked += 1`), not on the
    activations: it sits between a convolution and its norm without using the output."""
    dims = t.ops.dims[op]
    if dims == NONE:
        return False
    try:
        first = json.loads(t.s(int(dims)))[0]
    except (ValueError, IndexError, TypeError):
        return False
    return isinstance(first, list) and len(first) < 2


def _conv_bias(ctx: Context) -> list[Row]:
    t = ctx.trace
    o = t.ops
    convs = _rows_named(t, lambda n: n in CONV_OPS)
    convs = convs[in_steps(ctx, o.ts[convs])]
    if not len(convs):
        return []
    convs = convs[np.asarray([_has_bias(t, int(c)) for c in convs.tolist()], dtype=bool)]
    norm_ids = set(_ids(t, lambda n: n in NORM_OPS))
    hit = []
    at = convs.copy()
    todo = np.ones(len(convs), dtype=bool)
    for _ in range(_BOOKKEEPING_MAX + 1):  # the next op on the level that works on activations
        at[todo] = _siblings(t, at[todo], 1)
        todo &= at != NONE
        for i in np.flatnonzero(todo).tolist():
            nxt = int(at[i])
            if int(o.name[nxt]) in norm_ids:
                hit.append(int(convs[i]))
            if int(o.name[nxt]) in norm_ids or not _bookkeeping(t, nxt):
                todo[i] = False
    groups: dict[str | None, list[int]] = {}
    for c in hit:
        groups.setdefault(_source(t, [c]), []).append(c)
    return [
        _row(ctx, "conv_bias_before_batchnorm", f"{t.s(int(o.name[rows[0]]))} -> aten::batch_norm", t.s(int(o.name[rows[0]])), rows, len(rows))
        for rows in groups.values()
    ]


def _cpu_to_gpu(ctx: Context) -> list[Row]:
    t = ctx.trace
    g, o = t.gpu, t.ops
    if not len(g) or not len(o):
        return []
    htod = {i for i in distinct(g.name[g.kind == MEMCPY]) if i >= 0 and parse_memcpy(t.s(int(i)))[0] == "HtoD"}
    if not htod:
        return []
    copies = np.flatnonzero((g.kind == MEMCPY) & (g.launch != NONE) & isin_ids(g.name, sorted(htod)))
    copy_ids = set(_ids(t, lambda n: n in COPY_OPS))
    fill_ids = set(_ids(t, lambda n: n in FILL_OPS))
    outer: dict[int, int] = {}  # the outermost copy op of each copy -> its GPU copy row
    for c in copies.tolist():
        op = int(t.runtime.op[g.launch[c]])
        if op == NONE or int(o.name[op]) not in copy_ids:
            continue
        while int(o.parent[op]) != NONE and int(o.name[o.parent[op]]) in copy_ids:
            op = int(o.parent[op])
        outer.setdefault(op, c)
    if not outer:
        return []
    tos = np.asarray(sorted(outer), dtype=np.int64)
    tos = tos[in_steps(ctx, o.ts[tos])]
    prev = _siblings(t, tos, -1)
    groups: dict[tuple[str | None, str], list[tuple[int, int]]] = {}
    for to, made in zip(tos.tolist(), prev.tolist()):
        if made == NONE or int(o.name[made]) not in fill_ids or len(_launch_calls(t, np.asarray([made]))):
            continue  # not made on the CPU just before (a made-on-GPU tensor launches its fill)
        key = (_source(t, [to, made]), t.s(int(o.name[made])))
        groups.setdefault(key, []).append((made, to))
    out = []
    canon = thread_index(t)
    rt = t.runtime
    for (_, made_name), pairs in groups.items():
        rows = [r for pair in pairs for r in pair]
        sizes = [int(g.nbytes[outer[to]]) for _, to in pairs]
        # What making it on the device saves: the CPU fill and the copy call. Not the whole
        # aten::to: its allocation stays, and a first copy may hold the CUDA context's start.
        calls = np.asarray([g.launch[outer[to]] for _, to in pairs], dtype=np.int64)
        made = np.asarray([m for m, _ in pairs], dtype=np.int64)
        spans = op_spans(t, made) + tuple(zip(canon[rt.thread[calls]].tolist(), rt.ts[calls].tolist(), (rt.ts[calls] + rt.dur[calls]).tolist()))
        out.append(_row(
            ctx, "cpu_tensor_to_gpu", f"{made_name} -> {t.s(int(o.name[pairs[0][1]]))}", t.s(int(o.name[pairs[0][1]])),
            rows, len(pairs), bytes=sum(sizes) if min(sizes) >= 0 else None,
            saved_us=float(o.dur[made].sum() + rt.dur[calls].sum()), _spans=spans,
        ))  # fmt: skip
    return out


def _repeats(names: list[int], start: int, p: int) -> int:
    reps = 1
    while names[start + reps * p : start + (reps + 1) * p] == names[start : start + p]:
        reps += 1
    return reps


def _runs(names: list[int], select: int) -> list[tuple[int, int, int]]:
    """(start, period, repeats) of each run where a sequence of at most LOOP_MAX_PERIOD ops that
    holds an aten::select repeats at least LOOP_MIN times back to back. An iteration starts where
    the loop does: the ops before its first select that repeat too belong to it."""
    out: list[tuple[int, int, int]] = []
    i, n = 0, len(names)
    while i < n:
        if names[i] != select:
            i += 1
            continue
        best = None
        lo = out[-1][0] + out[-1][1] * out[-1][2] if out else 0
        for p in range(1, min(LOOP_MAX_PERIOD, n - i) + 1):
            if i + p < n and names[i + p] != select:
                continue
            start = i
            while start > lo and names[start - 1] == names[start + p - 1]:
                start -= 1
            reps = _repeats(names, start, p)
            if reps >= LOOP_MIN:
                best = (start, p, reps)
                break
        if best is None:
            i += 1
            continue
        out.append(best)
        i = best[0] + best[1] * best[2]
    return out


def _loops(ctx: Context) -> list[Row]:
    t = ctx.trace
    o = t.ops
    select = [i for i in _ids(t, lambda n: n == "aten::select")]
    if not select:
        return []
    sel = np.flatnonzero(o.name == select[0])
    sel = sel[in_steps(ctx, o.ts[sel])]
    loading = dataloader_ops(t)
    if len(loading):  # a Dataset indexed sample by sample is the DataLoader's work (DATA rules)
        flag = np.zeros(len(o), dtype=bool)
        flag[loading] = True
        sel = sel[~on_chain(ctx, flag, sel)]
    if len(sel) < LOOP_MIN:
        return []
    # A Python loop's ops are called from Python: their parent is an annotation (a step, a
    # record_function) or nothing. Under an aten op or a backward function (StackBackward0 selects
    # each input) the loop is in C++.
    par = o.parent[sel]
    sel = sel[(par == NONE) | (o.kind[np.maximum(par, 0)] == OP_ANNOTATION)]
    # Parents (per thread) with enough select children to hold a loop.
    key = o.parent[sel].astype(np.int64) * (len(t.threads) + 1) + o.thread[sel]
    keys, counts = np.unique(key, return_counts=True)
    groups: dict[tuple[str | None, tuple[str, ...]], list[tuple[np.ndarray, int]]] = {}
    wanted = keys[counts >= LOOP_MIN]
    if not len(wanted):
        return []
    # Every child of those parents, grouped per (parent, thread) in time order: one sort.
    cand = np.flatnonzero(np.isin(o.parent, distinct(wanted // (len(t.threads) + 1))))
    ckey = o.parent[cand].astype(np.int64) * (len(t.threads) + 1) + o.thread[cand]
    cand = cand[np.isin(ckey, wanted)]
    ckey = o.parent[cand].astype(np.int64) * (len(t.threads) + 1) + o.thread[cand]
    order = np.lexsort((o.ts[cand], ckey))
    cand, ckey = cand[order], ckey[order]
    cuts = np.flatnonzero(np.diff(ckey)) + 1
    for kids in np.split(cand, cuts):
        names = o.name[kids].tolist()
        for start, p, reps in _runs(names, select[0]):
            run = kids[start : start + p * reps]
            block = tuple(t.s(int(n)) for n in names[start : start + p])
            groups.setdefault((_source(t, run[:p].tolist()), block), []).append((run, p))
    out = []
    for (_, block), runs in groups.items():
        ops = np.concatenate([r for r, _ in runs])
        iters = sum(len(r) // p for r, p in runs)
        # Vectorized, the loop costs about one iteration: the ops of the other iterations are
        # what it saves (the Python between them too, but a gap may be other work: not counted).
        spans = tuple(sp for r, p in runs for sp in op_spans(t, r[p:]))
        out.append(_row(
            ctx, "loop_indexing", " -> ".join(block), "aten::select", ops.tolist(), len(runs),
            iterations=iters / len(ctx.steps) if ctx.steps else iters, launches=len(_launch_calls(t, ops)) or None,
            saved_us=sum(b - a for _, a, b in spans), _spans=spans,
        ))  # fmt: skip
    return out


@fact("pytorch_patterns", key=("pattern", "what", "op", "source"), fields=FIELDS)
def pytorch_patterns(ctx: Context) -> list[Row]:
    """PyTorch anti-patterns the trace shows, one row per pattern and place."""
    t = ctx.trace
    if not len(t.ops):
        return []
    bt = _by_thread(t)
    rows = _single_tensor(ctx, bt) + _zero_grad(ctx, bt) + _conv_bias(ctx) + _cpu_to_gpu(ctx) + _loops(ctx)
    window = window_us(ctx)
    for r in rows:
        saved = r["saved_us"] if r["saved_us"] is not None else r["launch_us"]
        r["share_pct"] = 100.0 * saved / window if saved is not None and window else None
    return rows
