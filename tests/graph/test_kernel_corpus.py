"""Kernel classification over every distinct kernel name in the real traces (the shared corpus and
fixtures/gpu): a table of expected verdicts read from those results, and the guarantee that no
kernel is a GEMM or a convolution only because of what its template arguments or parameters say."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from perflint.cli import main
from perflint.kernelnames.classify import classify_kernel
from perflint.kernelnames.conventions import ROWS
from perflint.kernelnames.parse import parse_kernel_name
from perflint.metrics.kernel_classes import CATEGORIES
from perflint.readers.kineto import parse_devices
from tests.conftest import FIXTURES, TRACES

_KERNEL_CATS = {"kernel", "Kernel", "cuda_profiler_range"}


def _events(path: Path) -> tuple[list[Any], Any]:
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        doc = orjson.loads(raw)
    except (OSError, ValueError, EOFError):
        return [], None
    if isinstance(doc, dict):
        return doc.get("traceEvents") or [], doc.get("deviceProperties")
    return (doc if isinstance(doc, list) else []), None


def _vendor(props: Any) -> str | None:
    vendors = {d.vendor for d in parse_devices(props).values()} - {"unknown"}
    return vendors.pop() if len(vendors) == 1 else None


@pytest.fixture(scope="module")
def corpus() -> dict[str, str | None]:
    """Every distinct kernel name -> the vendor of the trace it came from (None: not recorded)."""
    if not TRACES.exists():
        if os.environ.get("CI") or os.environ.get("PERFLINT_REQUIRE_SHARED"):
            pytest.fail(f"shared trace corpus missing: {TRACES}")
        pytest.skip("shared trace corpus not available")
    names: dict[str, str | None] = {}
    paths = sorted(TRACES.rglob("*.json*")) + sorted((FIXTURES / "gpu").glob("*.json.gz"))
    for path in paths:
        events, props = _events(path)
        vendor = _vendor(props)
        for e in events:
            if isinstance(e, dict) and e.get("cat") in _KERNEL_CATS and isinstance(e.get("name"), str):
                names.setdefault(e["name"], vendor)
    assert len(names) > 600, len(names)
    return names


# (regex matched at the start of the name, category, tensor cores, dtype, library, deciding row)
CASES = [
    # cuBLAS / cuBLASLt
    (r"volta_sgemm_128x64_nt$", "gemm", False, "fp32", "cuBLAS", "cublas.arch_gemm"),
    (r"ampere_sgemm_", "gemm", False, "fp32", "cuBLAS", "cublas.arch_gemm"),
    (r"ampere_gcgemm_64x64_nt", "gemm", False, "fp32", "cuBLAS", "cublas.arch_gemm"),
    (r"nvjet_sm90_hsh_", "gemm", True, "fp16", "cuBLASLt", "cublas.nvjet"),
    (r"nvjet_sm90_tst_", "gemm", True, "bf16", "cuBLASLt", "cublas.nvjet"),
    (r"sm80_xmma_gemm_f32f32_f32f32_f32_\w+_ffma_", "gemm", False, "fp32", "cuBLAS", "cublas.xmma_gemm"),
    (r"sm90_xmma_gemm_f32f32_tf32f32_f32_", "gemm", True, "tf32", "cuBLAS", "cublas.xmma_gemm"),
    (r"sm90_xmma_gemm_bf16bf16_bf16f32_f32_", "gemm", True, "bf16", "cuBLAS", "cublas.xmma_gemm"),
    (r"void gemmk1_kernel<float, 256, 5, false, false, false, false, cublasGemvTensorStridedBatched<__half const>",
     "gemm", False, "fp16", "cuBLAS", "cublas.gemv"),
    (r"void gemmSN_(NN|TN)_kernel", "gemm", False, "fp32", "cuBLAS", "cublas.gemv"),
    (r"void gemv(2T|NSP)_kernel", "gemm", False, "fp32", "cuBLAS", "cublas.gemv"),
    (r"std::enable_if<!\(false\), void>::type internal::gemvx::kernel<", "gemm", False, "fp32", "cuBLAS", "cublas.gemvx"),
    (r"void magma_sgemmEx_kernel<", "gemm", False, "fp32", "cuBLAS", "cublas.magma_sgemm"),
    (r"void sgemm_largek_lds64<", "gemm", False, "fp32", "cuBLAS", "cublas.sgemm_largek"),
    (r"void (cublasLt::)?splitKreduce_kernel<", "gemm", None, None, "cuBLAS", "cublas.splitk"),
    (r"void epilogue::impl::globalKernel<", "gemm", None, None, "cuBLASLt", "cublas.epilogue"),
    (r"void scal_kernel<float", "elementwise", None, "fp32", "cuBLAS", "cublas.level1"),
    # CUTLASS: the template argument names the kernel
    (r"void cutlass::Kernel2?<cutlass_80_tensorop_s1688gemm_", "gemm", True, "tf32", "CUTLASS", "cutlass.named"),
    (r"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm", "gemm", True, "bf16", "CUTLASS", "cutlass.named"),
    (r"void cutlass::Kernel2<cutlass_75_tensorop_f16_s1688gemm", "gemm", True, "fp16", "CUTLASS", "cutlass.named"),
    (r"void cutlass::Kernel2<cutlass_75_tensorop_s1688gemm_f16", "gemm", True, "fp16", "CUTLASS", "cutlass.named"),
    (r"void cutlass::Kernel2?<cutlass_\d+_wmma_tensorop_f16_s161616gemm", "gemm", True, "fp16", "CUTLASS", "cutlass.named"),
    (r"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16", "gemm", True, "bf16", "CUTLASS", "cutlass.named"),
    (r"void cutlass::Kernel2<cutlass_80_simt_sgemm_", "gemm", False, "fp32", "CUTLASS", "cutlass.named"),
    # cuDNN
    (r"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_", "conv", True, "tf32", "cuDNN", "cudnn.xmma_conv"),
    (r"sm90_xmma_(fprop|dgrad|wgrad)\w*_f16f16_f16f32_f32_", "conv", True, "fp16", "cuDNN", "cudnn.xmma_conv"),
    (r"void xmma_new::gemm::kernel<xmma_new::implicit_gemm::fprop::Kernel_traits<xmma_new::Ampere_hmma_tf32_traits",
     "conv", True, "tf32", "cuDNN", "xmma.conv_traits"),
    (r"(cudnn_(infer_|train_)?)?(volta|turing|ampere)_scudnn_", "conv", False, "fp32", "cuDNN", "cudnn.scudnn"),
    (r"void (cudnn::detail::)?implicit_convolve_sgemm<", "conv", False, "fp32", "cuDNN", "cudnn.convolve_sgemm"),
    (r"void explicit_convolve_sgemm<", "conv", False, "fp32", "cuDNN", "cudnn.convolve_sgemm"),
    (r"void (cudnn::cnn::)?wgrad_alg[01]_engine<float", "conv", False, "fp32", "cuDNN", "cudnn.engine"),
    (r"void cudnn::detail::dgrad_engine<float", "conv", False, "fp32", "cuDNN", "cudnn.engine"),
    (r"void fft2d_(r2c|c2r)_32x32<float", "conv", None, "fp32", "cuDNN", "cudnn.fft"),
    (r"void cudnn::winograd(_nonfused)?::", "conv", None, None, "cuDNN", "cudnn.winograd"),
    (r"(void )?cask_cudnn\w*::compute\w*Offsets", "conv", None, None, "cuDNN", "cudnn.cask_offsets"),
    (r"void cask_plugin__5x_cudnn::xmma__5x_cudnn::init_device_workspace_kernel", "conv", None, None, "cuDNN", "cudnn.workspace"),
    (r"conv2d_c1_k1_nchw_shmem_tiling", "conv", False, None, "cuDNN", "cudnn.depthwise"),
    (r"void (cudnn::ops::)?(nchwToNhwc|nhwcToNchw)Kernel<float", "elementwise", None, "fp32", "cuDNN", "cudnn.layout"),
    (r"void cudnn::bn_(fw|bw)_", "normalization", None, "fp32", "cuDNN", "cudnn.bn"),
    (r"cudnn_generated_fort_native_sdpa_sm90_flash_(fprop|bprop)_wgmma_f16", "attention", True, None, "cuDNN", "cudnn.sdpa"),
    (r"void cudnn::fusion::compute_dot_do_o_specialized", "attention", None, None, "cuDNN", "cudnn.sdpa_dot"),
    (r"void cudnn::fusion::convert_dq_to_16bits", "elementwise", None, None, "cuDNN", "cudnn.convert_dq"),
    # AMD: hipBLASLt/Tensile, MIOpen, Composable Kernel
    (r"Cijk_A\w+_B\w+_BBS_BH_\w+_MI\d+x\d+x\d+", "gemm", True, "bf16", "hipBLASLt/Tensile", "tensile.gemm"),
    (r"Cijk_A\w+_B\w+_B_BS_BH_\w+_MI16x16x1_", "gemm", True, "bf16", "hipBLASLt/Tensile", "tensile.gemm"),
    (r"Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_", "gemm", True, "fp32", "hipBLASLt/Tensile", "tensile.gemm"),
    (r"Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_", "gemm", True, "fp32", "hipBLASLt/Tensile", "tensile.gemm"),
    (r"igemm_(fwd|bwd|wrw)_gtcx[23]_nhwc_bf16_", "conv", True, "bf16", "MIOpen", "miopen.igemm"),
    (r"MIOpenBatchNorm", "normalization", None, None, "MIOpen", "miopen.bn"),
    (r"batched_transpose_\w+_half", "elementwise", None, None, "MIOpen", "miopen.transpose"),
    (r"transpose_(NCHW2CNHW|CNHW2NCHW)_", "elementwise", None, None, "MIOpen", "miopen.transpose"),
    (r"SubTensorOpWith", "elementwise", None, None, "MIOpen", "miopen.tensor_op"),
    (r"_ZN2ck16tensor_operation6device12_GLOBAL__N_1\d+kernel_grouped_conv_fwd", "conv", True, "bf16",
     "Composable Kernel", "ck.conv"),
    (r"_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd_weight", "conv", True, "bf16",
     "Composable Kernel", "ck.conv_bwd_weight"),
    (r"_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwd", "normalization", None, "bf16", "Composable Kernel", "ck_tile.norm"),
    # Triton (user kernels on an MI300X; TorchInductor)
    (r"_matmul_ogs_NNT_bf16xbf16xmxfp4_", "gemm", True, "bf16", "Triton", "triton.matmul_ogs"),
    (r"_finalize_matmul_scatter_bf16$", "reduction", None, None, "MoE", "moe.finalize"),
    (r"_topk_forward$|_sum_bitmatrix_rows$", "reduction", None, None, "MoE", "moe.topk"),
    (r"_combined_routing_(compute|memset)$", "elementwise", None, None, "MoE", "moe.permute"),
    (r"kernel_unified_attention_[23]d$", "attention", True, None, "Triton", "triton.attention"),
    (r"attn_fwd$", "attention", True, None, "Triton", "triton.attention"),
    (r"triton_poi_fused_", "triton_pointwise", None, None, "Triton (Inductor)", "inductor.pointwise"),
    (r"triton_red_fused_", "triton_reduction", None, None, "Triton (Inductor)", "inductor.reduction"),
    (r"triton__0d1d", "other", None, None, "Triton", "triton.unnamed"),
    # FlashAttention, vLLM
    (r"void pytorch_flash::flash_fwd_kernel<", "attention", True, "bf16", "FlashAttention", "flash.kernel"),
    (r"void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16", "elementwise", None, "bf16", "vLLM", "vllm.cache"),
    (r"void vllm::rotary_embedding_kernel<c10::BFloat16", "elementwise", None, "bf16", "vLLM", "name.elementwise"),
    # FBGEMM: embeddings, permutes and FP8 conversions are not GEMMs
    (r"split_embedding_backward_codegen_\w*find_long_segments\(", "elementwise", None, None, "FBGEMM", "fbgemm.embedding"),
    (r"void split_embedding_codegen_forward_\w+<float,", "elementwise", None, "fp32", "FBGEMM", "fbgemm.embedding"),
    (r"void split_embedding_\w+<c10::Half,", "elementwise", None, "fp16", "FBGEMM", "fbgemm.embedding"),
    (r"void bounds_check_indices_kernel<", "elementwise", None, None, "FBGEMM", "fbgemm.embedding"),
    (r"void permute_pooled_embs_kernel<float>", "elementwise", None, "fp32", "FBGEMM", "fbgemm.embedding"),
    (r"void fbgemm_gpu::permute_", "elementwise", None, None, "FBGEMM", "fbgemm.other"),
    (r"void fbgemm_gpu::\(anonymous namespace\)::_(FP8rowwise_to_float|compute_FP8_quantize|get_FP8_qparam)",
     "elementwise", None, None, "FBGEMM", "fbgemm.other"),
    # NCCL / RCCL
    (r"ncclKernel_|ncclDevKernel_", "communication", None, None, "NCCL/RCCL", "nccl"),
    # PyTorch ATen: the function name decides, not the functor argument
    (r"void at::native::vectorized_elementwise_kernel<", "elementwise", None, None, "PyTorch ATen", "aten.elementwise"),
    (r"void at::native::elementwise_kernel<", "elementwise", None, None, "PyTorch ATen", "aten.elementwise"),
    (r"void at::native::\(anonymous namespace\)::unrolled_elementwise_kernel_for_multi_outputs<3, "
     r"at::native::\(anonymous namespace\)::batch_norm_update_stats", "elementwise", None, None, "PyTorch ATen", "aten.elementwise"),
    (r"void at::native::\(anonymous namespace\)::distribution_elementwise_grid_stride_kernel<float, 4, "
     r"at::native::templates::cuda::normal", "elementwise", None, "fp32", "PyTorch ATen", "aten.elementwise"),
    (r"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::(NormTwoOps|WelfordOps)",
     "reduction", None, None, "PyTorch ATen", "aten.reduce"),
    (r"void \(anonymous namespace\)::softmax_warp_(forward|backward)<float", "reduction", None, "fp32", "PyTorch ATen", "aten.softmax"),
    (r"void at::native::\(anonymous namespace\)::(vectorized_)?layer_norm_kernel<float", "normalization", None, "fp32",
     "PyTorch ATen", "aten.norm"),
    (r"void at::native::\(anonymous namespace\)::GammaBetaBackward", "normalization", None, "fp32", "PyTorch ATen", "aten.norm"),
    (r"void at::native::\(anonymous namespace\)::CatArrayBatchedCopy<float", "elementwise", None, "fp32", "PyTorch ATen", "aten.copy"),
    (r"void at::native::\(anonymous namespace\)::indexSelectLargeIndex<c10::BFloat16", "elementwise", None, "bf16",
     "PyTorch ATen", "aten.copy"),
    (r"void at::native::\(anonymous namespace\)::max_pool_(forward|backward)_nchw<float", "other", None, "fp32",
     "PyTorch ATen", "aten.pool"),
    (r"void cunn_ClassNLLCriterion_update\w+_kernel<float", "reduction", None, "fp32", "PyTorch ATen", "aten.loss"),
    (r"void cub::DeviceRadixSort", "reduction", None, None, "CUB", "cub"),
]


@pytest.mark.parametrize(("pattern", "category", "tc", "dtype", "library", "row"), CASES, ids=[c[-1] + ":" + c[0][:40] for c in CASES])
def test_real_kernel_names(corpus: dict[str, str | None], pattern: str, category: str, tc: bool | None,
                           dtype: str | None, library: str, row: str) -> None:
    rx = re.compile(pattern)
    hits = [n for n in corpus if rx.match(n)]
    assert hits, f"no kernel in the corpus matches {pattern!r}"
    for n in hits:
        c = classify_kernel(n, corpus[n])
        got = (c.category, c.tensor_cores, c.dtype, c.library, c.row)
        assert got == (category, tc, dtype, library, row), n


def test_fp32_simt_names_say_so_without_an_op(corpus: dict[str, str | None]) -> None:
    """sgemm / scudnn / gcgemm / implicit_convolve_sgemm are fp32 SIMT by name alone."""
    rx = re.compile(r"(volta|ampere)_(sgemm|gcgemm)_|\w*_scudnn_|void (cudnn::detail::)?implicit_convolve_sgemm<")
    hits = [n for n in corpus if rx.match(n)]
    assert len(hits) > 20
    for n in hits:
        c = classify_kernel(n)
        assert (c.simt, c.dtype, c.tensor_cores) == (True, "fp32", False), n


def test_triton_dot_is_matrix_core_work_only_with_a_known_vendor() -> None:
    name = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"
    assert classify_kernel(name, "amd").tensor_cores is True
    assert classify_kernel(name, "nvidia").tensor_cores is True
    assert classify_kernel(name).tensor_cores is None


def test_layout_tags_are_not_layout_conversions(corpus: dict[str, str | None]) -> None:
    tagged = [n for n in corpus if "nhwckrsc_nchw" in n]
    converters = [n for n in corpus if re.match(r"void (cudnn::ops::)?(nchwToNhwc|nhwcToNchw)Kernel", n)]
    assert tagged and converters
    assert not any(classify_kernel(n).layout_conversion for n in tagged)
    assert all(classify_kernel(n).layout_conversion for n in converters)


def _bare(name: str) -> str:
    """The name without return type, template arguments and parameters."""
    return parse_kernel_name(name).qualified


def test_no_gemm_or_conv_from_template_args_or_params(corpus: dict[str, str | None]) -> None:
    """A GEMM/convolution verdict comes from the function name (or, for a template that names its
    kernel by an argument, from that argument's own function name): the deciding row matches
    that name, and the kernel keeps its category without its arguments and parameters."""
    rows = {r.id: r for r in ROWS}
    matrix = 0
    for n, vendor in corpus.items():
        c = classify_kernel(n, vendor)
        if c.category not in ("gemm", "conv"):
            continue
        matrix += 1
        row = rows[c.row]
        assert re.match(row.function, c.identity.function), n
        if c.via is None:
            assert c.identity is c.name, n
            assert classify_kernel(_bare(n), vendor).category == c.category, n
        else:  # the argument itself, or one inside a guard such as enable_sm90_or_later<K>
            assert any(c.identity.text in a for a in c.name.template_args), n
    assert matrix > 200


def test_every_corpus_name_gets_a_known_category(corpus: dict[str, str | None]) -> None:
    for n, vendor in corpus.items():
        c = classify_kernel(n, vendor)
        assert c.category in CATEGORIES, n
        if c.category not in ("gemm", "conv", "attention"):
            assert c.tensor_cores is None, n


def test_cli_classifies_the_corpus_from_stdin(corpus: dict[str, str | None], capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    names = sorted(n for n in corpus if "\n" not in n and n.strip() == n)
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(names) + "\n"))
    assert main(["classify", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in out] == names
    assert all(r["category"] == classify_kernel(r["name"]).category for r in out)


def test_corpus_has_a_trace_of_each_vendor(corpus: dict[str, str | None]) -> None:
    assert set(corpus.values()) >= {"nvidia", "amd", None}
