"""GEMM / convolution shapes from an op's `Input Dims`: M, N, K, FLOPs, alignment and padding.

FLOP models follow pyprof2 / TraceLens: GEMM 2·B·M·N·K, conv 2·N·K·P·Q·C·R·S/g. A convolution's
stride, padding, dilation, groups and transposition come from the op's `Concrete Inputs` (its
scalar arguments as text; each op's argument order is its schema's, `CONV_ARGS`); without them
the output P×Q is taken as H×W ("same" padding, stride 1), groups come from the weight shape,
and a convolution is transposed only when its name says so. `Shape.basis` says which was used.
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
@dataclass(frozen=True)
class ConvArgs:
    """Where a convolution op's arguments sit in its Input Dims / Concrete Inputs (the op's schema
    in PyTorch's native_functions.yaml); None: the op has no such argument (its default holds)."""

    bias: int | None
    stride: int | None
    padding: int | None
    dilation: int | None
    groups: int | None
    transposed: int | None = None  # a bool argument (aten::convolution and its kin)
    output_padding: int | None = None
    always_transposed: bool = False  # a transposed convolution by name


_CONVOLUTION = ConvArgs(bias=2, stride=3, padding=4, dilation=5, transposed=6, output_padding=7, groups=8)
_CONV_ND = ConvArgs(bias=2, stride=3, padding=4, dilation=5, groups=6)
# "the goofy argument order from torch.nn.functional": output_padding and groups before dilation
_CONV_TRANSPOSE_ND = ConvArgs(bias=2, stride=3, padding=4, output_padding=5, groups=6, dilation=7, always_transposed=True)
# cuDNN / MIOpen / oneDNN ops put padding before stride; cuDNN's take no bias
_MIOPEN = ConvArgs(bias=2, padding=3, stride=4, dilation=5, groups=6)
# im2col ("slow") ops: (self, weight, kernel_size, bias, stride, padding); no dilation or groups
_SLOW = ConvArgs(bias=3, stride=4, padding=5, dilation=None, groups=None)
CONV_ARGS: dict[str, ConvArgs] = {
    "aten::conv1d": _CONV_ND,
    "aten::conv2d": _CONV_ND,
    "aten::conv3d": _CONV_ND,
    "aten::convolution": _CONVOLUTION,
    "aten::_convolution": _CONVOLUTION,
    "aten::convolution_overrideable": _CONVOLUTION,
    "aten::conv_transpose1d": _CONV_TRANSPOSE_ND,
    "aten::conv_transpose2d": _CONV_TRANSPOSE_ND,
    "aten::conv_transpose3d": _CONV_TRANSPOSE_ND,
    "aten::cudnn_convolution": ConvArgs(bias=None, padding=2, stride=3, dilation=4, groups=5),
    "aten::cudnn_convolution_transpose": ConvArgs(
        bias=None, padding=2, output_padding=3, stride=4, dilation=5, groups=6, always_transposed=True
    ),
    "aten::miopen_convolution": _MIOPEN,
    "aten::miopen_depthwise_convolution": _MIOPEN,
    "aten::miopen_convolution_transpose": ConvArgs(
        bias=2, padding=3, output_padding=4, stride=5, dilation=6, groups=7, always_transposed=True
    ),
    "aten::mkldnn_convolution": _MIOPEN,
    "aten::_slow_conv2d_forward": _SLOW,
    "aten::thnn_conv2d": _SLOW,
    "aten::slow_conv3d": _SLOW,
    "aten::slow_conv_transpose2d": ConvArgs(
        bias=3, stride=4, padding=5, output_padding=6, dilation=7, groups=None, always_transposed=True
    ),
    "aten::slow_conv_transpose3d": ConvArgs(
        bias=3, stride=4, padding=5, output_padding=6, dilation=7, groups=None, always_transposed=True
    ),
}
CONV_OPS = frozenset(CONV_ARGS)
# Where a shape's convolution geometry came from.
BASIS_CONCRETE = "concrete inputs"
BASIS_ASSUMED = "assumed stride 1"

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
    # convolutions: N C K groups, input H W (D), filter R S (T), output P Q (Z), and the
    # geometry (stride, padding, dilation lists; transposed; output_padding when transposed)
    conv: dict[str, Any] | None = None
    basis: str | None = None  # convolutions: BASIS_CONCRETE or BASIS_ASSUMED


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
        mm = _matmul(a, b)
        if mm is None:
            return None
        s = mm
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


def _text(v: Any) -> str | None:
    return v.strip().strip("'\"") if isinstance(v, str) else None


def _int_list(v: Any, nd: int) -> list[int] | None:
    """'[2, 2]' (or '2', broadcast like PyTorch's size-1 lists) as `nd` ints; None if unreadable."""
    t = _text(v)
    if not t:
        return None
    body = t[1:-1] if t.startswith("[") and t.endswith("]") else t
    try:
        vals = [int(x) for x in body.split(",")]
    except ValueError:
        return None
    if len(vals) == 1:
        vals = vals * nd
    return vals if len(vals) == nd else None


def _int(v: Any) -> int | None:
    t = _text(v)
    try:
        return int(t) if t else None
    except ValueError:
        return None


@dataclass(frozen=True)
class _Geometry:
    stride: list[int]
    padding: list[int] | str  # ints per spatial dim, or "same"
    dilation: list[int]
    groups: int | None  # None: from the weight shape
    transposed: bool
    output_padding: list[int]


def _geometry(args: ConvArgs, concrete: Any, nd: int) -> _Geometry | None:
    """The geometry an op's Concrete Inputs give (argument defaults where the op has none);
    None when they are missing or any argument the op has cannot be read."""
    if not isinstance(concrete, list):
        return None

    def at(i: int | None) -> Any:
        return concrete[i] if i is not None and i < len(concrete) else None

    ones, zeros = [1] * nd, [0] * nd
    stride = _int_list(at(args.stride), nd) if args.stride is not None else ones
    dilation = _int_list(at(args.dilation), nd) if args.dilation is not None else ones
    padding: list[int] | str | None = zeros
    if args.padding is not None:
        word = _text(at(args.padding))
        padding = "same" if word == "same" else zeros if word == "valid" else _int_list(at(args.padding), nd)
    groups = _int(at(args.groups)) if args.groups is not None else 1
    transposed = args.always_transposed
    if args.transposed is not None:
        flag = _text(at(args.transposed))
        if flag not in ("True", "False"):
            return None
        transposed = flag == "True"
    out_pad = _int_list(at(args.output_padding), nd) if transposed and args.output_padding is not None else zeros
    if stride is None or dilation is None or padding is None or groups is None or out_pad is None:
        return None
    if min(stride) < 1 or min(dilation) < 1 or groups < 1 or (padding == "same" and (transposed or stride != ones)):
        return None  # what PyTorch refuses
    return _Geometry(stride, padding, dilation, groups, transposed, out_pad)


def _out_size(h: int, r: int, g: _Geometry, i: int) -> int:
    """Output extent along spatial dim i (PyTorch's Conv / ConvTranspose size formulas)."""
    span = g.dilation[i] * (r - 1)
    if isinstance(g.padding, str):  # "same", the one word _geometry keeps
        return h
    pad = g.padding[i]
    if g.transposed:
        return (h - 1) * g.stride[i] - 2 * pad + span + g.output_padding[i] + 1
    return (h + 2 * pad - span - 1) // g.stride[i] + 1


def conv_shape(op: str, dims: Any, concrete: Any = None) -> Shape | None:
    """Convolution as an implicit GEMM over output pixels: M = N·P·Q, N = K output channels,
    K = C·R·S/g. P, Q from stride/padding/dilation in `concrete` (the op's Concrete Inputs);
    without them "same" padding and stride 1 (P, Q = H, W), groups from the weight shape.

    A transposed convolution (weight [C, K/g, R, S]) computes the data gradient of the forward
    convolution from its output back to its input: M, N, K are those of the dense GEMM over its
    output pixels, and its FLOPs count only the products that exist, 2·N·C·H·W·(K/g)·R·S (as
    PyTorch's flop counter does): 2·M·N·K·(H·W)/(P·Q), which a stride above 1 makes smaller."""
    args = CONV_ARGS.get(op)
    if args is None or not isinstance(dims, list) or len(dims) < 2:
        return None
    x, w = _ints(dims[0]), _ints(dims[1])
    if x is None or w is None or not 3 <= len(x) <= 5 or len(x) != len(w):
        return None
    nd = len(x) - 2
    n, c, spatial, filt = x[0], x[1], x[2:], w[2:]
    geo = _geometry(args, concrete, nd)
    basis = BASIS_CONCRETE
    if geo is None:
        basis = BASIS_ASSUMED
        geo = _Geometry([1] * nd, "same", [1] * nd, None, args.always_transposed, [0] * nd)
    if geo.transposed:
        # weight [C_in, C_out/g, ...]: the groups cannot be read from shapes
        g = geo.groups or 1
        if w[0] != c or c % g:
            return None
        kk, c_per_g = w[1] * g, c // g
        cwhere, kwhere = [(0, 1), (1, 0)], [(1, 1)]
    else:
        c_per_g = w[1]
        if c_per_g <= 0 or c % c_per_g or (geo.groups is not None and c_per_g * geo.groups != c):
            return None
        g, kk = c // c_per_g, w[0]
        cwhere, kwhere = [(0, 1), (1, 1)], [(1, 0)]
    out = [_out_size(h, r, geo, i) for i, (h, r) in enumerate(zip(spatial, filt))]
    if min(out) < 1 or min(spatial) < 1:
        return None
    conv: dict[str, Any] = {"N": n, "C": c, "K": kk, "groups": g}
    for names, vals in ((("D", "H", "W"), spatial), (("T", "R", "S"), filt), (("Z", "P", "Q"), out)):
        conv.update(zip(names[3 - nd :], vals))
    conv.update(stride=geo.stride, padding=geo.padding, dilation=geo.dilation, transposed=geo.transposed)
    if geo.transposed:
        conv["output_padding"] = geo.output_padding
    # A grouped convolution is `groups` GEMMs over C/g input and K/g output channels: those are
    # the dims that tile, and padding them scales the input's C and the weight's K by g.
    cdim, kdim = ("C", "K") if g == 1 else ("C/g", "K/g")
    pq, hw, rs = _prod(out), _prod(spatial), _prod(filt)
    s = Shape(m=n * pq, n=kk, k=c_per_g * rs, where={cdim: cwhere, kdim: kwhere}, conv=conv, basis=basis)
    if args.bias is not None:
        _add_bias(s, dims, args.bias, kdim, kk)
    s.flops = 2.0 * n * kk * (hw if geo.transposed else pq) * c_per_g * rs
    return s


def op_shape(op: str, dims: Any, concrete: Any = None) -> Shape | None:
    return gemm_shape(op, dims) if op in GEMM_OPS else conv_shape(op, dims, concrete)


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
