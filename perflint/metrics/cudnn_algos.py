"""cuDNN convolution kernels that its heuristics pick when PyTorch does not benchmark
(`torch.backends.cudnn.benchmark = False`, the default): the legacy "algorithm 0" kernels.

cuDNN names the algorithm in its kernels' function names. With benchmarking on, PyTorch times
every algorithm once per input shape (cudnnFind) and keeps the fastest, which for common layers
is a precomputed-index implicit GEMM, Winograd, FFT or a Tensor Core kernel; the heuristic choice
without it is often the generic one: the implicit GEMM that recomputes indices
(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: `implicit_convolve_sgemm`/`hgemm`), the explicit GEMM
(`explicit_convolve_sgemm`), backward data algorithm 0 (`dgrad_engine`) and backward filter
algorithm 0 (`wgrad_alg0_engine`)."""

from __future__ import annotations

import re

# function name -> the cuDNN algorithm, as cudnnConvolution*Algo_t names it
_FALLBACK = (
    (re.compile(r"\bimplicit_convolve_[sh]gemm\b"), "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM"),
    (re.compile(r"\bexplicit_convolve_[sh]gemm\b"), "CUDNN_CONVOLUTION_FWD_ALGO_GEMM"),
    (re.compile(r"\bdgrad_engine\b"), "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0"),
    (re.compile(r"\bwgrad_alg0_engine\b"), "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0"),
)


def fallback_algorithm(kernel: str) -> str | None:
    """The cuDNN algorithm of a heuristic-default (legacy) convolution kernel, else None."""
    for pattern, algo in _FALLBACK:
        if pattern.search(kernel):
            return algo
    return None
