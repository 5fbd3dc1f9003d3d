"""The operator view (`perflint ops`, `perflint.op_view`): ops grouped by name, name and input
shape, module or layer, with TensorBoard's operator-view columns (calls, host and device self/total
time, Tensor Cores eligible and self %) and FLOPs.

Every number is first computed per op with numpy passes (per nesting level at most), then summed
per group with bincount; Python runs once per distinct name, shape, module or layer.

Groups:
- `op`: the op's name (TensorBoard's default operator view, torch.profiler's key_averages).
- `op+shape`: name and Input Dims (TensorBoard's "group by input shape"; MindSpore's op view:
  op type x input shape).
- `module`: where the op ran. Kineto: the innermost `nn.Module: X` python_function range around
  it (its name without the prefix); pyprof (nvprof): the Python module of the outermost pyprof
  call on its chain, pyprof's `mod` ("torch.nn.functional", "Tensor"). None outside any.
- `layer`: pyprof's `layer:X` markers on the op's chain, joined with "/"; else the path of
  nn.Module ranges around it ("Net/Sequential_0/Linear_0"). None outside any.

With `module` and `layer` an op nested in another op of the same group counts once in the
group's totals (host_total_us, device_total_us) and its FLOPs once, at the innermost op that
has a FLOP model (aten::linear's are its aten::addmm's). The group outside any module or layer
(None: the step, the optimizer) totals its ops' self times, never the modules under them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.facts import Context
from perflint.facts._common import kernel_op
from perflint.facts._optree import op_levels
from perflint.ids import unique_inverse
from perflint.listings import OP_COLUMNS, kernel_dtypes, nan_none, op_times
from perflint.metrics.kernel_classes import classify
from perflint.metrics.roofline import Roofline, group_roofline, kernel_peaks
from perflint.metrics.shapes import CONV_OPS, GEMM_OPS
from perflint.metrics.work import kernel_work, op_work
from perflint.model import KERNEL, NONE, OP_ANNOTATION, OP_CPU, Trace
from perflint.module_ranges import Paths, kineto_modules

GROUPS = ("op", "op+shape", "module", "layer")
# Added after the op table's columns; the group's key columns come first in the defaults.
VIEW_COLUMNS = OP_COLUMNS + (
    "input_shape", "module", "layer", "host_avg_us", "device_avg_us", "tc_eligible", "tc_self_pct", "flops", "tflops",
    "bytes", "gbps", "pct_of_peak", "bound",
)  # fmt: skip
_STATS = ("calls", "device_self_us", "device_total_us", "host_self_us", "host_total_us", "tc_eligible", "tc_self_pct", "flops", "tflops")
DEFAULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "op": ("name", "kind", *_STATS),
    "op+shape": ("name", "input_shape", *_STATS),
    "module": ("module", *_STATS),
    "layer": ("layer", *_STATS),
}

# Tensor-Core-eligible ops by name (TensorBoard's definition): matrix multiplies and
# convolutions, and the autograd nodes of their backward passes. An op is also eligible when an
# op under it is (a CPU op, not an annotation) or when it launched a Tensor Core kernel.
_TC_OPS = frozenset(GEMM_OPS) | frozenset(CONV_OPS) | {
    "aten::_convolution_nogroup", "aten::conv_tbc", "aten::prelu", "aten::addmv", "aten::addr", "aten::mv",
    "aten::addbmm", "aten::addmm_", "aten::chain_matmul", "aten::linalg_multi_dot",
    "aten::_thnn_fused_lstm_cell", "aten::_thnn_fused_gru_cell", "aten::lstm_cell", "aten::gru_cell",
    "aten::rnn_tanh_cell", "aten::rnn_relu_cell",
    "aten::cudnn_convolution_backward", "aten::cudnn_convolution_backward_input",
    "aten::cudnn_convolution_backward_weight", "aten::cudnn_convolution_transpose_backward",
    "aten::cudnn_convolution_transpose_backward_input", "aten::cudnn_convolution_transpose_backward_weight",
    "aten::convolution_backward",
}  # fmt: skip
_TC_BACKWARD = ("CudnnConvolution", "CudnnConvolutionTranspose", "Convolution", "ConvolutionBackwardOverrideable",
                "Mm", "Addmm", "Bmm", "Baddbmm", "Addbmm", "Addmv", "Mv")  # fmt: skip


def tc_eligible_name(name: str) -> bool:
    if name in _TC_OPS:
        return True
    stem, sep, rest = name.partition("Backward")
    return bool(sep) and rest in ("", "0", "1") and stem in _TC_BACKWARD


def _tc_self(t: Trace) -> np.ndarray:
    """Per op: time of the Tensor Core kernels it launched itself (µs)."""
    g, n = t.gpu, len(t.ops)
    kop = kernel_op(t)
    tc = (g.kind == KERNEL) & (classify(t).tensor_core == 1) & (kop != NONE)
    return np.bincount(kop[tc], weights=g.dur[tc].astype(np.float64), minlength=n) if tc.any() else np.zeros(n)


def _eligible(t: Trace, tc_self: np.ndarray) -> np.ndarray:
    """Per op: Tensor Core eligible (by name, by a CPU op under it, by its Tensor Core kernels)."""
    o = t.ops
    names, inv = unique_inverse(o.name)
    by_name = np.asarray([tc_eligible_name(t.s(int(n))) for n in names.tolist()], dtype=bool)
    out = (by_name[inv] if len(names) else np.zeros(0, dtype=bool)) | (tc_self > 0)
    lv = op_levels(Context(t))
    cpu = o.kind == OP_CPU
    for k in range(len(lv) - 1, 0, -1):
        ops = lv.ops(k)
        up = o.parent[ops[out[ops]]]
        out[up[cpu[up]]] = True
    return out


def _op_level_list(t: Trace) -> list[np.ndarray]:
    lv = op_levels(Context(t))
    return [lv.ops(k) for k in range(len(lv))]


def _pyprof_modules(t: Trace, paths: Paths) -> np.ndarray:
    """Per op: the Python module of the outermost pyprof call on its chain (pyprof's `mod`)."""
    o = t.ops
    calls, inv = unique_inverse(o.pycall)
    mods = [t.s(int(c)).rpartition(".")[0] if c != NONE else "" for c in calls.tolist()]
    own = np.asarray([paths.id(m) if c != NONE else NONE for c, m in zip(calls.tolist(), mods)], dtype=np.int64)
    own = own[inv] if len(calls) else np.zeros(0, dtype=np.int64)
    out = own.copy()
    lv = op_levels(Context(t))
    for k in range(1, len(lv)):
        ops = lv.ops(k)
        up = out[o.parent[ops]]
        out[ops] = np.where(up != NONE, up, own[ops])
    got: np.ndarray = out
    return got


def _layers(t: Trace, paths: Paths) -> np.ndarray:
    """Per op: its pyprof `layer:X` markers' path (NONE without any)."""
    o = t.ops
    names, inv = unique_inverse(o.name)
    text = [t.s(int(n)) for n in names.tolist()]
    is_layer = np.asarray([s.startswith("layer:") for s in text], dtype=bool)
    label = np.where(is_layer[inv] & (o.kind == OP_ANNOTATION), inv, NONE) if len(names) else np.zeros(0, dtype=np.int64)
    if not (label != NONE).any():
        return np.full(len(o), NONE, dtype=np.int64)
    return paths.down(_op_level_list(t), o.parent, label, [s.split(":", 1)[1] if s.startswith("layer:") else s for s in text])


def op_view(t: Trace, group_by: str = "op") -> list[dict[str, Any]]:
    """The operator view of one trace: one row per group (VIEW_COLUMNS), most device time first,
    then most host time."""
    if group_by not in GROUPS:
        raise ValueError(f"group_by must be one of {', '.join(GROUPS)}, not {group_by!r}")
    o = t.ops
    n = len(o)
    if n == 0:
        return []
    host_self, host_total, dev_self, dev_total = op_times(t)
    tc_self = _tc_self(t)
    eligible = _eligible(t, tc_self)
    flops, nbytes = op_work(t)
    # An op whose only child op has its name is one call (torch.profiler's and TensorBoard's
    # tables): the child's self times move to it and the child is no row of its own.
    into = _merged_into(t)
    dup = np.flatnonzero(into != np.arange(n))
    if len(dup):
        for x in (host_self, dev_self, tc_self):
            np.add.at(x, into[dup], x[dup])
            x[dup] = 0.0
    paths = Paths()
    module = layer = np.full(n, NONE, dtype=np.int64)
    if group_by in ("module", "layer"):
        kin = kineto_modules(t, paths)
        if kin is not None:
            module, layer = kin
        elif (o.pycall != NONE).any():
            module = _pyprof_modules(t, paths)
        if group_by == "layer":
            marks = _layers(t, paths)
            layer = np.where(marks != NONE, marks, layer)
    if group_by == "op":
        key = o.name.astype(np.int64)
    elif group_by == "op+shape":
        key = o.name.astype(np.int64) * (len(t.strings) + 1) + (o.dims.astype(np.int64) + 1)
    else:
        key = module if group_by == "module" else layer
    keep = np.flatnonzero(into == np.arange(n))
    if len(dup):
        key = key.copy()
        key[dup] = key[into[dup]]  # a merged child never splits its parent's group
    groups, inv = unique_inverse(key[keep])
    m = len(groups)
    if group_by in ("module", "layer"):
        # Totals over the group's outermost ops; FLOPs at the innermost op with a model.
        par = o.parent
        outer = (par == NONE) | (key[np.maximum(par, 0)] != key)
        host_total = np.where(outer, host_total, 0.0)
        dev_total = np.where(outer, dev_total, 0.0)
        # Outside every module (the step, the optimizer) an op's total would hold the modules
        # under it a second time: that group's totals are its ops' own time only.
        outside = key == NONE
        host_total = np.where(outside, host_self, host_total)
        dev_total = np.where(outside, dev_self, dev_total)
        inner = _has_modelled_child(t, flops)
        flops, nbytes = np.where(inner, np.nan, flops), np.where(inner, np.nan, nbytes)

    o_kind, o_name, o_dims = o.kind[keep], o.name[keep], o.dims[keep]
    module, layer = (module[keep], layer[keep])
    eligible, flops, nbytes = eligible[keep], flops[keep], nbytes[keep]
    host_self, host_total, dev_self, dev_total, tc_self = (x[keep] for x in (host_self, host_total, dev_self, dev_total, tc_self))
    n = len(keep)

    def per_group(x: np.ndarray) -> np.ndarray:
        return np.bincount(inv, weights=x, minlength=m)

    calls = np.bincount(inv, minlength=m)
    known = ~np.isnan(flops)
    gflops = per_group(np.where(known, flops, 0.0))
    has_flops = per_group(known.astype(np.float64)) > 0
    known_b = ~np.isnan(nbytes)
    gbytes = per_group(np.where(known_b, nbytes, 0.0))
    has_bytes = per_group(known_b.astype(np.float64)) > 0
    annotation = per_group((o_kind == OP_ANNOTATION).astype(np.float64)) == calls
    g_elig = per_group(eligible.astype(np.float64)) > 0
    hs, ht, ds, dt, tcs = (per_group(x) for x in (host_self, host_total, dev_self, dev_total, tc_self))
    first = np.full(m, n, dtype=np.int64)
    np.minimum.at(first, inv, np.arange(n))  # a representative op per group (its name, dims)
    op_group = np.full(len(o), -1, dtype=np.int64)
    op_group[keep] = inv
    if len(dup):
        op_group[dup] = op_group[into[dup]]
    roof = _group_roofline(t, op_group, m)
    bound = roof.bound
    gbps, pct = (nan_none(x) for x in (roof.gbps, roof.pct_of_peak))
    rows = []
    for gi in range(m):
        rep = int(first[gi])
        c = int(calls[gi])
        f = float(gflops[gi]) if has_flops[gi] else None
        d = float(dt[gi])
        row: dict[str, Any] = {
            "name": t.s(int(o_name[rep])) if group_by in ("op", "op+shape") else _label(paths, int(groups[gi])),
            "kind": "user_annotation" if annotation[gi] else "cpu_op",
            "calls": c,
            "host_self_us": float(hs[gi]),
            "host_total_us": float(ht[gi]),
            "device_self_us": float(ds[gi]),
            "device_total_us": d,
            "input_shape": t.decoded(int(o_dims[rep])) if group_by == "op+shape" else None,
            "module": _label(paths, int(module[rep])),
            "layer": _label(paths, int(layer[rep])),
            "host_avg_us": float(ht[gi]) / c,
            "device_avg_us": d / c,
            "tc_eligible": bool(g_elig[gi]),
            "tc_self_pct": 100.0 * float(tcs[gi]) / float(ds[gi]) if ds[gi] > 0 else None,
            "flops": f,
            "tflops": f / d / 1e6 if f is not None and d > 0 else None,
            "bytes": float(gbytes[gi]) if has_bytes[gi] else None,
            "gbps": gbps[gi],
            "pct_of_peak": pct[gi],
            "bound": bound[gi],
        }
        rows.append(row)
    rows.sort(key=lambda r: (-r["device_total_us"], -r["host_total_us"], r["name"] or "", str(r["input_shape"])))
    return rows


def _group_roofline(t: Trace, op_group: np.ndarray, m: int) -> Roofline:
    """The roofline of each group's kernels: their modelled FLOPs and bytes (`kernel_work`) over
    their time, against the peaks of their devices, dtypes and units (metrics.roofline)."""
    g = t.gpu
    kern = np.flatnonzero(g.kind == KERNEL)
    kop = kernel_op(t)[kern]
    gid = np.where(kop != NONE, op_group[np.maximum(kop, 0)], -1)
    mine = np.flatnonzero(gid >= 0)
    rows = kern[mine]
    tc = classify(t).tensor_core[rows]
    pk, bw = kernel_peaks(t, g.device[rows].tolist(), kernel_dtypes(t, rows), [None if v < 0 else bool(v) for v in tc.tolist()])
    kf, kb = kernel_work(t)
    return group_roofline(gid[mine], m, kf[rows], kb[rows], g.dur[rows].astype(np.float64), pk, bw)


def _merged_into(t: Trace) -> np.ndarray:
    """Per op: itself, or for an op that is the only child op of a CPU op of the same name (a
    chain of them), the outermost op of that chain."""
    o = t.ops
    n = len(o)
    par = o.parent
    has = np.flatnonzero(par != NONE)
    kids = np.bincount(par[has], minlength=n)
    cpu = o.kind == OP_CPU
    p = par[has]
    dup_at = has[(kids[p] == 1) & (o.name[has] == o.name[p]) & cpu[has] & cpu[p]]
    own = np.full(n, NONE, dtype=np.int64)
    own[dup_at] = par[dup_at]
    out = np.arange(n, dtype=np.int64)
    if not len(dup_at):
        return out
    lv = op_levels(Context(t))
    for k in range(1, len(lv)):  # top-down: a parent's target is final before its child's
        ops = lv.ops(k)
        d = ops[own[ops] != NONE]
        out[d] = out[own[d]]
    return out


def _label(paths: Paths, pid: int) -> str | None:
    return paths.text[pid] if pid != NONE else None


def _has_modelled_child(t: Trace, flops: np.ndarray) -> np.ndarray:
    """Per op: an op under it has a FLOP model and known shapes."""
    o = t.ops
    below = np.zeros(len(o), dtype=bool)
    known = ~np.isnan(flops)
    lv = op_levels(Context(t))
    for k in range(len(lv) - 1, 0, -1):
        ops = lv.ops(k)
        hit = ops[known[ops] | below[ops]]
        below[o.parent[hit]] = True
    return below


def sort_rows(rows: list[dict[str, Any]], col: str) -> list[dict[str, Any]]:
    """Rows by `col`: numbers (and flags) descending, text ascending, missing values last."""
    have = [r for r in rows if r.get(col) is not None]
    rest = [r for r in rows if r.get(col) is None]
    if all(isinstance(r[col], (int, float)) for r in have):
        return sorted(have, key=lambda r: -float(r[col])) + rest
    return sorted(have, key=lambda r: str(r[col])) + rest


__all__ = ["DEFAULT_COLUMNS", "GROUPS", "VIEW_COLUMNS", "op_view", "sort_rows", "tc_eligible_name"]
