"""The kernel-name table: category and Tensor Core use per vendor and architecture."""

from __future__ import annotations

import pytest

from perflint.metrics.kernel_classes import kernel_category, uses_tensor_cores

CASES = [
    # Volta / Turing cuBLAS and cuDNN
    ("volta_h884gemm_64x64_ldg8_nn", "gemm", True),
    ("volta_sgemm_128x64_nt", "gemm", False),
    ("turing_h1688gemm_256x128_ldg8_tn", "gemm", True),
    ("void gemmk1_kernel<int, float, 256, 5, false, false, false, false, cublasGemvTensorStridedBatched<__half const>>", "gemm", False),
    ("void cutlass::Kernel<cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x1_tn_align8>", "gemm", True),
    ("volta_scudnn_128x64_relu_interior_nn_v1", "conv", False),
    ("turing_fp16_s1688cudnn_fp16_256x64_sliced1x2_ldg8_relu_f2f_exp_small_nhwc_tn_v1", "conv", True),
    ("void cudnn::detail::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>", "conv", False),
    # Ampere / Ada
    ("ampere_sgemm_128x64_nn", "gemm", False),
    ("ampere_h16816gemm_128x128_ldg8_stages_64x3_tn", "gemm", True),
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel", "gemm", True),
    ("void cutlass::Kernel<cutlass_80_simt_sgemm_128x64_8x5_nn_align1>", "gemm", False),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16", "conv", True),
    # Hopper / Blackwell
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm", True),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "gemm", True),
    ("sm100_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_cluster2x1x1_tcgen05", "gemm", True),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>", "attention", True),
    # AMD CDNA matrix cores
    ("Cijk_Alik_Bljk_BBS_BH_MT128x128x32_MI16x16x8x1_SN_1LDSB1_APM1", "gemm", True),
    ("Cijk_Ailk_Bljk_SB_MT64x64x8_SE_1LDSB0_APM1_AF0EM1", "gemm", False),
    ("igemm_fwd_gtcx_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x4x1", "conv", True),
    # Everything else
    ("triton_poi_fused_add_mul_0", "triton_pointwise", None),
    ("triton_red_fused_sum_1", "triton_reduction", None),
    ("triton_per_fused_softmax_2", "triton_persistent_reduction", None),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "communication", None),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", "elementwise", None),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", "reduction", None),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>", "normalization", None),
]


@pytest.mark.parametrize(("name", "category", "tc"), CASES)
def test_kernel_table(name: str, category: str, tc: bool | None) -> None:
    assert kernel_category(name) == category
    assert uses_tensor_cores(name) is tc
