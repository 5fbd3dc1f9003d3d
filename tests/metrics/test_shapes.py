"""GEMM and convolution shapes from an op's Input Dims (perflint.metrics.shapes): M/N/K, batch,
FLOPs, and the alignment padding a Tensor Core needs."""

from __future__ import annotations

import pytest

from perflint.metrics.shapes import alignment, ceil_to, conv_shape, gemm_shape, op_shape


def test_mm_addmm_bmm_baddbmm() -> None:
    s = gemm_shape("aten::mm", [[30, 100], [100, 37]])
    assert (s.m, s.n, s.k, s.batch, s.flops) == (30, 37, 100, 1, 2 * 30 * 37 * 100)
    s = gemm_shape("aten::addmm", [[37], [30, 100], [100, 37], [], []])
    assert (s.m, s.n, s.k) == (30, 37, 100)
    s = gemm_shape("aten::bmm", [[4, 10, 12], [4, 12, 16]])
    assert (s.m, s.n, s.k, s.batch, s.flops) == (10, 16, 12, 4, 2 * 4 * 10 * 16 * 12)
    s = gemm_shape("aten::baddbmm", [[4, 10, 16], [4, 10, 12], [4, 12, 16], [], []])
    assert (s.m, s.n, s.k, s.batch) == (10, 16, 12, 4)
    assert gemm_shape("aten::mm", None) is None
    assert gemm_shape("aten::mm", [[3], [3]]) is None
    assert gemm_shape("aten::relu", [[3, 3]]) is None


def test_linear_and_matmul_fold_leading_dims() -> None:
    s = gemm_shape("aten::linear", [[1, 141, 512], [30522, 512], [30522]])
    assert (s.m, s.n, s.k) == (141, 30522, 512)
    s = gemm_shape("aten::matmul", [[8, 128, 64], [64, 32]])  # batch folds into M
    assert (s.m, s.n, s.k, s.batch) == (8 * 128, 32, 64, 1)
    s = gemm_shape("aten::matmul", [[2, 8, 128, 64], [8, 64, 128]])  # broadcast batch
    assert (s.m, s.n, s.k, s.batch) == (128, 128, 64, 16)
    s = gemm_shape("aten::matmul", [[5], [5]])
    assert (s.m, s.n, s.k) == (1, 1, 5)


def test_conv_implicit_gemm_and_flops() -> None:
    s = conv_shape("aten::cudnn_convolution", [[32, 64, 56, 56], [128, 64, 3, 3], [], [], [], []])
    assert s.conv == {"N": 32, "C": 64, "K": 128, "groups": 1, "H": 56, "W": 56, "R": 3, "S": 3, "P": 56, "Q": 56,
                      "stride": [1, 1], "padding": "same", "dilation": [1, 1], "transposed": False}  # fmt: skip
    assert s.basis == "assumed stride 1"  # no Concrete Inputs
    assert (s.m, s.n, s.k) == (32 * 56 * 56, 128, 64 * 9)
    assert s.flops == 2 * 32 * 128 * 56 * 56 * 64 * 9
    dw = conv_shape("aten::conv2d", [[8, 32, 16, 16], [32, 1, 3, 3]])  # depthwise: g = 32
    assert dw.conv["groups"] == 32 and dw.flops == 2 * 8 * 32 * 16 * 16 * 32 * 9 / 32
    assert conv_shape("aten::conv2d", [[8, 30, 16, 16], [32, 7, 3, 3]]) is None  # C not divisible


def test_alignment_padding_and_padded_dims() -> None:
    dims = [[30522], [141, 512], [512, 30522], [], []]
    s = op_shape("aten::addmm", dims)
    al = alignment("aten::addmm", dims, s, "bf16")
    assert al.misaligned == ["M=141", "N=30522"] and al.padded == {"M": 144, "N": 30528}
    assert al.padded_dims == [[30528], [144, 512], [512, 30528], [], []]
    assert al.waste_pct == pytest.approx(100 * (1 - 141 * 30522 / (144 * 30528)))
    lin = [[1, 141, 512], [512, 512], [512]]
    al = alignment("aten::linear", lin, op_shape("aten::linear", lin), "fp16")
    assert al.padded_dims == [[1, 144, 512], [512, 512], [512]]
    assert alignment("aten::mm", [[30, 100], [100, 37]], gemm_shape("aten::mm", [[30, 100], [100, 37]]), "fp32") is None
    i8 = alignment("aten::mm", [[32, 24], [24, 64]], gemm_shape("aten::mm", [[32, 24], [24, 64]]), "int8")
    assert i8.misaligned == ["K=24"] and i8.padded == {"K": 32}
    tf = alignment("aten::mm", [[32, 24], [24, 64]], gemm_shape("aten::mm", [[32, 24], [24, 64]]), "tf32")
    assert tf.misaligned == []
    cdims = [[2, 3, 8, 8], [8, 3, 3, 3], [8]]
    c = alignment("aten::_convolution", cdims, conv_shape("aten::_convolution", cdims), "fp16")
    assert c.misaligned == ["C=3"] and c.padded_dims == [[2, 8, 8, 8], [8, 8, 3, 3], [8]]
    assert ceil_to(141, 8) == 144
