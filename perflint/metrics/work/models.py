"""FLOP and byte models of single op calls, from an op's Input Dims / Input type / Concrete Inputs.

Every model returns a `Work`: the FLOPs and the compulsory bytes (each tensor argument read once,
each result written once) of one call, and how they split over the op's kernels. docs/flops.md
gives each formula. Unknown shapes give nan, never a guess.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from perflint.metrics.dtypes import _OP_TYPES, dtype_size
from perflint.metrics.shapes import BASIS_ASSUMED, conv_shape, gemm_shape

NAN = math.nan

# What a model is: its kernels' roles and the `tc` verdict pyprof gives its rows.
GEMM, CONV, ATTENTION, OTHER = "gemm", "conv", "attention", "other"


@dataclass(frozen=True)
class Work:
    """One op call's work. `flops`/`bytes`: the whole call. `unit_*`: what one matrix kernel of
    the call does (one GEMM of a linear's backward, one of a convolution's dgrad/wgrad), for
    matrix ops; `aux_*`: the rest of the call (a linear's separate bias addition)."""

    kind: str
    flops: float
    bytes: float
    unit_flops: float = NAN
    unit_bytes: float = NAN
    aux_flops: float = 0.0
    aux_bytes: float = 0.0


UNKNOWN = Work(OTHER, NAN, NAN)


def _numel(d: Any) -> int | None:
    if isinstance(d, list) and all(isinstance(x, int) for x in d):
        return int(math.prod(d)) if d else None
    return None


def _size(types: Any, i: int) -> int | None:
    """Bytes per element of argument i (None: not a tensor of a known dtype)."""
    if not isinstance(types, list) or i >= len(types) or not isinstance(types[i], str):
        return None
    return dtype_size(_OP_TYPES.get(types[i]))


def _first_size(types: Any) -> int | None:
    if isinstance(types, list):
        for i in range(len(types)):
            s = _size(types, i)
            if s is not None:
                return s
    return None


def _arg(concrete: Any, i: int) -> str:
    return concrete[i].strip() if isinstance(concrete, list) and i < len(concrete) and isinstance(concrete[i], str) else ""


def _tensors(dims: Any, types: Any) -> list[tuple[list[int], int | None]]:
    """The tensor arguments (non-empty int lists): shape and element size."""
    out: list[tuple[list[int], int | None]] = []
    if not isinstance(dims, list):
        return out
    for i, d in enumerate(dims):
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            out.append((d, _size(types, i)))
    return out


def _broadcast(shapes: list[list[int]]) -> list[int] | None:
    n = max(len(s) for s in shapes)
    out = []
    for axis in range(n):
        vals = {s[axis - n + len(s)] for s in shapes if axis - n + len(s) >= 0} - {1}
        if len(vals) > 1:
            return None
        out.append(vals.pop() if vals else 1)
    return out


# FLOPs per output element of elementwise ops beyond the 1 every other op counts (pyprof's table).
_TRANSCENDENTAL = frozenset({"tanh", "sigmoid", "log", "log2", "log10", "log1p", "exp", "exp2", "expm1", "gelu", "silu", "erf", "erfc", "softplus", "mish", "elu", "selu", "celu"})
_TRIG_SLOW = frozenset({"asin", "acos", "atan", "atan2"})
# Ops with one pass over their output that count one FLOP per element (or the table above).
_ELEMENTWISE = frozenset(
    "abs neg add sub rsub mul div true_divide floor_divide remainder fmod pow reciprocal sqrt rsqrt exp exp2 expm1 "
    "log log2 log10 log1p sin cos tan sinh cosh tanh asin acos atan atan2 sigmoid erf erfc erfinv ceil floor round "
    "trunc frac sign clamp clamp_min clamp_max clip where lerp addcmul addcdiv lt le gt ge eq ne maximum minimum "
    "relu relu6 leaky_relu gelu silu mish elu selu celu hardtanh hardswish hardsigmoid softplus softshrink "
    "hardshrink threshold logical_not logical_and logical_or bitwise_and bitwise_or bitwise_xor bitwise_not "
    "masked_fill nan_to_num square".split()
)  # fmt: skip
# Their gradients (one more tensor read than the forward: the saved input or output).
_ELEMENTWISE_BWD = frozenset(
    "threshold_backward gelu_backward silu_backward sigmoid_backward tanh_backward leaky_relu_backward "
    "hardtanh_backward hardswish_backward hardsigmoid_backward elu_backward softplus_backward mish_backward".split()
)  # fmt: skip
_ACTIVATIONS = frozenset("relu relu6 leaky_relu gelu silu mish elu selu celu hardtanh hardswish hardsigmoid softplus sigmoid tanh threshold".split())
_DROPOUT = frozenset({"dropout", "_fused_dropout", "native_dropout", "feature_dropout", "alpha_dropout", "_masked_scale", "native_dropout_backward"})
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "prod", "argmax", "argmin", "any", "all", "std", "var", "logsumexp", "nansum", "count_nonzero"})
_NORM_OPS = {  # op -> index of the normalized input
    "layer_norm": 0, "native_layer_norm": 0, "batch_norm": 0, "native_batch_norm": 0, "_batch_norm_impl_index": 0,
    "cudnn_batch_norm": 0, "_native_batch_norm_legit": 0, "_native_batch_norm_legit_no_training": 0,
    "group_norm": 0, "native_group_norm": 0, "rms_norm": 0, "_fused_rms_norm": 0, "instance_norm": 0,
}  # fmt: skip
_NORM_BWD = {"native_layer_norm_backward": 1, "native_batch_norm_backward": 1, "cudnn_batch_norm_backward": 1, "native_group_norm_backward": 1, "_fused_rms_norm_backward": 1}
_SOFTMAX = frozenset({"softmax", "_softmax", "log_softmax", "_log_softmax", "_safe_softmax"})
_SOFTMAX_BWD = frozenset({"_softmax_backward_data", "_log_softmax_backward_data"})
_COPIES = frozenset({"copy_", "clone", "contiguous", "to", "_to_copy", "cat", "stack", "index_select", "gather"})


def _elementwise(op: str, dims: Any, types: Any, extra_reads: int = 0) -> Work:
    ts = _tensors(dims, types)
    if not ts:
        return UNKNOWN
    out = _broadcast([s for s, _ in ts])
    if out is None:
        return UNKNOWN
    n_out = math.prod(out)
    size = ts[0][1]
    base = op.rstrip("_")
    per = 10 if base in _TRIG_SLOW else 2 if base in _TRANSCENDENTAL else 1
    if base in ("addcmul", "addcdiv", "lerp"):
        per = 3  # a product or quotient, a scaling, an addition
    touched = sum(math.prod(s) for s, _ in ts) + n_out * (1 + extra_reads)
    return Work(OTHER, float(per * n_out), float(touched * size) if size else NAN)


def _gemm(name: str, dims: Any, types: Any) -> Work:
    s = gemm_shape(name, dims)
    size = _first_size(types)
    if s is None:
        return UNKNOWN
    ts = _tensors(dims, types)
    off = 1 if name in ("aten::addmm", "aten::baddbmm", "aten::_addmm_activation") else 0
    a, b = _numel(dims[off]), _numel(dims[off + 1])
    out = s.batch * s.m * s.n
    gemm_bytes = float((a or 0) + (b or 0) + out) * size if size and a and b else NAN
    flops = s.flops
    bias_flops = bias_bytes = 0.0
    bias_at = 0 if off else 2 if name == "aten::linear" else None
    if bias_at is not None and bias_at < len(dims) and _numel(dims[bias_at]):
        bias_flops = float(out)
        bias_bytes = 2.0 * out * size if size else NAN  # the product read back, the sum written
    if bias_at is not None and off and ts:
        bias_bytes = float(_numel(dims[0]) or 0) * size if size else NAN  # fused: the bias read once
    return Work(GEMM, flops + bias_flops, gemm_bytes + bias_bytes, flops, gemm_bytes, bias_flops, bias_bytes if not off else 0.0)


def _conv(name: str, dims: Any, types: Any, concrete: Any, backward: bool = False) -> Work:
    s = conv_shape(name, dims, concrete)
    size = _first_size(types)
    # Without the op's scalar arguments the stride is unknown, and a guess of 1 overstates a strided
    # convolution's work by the stride's square: no number rather than a wrong one.
    if s is None or s.conv is None or s.basis == BASIS_ASSUMED:
        return UNKNOWN
    c = s.conv
    x, w = _numel(dims[0]) or 0, _numel(dims[1]) or 0
    y = c["N"] * c["K"] * math.prod(v for k, v in c.items() if k in ("Z", "P", "Q"))
    unit_bytes = float(x + w + y) * size if size else NAN
    if not backward:
        return Work(CONV, s.flops, unit_bytes, s.flops, unit_bytes)
    # dgrad reads dy, w and writes dx; wgrad reads dy, x and writes dw: two convolutions' worth
    return Work(CONV, 2 * s.flops, 2 * unit_bytes, s.flops, unit_bytes)


# Attention ops: (index of query, index of is_causal in Concrete Inputs, backward).
_ATTENTION = {
    "aten::scaled_dot_product_attention": (0, 5, False),
    "aten::_scaled_dot_product_flash_attention": (0, 4, False),
    "aten::_scaled_dot_product_efficient_attention": (0, 6, False),
    "aten::_scaled_dot_product_cudnn_attention": (0, 6, False),
    "aten::_scaled_dot_product_flash_attention_backward": (1, 11, True),
    "aten::_scaled_dot_product_efficient_attention_backward": (1, 11, True),
    "aten::_scaled_dot_product_cudnn_attention_backward": (1, 14, True),
}


def _attention(name: str, dims: Any, types: Any, concrete: Any, backward: bool = False) -> Work:
    qi, ci, bwd = _ATTENTION[name]
    if not isinstance(dims, list) or len(dims) < qi + 3:
        return UNKNOWN
    q, k, v = (d if isinstance(d, list) and len(d) >= 3 and all(isinstance(x, int) for x in d) else None for d in dims[qi : qi + 3])
    if q is None or k is None or v is None:
        return UNKNOWN
    lq, e, ls, ev = q[-2], q[-1], k[-2], v[-1]
    heads = math.prod(q[:-2])
    flops = 2.0 * heads * lq * ls * (e + ev)  # Q·Kᵀ and P·V
    if _arg(concrete, ci) == "True":
        flops /= 2  # the masked half of the scores is skipped
    size = _size(types, qi) or _first_size(types)
    fwd_bytes = float(_numel(q) or 0) + (_numel(k) or 0) + (_numel(v) or 0) + heads * lq * ev
    bwd = bwd or backward
    # backward: dS = dO·Vᵀ, dQ, dK, dV: four products, twice the forward; reads q k v o dO, writes dq dk dv
    flops, nbytes = (2 * flops, 2 * fwd_bytes + heads * lq * ev) if bwd else (flops, fwd_bytes)
    b = nbytes * size if size else NAN
    return Work(ATTENTION, flops, b, flops, b)


def _norm(op: str, dims: Any, types: Any, at: int, backward: bool) -> Work:
    ts = _tensors(dims, types)
    if not isinstance(dims, list) or at >= len(dims) or not _numel(dims[at]):
        return UNKNOWN
    n = _numel(dims[at]) or 0
    size = _size(types, at)
    params = sum(math.prod(s) for s, _ in ts[1:]) if not backward else 0
    # forward: mean, variance, normalize, scale and shift: ~5 FLOPs per element (rms norm: 3)
    per = 3 if "rms" in op else 5
    if backward:
        # reads dy and x, writes dx; weight/bias gradients reduce over the rows: ~8 FLOPs per element
        return Work(OTHER, 8.0 * n, 3.0 * n * size if size else NAN)
    return Work(OTHER, float(per * n), float(2 * n + params) * size if size else NAN)


def _reduction(dims: Any, types: Any, per: int = 1, extra: int = 0) -> Work:
    ts = _tensors(dims, types)
    if not ts:
        return UNKNOWN
    shape, size = ts[0]
    n = math.prod(shape)
    return Work(OTHER, float(per * n + extra), float(n * size) if size else NAN)


def _softmax(op: str, dims: Any, types: Any, backward: bool) -> Work:
    ts = _tensors(dims, types)
    if not ts:
        return UNKNOWN
    shape, size = ts[0]
    n = math.prod(shape)
    if backward or op in _SOFTMAX_BWD:
        return Work(OTHER, 3.0 * n, 3.0 * n * size if size else NAN)  # dy·y, row sum, subtract and scale
    per = 5 if "log" in op else 4  # max, exp, sum, divide (log: a log and a subtraction instead)
    return Work(OTHER, float(per * n), 2.0 * n * size if size else NAN)


def _embedding(dims: Any, types: Any, backward: bool) -> Work:
    if not isinstance(dims, list) or len(dims) < 2:
        return UNKNOWN
    # aten::embedding(weight, indices); pyprof's F.embedding(input, weight)
    w_at = 0 if isinstance(dims[0], list) and len(dims[0]) == 2 and _size(types, 0) not in (None, 8) else 1
    i_at = 1 - w_at
    w, idx = dims[w_at], dims[i_at]
    ni, wsize, isize = _numel(idx), _size(types, w_at), _size(types, i_at) or 8
    if not ni or not isinstance(w, list) or len(w) != 2 or not wsize:
        return UNKNOWN
    rows = ni * w[1]
    if backward:
        # reads the incoming gradient and the indices, writes the dense weight gradient
        return Work(OTHER, float(rows), float(rows * wsize + ni * isize + w[0] * w[1] * wsize))
    return Work(OTHER, 0.0, float(ni * isize + 2 * rows * wsize))


def _embedding_backward(dims: Any, types: Any, concrete: Any) -> Work:
    # aten::embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
    g, idx = (dims[0], dims[1]) if isinstance(dims, list) and len(dims) >= 2 else (None, None)
    ng, ni, size = _numel(g), _numel(idx), _size(types, 0)
    try:
        nw = int(_arg(concrete, 2))
    except ValueError:
        return UNKNOWN
    if not ng or not ni or not size or not isinstance(g, list):
        return UNKNOWN
    return Work(OTHER, float(ng), float(ng * size + ni * (_size(types, 1) or 8) + nw * g[-1] * size))


# Fused multi-tensor optimizers: FLOPs per parameter element and tensor lists read and written.
_OPTIMIZERS = {
    "_fused_adam_": (12, 4, 3), "_fused_adamw_": (13, 4, 3), "_fused_sgd_": (3, 3, 2),
    "_multi_tensor_adam": (12, 4, 3), "adam": (12, 4, 3), "adamw": (13, 4, 3),
}  # fmt: skip


def _optimizer(op: str, dims: Any, types: Any) -> Work:
    per, reads, writes = _OPTIMIZERS[op]
    if not isinstance(dims, list) or not dims or not isinstance(dims[0], list):
        return UNKNOWN
    n = sum(_numel(d) or 0 for d in dims[0]) if all(isinstance(d, list) for d in dims[0]) else _numel(dims[0]) or 0
    if not n:
        return UNKNOWN
    size = _first_size(types)
    return Work(OTHER, float(per * n), float((reads + writes) * n * size) if size else NAN)


def _foreach(op: str, dims: Any, types: Any) -> Work:
    """aten::_foreach_OP(list, ...): the elementwise OP over each tensor of the lists."""
    if not isinstance(dims, list) or not dims or not isinstance(dims[0], list):
        return UNKNOWN
    lists = [d for d in dims if isinstance(d, list) and d and all(isinstance(x, list) for x in d)]
    if not lists:
        return UNKNOWN
    n = sum(_numel(x) or 0 for x in lists[0])
    if not n:
        return UNKNOWN
    base = op[len("_foreach_") :].rstrip("_")
    per = 10 if base in _TRIG_SLOW else 2 if base in _TRANSCENDENTAL else 3 if base in ("addcmul", "addcdiv", "lerp") else 1
    size = _first_size(types)
    return Work(OTHER, float(per * n), float((len(lists) + 1) * n * size) if size else NAN)


def _dropout(dims: Any, types: Any) -> Work:
    ts = _tensors(dims, types)
    if not ts:
        return UNKNOWN
    shape, size = ts[0]
    n = math.prod(shape)
    # pyprof's count: random number, compare, scale; the 1-byte mask is left out as pyprof does
    return Work(OTHER, 5.0 * n, 2.0 * n * size if size else NAN)


def _copy(dims: Any, types: Any) -> Work:
    ts = _tensors(dims, types)
    if not ts:
        return UNKNOWN
    if any(sz is None for _, sz in ts):
        return Work(OTHER, 0.0, NAN)
    n = float(sum(math.prod(s) * (sz or 0) for s, sz in ts))
    # copy_(dst, src): src read, dst written; one tensor: read and written once
    return Work(OTHER, 0.0, n if len(ts) == 2 else 2 * n)


def model(name: str, dims: Any, types: Any, concrete: Any, backward: bool = False) -> Work:
    """The work of one call of op `name` (`aten::mm`, or `module.fn` for other Python calls) with
    these decoded Input Dims / Input type / Concrete Inputs. `backward`: the work of the call's
    gradient, for a backward kernel that has only the forward op's shapes."""
    op = name[6:] if name.startswith("aten::") else name.rpartition(".")[2]
    if name in _ATTENTION:
        return _attention(name, dims, types, concrete, backward)
    if op in ("mm", "addmm", "_addmm_activation", "bmm", "baddbmm", "matmul", "linear"):
        w = _gemm(f"aten::{op}", dims, types)
        if backward and w.kind == GEMM:
            # dgrad and wgrad: two GEMMs of the forward's size (the bias gradient: a reduction)
            return Work(GEMM, 2 * w.unit_flops + w.aux_flops, 2 * w.unit_bytes + w.aux_bytes / 2, w.unit_flops, w.unit_bytes, w.aux_flops, w.aux_bytes / 2)
        return w
    if op in ("conv1d", "conv2d", "conv3d", "convolution", "_convolution", "cudnn_convolution", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        return _conv(f"aten::{op}", dims, types, concrete, backward)
    if op == "convolution_backward" and isinstance(dims, list) and isinstance(concrete, list):
        return _conv("aten::convolution", dims[1:], types[1:] if isinstance(types, list) else types, concrete[1:], True)
    if op in _DROPOUT:
        return _dropout(dims, types)
    if op in _NORM_OPS:
        return _norm(op, dims, types, _NORM_OPS[op], backward)
    if op in _NORM_BWD:
        return _norm(op, dims, types, _NORM_BWD[op], True)
    if op in _SOFTMAX or op in _SOFTMAX_BWD:
        return _softmax(op, dims, types, backward)
    if op == "embedding":
        return _embedding(dims, types, backward)
    if op == "embedding_dense_backward":
        return _embedding_backward(dims, types, concrete)
    if op in _OPTIMIZERS:
        return _optimizer(op, dims, types)
    if op.startswith("_foreach_"):
        return _foreach(op, dims, types)
    if op in ("norm", "linalg_vector_norm", "frobenius_norm"):
        return _reduction(dims, types, per=2, extra=1)  # square and add per element, one square root
    if op.rstrip("_") in _REDUCTIONS:
        return _reduction(dims, types)
    if op in _ELEMENTWISE_BWD:
        return _elementwise(op, dims, types)
    if op.rstrip("_") in _ELEMENTWISE:
        if backward:
            # the gradient of an activation also reads its saved input; of arithmetic, not
            return _elementwise(op, dims, types, extra_reads=1 if op.rstrip("_") in _ACTIVATIONS else 0)
        return _elementwise(op, dims, types)
    if op in _COPIES:
        return _copy(dims, types)
    if op in ("fill_", "zero_"):
        ts = _tensors(dims, types)
        return Work(OTHER, 0.0, float(math.prod(ts[0][0]) * ts[0][1]) if ts and ts[0][1] else NAN) if ts else UNKNOWN
    return UNKNOWN

