"""The kernel classification table: one row per library naming convention, first match wins.

A row matches a parsed kernel name (`parse.KernelName`) by its scope (the namespaces joined
with `::`, fullmatched by `scope`; None: any scope) and its function name (`function`, matched from
the start of the function name). Template arguments and parameters are never searched: where a
library names its kernels through a template argument (`cutlass::Kernel<cutlass_80_tensorop_...>`,
`cutlass::device_kernel<...GemmUniversal...>`, `ck_tile::kentry<1, Rmsnorm2dFwd<...>>`) the row
says `via_arg` and that argument, parsed as a name, is classified instead.

`dtype` and `tc` are either fixed values or the names of rules in `classify` that read the
library's own naming convention (xmma dtype tokens, Tensile's `_MI16x16x8`, ...); `tc` may also map
a device vendor to a verdict (a Triton `tl.dot` is an MMA on NVIDIA and an MFMA on AMD).
"""

from __future__ import annotations

from dataclasses import dataclass

TC = bool | None | str | dict[str, bool | None]


@dataclass(frozen=True)
class Row:
    id: str
    library: str
    function: str  # regex, matched at the start of the function name
    category: str
    dtype: str | None = None  # a dtype ("fp32"), a rule name ("rule:xmma") or None (not from the name)
    tc: TC = None  # True / False / None, "rule:<name>", or {vendor: verdict}
    note: str = ""
    scope: str | None = None  # regex fullmatched against the namespaces joined with "::"
    via_arg: bool = False  # a template argument names the kernel: classify it instead
    helper: bool = False  # runs beside matrix kernels and does no matrix math: no Tensor Core verdict
    layout: bool = False  # converts a tensor between memory layouts (NCHW <-> NHWC)


_TRITON_DOT: dict[str, bool | None] = {"nvidia": True, "amd": True}
# Where MoE kernels live: Triton kernels (no namespace) and the serving libraries.
_MOE_SCOPE = r"(?:|vllm(?:::.*)?|tensorrt_llm(?:::.*)?|sglang(?:::.*)?|aiter(?:::.*)?|\w*moe\w*(?:::.*)?)"
_ANY_CUDNN = r"(?:cudnn|cudnn_\w+)(?:::.*)?"
_CUDNN_OR_GLOBAL = r"(?:|cudnn\w*(?:::.*)?)"  # cuDNN kernels: global C names or in cudnn::
_CUBLAS_OR_GLOBAL = r"(?:|cublas\w*(?:::.*)?)"
_CUDA_ARCH = r"(?:maxwell|kepler|pascal|volta|turing|ampere|ada|hopper|blackwell|sm\d+)"
# One trtllm-gen type group: element types written E4m3, E5m2, E2m1, Bfloat16, Fp16, Fp32 (MxE4m3: MX-scaled).
_TG_TYPES = r"(?:(?:Mx)?(?:E\dm\d|Bfloat16|Fp16|Fp32|Fp64|Int8|UInt8|Int32|Int4|UE8m0))+"

ROWS: tuple[Row, ...] = (
    # --- Templates whose argument is the kernel ------------------------------------------------
    Row("cutlass.kernel", "CUTLASS", r"Kernel2?$|device_kernel$", "other", scope=r"cutlass\w*",
        via_arg=True, note="cutlass::Kernel<K> / Kernel2<K> / device_kernel<K>: K names the kernel"),
    Row("xmma.kernel", "cuDNN", r"kernel$", "other", scope=r"xmma\w*::gemm", via_arg=True,
        note="xmma::gemm::kernel<Kernel_traits>: the traits' namespace says GEMM or fprop/dgrad/wgrad"),
    Row("ck_tile.kentry", "Composable Kernel", r"kentry$", "other", scope=r"ck_tile", via_arg=True,
        note="ck_tile::kentry<N, Kernel>: the kernel is a template argument"),
    Row("arch_guard", "", r"enable_sm\d+\w*$", "other", via_arg=True,
        note="enable_sm90_or_later<K> & co. (vLLM, SGLang, FlashAttention 3): K built only for the named "
             "architectures; K names the kernel"),
    # --- cuBLAS / cuBLASLt ---------------------------------------------------------------------
    Row("cublas.nvjet", "cuBLASLt", r"nvjet_", "gemm", "rule:nvjet", True,
        "Hopper+ cuBLASLt GEMMs (GMMA/UMMA); the type token (hsh, tst, qqtst) starts with the input type", scope=r""),
    Row("cublas.xmma_gemm", "cuBLAS", r"sm\d+_xmma_gemm_", "gemm", "rule:xmma", "rule:xmma",
        "cuBLAS xmma GEMM; `_ffma` kernels are fp32 SIMT (no Tensor Cores)", scope=r""),
    Row("cudnn.xmma_conv", "cuDNN", r"sm\d+_xmma_(?:fprop|dgrad|wgrad)", "conv", "rule:xmma", "rule:xmma",
        "cuDNN implicit-GEMM convolution; `nhwckrsc_nchw` is the layout tag of input/filter/output", scope=r""),
    Row("xmma.gemm_traits", "cuDNN", r"Kernel_traits$", "gemm", "rule:xmma_traits", True,
        scope=r"xmma\w*::gemm(?:::.*)?", note="xmma GEMM kernel traits"),
    Row("xmma.conv_traits", "cuDNN", r"Kernel_traits$", "conv", "rule:xmma_traits", True,
        scope=r"xmma\w*::implicit_gemm::(?:fprop|dgrad|wgrad)\w*", note="xmma implicit-GEMM convolution traits"),
    Row("cublas.arch_gemm", "cuBLAS", rf"{_CUDA_ARCH}_(?:(?:fp16|bf16|tf32|int8|i8|fp32)_)?(?:[shdcizg]|gc)\d*gemm",
        "gemm", "rule:blas_arch", "rule:blas_arch",
        "cuBLAS/cuDNN GEMM named <arch>_<type>_<instr>gemm: an MMA shape (884, 1688, 16816) means "
        "Tensor Cores; sgemm/dgemm/cgemm/gcgemm without one are SIMT", scope=r""),
    Row("cublas.magma_sgemm", "cuBLAS", r"magma_[sdhcz]gemm", "gemm", "rule:blas_letter", False,
        "MAGMA-derived SIMT GEMM inside cuBLAS", scope=r""),
    Row("cublas.sgemm_largek", "cuBLAS", r"[sdhcz]gemm_largek", "gemm", "rule:blas_letter", False, "SIMT large-K GEMM", scope=r""),
    Row("cublas.gemv", "cuBLAS", r"gemv\w*|gemmk1\w*|gemmSN\w*", "gemm", "rule:cublas_tensor", False,
        "GEMV / k=1 / small-N GEMM paths: SIMT", scope=_CUBLAS_OR_GLOBAL),
    Row("cublas.gemvx", "cuBLAS", r"kernel$", "gemm", "rule:cublas_tensor", False, scope=r"internal::gemvx",
        note="cuBLAS GEMV (internal::gemvx::kernel): SIMT"),
    Row("cublas.splitk", "cuBLAS", r"splitKreduce_kernel|splitk_reduce", "gemm", None, None,
        "split-K reduction epilogue of a GEMM: GEMM time, no matrix math", scope=r"(?:cublasLt)?", helper=True),
    Row("cublas.epilogue", "cuBLASLt", r"globalKernel$", "gemm", None, None,
        "cuBLASLt epilogue (bias/activation after a GEMM)", scope=r"epilogue::impl", helper=True),
    Row("cublas.dot", "cuBLAS", r"dot_kernel|asum_kernel|nrm2_kernel", "reduction", "rule:type_arg", None,
        "BLAS level-1 dot/asum/nrm2: a vector reduction, not a matrix kernel", scope=r""),
    Row("cublas.level1", "cuBLAS", r"(?:scal|axpy|swap)_kernel", "elementwise", "rule:type_arg", None,
        "BLAS level-1 scal/axpy/swap", scope=r""),
    # --- TensorRT-LLM (trtllm-gen) and DeepGEMM: Hopper/Blackwell GEMMs -------------------------
    Row("trtllm.gen_gemm", "TensorRT-LLM", rf"(?:bmm|gemm|\w*Gemm\w*Kernel)_(?:{_TG_TYPES}_)+t(?:ile)?\d+x\d+x\d+",
        "gemm", "rule:trtllm_gen", True, "trtllm-gen cubins (TensorRT-LLM, FlashInfer): <kind>_[<out>_]<A><B>_<acc>_t<tile>..._sm100a; "
        "Blackwell UMMA (tcgen05) GEMMs, the type before the accumulator's is the input", scope=r""),
    Row("deepgemm.splitk", "DeepGEMM", r"\w*split_k_reduce\w*", "gemm", None, None,
        "DeepGEMM split-K reduction beside its GEMMs", scope=r"deep_gemm(?:::.*)?", helper=True),
    Row("deepgemm.gemm", "DeepGEMM", r"\w*(?:gemm|bmk_bnk_mn|einsum|mega_moe)\w*", "gemm", "rule:name_token", True,
        "DeepGEMM (sm90_fp8_gemm_1d2d_impl, sm100_fp8_gemm_1d1d_impl, fp8_gemm_kernel): WGMMA / UMMA only; the "
        "name's type token is the input type", scope=r"deep_gemm(?:::.*)?"),
    Row("deepgemm.mqa_logits", "DeepGEMM", r"\w*mqa_logits\w*", "attention", "rule:name_token", True,
        "DeepGEMM q·k logits of the sparse-attention indexer (WGMMA / UMMA)", scope=r"deep_gemm(?:::.*)?"),
    Row("deepgemm.other", "DeepGEMM", r"\w+", "elementwise", None, None,
        "DeepGEMM layout, transpose and logits clean-up kernels", scope=r"deep_gemm(?:::.*)?"),
    # --- CUTLASS (2.x names, 3.x structures) ---------------------------------------------------
    Row("cutlass.named", "CUTLASS", r"cutlass3?x?_(?:\d+_|sm\d+_)?(?:simt|tensorop|wmma_tensorop|bstensorop|sptensorop|gemm|spgemm)\w*gemm",
        "gemm", "rule:cutlass_named", "rule:cutlass_named",
        "cutlass_<sm>_<opclass>_<input>_<acc><instr>gemm: tensorop/wmma = Tensor Cores, simt = SIMT; "
        "no input type with s1688 on sm80+ is tf32", scope=r""),
    Row("cutlass.named_conv", "CUTLASS", r"cutlass3?x?_(?:\d+_|sm\d+_)?(?:simt|tensorop|wmma_tensorop)\w*(?:fprop|dgrad|wgrad)",
        "conv", "rule:cutlass_named", "rule:cutlass_named", "CUTLASS implicit-GEMM convolution", scope=r""),
    Row("cutlass.gemm_struct", "CUTLASS", r"\w*Gemm\w*", "gemm", "rule:cutlass3", "rule:cutlass3",
        "cutlass::gemm::kernel::GemmUniversal & co.: element type = CollectiveMma's ElementA",
        scope=r"cutlass\w*::gemm::kernel(?:::.*)?"),
    Row("cutlass.conv_struct", "CUTLASS", r"\w*Conv\w*", "conv", "rule:elem", None,
        "cutlass::conv::kernel::ImplicitGemmConvolution & co.", scope=r"cutlass\w*::conv::kernel(?:::.*)?"),
    Row("cutlass.fmha_reduce", "CUTLASS", r"\w*(?:Reduction|Combine)\w*", "attention", "rule:elem", None,
        "CUTLASS FMHA split-KV reduction (Sm100FmhaMlaReductionKernel): sums partial outputs, no MMA",
        scope=r"cutlass\w*::fmha(?:::.*)?", helper=True),
    Row("cutlass.fmha", "CUTLASS", r"\w*Fmha\w*", "attention", "rule:elem", True,
        "CUTLASS FMHA kernels (Sm100FmhaFwdKernelTmaWarpspecialized, FlashInfer's cutlass backend): GMMA / UMMA",
        scope=r"cutlass\w*::fmha(?:::.*)?"),
    # --- cuDNN ---------------------------------------------------------------------------------
    Row("cudnn.sdpa", "cuDNN", r"cudnn_generated_\w*sdpa", "attention", None, True,
        "cuDNN fused attention (flash fprop/bprop, wgmma/mma); its f16 token covers fp16 and bf16", scope=r""),
    Row("cudnn.scudnn", "cuDNN", rf"(?:cudnn_(?:infer_|train_)?)?{_CUDA_ARCH}_(?:[a-z0-9]+_)?[sh]cudnn", "conv",
        "rule:cudnn_letter", False, "cuDNN SIMT convolution: scudnn = fp32, hcudnn = fp16", scope=r""),
    Row("cudnn.mma", "cuDNN", rf"(?:cudnn_(?:infer_|train_)?)?{_CUDA_ARCH}_(?:(?:fp16|bf16|tf32|int8|i8)_)?[shi]\d+cudnn",
        "conv", "rule:blas_arch", True, "cuDNN Tensor Core convolution (s884cudnn, s1688cudnn, ...)", scope=r""),
    Row("cudnn.convolve_sgemm", "cuDNN", r"(?:implicit|explicit|precomputed)_convolve_(?:sgemm|dgemm|hhgemm)", "conv",
        "rule:convolve", False, "cuDNN GEMM-based SIMT convolution", scope=_CUDNN_OR_GLOBAL),
    Row("cudnn.engine", "cuDNN", r"(?:wgrad_alg\d+|dgrad\w*)_engine|dgrad2d_alg\w*|wgrad2d_alg\w*", "conv", "rule:type_arg", False,
        "cuDNN SIMT convolution backward engine", scope=_CUDNN_OR_GLOBAL),
    Row("cudnn.fft", "cuDNN", r"fft\d?d_(?:r2c|c2r|c2c)\w*|flip_filter", "conv", "rule:type_arg", None,
        "cuDNN FFT convolution transforms (the complex GEMM, gcgemm, runs in a separate kernel)", helper=True,
        scope=_CUDNN_OR_GLOBAL),
    Row("cudnn.winograd", "cuDNN", r"\w*[Ww]inograd\w*", "conv", None, None,
        "cuDNN Winograd transforms (the GEMM runs in a separate kernel)", helper=True, scope=_CUDNN_OR_GLOBAL),
    Row("cudnn.depthwise", "cuDNN", r"(?:conv2d|wgrad2d|dgrad2d|conv3d)_\w*(?:tiling|kernel)\w*", "conv", None, False,
        "cuDNN depthwise/grouped convolution on CUDA cores", scope=r""),
    Row("cudnn.layout", "cuDNN", r"nchwToNhwc\w*|nhwcToNchw\w*", "elementwise", "rule:type_arg", None,
        "cuDNN layout conversion NCHW <-> NHWC", layout=True, scope=_CUDNN_OR_GLOBAL),
    Row("cudnn.workspace", "cuDNN", r"init_device_workspace_kernel", "conv", None, None,
        "cuDNN workspace initialisation beside an implicit-GEMM convolution", scope=r"cask\w*(?:::.*)?", helper=True),
    Row("cudnn.cask_offsets", "cuDNN", r"compute\w*Offsets\w*", "conv", None, None,
        "cuDNN convolution setup (filter/input offsets)", scope=r"cask\w*(?:::.*)?", helper=True),
    Row("cudnn.im2col", "cuDNN", r"im2col\w*|col2im\w*", "conv", None, None, "cuDNN im2col for GEMM convolution",
        scope=_ANY_CUDNN, helper=True),
    Row("cudnn.wgrad_helper", "cuDNN", r"reduce_wgrad\w*", "conv", None, None, "cuDNN weight-gradient reduction",
        scope=_ANY_CUDNN, helper=True),
    Row("cudnn.bn", "cuDNN", r"bn_\w+|batchnorm\w*|\w*BatchNorm\w*", "normalization", "rule:type_arg", None,
        "cuDNN batch normalization", scope=_ANY_CUDNN),
    Row("cudnn.sdpa_dot", "cuDNN", r"compute_dot_do_o\w*", "attention", None, None,
        "cuDNN SDPA backward's dot(dO, O): attention time, no matrix math", scope=_ANY_CUDNN, helper=True),
    Row("cudnn.convert_dq", "cuDNN", r"convert_dq\w*", "elementwise", None, None,
        "cuDNN SDPA backward: dQ accumulator to 16 bits", scope=_ANY_CUDNN),
    Row("cudnn.scale", "cuDNN", r"scale\w*|\w*Tensor\w*_kernel", "elementwise", "rule:type_arg", None,
        "cuDNN tensor ops", scope=_ANY_CUDNN),
    # --- AMD: hipBLASLt / Tensile, rocBLAS, MIOpen, Composable Kernel ----------------------------
    Row("tensile.gemm", "hipBLASLt/Tensile", r"Cijk_", "gemm", "rule:tensile", "rule:tensile",
        "Tensile GEMM: _MI<M>x<N>x<K> = MFMA matrix cores; the type token after the layouts (SB, HHS, BBS) "
        "starts with the input type", scope=r""),
    Row("rocblas.gemv", "rocBLAS", r"rocblas_\w*gemv\w*", "gemm", None, False, "rocBLAS GEMV: SIMT"),
    Row("rocblas.gemm", "rocBLAS", r"rocblas_\w*gemm\w*", "gemm", None, None, "rocBLAS non-Tensile GEMM"),
    Row("rocblas.reduce", "rocBLAS", r"rocblas_\w*(?:dot|nrm2|asum|amax|amin)\w*", "reduction", None, None, "rocBLAS level-1"),
    Row("rocblas.other", "rocBLAS", r"rocblas_\w+", "elementwise", None, None, "rocBLAS helper"),
    Row("miopen.igemm", "MIOpen", r"igemm_(?:fwd|bwd|wrw)_gtc", "conv", "rule:name_token", "rule:miopen_igemm",
        "MIOpen implicit-GEMM convolution: gtcx = XDLOPS (MFMA matrix cores)", scope=r""),
    Row("miopen.naive", "MIOpen", r"naive_conv\w*", "conv", "rule:name_token", False, "MIOpen reference convolution", scope=r""),
    Row("miopen.conv", "MIOpen", r"MIOpen\w*Conv\w*|miopenSp3AsmConv\w*|gridwise_convolution\w*|MIOpenCvD\w*",
        "conv", None, None, "MIOpen convolution solver", scope=r""),
    Row("miopen.bn", "MIOpen", r"MIOpenBatchNorm\w*", "normalization", None, None, "MIOpen batch normalization", scope=r""),
    Row("miopen.transpose", "MIOpen", r"batched_transpose_\w+|transpose_(?:NCHW2CNHW|CNHW2NCHW|NCHW2NHWC|NHWC2NCHW)\w*",
        "elementwise", "rule:name_token", None, "MIOpen tensor transpose", scope=r""),
    Row("miopen.tensor_op", "MIOpen", r"SubTensorOp\w*|Op\dTensorGeneric\w*|OpTensor\w*", "elementwise", None, None,
        "MIOpen tensor set/scale/op kernels", scope=r""),
    Row("ck.conv_bwd_weight", "Composable Kernel", r"kernel_batched_gemm_xdlops_bwd_weight\w*", "conv", "rule:ck", "rule:ck",
        "CK grouped-convolution backward-weight kernel (an implicit GEMM)", scope=r"ck::tensor_operation::device(?:::.*)?"),
    Row("ck.conv", "Composable Kernel", r"\w*conv\w*", "conv", "rule:ck", "rule:ck",
        "CK convolution; xdl/wmma = matrix cores, dl = dot-product instructions", scope=r"ck::tensor_operation::device(?:::.*)?"),
    Row("ck.gemm", "Composable Kernel", r"\w*gemm\w*", "gemm", "rule:ck", "rule:ck", "CK GEMM",
        scope=r"ck::tensor_operation::device(?:::.*)?"),
    Row("ck_tile.norm", "Composable Kernel", r"\w*(?:[Nn]orm)\w*", "normalization", "rule:elem", None, "ck_tile normalization",
        scope=r"ck_tile(?:::.*)?"),
    Row("ck_tile.fmha", "Composable Kernel", r"Fmha\w*", "attention", "rule:elem", True, "ck_tile attention (MFMA)",
        scope=r"ck_tile(?:::.*)?"),
    Row("ck_tile.gemm", "Composable Kernel", r"\w*Gemm\w*", "gemm", "rule:elem", True, "ck_tile GEMM (MFMA)",
        scope=r"ck_tile(?:::.*)?"),
    Row("rocm.blit", "ROCm runtime", r"__amd_rocclr_\w+", "elementwise", None, None, "HIP runtime copy/fill kernels"),
    # --- Attention libraries -------------------------------------------------------------------
    Row("flash.dot_do_o", "FlashAttention", r"flash_bwd_dot_do_o\w*|FlashAttnBwdPreprocess\w*", "attention", None, None,
        "FlashAttention backward's dot(dO, O) (FA2 flash_bwd_dot_do_o, FA3 FlashAttnBwdPreprocess)", helper=True),
    Row("flash.convert", "FlashAttention", r"flash_bwd_(?:convert\w*|clear\w*)|FlashAttnBwdPostprocess\w*", "elementwise",
        None, None, "FlashAttention backward: dQ/dK/dV accumulator conversion"),
    Row("flash.combine", "FlashAttention", r"flash_fwd_\w*combine\w*|Flash\w*Combine\w*", "attention", "rule:elem", None,
        "FlashAttention split-KV combine (FA2 flash_fwd_splitkv_combine_kernel, FA3 FlashAttnFwdCombine): a "
        "reduction of the partial outputs, no MMA", helper=True),
    Row("flash.kernel", "FlashAttention", r"flash_(?:fwd|bwd)\w*|Flash\w*(?:Fwd|Bwd)\w*|compute_attn\w*", "attention",
        "rule:elem", True, "FlashAttention (mma.sync / wgmma); FA3's FlashAttnFwdSm90 & co. arrive through "
        "cutlass::device_kernel<flash::enable_sm90_or_later<K>>"),
    Row("flash.scoped", "FlashAttention", r"\w+", "attention", "rule:elem", None,
        "another kernel of FlashAttention's namespace (FA3's prepare_varlen_num_blocks scheduler): attention time, "
        "no MMA", scope=r"(?:pytorch_)?flash(?:::.*)?", helper=True),
    Row("flashinfer.decode", "FlashInfer", r"\w*Decode\w*", "attention", "rule:elem", None,
        "FlashInfer decode (CUDA cores unless built with tensor-core decode)", scope=r"flashinfer(?:::.*)?"),
    Row("flashinfer.attn", "FlashInfer", r"\w*(?:Prefill|Attention|MLA|POD)\w*", "attention", "rule:elem", True,
        "FlashInfer prefill / MLA / POD attention (its prefill part on MMA)", scope=r"flashinfer(?:::.*)?"),
    Row("flashinfer.merge", "FlashInfer", r"\w*MergeState\w*", "attention", None, None,
        "FlashInfer merge of attention states", scope=r"flashinfer(?:::.*)?", helper=True),
    Row("xformers.fmha", "xformers/PyTorch", r"fmha_cutlass[FB]\w*", "attention", "rule:name_token", "rule:xformers",
        "memory-efficient attention (CUTLASS); the _smXX suffix is the target: sm50 = SIMT", scope=r""),
    Row("trtllm.fmha", "TensorRT-LLM", r"fmha_v2\w*|xqa_kernel\w*|kernel_mha\w*", "attention", "rule:name_token", True,
        "TensorRT-LLM fused attention", scope=r""),
    Row("trtllm.gen_fmha", "TensorRT-LLM", r"fmhaSm\d+[a-z]?Kernel\w*", "attention", "rule:trtllm_fmha", True,
        "trtllm-gen attention cubins (TensorRT-LLM, FlashInfer): fmhaSm100aKernel_Qkv<T>O<T>... / Q<T>Kv<T>O<T>...; "
        "the Q type is the MMA's input", scope=r""),
    Row("trtllm.mmha", "TensorRT-LLM", r"\w*masked_multihead_attention\w*|mmha\w*", "attention", "rule:elem", None,
        "TensorRT-LLM decoder masked MHA (CUDA cores)"),
    Row("vllm.paged_attention_mfma", "vLLM", r"paged_attention_\w*mfma\w*", "attention", "rule:elem", True,
        "vLLM ROCm paged attention (MFMA)"),
    Row("vllm.paged_attention", "vLLM", r"paged_attention\w*", "attention", "rule:elem", None, "vLLM paged attention"),
    Row("triton.attention", "Triton", r"kernel_unified_attention\w*|_?attn_fwd\w*|_?attn_bwd\w*|_fwd_kernel\w*|_bwd_kernel\w*",
        "attention", None, _TRITON_DOT, "Triton attention (tl.dot: MMA on NVIDIA, MFMA on AMD)", scope=r""),
    # --- MoE (routing, permutation, finalize: never GEMMs) --------------------------------------
    Row("triton.matmul_ogs", "Triton", r"_matmul_ogs_", "gemm", "rule:triton_ogs", _TRITON_DOT,
        "triton_kernels MoE GEMM (tl.dot: MMA on NVIDIA, MFMA on AMD)", scope=r""),
    Row("triton.fused_moe", "Triton", r"fused_moe_kernel\w*", "gemm", None, _TRITON_DOT,
        "vLLM/SGLang Triton fused-MoE GEMM (tl.dot)", scope=r""),
    Row("moe.finalize", "MoE", r"_finalize_matmul\w*|\w*moe_sum\w*|\w*moe_finalize\w*|\w*[Ff]inalizeMoe\w*", "reduction",
        None, None, "MoE finalize: sums each token's top-k expert outputs (not a GEMM)", scope=_MOE_SCOPE),
    Row("moe.scoped_finalize", "MoE", r"\w*[Ff]inalize\w*", "reduction", None, None,
        "MoE finalize in a MoE namespace (its cutlass:: template arguments do not make it a GEMM)",
        scope=r"\w*moe\w*(?:::.*)?"),
    Row("moe.topk", "MoE", r"_topk\w*|\w*topkGating\w*|\w*moe_topk\w*|_sum_bitmatrix\w*", "reduction", None, None,
        "MoE routing: top-k experts per token", scope=_MOE_SCOPE),
    Row("moe.align", "MoE", r"\w*moe_align_block_size\w*|\w*count_and_sort_expert\w*", "reduction", None, None,
        "MoE routing: tokens per expert, padded to the block size", scope=_MOE_SCOPE),
    Row("moe.permute", "MoE", r"\w*(?:expandInputRows|moe_permute|moe_unpermute|moe_gather|moe_scatter|_combined_routing)\w*",
        "elementwise", None, None, "MoE token permutation / routing indices", scope=_MOE_SCOPE),
    # --- FBGEMM ----------------------------------------------------------------------------------
    Row("fbgemm.gemm", "FBGEMM", r"\w*(?:f8f8bf16|bf16i4bf16|f8i4bf16|bf16bf16bf16)\w*|\w*_gemm\w*|\w*grouped_gemm\w*",
        "gemm", "rule:name_token", True, "FBGEMM GEMM kernels (CUTLASS/CK based)", scope=r"fbgemm_gpu(?:::.*)?"),
    Row("fbgemm.embedding", "FBGEMM", r"split_embedding\w*|dense_embedding\w*|\w*_embs_\w*|bounds_check_indices\w*|"
        r"linearize_index\w*|batch_index_select\w*", "elementwise", "rule:type_arg", None,
        "FBGEMM table-batched embeddings (gathers)", scope=r"(?:fbgemm_gpu(?:::.*)?|)"),
    Row("fbgemm.other", "FBGEMM", r"\w+", "elementwise", None, None,
        "FBGEMM sparse ops, permutes, quantize/dequantize (FP8 rowwise conversion is not a GEMM)",
        scope=r"fbgemm_gpu(?:::.*)?"),
    Row("vllm.cache", "vLLM", r"\w*(?:reshape_and_cache|copy_blocks|swap_blocks|concat_and_cache)\w*", "elementwise",
        "rule:type_arg", None, "vLLM KV-cache writes and copies (not attention math)", scope=r"vllm(?:::.*)?"),
    # --- Communication -------------------------------------------------------------------------
    Row("nccl", "NCCL/RCCL", r"(?:nccl|rccl|msccl|mscclpp)\w*", "communication", None, None,
        "collective kernels: ncclDevKernel_* / ncclKernel_* of NCCL and RCCL, mscclKernel_* of MSCCL"),
    Row("nvshmem", "NVSHMEM", r"nvshmem[ix]?_\w+", "communication", None, None,
        "NVSHMEM's own kernels (nvshmemi_* / nvshmemx_* / nvshmem_*: collectives, barriers, transfers)"),
    Row("comm.scope", "", r"\w+", "communication", None, None,
        "c10d symmetric memory, NVSHMEM, DeepEP (dispatch, combine, notify_dispatch), gloo, MSCCL++, QuickReduce",
        scope=r"(?:c10d|nvshmem\w*|deep_ep|gloo|mscclpp|quickreduce)(?:::.*)?"),
    Row("comm.custom_allreduce", "vLLM/SGLang", r"cross_device_reduce\w*|\w*custom_all_?reduce\w*", "communication",
        None, None, "vLLM / SGLang custom all-reduce over peer memory (cross_device_reduce_1stage/2stage)"),
    Row("comm.symm_mem", "PyTorch", r"multimem_\w+|(?:one|two)_shot_all_\w+", "communication", None, None,
        "PyTorch symmetric-memory collectives (multimem_all_reduce_kernel, one_shot_all_reduce_kernel)"),
    Row("comm.vllm", "vLLM", r"\w*all_reduce\w*|\w*allreduce\w*", "communication", None, None,
        "vLLM custom all-reduce", scope=r"vllm(?:::.*)?"),
    # --- Triton / TorchInductor ----------------------------------------------------------------
    Row("inductor.pointwise", "Triton (Inductor)", r"triton_poi_", "triton_pointwise", None, None, scope=r""),
    Row("inductor.reduction", "Triton (Inductor)", r"triton_red_", "triton_reduction", None, None, scope=r""),
    Row("inductor.persistent", "Triton (Inductor)", r"triton_per_", "triton_persistent_reduction", None, None, scope=r""),
    Row("inductor.template_conv", "Triton (Inductor)", r"triton_tem_\w*conv", "conv", None, _TRITON_DOT,
        "Inductor convolution template (tl.dot)", scope=r""),
    Row("inductor.template", "Triton (Inductor)", r"triton_tem_|triton_b?mm\b|triton_(?:b?mm|addmm)_", "gemm", None, _TRITON_DOT,
        "Inductor matmul template (tl.dot)", scope=r""),
    Row("triton.unnamed", "Triton", r"triton_", "other", None, None,
        "a Triton kernel whose name carries no op (old Inductor naming: triton__0d1d2d)", scope=r""),
    # --- PyTorch ATen ----------------------------------------------------------------------------
    Row("aten.softmax", "PyTorch ATen", r"\w*[Ss]oft[Mm]ax\w*", "reduction", "rule:type_arg", None, "softmax / log-softmax",
        scope=r"(?:at(?:::.*)?|\(anonymous namespace\)|)"),
    Row("aten.norm", "PyTorch ATen",
        r"\w*(?:layer_norm|LayerNorm|batch_norm|BatchNorm|group_norm|GroupNorm|RowwiseMoments|GammaBeta|"
        r"ComputeFusedParams|ComputeBackwardFusedParams|ComputeInternalGradients|ComputeGradientFusedParams|"
        r"cuComputeGradGammaBeta|cuComputePartGradGammaBeta|cuWelford|rms_norm|RMSNorm|weight_norm)\w*",
        "normalization", "rule:type_arg", None, "layer/batch/group/RMS norm kernels", scope=r"at(?:::.*)?"),
    Row("aten.reduce", "PyTorch ATen", r"reduce_kernel|\w*reduce\w*", "reduction", "rule:type_arg", None,
        "TensorIterator reductions (sum, mean, max, norm, var): the functor argument does not change the category",
        scope=r"at(?:::.*)?"),
    Row("aten.elementwise", "PyTorch ATen", r"\w*elementwise_kernel\w*|\w*elementwise\w*", "elementwise", "rule:type_arg", None,
        "TensorIterator elementwise kernels: the functor argument does not change the category", scope=r"at(?:::.*)?"),
    Row("aten.copy", "PyTorch ATen", r"CatArrayBatchedCopy\w*|\w*[Cc]opy\w*|\w*fill\w*|multi_tensor_apply_kernel|"
        r"\w*index\w*|\w*Index\w*|\w*gather\w*|\w*scatter\w*|\w*dropout\w*|\w*embedding\w*|\w*distribution\w*|"
        r"\w*transpose\w*|\w*upsample\w*|\w*where\w*|\w*masked\w*|\w*arange\w*|\w*range\w*",
        "elementwise", "rule:type_arg", None, "copies, cat, index/gather/scatter, dropout, fills", scope=r"at(?:::.*)?"),
    Row("aten.loss", "PyTorch ATen", r"\w*nll_loss\w*|\w*ClassNLLCriterion\w*|\w*cross_entropy\w*", "reduction", "rule:type_arg", None,
        "loss kernels"),
    Row("aten.pool", "PyTorch ATen", r"\w*(?:max_pool|avg_pool|adaptive_\w*pool|MaxPool|AvgPool)\w*", "other", "rule:type_arg", None,
        "pooling: no category fits (a windowed reduction)"),
    Row("aten.conv", "PyTorch ATen", r"conv_depthwise\w*|slow_conv\w*", "conv", "rule:type_arg", False,
        "ATen's own (depthwise / slow) convolution on CUDA cores", scope=r"at(?:::.*)?"),
    Row("aten.im2col", "PyTorch ATen", r"im2col\w*|col2im\w*|vol2col\w*|col2vol\w*", "conv", None, None,
        "ATen im2col for its GEMM convolution", scope=r"at(?:::.*)?", helper=True),
    Row("cub", "CUB", r"Device\w*(?:Sort|Scan|Reduce|Histogram)\w*", "reduction", None, None,
        "CUB sort/scan/reduce", scope=r"(?:\w+::)?cub(?:::.*)?"),
    # --- By the function name alone (any library): the old category keywords, on the function name
    Row("name.communication", "", r"(?i)\w*(?:all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv)", "communication",
        None, None, "a collective by its function name"),
    Row("name.attention", "", r"(?i)\w*(?:flash|fmha|attention|attn|sdpa|mha_)", "attention", "rule:name_or_arg",
        "rule:mma_mark", "attention by its function name"),
    Row("name.conv", "", r"(?i)\w*(?:conv(?!ert)|fprop|dgrad|wgrad|winograd|im2col|col2im|implicit_?gemm)", "conv",
        "rule:name_or_arg", "rule:mma_mark", "convolution by its function name"),
    Row("name.gemm", "", r"(?i)\w*?(?<!fb)(?:gem[mv]|matmul|bmm)", "gemm", "rule:name_or_arg", "rule:mma_mark",
        "GEMM by its function name"),
    Row("name.normalization", "", r"(?i)\w*(?:norm(?!al)|bn_fw|bn_bw|welford|rms|gammabeta)", "normalization", "rule:type_arg", None,
        "normalization by its function name"),
    Row("name.reduction", "", r"(?i)\w*(?:reduc|softmax|argmax|argmin|cumsum|scan|sum_kernel|topk|sort)", "reduction",
        "rule:type_arg", None, "reduction by its function name"),
    Row("name.elementwise", "", r"(?i)\w*(?:elementwise|vectorized|unrolled|pointwise|fill|copy|catarray|index|gather|"
        r"scatter|distribution|embedding|where|clamp|relu|gelu|silu|dropout|transpose|permute|convert|"
        r"multi_tensor_apply|rotary|cast|quantize)", "elementwise", "rule:type_arg", None, "elementwise by its function name"),
)

# Libraries by the kernel's outermost namespace, for rows that match on the function name alone.
SCOPE_LIBRARIES: tuple[tuple[str, str], ...] = (
    ("at", "PyTorch ATen"), ("c10", "PyTorch"), ("torch", "PyTorch"), ("cudnn", "cuDNN"), ("cublasLt", "cuBLASLt"),
    ("cub", "CUB"), ("at_cuda_detail", "CUB"), ("thrust", "Thrust"), ("fbgemm_gpu", "FBGEMM"), ("vllm", "vLLM"),
    ("tensorrt_llm", "TensorRT-LLM"), ("flashinfer", "FlashInfer"), ("ck", "Composable Kernel"),
    ("ck_tile", "Composable Kernel"), ("cutlass", "CUTLASS"), ("aiter", "AITER"), ("xformers", "xformers"),
    ("apex", "Apex"), ("transformer_engine", "Transformer Engine"), ("deep_gemm", "DeepGEMM"), ("cask_cudnn", "cuDNN"),
    ("c10d", "PyTorch"), ("deep_ep", "DeepEP"), ("nvshmem", "NVSHMEM"), ("gloo", "Gloo"), ("mscclpp", "MSCCL++"),
    ("quickreduce", "QuickReduce"), ("flash", "FlashAttention"), ("pytorch_flash", "FlashAttention"),
)  # fmt: skip
