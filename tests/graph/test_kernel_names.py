"""The kernel-name parser (demangled C++, Itanium-mangled, plain C names), the Itanium decoder,
short names for messages, and classification of names built the way each library builds them."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflint.cli import main
from perflint.kernelnames.classify import classify_kernel, rule_names
from perflint.kernelnames.conventions import ROWS
from perflint.kernelnames.demangle import demangle, name_components
from perflint.kernelnames.parse import parse_kernel_name, short_name, split_top
from perflint.metrics.kernel_classes import CATEGORIES

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
    bad_mangled = "_Z" + "P" * 5000 + "i"
    # Parsing stops at its depth and width bounds and still names the function; the short name is
    # bounded whatever the input's size; an unparseable mangled name is kept as written.
    expect = {deep: "b", wide: "f", bad_mangled: bad_mangled, "_Z1f" + "I" * 3000: "f"}
    for name, function in expect.items():
        c = classify_kernel(name)
        assert c.category == "other" and c.row == "other"
        assert c.name is not None and c.name.function == function
        short = short_name(name)
        assert 0 < len(short) <= 80 and short.startswith(function[:40])


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
] + [(name, None, expected) for name, expected in [
    # trtllm-gen (TensorRT-LLM, FlashInfer) Blackwell GEMMs and attention: <kind>_[<out>_]<A><B>_<acc>_t<tile>
    ("bmm_E4m3E4m3_Fp32_t128x128x128_s3_sm100", ("gemm", True, "fp8", "trtllm.gen_gemm")),
    ("bmm_Bfloat16_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_sm100a",
     ("gemm", True, "fp8", "trtllm.gen_gemm")),
    ("bmm_Bfloat16_Bfloat16Bfloat16_Fp32_t128x8x128u2_s6_et128x8_m128x8x16_cga1x1x1_16dp256b_TN_transOut_schedS_sm100a",
     ("gemm", True, "bf16", "trtllm.gen_gemm")),
    ("GemmKernel_Bfloat16_E4m3_Fp32_tile128x128x128_epilogueTile128x64_mma128x64x32_cluster1x1x1_dsFp8_sm100a",
     ("gemm", True, "fp8", "trtllm.gen_gemm")),
    ("GemmGatedActKernel_E5m2_E5m2_Fp32_tile128x8x256_epilogueTile128x8_mma128x8x32_cluster1x1x4_splitK4_sm100a",
     ("gemm", True, "fp8", "trtllm.gen_gemm")),
    ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x8x256_s3_et128x8_m128x8x32_cga1x1x1_16dp256b_TN_schedS_sm100f",
     ("gemm", True, None, "trtllm.gen_gemm")),  # an fp4 weight: a type perflint does not rank
    ("fmhaSm100aKernel_QkvE4m3OBfloat16HQk128HV128", ("attention", True, "fp8", "trtllm.gen_fmha")),
    ("fmhaSm100aKernel_QE4m3KvE2m1OE4m3H128PagedKvDenseP16VarSeqQ8Kv128PersistentSwapsAbForGen",
     ("attention", True, "fp8", "trtllm.gen_fmha")),
    ("fmhaSm103aKernel_QBfloat16KvE4m3OBfloat16H128PagedKvCausalP32VarSeqQ128Kv128PersistentContext",
     ("attention", True, "bf16", "trtllm.gen_fmha")),
    # DeepGEMM: every GEMM is WGMMA / UMMA; the name's type token is the input's
    ("void deep_gemm::fp8_gemm_kernel<128u>(float*)", ("gemm", True, "fp8", "deepgemm.gemm")),
    ("void deep_gemm::sm90_fp8_gemm_1d2d_impl<0u, 4096u, 7168u, 128u, 128u, 128u, 1u, 5u, 5u, 128u, 256u, 1u, false, 132u, "
     "(deep_gemm::GemmType)0, deep_gemm::EpilogueIdentity>(float*, int*, unsigned int, unsigned int, unsigned int, CUtensorMap_st)",
     ("gemm", True, "fp8", "deepgemm.gemm")),
    ("void deep_gemm::sm100_fp8_gemm_1d1d_impl<(cute::UMMA::Major)0, (cute::UMMA::Major)0, 128u, 7168u, 128u, 256u, 128u, 1u, "
     "128u, 128u, 4u, 8u, 2u, true, 148u, (deep_gemm::GemmType)1, false, cutlass::bfloat16_t>(int*, unsigned int)",
     ("gemm", True, "fp8", "deepgemm.gemm")),
    ("void deep_gemm::sm90_bf16_gemm_impl<0u, 2048u, 7168u, 128u, 256u, 64u, 1u, 4u, 128u, 256u, 1u, false, 132u, "
     "(deep_gemm::GemmType)0>(int*, unsigned int)", ("gemm", True, "bf16", "deepgemm.gemm")),
    ("void deep_gemm::sm90_fp8_paged_mqa_logits<1u, 64u, 128u, 64u, 128u, 3u, 2u, 128u, 256u>(unsigned int, float*)",
     ("attention", True, "fp8", "deepgemm.mqa_logits")),
    ("void deep_gemm::transpose_fp32<128u, 64u, 1u>(float*, float*, unsigned int)", ("elementwise", None, None, "deepgemm.other")),
    # CUTLASS 3.x FP8 on Hopper and Blackwell, also behind vLLM's enable_sm90_or_later<K> guard
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, "
     "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90ArrayTmaGmmaWarpSpecializedFP8<4, cute::tuple<cute::C<2>, "
     "cute::C<1>, cute::C<1> >, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8FastAccum>, cute::tuple<cute::C<128>, "
     "cute::C<128>, cute::C<128> >, cutlass::float_e4m3_t, cute::tuple<long, cute::C<1>, cute::C<0> >*, cutlass::float_e4m3_t, "
     "cute::tuple<long, cute::C<1>, cute::C<0> >*>, void, void> >(Params)", ("gemm", True, "fp8", "cutlass.gemm_struct")),
    ("void cutlass::device_kernel<vllm::enable_sm90_or_later<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
     "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedFP8<5, cute::tuple<cute::C<1>, "
     "cute::C<2>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8FastAccum>, cute::tuple<cute::C<64>, cute::C<128>, "
     "cute::C<128> >, cutlass::float_e4m3_t, cute::tuple<long, cute::C<1>, long>, cutlass::float_e4m3_t, "
     "cute::tuple<long, cute::C<1>, long> >, void, void> > >(Params)", ("gemm", True, "fp8", "cutlass.gemm_struct")),
    ("void cutlass::device_kernel<vllm::enable_sm100_only<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
     "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm100TmaUmmaWarpSpecialized<4, 1, 2, cute::tuple<cute::C<1>, "
     "cute::C<1>, cute::C<1> > >, cute::tuple<cute::C<256>, cute::C<128>, cute::C<128> >, cutlass::float_e5m2_t, "
     "cute::tuple<long, cute::C<1>, long>, cutlass::float_e4m3_t, cute::tuple<long, cute::C<1>, long> >, void, void> > >(Params)",
     ("gemm", True, "fp8", "cutlass.gemm_struct")),
    ("cutlass3x_sm100_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_256x128x128_2x1x1_0_tnt_align16_2sm", ("gemm", True, "fp8", "cutlass.named")),
    ("cutlass3x_sm100_bstensorop_gemm_ue8m0xe4m3_ue8m0xe4m3_f32_bf16_bf16_128x128x128_1x1x1_0_tnt_align32_1sm",
     ("gemm", True, "fp8", "cutlass.named")),
    # GEMMs known by their name alone: an MMA instruction in the name or an MMA-only schedule argument
    ("void sm90_fp8_blockwise_wgmma_grouped_gemm_kernel<__nv_fp8_e4m3, __nv_bfloat16>(__nv_fp8_e4m3 const*)",
     ("gemm", True, "fp8", "name.gemm")),
    ("void mylib::scaled_gemm_kernel<cutlass::gemm::KernelTmaWarpSpecializedCooperative, cutlass::float_e4m3_t>(int)",
     ("gemm", True, None, "name.gemm")),
    # fp8 alone is no Tensor Core verdict: TensorRT-LLM's small-M fp8 GEMM runs on CUDA cores
    ("void tensorrt_llm::kernels::cudaCoreGemm<__nv_fp8_e4m3, __nv_bfloat16, 128, 4>(tensorrt_llm::kernels::Params)",
     ("gemm", None, "fp8", "name.gemm")),
    # FlashAttention 3: the kernel is device_kernel's argument; its combine, preprocess and scheduler do no MMA
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, "
     "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90> > > >(flash::Params)",
     ("attention", True, "bf16", "flash.kernel")),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, "
     "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, 128, "
     "cutlass::float_e4m3_t, float, cutlass::arch::Sm90, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, "
     "cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256>, "
     "flash::StaticPersistentTileScheduler<false> > > >(Params)", ("attention", True, "fp8", "flash.kernel")),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<flash::CollectiveMainloopBwdSm90<2, "
     "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<128>, cute::C<128> >, cutlass::half_t, "
     "float, cutlass::arch::Sm90> > > >(Params)", ("attention", True, "fp16", "flash.kernel")),
    ("void cutlass::device_kernel<flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128> >, 5, 256, 1, false, false, "
     "cutlass::bfloat16_t, float, cutlass::arch::Sm80> >(Params)", ("attention", None, "bf16", "flash.combine")),
    ("void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, "
     "Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 1, true>(flash::Params)", ("attention", None, "bf16", "flash.combine")),
    ("void cutlass::device_kernel<flash::FlashAttnBwdPreprocess<cute::tuple<cute::C<64>, cute::C<128> >, cutlass::bfloat16_t, float, "
     "cutlass::arch::Sm90, true, false> >(Params)", ("attention", None, None, "flash.dot_do_o")),
    ("void cutlass::device_kernel<flash::FlashAttnBwdPostprocessConvertdQ<cute::tuple<cute::C<64>, cute::C<128> >, cutlass::bfloat16_t, "
     "float, cutlass::arch::Sm90, 256> >(Params)", ("elementwise", None, None, "flash.convert")),
    ("void flash::prepare_varlen_num_blocks_kernel<false>(int, int, int, int const*, int*, bool)", ("attention", None, None, "flash.scoped")),
    ("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::half_t, Flash_kernel_traits<128, "
     "64, 128, 4, cutlass::half_t> >, false, false, false, false, true, true, false, false>(flash::Flash_fwd_params)",
     ("attention", True, "fp16", "flash.kernel")),
    # FlashInfer and CUTLASS's own FMHA
    ("void flashinfer::PODWithKVCacheTensorKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 1u, 4u, 8u, 8u, 1u, 4u, "
     "(flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int> >(flashinfer::PrefillParams)",
     ("attention", True, "bf16", "flashinfer.attn")),
    ("void flashinfer::mla::hopper::BatchMLAPageAttentionHopperKernel<flashinfer::mla::hopper::HopperKernelTraits<true, 64, 2, 512, "
     "64, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::MLAParams)", ("attention", True, "bf16", "flashinfer.attn")),
    ("void cutlass::device_kernel<cutlass::fmha::kernel::Sm100FmhaFwdKernelTmaWarpspecialized<cute::tuple<int, int, int>, "
     "cutlass::fmha::collective::Sm100FmhaFwdMainloopTmaWarpspecialized<cutlass::bfloat16_t, float, float> > >(Params)",
     ("attention", True, "bf16", "cutlass.fmha")),
    ("void cutlass::device_kernel<cutlass::fmha::kernel::Sm100FmhaMlaReductionKernel<cutlass::bfloat16_t, float, 512, 64> >(Params)",
     ("attention", None, "bf16", "cutlass.fmha_reduce")),
    # Communication: NVSHMEM, custom all-reduce, symmetric memory, expert-parallel dispatch/combine, NCCL/RCCL/MSCCL
    ("void nvshmemi_transfer_rma_kernel<(nvshmemi_op_t)0>(void*)", ("communication", None, None, "nvshmem")),
    ("void nvshmemi_proxy_rma_entrypoint<(nvshmemi_op_t)0, 1>(void*, void*, rma_bytesdesc_t, int)", ("communication", None, None, "nvshmem")),
    ("void nvshmemi_reduce_kernel<float, (rdxn_ops_t)4>(int, int, int, float*, float const*, unsigned long)",
     ("communication", None, None, "nvshmem")),
    ("nvshmemx_barrier_all_on_stream_kernel()", ("communication", None, None, "nvshmem")),
    ("void cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
     ("communication", None, None, "comm.custom_allreduce")),
    ("void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
     ("communication", None, None, "comm.custom_allreduce")),
    ("void sglang::cross_device_reduce_2stage<float, 8>(sglang::RankData*, float*, int, int)",
     ("communication", None, None, "comm.custom_allreduce")),
    ("void mylib::custom_all_reduce_kernel<float>(float*)", ("communication", None, None, "comm.custom_allreduce")),
    ("void c10d::symmetric_memory::multimem_all_reduce_kernel<__nv_bfloat16, 16, 8>(__nv_bfloat16*, unsigned long)",
     ("communication", None, None, "comm.scope")),
    ("void c10d::symmetric_memory::(anonymous namespace)::two_shot_all_reduce_kernel<float, 8>(float*, unsigned long)",
     ("communication", None, None, "comm.scope")),
    ("void multimem_all_reduce_kernel<float, 8>(float*)", ("communication", None, None, "comm.symm_mem")),
    ("void one_shot_all_reduce_kernel<float, 8>(float*)", ("communication", None, None, "comm.symm_mem")),
    ("void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*, int, int, int, bool const*, int*)",
     ("communication", None, None, "comm.scope")),
    ("void deep_ep::intranode::cached_notify_dispatch<8>(int const*, int, void**, int**, int)", ("communication", None, None, "comm.scope")),
    ("void deep_ep::internode::cached_notify<8, 16>(int, int, int, int, int*, int, int, void*, int**, bool)",
     ("communication", None, None, "comm.scope")),
    ("void deep_ep::internode_ll::combine<false, 7168>(void*, int*, int*, void*, void const*, long const*, float const*, int)",
     ("communication", None, None, "comm.scope")),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ("communication", None, None, "nccl")),
    ("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", ("communication", None, None, "nccl")),
    ("mscclKernel_Sum_bf16_LL128(ncclDevComm*, mscclAlgo*, mscclWork*)", ("communication", None, None, "nccl")),
]]


@pytest.mark.parametrize(("name", "vendor", "expected"), SYNTHETIC, ids=[s[2][3] + ":" + s[0][:30] for s in SYNTHETIC])
def test_library_conventions(name: str, vendor: str | None, expected: tuple[str, bool | None, str | None, str]) -> None:
    c = classify_kernel(name, vendor)
    assert (c.category, c.tensor_cores, c.dtype, c.row) == expected


@pytest.mark.parametrize("vendor", [None, "nvidia", "amd"])
def test_collectives_are_communication_on_every_vendor(vendor: str | None) -> None:
    """NCCL on NVIDIA, RCCL (the same kernel names) and MSCCL on AMD: communication whatever the device."""
    for name in ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
                 "mscclKernel_Sum_half_LL128(ncclDevComm*, mscclAlgo*, mscclWork*)", "void nvshmemi_reduce_kernel<float, (rdxn_ops_t)0>(int)"):
        c = classify_kernel(name, vendor)
        assert (c.category, c.tensor_cores) == ("communication", None), name


def test_a_guarded_template_names_its_kernel_and_library() -> None:
    """enable_sm90_or_later<K> (any namespace) passes K on: FA3's kernel is FlashAttention's, reached
    through device_kernel's argument; an unknown K leaves the outer template's verdict."""
    fa3 = SYNTHETIC[[s[2][3] for s in SYNTHETIC].index("flash.kernel")][0]
    c = classify_kernel(fa3)
    assert (c.library, c.via, c.identity.function) == ("FlashAttention", "cutlass.kernel", "FlashAttnFwdSm90")
    assert c.identity.text in c.name.template_args[0]
    unknown = classify_kernel("void cutlass::device_kernel<mylib::enable_sm90_or_later<mylib::Thing<int> > >(Params)")
    assert (unknown.category, unknown.tensor_cores, unknown.library) == ("other", None, "CUTLASS")


def test_cli_classifies_the_new_rows(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    names = ["bmm_E4m3E4m3_Fp32_t128x128x128_s3_sm100", "void deep_gemm::fp8_gemm_kernel<128u>(float*)",
             "fmhaSm100aKernel_QkvE4m3OBfloat16HQk128HV128", SYNTHETIC[[s[2][3] for s in SYNTHETIC].index("flash.kernel")][0],
             "void nvshmemi_transfer_rma_kernel<(nvshmemi_op_t)0>(void*)"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(names) + "\n"))
    assert main(["classify", "--format", "json", "-"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert [(r["category"], r["tensor_cores"], r["dtype"]) for r in out] == [
        ("gemm", True, "fp8"), ("gemm", True, "fp8"), ("attention", True, "fp8"), ("attention", True, "bf16"),
        ("communication", None, None)]
    assert [r["library"] for r in out] == ["TensorRT-LLM", "DeepGEMM", "TensorRT-LLM", "FlashAttention", "NVSHMEM"]


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
