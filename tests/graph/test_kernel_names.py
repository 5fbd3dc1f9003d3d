"""The kernel-name parser (demangled C++, Itanium-mangled, plain C names), the Itanium decoder,
short names for messages, and classification of names built the way each library builds them."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflint.cli import main
from perflint.demangle import demangle, name_components
from perflint.metrics.kernel_class import classify_kernel, rule_names
from perflint.metrics.kernel_names import parse_kernel_name, short_name, split_top
from perflint.metrics.kernel_table import ROWS
from perflint.metrics.kernels import CATEGORIES

ELEMENTWISE = (
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> >"
    "(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int, "
    "at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, "
    "at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1})"
)


def test_demangled_template_function() -> None:
    k = parse_kernel_name(ELEMENTWISE)
    assert (k.form, k.return_type, k.namespaces, k.function) == ("c++", "void", ("at", "native"), "elementwise_kernel")
    assert k.template_args[:2] == ("128", "4")
    assert k.template_args[2].endswith("::{lambda(int)#1}")
    assert k.params is not None and k.params[0] == "int" and len(k.params) == 2
    inner = k.arg(2)
    assert inner is not None and inner.function == "{lambda(int)#1}"
    assert inner.namespaces[-1] == "gpu_kernel_impl"


def test_anonymous_namespaces_return_types_and_operators() -> None:
    k = parse_kernel_name("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true>(float*, int)")
    assert (k.namespaces, k.function, k.template_args) == (("(anonymous namespace)",), "softmax_warp_forward",
                                                            ("float", "float", "float", "10", "true"))
    k = parse_kernel_name("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, float>(int)")
    assert (k.return_type, k.scope, k.function) == ("std::enable_if<!(false), void>::type", "internal::gemvx", "kernel")
    k = parse_kernel_name("foo::bar<int>::operator()<float>(float) const")
    assert (k.namespaces, k.function, k.template_args, k.params) == (("foo", "bar"), "operator()", ("float",), ("float",))
    k = parse_kernel_name("a::operator<<(int)")
    assert (k.function, k.params) == ("operator<<", ("int",))
    k = parse_kernel_name("at::cuda::(anonymous namespace)::spin_kernel(long)")
    assert (k.namespaces, k.function, k.params) == (("at", "cuda", "(anonymous namespace)"), "spin_kernel", ("long",))


def test_plain_and_odd_names() -> None:
    for name in ("volta_sgemm_128x64_nt", "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "triton_poi_fused_add_0",
                 "Cijk_Ailk_Bljk_SB_MT64x64x8_SE"):
        k = parse_kernel_name(name)
        assert (k.form, k.function, k.namespaces, k.template_args, k.params) == ("plain", name, (), (), None)
    k = parse_kernel_name("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4")  # cut short
    assert (k.function, k.template_args) == ("Kernel", ("cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4",))
    k = parse_kernel_name("void f<(1<2), 3>(int)")
    assert (k.function, k.template_args) == ("f", ("(1<2)", "3"))
    k = parse_kernel_name("void clover::par_ranged1d_kernel<f(int)::[lambda(int) (instance 4)]>(clover::Range1d, T1)")
    assert (k.function, k.template_args) == ("par_ranged1d_kernel", ("f(int)::[lambda(int) (instance 4)]",))
    assert split_top("a<b, c>, d(e, f), g") == ("a<b, c>", "d(e, f)", "g")


# Pinned from GNU c++filt (the decoder must not need it).
MANGLED = [
    ("_ZN2at6native13reduce_kernelILi512ENS0_8ReduceOpIfNS0_7NormOpsIfEEjfLi4EEEEEvT0_",
     "void at::native::reduce_kernel<512, at::native::ReduceOp<float, at::native::NormOps<float>, unsigned int, float, 4> >"
     "(at::native::ReduceOp<float, at::native::NormOps<float>, unsigned int, float, 4>)"),
    ("_ZN6clover19par_ranged1d_kernelIZ11build_fieldR16global_variablesEUliE0_EEvNS_7Range1dET_",
     "void clover::par_ranged1d_kernel<build_field(global_variables&)::{lambda(int)#2}>(clover::Range1d, "
     "build_field(global_variables&)::{lambda(int)#2})"),
    ("_ZN2ck16tensor_operation6device12_GLOBAL__N_13fooILNS_3EnmE1ELb1ELm4ELin2EEEvv",
     "void ck::tensor_operation::device::(anonymous namespace)::foo<(ck::Enm)1, true, 4ul, -2>()"),
    ("_ZZ3foovENKUlvE_clEv", "foo()::{lambda()#1}::operator()() const"),
    ("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)"),
    ("_Z1fPFviEPKc", "f(void (*)(int), char const*)"),
    ("_Z1fILi1EEvv.kd", "void f<1>() [clone .kd]"),
    ("_Z1fDF16bDF16_", "f(std::bfloat16_t, _Float16)"),
    ("_Z3fooILb1ELc65ELx5ELy6ELj7EEvv", "void foo<true, (char)65, 5ll, 6ull, 7u>()"),
]


@pytest.mark.parametrize(("mangled", "text"), MANGLED)
def test_itanium_names_decode_like_cxxfilt(mangled: str, text: str) -> None:
    assert demangle(mangled) == text


def test_mangled_names_parse_into_parts() -> None:
    k = parse_kernel_name(MANGLED[0][0])
    assert (k.form, k.namespaces, k.function, k.template_args[0]) == ("mangled", ("at", "native"), "reduce_kernel", "512")
    assert k.demangled == MANGLED[0][1] and k.text == MANGLED[0][0]
    # Undecodable past the name (a made-up type code): namespaces and function name still come out.
    broken = "_ZN2ck16tensor_operation6device15kernel_gemm_xdlIQQQEEvv"
    assert demangle(broken) is None
    assert name_components(broken) == ["ck", "tensor_operation", "device", "kernel_gemm_xdl"]
    k = parse_kernel_name(broken)
    assert (k.form, k.scope, k.function) == ("mangled", "ck::tensor_operation::device", "kernel_gemm_xdl")
    assert classify_kernel(broken).category == "gemm"


def test_short_names() -> None:
    assert short_name(ELEMENTWISE) == "elementwise_kernel<128, 4, ...>"
    assert short_name("volta_sgemm_128x64_nt") == "volta_sgemm_128x64_nt"
    cut = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x256_64x3_nn_align2>(x::Params)"
    assert short_name(cut) == "Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x256_64x3_nn_align2>"
    long_c = "Cijk_Ailk_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT128x64x32_MI32x32x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1"
    s = short_name(long_c)
    assert len(s) <= 80 and s.endswith("...") and long_c.startswith(s[:-3])
    assert short_name("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float> > >(x)") \
        == "reduce_kernel<512, 1, ReduceOp>"


_PIECES = st.sampled_from(
    list("_ZNIESLTKPRJXDFUlvifcbm0123456789abxyz<>()[]{},:&* ~-!.#")
    + ["operator", "::", "(anonymous namespace)", "{lambda()#1}", "_Z", "Li1E", "S_", "T_", "void ", "const"]
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.lists(_PIECES, max_size=50).map("".join), st.text(max_size=120)),
       st.sampled_from([None, "nvidia", "amd", "xpu"]))
def test_never_raises_on_any_string(name: str, vendor: str | None) -> None:
    k = parse_kernel_name(name)
    assert isinstance(k.function, str)
    c = classify_kernel(name, vendor)
    assert c.category in CATEGORIES
    assert len(short_name(name)) <= 80
    demangle(name)


def test_deep_and_long_names_stay_fast() -> None:
    deep = "void " + "a::b<" * 400 + "int" + ">" * 400 + "(int)"
    wide = "void f<" + ", ".join(f"T{i}<float, int>" for i in range(3000)) + ">(int)"
    for name in (deep, wide, "_Z" + "P" * 5000 + "i", "_Z1f" + "I" * 3000):
        classify_kernel(name)
        short_name(name)


# Names as each library builds them (beyond what the corpus has).
SYNTHETIC = [
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
     "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<4, "
     "cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecialized>, "
     "cute::tuple<cute::C<128>, cute::C<128>, cute::C<64> >, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, "
     "cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long> >, void, void> >(Params)",
     None, ("gemm", True, "bf16", "cutlass.gemm_struct")),
    ("void tensorrt_llm::kernels::finalizeMoeRoutingKernel<cutlass::half_t, cutlass::half_t, float>(cutlass::half_t*)",
     None, ("reduction", None, None, "moe.finalize")),
    ("void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*)", None, ("reduction", None, None, "moe.align")),
    ("void fbgemm_gpu::permute_1D_data_kernel<cutlass::gemm::GemmShape<1, 2, 3> >(int)", None,
     ("elementwise", None, None, "fbgemm.other")),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4>(Params)", None, ("gemm", True, "tf32", "cutlass.named")),
    ("cutlass_75_tensorop_s1688gemm_f16_256x128_32x2_nn_align8", None, ("gemm", True, "fp16", "cutlass.named")),
    ("cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8", None,
     ("gemm", True, "bf16", "cutlass.named")),
    ("volta_h884gemm_64x64_ldg8_nn", None, ("gemm", True, "fp16", "cublas.arch_gemm")),
    ("turing_h1688gemm_256x128_ldg8_tn", None, ("gemm", True, "fp16", "cublas.arch_gemm")),
    ("ampere_h16816gemm_128x128_ldg8_stages_64x3_tn", None, ("gemm", True, "fp16", "cublas.arch_gemm")),
    ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn", None, ("gemm", True, "bf16", "cublas.arch_gemm")),
    ("volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1", None,
     ("conv", True, "fp16", "cudnn.mma")),
    ("maxwell_hcudnn_128x64_relu_interior_nn", None, ("conv", False, "fp16", "cudnn.scudnn")),
    ("fmha_cutlassF_f16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t>::Params)", None,
     ("attention", True, "fp16", "xformers.fmha")),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm50(Params)", None, ("attention", False, "fp32", "xformers.fmha")),
    ("void flashinfer::BatchPrefillWithPagedKVCacheKernel<cutlass::half_t>(Params)", None,
     ("attention", True, "fp16", "flashinfer.attn")),
    ("triton_tem_fused_addmm_0", "nvidia", ("gemm", True, None, "inductor.template")),
    ("triton_tem_fused_convolution_1", "amd", ("conv", True, None, "inductor.template_conv")),
    ("fused_moe_kernel", "amd", ("gemm", True, None, "triton.fused_moe")),
    ("igemm_fwd_gtc_nhwc_fp32_bx0_ex1_bt128x128x16", None, ("conv", False, "fp32", "miopen.igemm")),
    ("naive_conv_fwd_nchw_fp32", None, ("conv", False, "fp32", "miopen.naive")),
    ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN", None, ("gemm", True, "fp16", "tensile.gemm")),
    ("Cijk_Ailk_Bljk_SB_MT64x64x8_SE_1LDSB0_APM1", None, ("gemm", False, "fp32", "tensile.gemm")),
    ("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128", None, ("gemm", True, "fp8", "cublas.xmma_gemm")),
    ("void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<1, float, int>(x)", None,
     ("conv", False, "fp32", "aten.conv")),
    ("void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 8>(float*)", None,
     ("communication", None, None, "comm.scope")),
    ("void moe::finalize<cutlass::half_t, cutlass::gemm::GemmShape<128, 128, 32> >(cutlass::gemm::GemmCoord)", None,
     ("reduction", None, None, "moe.scoped_finalize")),
    ("void mylib::scatter_rows<cutlass::gemm::kernel::GemmUniversal<int>, cutlass_80_tensorop_s1688gemm_64x64>(int)", None,
     ("elementwise", None, None, "name.elementwise")),
]


@pytest.mark.parametrize(("name", "vendor", "expected"), SYNTHETIC, ids=[s[2][3] + ":" + s[0][:30] for s in SYNTHETIC])
def test_library_conventions(name: str, vendor: str | None, expected: tuple[str, bool | None, str | None, str]) -> None:
    c = classify_kernel(name, vendor)
    assert (c.category, c.tensor_cores, c.dtype, c.row) == expected


def test_table_rows_are_well_formed() -> None:
    dtype_rules, tc_rules = rule_names()
    ids = [r.id for r in ROWS]
    assert len(ids) == len(set(ids))
    for r in ROWS:
        assert r.category in CATEGORIES, r.id
        if isinstance(r.dtype, str) and r.dtype.startswith("rule:"):
            assert r.dtype[5:] in dtype_rules, r.id
        if isinstance(r.tc, str):
            assert r.tc.startswith("rule:") and r.tc[5:] in tc_rules, r.id
        if r.helper:
            assert r.category in ("gemm", "conv", "attention"), r.id


def test_cli_text_and_errors(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["classify", "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", "--vendor", "amd"]) == 0
    out = capsys.readouterr().out
    assert "category:      gemm" in out and "tensor cores:  yes" in out and "row triton.matmul_ogs" in out
    assert main(["classify", ELEMENTWISE]) == 0
    out = capsys.readouterr().out
    assert "namespaces:    at::native" in out and "[1] 4" in out and "row aten.elementwise" in out
    monkeypatch.setattr("sys.stdin", io.StringIO("\n\n"))
    assert main(["classify", "-"]) == 2
    assert "no kernel names" in capsys.readouterr().err
    assert main(["classify", "-", "volta_sgemm_128x64_nt"]) == 2
