"""Kernel classification by name: category (DESIGN §5) and Tensor Core use.

Each unique kernel name is classified once; per-kernel arrays are gathered from that.
The Tensor Core table is per vendor and architecture, not the stale 18-substring list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from perflint.ids import unique_inverse
from perflint.model import GPU_SYNC, KERNEL, MEMCPY, MEMSET, Trace

CATEGORIES = (
    "gemm",
    "conv",
    "attention",
    "elementwise",
    "reduction",
    "normalization",
    "communication",
    "memcpy",
    "memset",
    "triton_pointwise",
    "triton_reduction",
    "triton_persistent_reduction",
    "other",
)
CAT_INDEX = {c: i for i, c in enumerate(CATEGORIES)}
SYNC_CATEGORY = -1  # device-side sync records: not work, never counted


class _NoCase:
    """A case-insensitive pattern. On ASCII text it runs as a case-sensitive search of the lowered
    text: the same answer (no Unicode case folding can apply), several times faster on the long
    templated names of C++ kernels."""

    def __init__(self, pattern: str) -> None:
        assert not re.search(r"\\[A-Z]", pattern), "lowering would change an escape's meaning"
        self.pattern = pattern
        self._ci = re.compile(pattern, re.I)
        self._lower = re.compile(pattern.lower())

    def hit(self, name: str, lowered: str | None) -> bool:
        """`lowered`: name.lower() when the name is ASCII, else None."""
        if lowered is not None:
            return self._lower.search(lowered) is not None
        return self._ci.search(name) is not None


def _lowered(name: str) -> str | None:
    return name.lower() if name.isascii() else None


_COMM = _NoCase(r"nccl|rccl|hccl|msccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv|c10d")
_ATTN = _NoCase(r"flash|fmha|attention|attn|sdpa|mha_|xformers|softmax_warp_backward_kernel_attn|dot_do_o")
_CONV = _NoCase(
    r"conv(?!ert)|fprop|dgrad|wgrad|implicit_convolve|winograd|igemm_(?:fwd|bwd|wrw)|gtcx|naive_conv|im2col|col2im|"
    r"[sh]cudnn|\d+cudnn",  # cuDNN's own GEMM-based conv kernels: volta_scudnn_*, turing_fp16_s1688cudnn_*
)
_GEMM = _NoCase(
    r"gemm|gemv|matmul|Cijk_|nvjet|wgmma|cublas|cutlass|xmma|h884|h1688|s1688|16816|hmma|dot_kernel|"
    r"splitKreduce|triton_tem_|_mm_|bmm",
)
_NORM = _NoCase(r"norm|bn_fw|bn_bw|welford|rms|GammaBeta")  # GammaBetaBackward: LayerNorm's weight grads
_REDUCE = _NoCase(r"reduce|reduction|softmax|argmax|argmin|cumsum|scan|sum_kernel|topk|sort")
_ELEMWISE = _NoCase(
    r"elementwise|vectorized|unrolled|pointwise|fill|copy|CatArray|index|gather|scatter|distribution|"
    r"embedding|where|clamp|relu|gelu|silu|dropout|nchwToNhwc|nhwcToNchw|transpose|permute|convert|"
    r"multi_tensor_apply",  # torch._foreach_* (optimizers): elementwise over a list of tensors
)

# --- Tensor Cores -------------------------------------------------------------------------
# Markers that mean the kernel issues MMA instructions, by vendor/architecture:
#   Volta  sm70: h884 / s884, volta_h884gemm, cutlass *wmma_tensorop*
#   Turing sm75: h1688 / s1688 / i8816, turing_h1688gemm
#   Ampere sm80/86: *16816*, ampere_*_16816, cutlass_80_tensorop, sm80_xmma, tf32
#   Ada    sm89: sm89_xmma, cutlass tensorop
#   Hopper sm90: sm90_xmma, wgmma / gmma, nvjet (cuBLASLt), cutlass3x sm90
#   Blackwell sm100/120: sm100_ / sm120_ xmma, nvjet, tcgen05, umma
#   FlashAttention (all versions) uses mma.sync / wgmma
#   AMD CDNA matrix cores: Tensile/hipBLASLt "_MI<M>x<N>x<K>", MFMA, MIOpen xdlops / gtcx
_TC = _NoCase(
    r"h884|s884|h1688|s1688|i8816|16816|16832|hmma|imma|wmma|tensorop|xmma|wgmma|gmma|nvjet|tcgen05|umma|"
    r"sm(?:80|86|87|89|90|90a|100|120)_|ampere_(?:h|bf16|fp16|s16816|tf32|i8)|tf32|"
    r"flash|fmha|_MI\d+x\d+x\d+|mfma|xdlops|gtcx",
)
# Names that say the opposite, checked first: FP32 SIMT GEMMs and GEMV/k=1 paths.
_NOT_TC = _NoCase(
    r"volta_sgemm|turing_sgemm|ampere_sgemm|maxwell_sgemm|kepler_sgemm|magma_sgemm|_simt_|simt_|gemmk1|"
    r"gemv|gemmSN|implicit_convolve_sgemm|dot_kernel|precomputed_convolve_sgemm|explicit_convolve_sgemm|"
    r"fft2d|fft_|scudnn|hcudnn|"  # [sh]cudnn: cuDNN SIMT kernels (the MMA ones say h884/s1688...)
    # cuBLAS's FP32 xmma kernels on sm80/sm90 are SIMT FFMA: sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_
    # (recorded on an H100 with TF32 off, fixtures/gpu/gemm_fp32); the TF32 ones say tf32 instead.
    r"_ffma",
)
# Library helper kernels that run beside a matrix kernel but issue no matrix math themselves: the
# split-K reduction epilogue, cuDNN's workspace initialisation and its SDPA backward's dot(dO, O). Their category stays the
# parent's (their time is GEMM/conv time) but Tensor Core use does not apply to them.
_HELPER = _NoCase(r"splitKreduce|splitk_reduce|init_device_workspace|dot_do_o")


def kernel_category(name: str) -> str:
    return _category(name, _lowered(name))


def _category(name: str, low: str | None) -> str:
    if name.startswith("triton_poi_"):
        return "triton_pointwise"
    if name.startswith("triton_red_"):
        return "triton_reduction"
    if name.startswith("triton_per_"):
        return "triton_persistent_reduction"
    if _COMM.hit(name, low):
        return "communication"
    if _ATTN.hit(name, low):
        return "attention"
    if _CONV.hit(name, low):
        return "conv"
    if _GEMM.hit(name, low):
        return "gemm"
    if _NORM.hit(name, low):
        return "normalization"
    if _REDUCE.hit(name, low):
        return "reduction"
    if _ELEMWISE.hit(name, low):
        return "elementwise"
    return "other"


def uses_tensor_cores(name: str) -> bool | None:
    """True/False for matrix kernels (GEMM, conv, attention) by name; None for others."""
    low = _lowered(name)
    return _tensor_cores(name, low, _category(name, low))


def _tensor_cores(name: str, low: str | None, cat: str) -> bool | None:
    if cat not in ("gemm", "conv", "attention") or _HELPER.hit(name, low):
        return None
    if _NOT_TC.hit(name, low):
        return False
    return _TC.hit(name, low)


@dataclass
class KernelClasses:
    category: np.ndarray  # int8 index into CATEGORIES per GPU row (SYNC_CATEGORY for sync records)
    tensor_core: np.ndarray  # int8: 1 yes, 0 no, -1 not a matrix kernel


def classify(trace: Trace) -> KernelClasses:
    cached = trace.cache.get("classes")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    g = trace.gpu
    n = len(g)
    category = np.full(n, CAT_INDEX["other"], dtype=np.int8)
    tc = np.full(n, -1, dtype=np.int8)
    category[g.kind == MEMCPY] = CAT_INDEX["memcpy"]
    category[g.kind == MEMSET] = CAT_INDEX["memset"]
    category[g.kind == GPU_SYNC] = SYNC_CATEGORY
    kern = g.kind == KERNEL
    if kern.any():
        names, inverse = unique_inverse(g.name[kern])
        cat_u = np.empty(len(names), dtype=np.int8)
        tc_u = np.empty(len(names), dtype=np.int8)
        for i, sid in enumerate(names.tolist()):
            nm = trace.strings[sid]
            low = _lowered(nm)
            cat = _category(nm, low)
            cat_u[i] = CAT_INDEX[cat]
            t = _tensor_cores(nm, low, cat)
            tc_u[i] = -1 if t is None else int(t)
        idx = np.flatnonzero(kern)
        category[idx] = cat_u[inverse]
        tc[idx] = tc_u[inverse]
        # NCCL kernels that carry collective args are communication whatever their name says.
        comm = kern & (g.collective >= 0)
        category[comm] = CAT_INDEX["communication"]
    out = KernelClasses(category=category, tensor_core=tc)
    trace.cache["classes"] = out
    return out
