"""GEMM / convolution shapes from an op's `Input Dims`: M, N, K, FLOPs, alignment and padding.

FLOP models follow pyprof2 / TraceLens (DESIGN §5): GEMM 2·B·M·N·K, conv 2·N·K·P·Q·C·R·S/g.
Kineto records tensor shapes but not conv stride/padding/dilation (those live in `Concrete
Inputs`, which the model does not keep), so conv output P×Q is taken as H×W ("same" padding,
stride 1): conv FLOPs are an estimate. Transposed convolutions cannot be told apart from
shapes alone and are read as ordinary convolutions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

# Ops whose work is one (batched) matrix multiply; the value says where the operands sit.
GEMM_OPS = {
    "aten::mm": "mm",
    "aten::addmm": "addmm",
    "aten::_addmm_activation": "addmm",
    "aten::bmm": "bmm",
    "aten::baddbmm": "baddbmm",
    "aten::matmul": "matmul",
    "aten::linear": "linear",
}
CONV_OPS = {
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
    "aten::miopen_convolution",
    "aten::mkldnn_convolution",
    "aten::convolution_overrideable",
    "aten::_slow_conv2d_forward",
    "aten::thnn_conv2d",
    "aten::slow_conv3d",
}

# Dimension multiple that avoids padding/tile waste, by compute dtype (NVIDIA DL performance
# guide: fp16/bf16 8 elements = 16 bytes, int8/fp8 16, tf32 4). fp32 SIMT kernels have none.
ALIGN = {"fp16": 8, "bf16": 8, "int8": 16, "fp8": 16, "tf32": 4}


def op_class(name: str) -> str | None:
    """'gemm' or 'conv' for Tensor-Core-eligible ops, None otherwise."""
    if name in GEMM_OPS:
        return "gemm"
    if name in CONV_OPS:
        return "conv"
    return None


@dataclass
class Shape:
    """The implicit GEMM of an op: C[M,N] += A[M,K]·B[K,N], `batch` times."""

    m: int
    n: int
    k: int
    batch: int = 1
    flops: float = 0.0
    # dim name -> (tensor index in Input Dims, axis) for the dims that padding would change
    where: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    conv: dict[str, int] | None = None  # N C H W K R S groups for convolutions


def _ints(d: Any) -> list[int] | None:
    if not isinstance(d, list) or not all(isinstance(x, int) for x in d):
        return None
    return d


def _prod(xs: list[int]) -> int:
    return int(math.prod(xs)) if xs else 1


def gemm_shape(op: str, dims: Any) -> Shape | None:
    """M, N, K (and batch) of a GEMM-like op from its Input Dims, None when unreadable."""
    kind = GEMM_OPS.get(op)
    if kind is None or not isinstance(dims, list):
        return None
    off = 1 if kind in ("addmm", "baddbmm") else 0
    if len(dims) < off + 2:
        return None
    a, b = _ints(dims[off]), _ints(dims[off + 1])
    if a is None or b is None or not a or not b:
        return None
    ia, ib = off, off + 1
    if kind in ("mm", "addmm") and len(a) == 2 and len(b) == 2:
        s = Shape(m=a[0], k=a[1], n=b[1], where={"M": [(ia, 0)], "K": [(ia, 1), (ib, 0)], "N": [(ib, 1)]})
    elif kind in ("bmm", "baddbmm") and len(a) == 3 and len(b) == 3:
        s = Shape(m=a[1], k=a[2], n=b[2], batch=a[0], where={"M": [(ia, 1)], "K": [(ia, 2), (ib, 1)], "N": [(ib, 2)]})
    elif kind == "linear" and len(b) == 2:
        # input [..., K] x weight[N, K]^T: the leading input dims fold into M
        s = Shape(m=_prod(a[:-1]), k=a[-1], n=b[0], where={"M": [(ia, len(a) - 2)] if len(a) >= 2 else [], "K": [(ia, len(a) - 1), (ib, 1)], "N": [(ib, 0)]})
    elif kind == "matmul":
        s = _matmul(a, b)
        if s is None:
            return None
    else:
        return None
    if kind in ("addmm", "baddbmm"):
        _add_bias(s, dims, 0, "N", s.n)
    elif kind == "linear":
        _add_bias(s, dims, 2, "N", s.n)
    s.flops = 2.0 * s.batch * s.m * s.n * s.k
    return s


def _matmul(a: list[int], b: list[int]) -> Shape | None:
    if len(a) == 1 and len(b) == 1:
        return Shape(m=1, n=1, k=a[0], where={"K": [(0, 0), (1, 0)]})
    if len(b) == 1:  # matrix (or batch) x vector
        return Shape(m=_prod(a[:-1]), n=1, k=a[-1], where={"M": [(0, len(a) - 2)], "K": [(0, len(a) - 1), (1, 0)]})
    if len(a) == 1:  # vector x matrix
        return Shape(m=1, n=b[-1], k=a[0], batch=_prod(b[:-2]), where={"K": [(0, 0), (1, len(b) - 2)], "N": [(1, len(b) - 1)]})
    if len(b) == 2:  # [..., M, K] x [K, N]: torch folds the batch into M
        return Shape(m=_prod(a[:-1]), n=b[1], k=a[-1], where={"M": [(0, len(a) - 2)], "K": [(0, len(a) - 1), (1, 0)], "N": [(1, 1)]})
    lead_a, lead_b = a[:-2], b[:-2]
    n_lead = max(len(lead_a), len(lead_b))
    lead_a = [1] * (n_lead - len(lead_a)) + lead_a
    lead_b = [1] * (n_lead - len(lead_b)) + lead_b
    batch = _prod([max(x, y) for x, y in zip(lead_a, lead_b)])
    return Shape(
        m=a[-2], n=b[-1], k=a[-1], batch=batch,
        where={"M": [(0, len(a) - 2)], "K": [(0, len(a) - 1), (1, len(b) - 2)], "N": [(1, len(b) - 1)]},
    )


def conv_shape(op: str, dims: Any) -> Shape | None:
    """Convolution as an implicit GEMM: M = N·P·Q, N = K, K = C·R·S/g (P, Q taken as H, W)."""
    if op not in CONV_OPS or not isinstance(dims, list) or len(dims) < 2:
        return None
    x, w = _ints(dims[0]), _ints(dims[1])
    if x is None or w is None or len(x) < 3 or len(x) != len(w):
        return None
    n, c, spatial = x[0], x[1], x[2:]
    kk, c_per_g, filt = w[0], w[1], w[2:]
    if c_per_g <= 0 or c % c_per_g:
        return None
    groups = c // c_per_g
    pq, rs = _prod(spatial), _prod(filt)
    conv = {"N": n, "C": c, "K": kk, "groups": groups}
    names = ("H", "W") if len(spatial) == 2 else ("D", "H", "W")[-len(spatial):]
    for nm, v in zip(names, spatial):
        conv[nm] = v
    for nm, v in zip(("R", "S") if len(filt) == 2 else ("T", "R", "S")[-len(filt):], filt):
        conv[nm] = v
    # A grouped convolution is `groups` GEMMs over C/g input and K/g output channels: those are
    # the dims that tile, and padding them scales the input's C and the weight's K by g.
    cdim, kdim = ("C", "K") if groups == 1 else ("C/g", "K/g")
    s = Shape(m=n * pq, n=kk, k=c_per_g * rs, where={cdim: [(0, 1), (1, 1)], kdim: [(1, 0)]}, conv=conv)
    _add_bias(s, dims, 2, kdim, kk)
    s.flops = 2.0 * n * kk * pq * c * rs / groups
    return s


def op_shape(op: str, dims: Any) -> Shape | None:
    return gemm_shape(op, dims) if op in GEMM_OPS else conv_shape(op, dims)


def ceil_to(x: int, m: int) -> int:
    return -(-x // m) * m


def checked_dims(s: Shape) -> dict[str, int]:
    """The dims whose alignment matters: M, N, K for GEMMs (dims of 1 are GEMV, skipped);
    input and output channels C, K for convolutions (NHWC Tensor Core kernels tile channels), per
    group for grouped ones. Depthwise convolutions (one input channel per group) run dedicated
    SIMT kernels whatever the channel count (cuDNN's *_shmem_tiling on an H100,
    fixtures/gpu/depthwise_conv_fp16): no padding helps them, so nothing is checked."""
    if s.conv is not None:
        g = s.conv["groups"]
        if g == 1:
            return {"C": s.conv["C"], "K": s.conv["K"]}
        if s.conv["C"] // g == 1:
            return {}
        return {"C/g": s.conv["C"] // g, "K/g": s.conv["K"] // g}
    return {d: v for d, v in (("M", s.m), ("N", s.n), ("K", s.k)) if v > 1}


@dataclass
class Alignment:
    align: int
    misaligned: list[str]  # e.g. ["M=141"]
    padded: dict[str, int]  # dim -> padded value (misaligned dims only)
    waste_pct: float  # share of the padded GEMM's work that is padding
    padded_dims: Any  # the op's Input Dims with the misaligned dims padded


def alignment(op: str, dims: Any, s: Shape, dtype: str | None) -> Alignment | None:
    """Misaligned dims for `dtype` (None when the dtype has no alignment rule, e.g. fp32)."""
    align = ALIGN.get(dtype or "")
    if align is None:
        return None
    check = checked_dims(s)
    bad = {d: v for d, v in check.items() if v % align}
    padded = {d: ceil_to(v, align) for d, v in bad.items()}
    if s.conv is not None:
        work = pwork = 1
        for d, v in check.items():
            work *= v
            pwork *= padded.get(d, v)
    else:
        work = s.m * s.n * s.k
        pwork = padded.get("M", s.m) * padded.get("N", s.n) * padded.get("K", s.k)
    waste = 100.0 * (1 - work / pwork) if pwork else 0.0
    return Alignment(align, [f"{d}={v}" for d, v in bad.items()], padded, waste, _pad_dims(dims, s, padded, align))


def _pad_dims(dims: Any, s: Shape, padded: dict[str, int], align: int) -> Any:
    out = [list(d) if isinstance(d, list) else d for d in dims]
    for dim, places in s.where.items():
        if dim not in padded:
            continue
        for ti, ax in places:
            t = out[ti]
            if not isinstance(t, list) or ax >= len(t):
                continue
            if dim == "M" and s.m != t[ax]:
                # M folds leading dims (linear / matmul): pad the innermost one until the
                # product is a multiple of `align` (e.g. pad the sequence length).
                rest = s.m // t[ax] if t[ax] else 1
                v = t[ax]
                while (rest * v) % align:
                    v += 1
                t[ax] = v
            elif dim.endswith("/g") and (ti, ax) != (1, 1):
                t[ax] = padded[dim] * s.conv["groups"]  # type: ignore[index]  # totals: input C, weight K, bias
            else:
                t[ax] = padded[dim]
    return out


def _add_bias(s: Shape, dims: list[Any], idx: int, dim: str, size: int) -> None:
    """A bias operand follows N (GEMM) or K (conv): pad it with them."""
    if idx < len(dims):
        b = _ints(dims[idx])
        if b and b[-1] == size:
            s.where.setdefault(dim, []).append((idx, len(b) - 1))
