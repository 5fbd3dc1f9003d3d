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
- Convolutions are grouped by their Concrete Inputs too (stride, padding, ... change the shape
  of the same Input Dims); `shape_basis` says whether their geometry came from them or was assumed.
- Time share on CPU-only traces (no kernels in the analysis window): `time_us` / `time_share_pct`
  fall back to the ops' CPU time over the analysis steps' time (else over all top-level CPU op
  time); `time_basis` says which ('gpu' or 'cpu').
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from perflint.facts import Context, Fields, Row, fact, typed
from perflint.facts._common import in_steps, kernel_op, primary_device, window_mask, window_us
from perflint.facts._group import Groups, dense_ids, present_ids, sums
from perflint.facts._optree import depth_is_nesting, op_arrays, op_info, op_levels, propagate
from perflint.ids import isin_ids
from perflint.metrics.dtypes import kernel_dtype, op_dtype
from perflint.metrics.kernel_classes import CAT_INDEX, classify
from perflint.metrics.shapes import ALIGN, alignment, op_class, op_shape
from perflint.model import KERNEL, NONE, OP_CPU, Trace

FIELDS: Fields = {
    "op": typed("innermost Tensor-Core-eligible op (aten::mm, addmm, bmm, baddbmm, matmul, linear, conv*)", "text"),
    "op_class": typed("gemm | conv", "text"),
    "op_stack": typed("ops from outermost to innermost (first instance)", "list"),
    "top_level_op": typed("outermost op on the stack (first instance)", "text"),
    "input_dims": typed("the op's Input Dims", "list"),
    "dtype": typed("compute dtype: the op's first floating input, else the main matrix kernel's name", "text"),
    "kernel": typed("the matrix (gemm/conv) kernel with the most time under the op", "text"),
    "kernel_pass": typed("'backward' when that kernel ran in the op's backward pass (the op and its dims are the forward op's), null otherwise", "text"),
    "kernel_dtype": typed("math dtype the kernel classification reads from that kernel's name (tf32 shows here, "
    "also for cutlass tensorop_s1688 kernels on sm80+ whose names do not spell it)", "text"),
    "kernel_align": typed("elements per load the kernel's name says it assumes (cutlass _alignN, xmma _alignaN)", "integer"),
    "kernel_note": typed("'the library fell back to <kernel> (N-element loads instead of M)' when kernel_align < align, else null", "text"),
    "align_dtype": typed("dtype that sets the alignment (tf32 when the kernel is tf32, else dtype)", "text"),
    "m": typed("implicit GEMM M (conv: N*P*Q, output pixels)", "integer"),
    "n": typed("implicit GEMM N (conv: output channels K)", "integer"),
    "k": typed("implicit GEMM K (conv: C*R*S/groups)", "integer"),
    "batch": typed("batch count (bmm / batched matmul), 1 otherwise", "integer"),
    "conv": typed("convolution dims {N, C, H, W, K, R, S, P, Q, groups} (3-D adds D, T, Z) and geometry "
    "{stride, padding, dilation, transposed[, output_padding]}", "object"),
    "shape_basis": typed("convolutions: 'concrete inputs' (geometry from the op's arguments) or 'assumed stride 1' "
    "(none recorded: same padding, stride 1, P, Q = H, W); null for GEMMs", "text"),
    "flops": typed("FLOPs per call: 2*batch*M*N*K, conv 2*N*K*P*Q*C*R*S/g (transposed: 2*N*C*H*W*K*R*S/g)", "number"),
    "achieved_tflops": typed("flops*count / forward kernel time (null without kernels)", "number"),
    "count": typed("calls in the analysis steps", "integer"),
    "cpu_time_us": "CPU time of those calls",
    "kernel_time_us": "GPU time of kernels launched under the op, forward + backward",
    "fwd_kernel_time_us": "forward part of kernel_time_us",
    "bwd_kernel_time_us": "backward kernels attributed via the autograd sequence number",
    "fwd_matrix_time_us": "forward time of the op's GEMM / convolution kernels alone (fwd_kernel_time_us without copies, casts and bias kernels)",
    "kernel_share_pct": "kernel_time_us as % of all kernel time in the analysis steps",
    "time_us": "kernel_time_us, or cpu_time_us on a trace without GPU kernels",
    "time_share_pct": "kernel_share_pct, or CPU time share on a trace without GPU kernels",
    "time_basis": typed("gpu | cpu: what time_us / time_share_pct measure", "text"),
    "tensor_core_kernel_pct": "% of the op's matrix-kernel time in Tensor Core kernels (null: none)",
    "align": typed("dim multiple for align_dtype (8 fp16/bf16, 16 int8/fp8, 4 tf32; null fp32)", "integer"),
    "misaligned_dims": typed("dims not multiples of align, e.g. ['M=141'] (GEMM M/N/K, conv C/K)", "list"),
    "misaligned_values": typed("the values of those dims, e.g. [141]", "list"),
    "pad_hint": typed("each misaligned dim and its padded value, e.g. 'M 141->144, N 30522->30528'", "text"),
    "padded": typed("misaligned dim -> padded value", "object"),
    "padded_dims": typed("Input Dims with the misaligned dims padded", "list"),
    "padding_waste_pct": "% of the padded problem's work that is padding",
    "source": typed("user's file:line, when stacks were recorded", "text"),
    "compute_capability": typed("major*10+minor for NVIDIA devices", "integer"),
    "vendor": typed("nvidia | amd | mtia | unknown", "text"),
    "fp32_speedup_hint": typed("how to move fp32 matrix math to Tensor Cores on this device", "text"),
}


def _eligible(t: Trace) -> np.ndarray:
    """Op indices of Tensor-Core-eligible CPU ops."""
    ops = t.ops
    want = np.fromiter((n for n in present_ids(ops.name) if op_class(t.s(n))), dtype=np.int32)
    return np.flatnonzero(isin_ids(ops.name, want) & (ops.kind == OP_CPU))


def _leaves_walk(t: Trace, cand: np.ndarray) -> tuple[set[int], dict[int, int]]:
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


def _targets(ctx: Context, cand: np.ndarray) -> np.ndarray:
    """Per op: itself for an innermost eligible op, its innermost eligible op for an eligible
    wrapper, else NONE.

    A wrapper's innermost op is the first of its eligible descendants in the order the original
    walk (`_leaves_walk`) visits them: deepest first, ties in set order. That descendant is one of
    the deepest, so it has no eligible op below it: a leaf, found here with one bottom-up min per
    level instead of a walk from every eligible op to the root.
    """
    t = ctx.trace
    ops = t.ops
    n = len(ops)
    target = np.full(n, NONE, dtype=np.int64)
    if len(cand) == 0:
        return target
    parent = ops.parent
    has = parent != NONE
    if not depth_is_nesting(ctx):
        leaves, owner = _leaves_walk(t, cand)  # depth not the nesting depth: keep the walk's own order
        for o in leaves:
            target[o] = o
        for o, leaf in owner.items():
            target[o] = leaf
        return target
    # sorted(set(cand), key=-depth): a stable sort of the set's iteration order by -depth
    in_set = np.fromiter(set(cand.tolist()), dtype=np.int64)
    seq = in_set[np.argsort(-ops.depth[in_set].astype(np.int64), kind="stable")]
    rank = np.full(n, len(seq), dtype=np.int64)
    rank[seq] = np.arange(len(seq))
    eligible = np.full(n, NONE, dtype=np.int64)
    eligible[cand] = cand
    inner = propagate(ctx, eligible)  # innermost eligible op on each chain (self included)
    up = np.where(has, inner[np.where(has, parent, 0)], NONE)  # nearest eligible strict ancestor
    best = np.full(n, len(seq), dtype=np.int64)  # min rank over eligible strict descendants
    is_cand = np.zeros(n, dtype=bool)
    is_cand[cand] = True
    lv = op_levels(ctx)
    for k in reversed(range(len(lv))):
        lvl = lv.ops(k)
        c = lvl[is_cand[lvl]]
        c = c[up[c] != NONE]
        if len(c):
            np.minimum.at(best, up[c], np.minimum(rank[c], best[c]))
    leaf = is_cand & (best == len(seq))
    target[leaf] = np.flatnonzero(leaf)
    wrap = is_cand & ~leaf
    target[wrap] = seq[best[wrap]]
    return target


def _hint(cc: int | None, vendor: str, op_class: str | None) -> str:
    if vendor != "nvidia" or cc is None:
        return "use bf16/fp16 autocast (torch.autocast)"
    if cc < 80:
        return (
            "use AMP: torch.autocast('cuda', dtype=torch.float16) with torch.cuda.amp.GradScaler "
            "(no TF32/bf16 before compute capability 8.0)"
        )
    if op_class == "conv":
        # PyTorch allows TF32 for cuDNN convolutions by default: a SIMT kernel here is cuDNN's choice.
        return (
            "cuDNN may use TF32 for convolutions by default (torch.backends.cudnn.allow_tf32) yet chose "
            "SIMT kernels: set torch.backends.cudnn.benchmark = True so it times the Tensor Core ones, "
            "check allow_tf32 is not turned off, or run in bf16 with torch.autocast('cuda', dtype=torch.bfloat16)"
        )
    return (
        "enable TF32 for matmuls (torch.set_float32_matmul_precision('high') or "
        "torch.backends.cuda.matmul.allow_tf32 = True) or run in bf16 with torch.autocast('cuda', dtype=torch.bfloat16)"
    )


@fact("op_groups", key=("op", "input_dims", "dtype"), fields=FIELDS)
def op_groups(ctx: Context) -> list[Row]:
    """GEMM-like and convolution ops per op x shapes x dtype, with kernel time, FLOPs, alignment."""
    t = ctx.trace
    ops = t.ops
    cand = _eligible(t)
    if len(cand) == 0:
        return []
    target = _targets(ctx, cand)
    leaf_arr = cand[target[cand] == cand]
    in_window = in_steps(ctx, ops.ts[leaf_arr])
    win_leaves = leaf_arr[in_window]

    # Kernels -> eligible op (forward) or, through the autograd link, the forward op (backward).
    gpu = t.gpu
    sel = np.flatnonzero(window_mask(ctx) & (gpu.kind == KERNEL))
    total_kernel = float(gpu.dur[sel].sum())
    cls = classify(t)
    matrix = (cls.category == CAT_INDEX["gemm"]) | (cls.category == CAT_INDEX["conv"])
    kop = kernel_op(t, sel).astype(np.int64)
    linked = kop != NONE
    hit = np.full(len(sel), NONE, dtype=np.int64)
    bwd = np.zeros(len(sel), dtype=bool)
    if linked.any():
        res = propagate(ctx, target)  # innermost eligible op (or its leaf) on the launching chain
        hit[linked] = res[kop[linked]]
        fwd = op_arrays(ctx).fwd
        f = np.full(len(sel), NONE, dtype=np.int64)
        f[linked] = fwd[kop[linked]]
        back = (hit == NONE) & (f != NONE)
        hit[back] = target[f[back]]
        bwd = back & (hit != NONE)
    krows = np.flatnonzero(hit != NONE)

    # Groups in the order the rows create them: in-window leaves, then kernels' leaves.
    touched = np.concatenate([win_leaves, hit[krows]])
    is_conv = np.zeros(len(t.strings) + 1, dtype=bool)  # the last slot: NONE
    for nid in present_ids(ops.name[touched]):
        is_conv[nid] = op_class(t.s(int(nid))) == "conv"
    conc = np.where(is_conv[ops.name[touched]], ops.concrete[touched], NONE)
    quad = Groups(ops.name[touched], ops.dims[touched], ops.types[touched], conc)
    names, _ = dense_ids(
        (t.s(int(ops.name[o])), repr(t.decoded(int(ops.dims[o]))), op_dtype(t.decoded(int(ops.types[o]))), repr(t.decoded(int(c))))
        for o, c in zip(touched[quad.first].tolist(), conc[quad.first].tolist())
    )
    groups = Groups(names[quad.gid])
    gid = groups.gid
    ng = len(groups)
    nw = len(win_leaves)
    gw, gk = gid[:nw], gid[nw:]
    # Sums add in row order from 0.0, as the per-row += did: the same floats.
    count = np.bincount(gw, minlength=ng)
    cpu = sums(gw, ops.dur[win_leaves], ng)
    rows_k = sel[krows]
    d = gpu.dur[rows_k]
    kb = bwd[krows]
    fwd_t = sums(gk[~kb], d[~kb], ng)
    bwd_t = sums(gk[kb], d[kb], ng)
    km = matrix[rows_k]
    mat = sums(gk[km], d[km], ng)
    fmat = sums(gk[km & ~kb], d[km & ~kb], ng)
    ktc = km & (cls.tensor_core[rows_k] == 1)
    tc = sums(gk[ktc], d[ktc], ng)
    # Matrix kernel time per (group, kernel name); the main kernel is the first with the most.
    kern: list[dict[int, float]] = [{} for _ in range(ng)]
    kern_bwd: list[dict[int, float]] = [{} for _ in range(ng)]  # of that, launched in backward
    if km.any():
        pair = Groups(gk[km], gpu.name[rows_k[km]])
        psum = sums(pair.gid, d[km], len(pair))
        pbwd = sums(pair.gid, np.where(kb[km], d[km], 0.0), len(pair))
        for f0, total, back in zip(pair.first.tolist(), psum.tolist(), pbwd.tolist()):
            kern[int(gk[km][f0])][int(gpu.name[rows_k[km][f0]])] = total
            kern_bwd[int(gk[km][f0])][int(gpu.name[rows_k[km][f0]])] = back

    # Each group's kernels (and its matrix kernels), for the step model's what-if of its fix.
    korder = np.argsort(gk, kind="stable")
    kbound = np.searchsorted(gk[korder], np.arange(ng + 1)).tolist()
    has_gpu = total_kernel > 0
    denom_cpu = (window_us(ctx) or 0.0) if ctx.steps else float(ops.dur[(ops.depth == 0) & (ops.kind == OP_CPU)].sum())
    dev = primary_device(ctx)
    cc = dev.compute_capability[0] * 10 + dev.compute_capability[1] if dev and dev.compute_capability and dev.vendor == "nvidia" else None
    vendor = dev.vendor if dev else "unknown"
    rows: list[Row] = []
    counts, cpus, fwds, bwds, mats, tcs, fmats = (x.tolist() for x in (count, cpu, fwd_t, bwd_t, mat, tc, fmat))
    for gi, pos in enumerate(groups.first.tolist()):
        first = int(touched[pos])
        info = op_info(ctx, first)
        name = t.s(int(ops.name[first]))
        dims = t.decoded(int(ops.dims[first]))
        op_dt = op_dtype(t.decoded(int(ops.types[first])))
        g = {"count": counts[gi], "cpu": cpus[gi], "fwd": fwds[gi], "bwd": bwds[gi], "mat": mats[gi], "tc": tcs[gi], "kern": kern[gi]}
        main_id = max(g["kern"], key=g["kern"].get) if g["kern"] else None
        main_kernel = t.s(main_id) if main_id is not None else None
        # The op and its shapes are the forward op's; its main kernel may be a backward one.
        main_pass = "backward" if main_id is not None and 2 * kern_bwd[gi][main_id] > g["kern"][main_id] else None
        kdt = kernel_dtype(main_kernel) if main_kernel else None
        k_align = _kernel_align(main_kernel)
        dtype = op_dt or kdt
        align_dt = "tf32" if kdt == "tf32" else dtype
        concrete = t.decoded(int(conc[pos]))
        shape = op_shape(name, dims, concrete)
        al = alignment(name, dims, shape, align_dt) if shape else None
        ktime = g["fwd"] + g["bwd"]
        share = 100.0 * ktime / total_kernel if has_gpu else 0.0
        cpu_share = 100.0 * g["cpu"] / denom_cpu if denom_cpu else None
        mine = korder[kbound[gi] : kbound[gi + 1]]
        rows.append(
            {
                "_gpu": rows_k[mine],
                "_gpu_matrix": rows_k[mine[km[mine]]],
                "op": name,
                "op_class": op_class(name),
                "op_stack": list(info.stack),
                "top_level_op": info.stack[0] if info.stack else None,
                "input_dims": dims,
                "dtype": dtype,
                "kernel": main_kernel,
                "kernel_pass": main_pass,
                "kernel_dtype": kdt,
                "kernel_align": k_align,
                "kernel_note": _kernel_note(main_kernel, k_align, ALIGN.get(align_dt or ""), al),
                "align_dtype": align_dt,
                "m": shape.m if shape else None,
                "n": shape.n if shape else None,
                "k": shape.k if shape else None,
                "batch": shape.batch if shape else None,
                "conv": shape.conv if shape else None,
                "shape_basis": shape.basis if shape else None,
                "flops": shape.flops if shape else None,
                "achieved_tflops": shape.flops * g["count"] / g["fwd"] / 1e6 if shape and g["fwd"] > 0 and g["count"] else None,
                "count": g["count"],
                "cpu_time_us": g["cpu"],
                "kernel_time_us": ktime,
                "fwd_kernel_time_us": g["fwd"],
                "bwd_kernel_time_us": g["bwd"],
                "fwd_matrix_time_us": fmats[gi],
                "kernel_share_pct": share,
                "time_us": ktime if has_gpu else g["cpu"],
                "time_share_pct": share if has_gpu else cpu_share,
                "time_basis": "gpu" if has_gpu else "cpu",
                "tensor_core_kernel_pct": 100.0 * g["tc"] / g["mat"] if g["mat"] > 0 else None,
                "align": ALIGN.get(align_dt or ""),
                "misaligned_dims": al.misaligned if al else None,
                "misaligned_values": [int(d.split("=")[1]) for d in al.misaligned] if al else None,
                "pad_hint": ", ".join(f"{d.split('=')[0]} {d.split('=')[1]}->{al.padded[d.split('=')[0]]}" for d in al.misaligned) if al and al.misaligned else None,
                "padded": al.padded if al else None,
                "padded_dims": al.padded_dims if al else None,
                "padding_waste_pct": al.waste_pct if al else None,
                "source": info.source,
                "compute_capability": cc,
                "vendor": vendor,
                "fp32_speedup_hint": _hint(cc, vendor, op_class(name)),
            }
        )
    rows.sort(key=lambda r: -(r["time_us"] or 0.0))
    return rows


_KERNEL_ALIGN = re.compile(r"_aligna?(\d+)")
_SHORT = re.compile(r"(cutlass_\w+|sm\d+_xmma_\w+|(?:ampere|turing|volta)_\w+)")


def _kernel_align(kernel: str | None) -> int | None:
    m = _KERNEL_ALIGN.search(kernel) if kernel else None
    return int(m.group(1)) if m else None


def _kernel_note(kernel: str | None, k_align: int | None, align: int | None, al: Any) -> str | None:
    """Odd dims often cost more than their padding: the library drops to a kernel with narrower
    loads (on an H100, 4100/4090 hidden sizes took bf16 GEMMs from nvjet_sm90 to cutlass_80
    ..._align2 kernels and tripled GEMM time: fixtures/gpu/regress_head)."""
    if not kernel or k_align is None or not align or k_align >= align or al is None or not al.misaligned:
        return None
    m = _SHORT.search(kernel)
    short = m.group(1) if m else kernel.split("(")[0][:80]
    return f"the library fell back to {short} ({k_align}-element loads instead of {align})"
