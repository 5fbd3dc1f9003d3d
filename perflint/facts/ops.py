"""`op_groups`: Tensor-Core-eligible CPU ops (GEMM-like and convolutions) grouped per
op name x Input Dims x dtype, with their implicit-GEMM shape, FLOPs, alignment and the GPU
time of the kernels they launched.

Choices (documented because rules depend on them):
- Nested eligible ops (aten::linear -> aten::addmm, aten::conv2d -> ... -> aten::cudnn_convolution)
  are reported once, at the innermost eligible op: its Input Dims describe the work actually
  dispatched, and reporting every wrapper would duplicate findings. Kernels launched anywhere
  under an eligible wrapper (e.g. a contiguous() copy inside aten::matmul) count for the
  innermost eligible op on that wrapper.
- Backward kernels are attributed to the forward op via the autograd sequence number
  (forward_op) and INCLUDED in `kernel_time_us`; `fwd_kernel_time_us` / `bwd_kernel_time_us`
  keep the two parts apart (a shape problem slows both passes).
- Time share on CPU-only traces (no kernels in the analysis window): `time_us` / `time_share_pct`
  fall back to the ops' CPU time over the analysis steps' time (else over all top-level CPU op
  time); `time_basis` says which ('gpu' or 'cpu').
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.facts import Context, Row, fact
from perflint.facts._common import kernel_op, op_info, steps_time_us, window_mask
from perflint.graph.build import forward_op, op_chain
from perflint.metrics.dtypes import kernel_dtype, op_dtype
from perflint.metrics.kernels import CAT_INDEX, classify
from perflint.metrics.shapes import ALIGN, alignment, op_class, op_shape
from perflint.metrics.steps import step_of
from perflint.model import KERNEL, NONE, OP_CPU, Trace

FIELDS = {
    "op": "innermost Tensor-Core-eligible op (aten::mm, addmm, bmm, baddbmm, matmul, linear, conv*)",
    "op_class": "gemm | conv",
    "op_stack": "ops from outermost to innermost (first instance)",
    "top_level_op": "outermost op on the stack (first instance)",
    "input_dims": "the op's Input Dims",
    "dtype": "compute dtype: the op's first floating input, else the main matrix kernel's name",
    "kernel": "the matrix (gemm/conv) kernel with the most time under the op",
    "kernel_dtype": "dtype read from that kernel's name (tf32 shows here)",
    "align_dtype": "dtype that sets the alignment (tf32 when the kernel is tf32, else dtype)",
    "m": "implicit GEMM M (conv: N*P*Q)",
    "n": "implicit GEMM N (conv: output channels K)",
    "k": "implicit GEMM K (conv: C*R*S/groups)",
    "batch": "batch count (bmm / batched matmul), 1 otherwise",
    "conv": "convolution dims {N, C, H, W, K, R, S, groups} (P, Q assumed = H, W)",
    "flops": "FLOPs per call: 2*batch*M*N*K, conv 2*N*K*P*Q*C*R*S/g",
    "achieved_tflops": "flops*count / forward kernel time (null without kernels)",
    "count": "calls in the analysis steps",
    "cpu_time_us": "CPU time of those calls",
    "kernel_time_us": "GPU time of kernels launched under the op, forward + backward",
    "fwd_kernel_time_us": "forward part of kernel_time_us",
    "bwd_kernel_time_us": "backward kernels attributed via the autograd sequence number",
    "kernel_share_pct": "kernel_time_us as % of all kernel time in the analysis steps",
    "time_us": "kernel_time_us, or cpu_time_us on a trace without GPU kernels",
    "time_share_pct": "kernel_share_pct, or CPU time share on a trace without GPU kernels",
    "time_basis": "gpu | cpu: what time_us / time_share_pct measure",
    "tensor_core_kernel_pct": "% of the op's matrix-kernel time in Tensor Core kernels (null: none)",
    "align": "dim multiple for align_dtype (8 fp16/bf16, 16 int8/fp8, 4 tf32; null fp32)",
    "misaligned_dims": "dims not multiples of align, e.g. ['M=141'] (GEMM M/N/K, conv C/K)",
    "padded": "misaligned dim -> padded value",
    "padded_dims": "Input Dims with the misaligned dims padded",
    "padding_waste_pct": "% of the padded problem's work that is padding",
    "source": "user's file:line, when stacks were recorded",
    "compute_capability": "major*10+minor for NVIDIA devices",
    "vendor": "nvidia | amd | unknown",
    "fp32_speedup_hint": "how to move fp32 matrix math to Tensor Cores on this device",
}


def _eligible(t: Trace) -> np.ndarray:
    """Op indices of Tensor-Core-eligible CPU ops."""
    ops = t.ops
    names = np.unique(ops.name)
    want = np.fromiter((n for n in names.tolist() if op_class(t.s(n))), dtype=np.int32)
    return np.flatnonzero(np.isin(ops.name, want) & (ops.kind == OP_CPU))


def _leaves(t: Trace, cand: np.ndarray) -> tuple[set[int], dict[int, int]]:
    """Innermost eligible ops, and eligible wrapper op -> its (first) innermost eligible op."""
    cset = set(cand.tolist())
    wrapped: set[int] = set()
    owner: dict[int, int] = {}
    parent = t.ops.parent
    for i in sorted(cset, key=lambda o: -int(t.ops.depth[o])):
        p = int(parent[i])
        while p != NONE:
            if p in cset:
                wrapped.add(p)
                owner.setdefault(p, owner.get(i, i))
            p = int(parent[p])
    leaves = cset - wrapped
    return leaves, owner


def _hint(cc: int | None, vendor: str) -> str:
    if vendor != "nvidia" or cc is None:
        return "use bf16/fp16 autocast (torch.autocast)"
    if cc >= 80:
        return (
            "enable TF32 (torch.backends.cuda.matmul.allow_tf32 = True or "
            "torch.set_float32_matmul_precision('high'); torch.backends.cudnn.allow_tf32 = True) "
            "or run in bf16 with torch.autocast('cuda', dtype=torch.bfloat16)"
        )
    return "use AMP: torch.autocast('cuda', dtype=torch.float16) with torch.cuda.amp.GradScaler (no TF32/bf16 before compute capability 8.0)"


@fact("op_groups", key=("op", "input_dims", "dtype"), fields=FIELDS)
def op_groups(ctx: Context) -> list[Row]:
    """GEMM-like and convolution ops per op x shapes x dtype, with kernel time, FLOPs, alignment."""
    t = ctx.trace
    ops = t.ops
    cand = _eligible(t)
    if len(cand) == 0:
        return []
    leaves, owner = _leaves(t, cand)
    leaf_arr = np.fromiter(sorted(leaves), dtype=np.int64)
    in_window = step_of(t, ctx.steps, ops.ts[leaf_arr]) >= 0 if ctx.steps else np.ones(len(leaf_arr), bool)

    key_of: dict[int, tuple[Any, ...]] = {}

    def key(leaf: int) -> tuple[Any, ...]:
        got = key_of.get(leaf)
        if got is None:
            dims = t.decoded(int(ops.dims[leaf]))
            got = (t.s(int(ops.name[leaf])), repr(dims), op_dtype(t.decoded(int(ops.types[leaf]))))
            key_of[leaf] = got
        return got

    groups: dict[tuple[Any, ...], dict[str, Any]] = {}

    def group(leaf: int) -> dict[str, Any]:
        k = key(leaf)
        g = groups.get(k)
        if g is None:
            g = groups[k] = {"first": leaf, "count": 0, "cpu": 0.0, "fwd": 0.0, "bwd": 0.0, "mat": 0.0, "tc": 0.0, "kern": {}}
        return g

    for leaf, inside in zip(leaf_arr.tolist(), in_window.tolist()):
        if inside:
            g = group(leaf)
            g["count"] += 1
            g["cpu"] += float(ops.dur[leaf])

    # Kernels -> eligible op (forward) or, through the autograd link, the forward op (backward).
    gpu = t.gpu
    sel = np.flatnonzero(window_mask(ctx) & (gpu.kind == KERNEL))
    total_kernel = float(gpu.dur[sel].sum())
    cls = classify(t)
    matrix = (cls.category == CAT_INDEX["gemm"]) | (cls.category == CAT_INDEX["conv"])
    kop = kernel_op(t)[sel]
    resolved: dict[int, tuple[int, bool]] = {}
    for row, op in zip(sel.tolist(), kop.tolist()):
        hit = resolved.get(op)
        if hit is None:
            hit = _resolve(t, op, leaves, owner)
            resolved[op] = hit
        leaf, bwd = hit
        if leaf == NONE:
            continue
        g = group(leaf)
        d = float(gpu.dur[row])
        g["bwd" if bwd else "fwd"] += d
        if matrix[row]:
            g["mat"] += d
            g["tc"] += d if cls.tensor_core[row] == 1 else 0.0
            name = int(gpu.name[row])
            g["kern"][name] = g["kern"].get(name, 0.0) + d

    has_gpu = total_kernel > 0
    denom_cpu = steps_time_us(ctx) if ctx.steps else float(ops.dur[(ops.depth == 0) & (ops.kind == OP_CPU)].sum())
    dev = t.primary_device
    cc = dev.compute_capability[0] * 10 + dev.compute_capability[1] if dev and dev.compute_capability and dev.vendor == "nvidia" else None
    vendor = dev.vendor if dev else "unknown"
    rows: list[Row] = []
    for (name, _dims, op_dt), g in groups.items():
        first = g["first"]
        info = op_info(ctx, first)
        dims = t.decoded(int(ops.dims[first]))
        main_kernel = t.s(max(g["kern"], key=g["kern"].get)) if g["kern"] else None
        kdt = kernel_dtype(main_kernel) if main_kernel else None
        dtype = op_dt or kdt
        align_dt = "tf32" if kdt == "tf32" else dtype
        shape = op_shape(name, dims)
        al = alignment(name, dims, shape, align_dt) if shape else None
        ktime = g["fwd"] + g["bwd"]
        share = 100.0 * ktime / total_kernel if has_gpu else 0.0
        cpu_share = 100.0 * g["cpu"] / denom_cpu if denom_cpu else None
        rows.append(
            {
                "op": name,
                "op_class": op_class(name),
                "op_stack": list(info.stack),
                "top_level_op": info.stack[0] if info.stack else None,
                "input_dims": dims,
                "dtype": dtype,
                "kernel": main_kernel,
                "kernel_dtype": kdt,
                "align_dtype": align_dt,
                "m": shape.m if shape else None,
                "n": shape.n if shape else None,
                "k": shape.k if shape else None,
                "batch": shape.batch if shape else None,
                "conv": shape.conv if shape else None,
                "flops": shape.flops if shape else None,
                "achieved_tflops": shape.flops * g["count"] / g["fwd"] / 1e6 if shape and g["fwd"] > 0 and g["count"] else None,
                "count": g["count"],
                "cpu_time_us": g["cpu"],
                "kernel_time_us": ktime,
                "fwd_kernel_time_us": g["fwd"],
                "bwd_kernel_time_us": g["bwd"],
                "kernel_share_pct": share,
                "time_us": ktime if has_gpu else g["cpu"],
                "time_share_pct": share if has_gpu else cpu_share,
                "time_basis": "gpu" if has_gpu else "cpu",
                "tensor_core_kernel_pct": 100.0 * g["tc"] / g["mat"] if g["mat"] > 0 else None,
                "align": ALIGN.get(align_dt or ""),
                "misaligned_dims": al.misaligned if al else None,
                "padded": al.padded if al else None,
                "padded_dims": al.padded_dims if al else None,
                "padding_waste_pct": al.waste_pct if al else None,
                "source": info.source,
                "compute_capability": cc,
                "vendor": vendor,
                "fp32_speedup_hint": _hint(cc, vendor),
            }
        )
    rows.sort(key=lambda r: -(r["time_us"] or 0.0))
    return rows


def _resolve(t: Trace, op: int, leaves: set[int], owner: dict[int, int]) -> tuple[int, bool]:
    """(innermost eligible op, is_backward) for a kernel's launching op; NONE when unrelated."""
    if op == NONE:
        return NONE, False
    for o in reversed(op_chain(t, op)):
        if o in leaves:
            return o, False
        if o in owner:
            return owner[o], False
    f = forward_op(t, op)
    if f != NONE:
        if f in leaves:
            return f, True
        if f in owner:
            return owner[f], True
    return NONE, False
