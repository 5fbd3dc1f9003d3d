"""FLOP and byte models (perflint.metrics.work) against hand-computed numbers, and per kernel on
real traces; against the profiler's own `flops` argument wherever a trace has one."""

from __future__ import annotations

import json
import math

import numpy as np

from perflint.graph.load import load_trace
from perflint.metrics.work import kernel_work, model, op_work
from perflint.model import KERNEL
from tests.conftest import FIXTURES, TESTS

F32, F16 = "float", "c10::Half"


def test_mm_is_exactly_2mnk() -> None:
    w = model("aten::mm", [[64, 128], [128, 32]], [F32, F32], ["", ""])
    assert w.flops == 2 * 64 * 32 * 128
    assert w.bytes == (64 * 128 + 128 * 32 + 64 * 32) * 4


def test_linear_with_bias() -> None:
    # x [8, 16, 32] · W[64, 32]ᵀ + b: M = 128, N = 64, K = 32; the bias adds M·N
    w = model("aten::linear", [[8, 16, 32], [64, 32], [64]], [F16, F16, F16], ["", "", ""])
    assert w.unit_flops == 2 * 128 * 64 * 32
    assert w.aux_flops == 128 * 64
    assert w.flops == 2 * 128 * 64 * 32 + 128 * 64
    no_bias = model("aten::linear", [[8, 16, 32], [64, 32], []], [F16, F16, ""], ["", "", ""])
    assert no_bias.flops == 2 * 128 * 64 * 32
    back = model("aten::linear", [[8, 16, 32], [64, 32], []], [F16, F16, ""], ["", "", ""], backward=True)
    assert back.flops == 2 * no_bias.flops and back.unit_flops == no_bias.flops


def test_conv_stride_padding_dilation_groups() -> None:
    # input 2x8x17x17, weight 16x4x3x3 (groups 2), stride 2, padding 1, dilation 2:
    # P = Q = (17 + 2·1 - 2·(3-1) - 1) // 2 + 1 = 8; FLOPs 2·N·K·P·Q·(C/g)·R·S
    dims = [[2, 8, 17, 17], [16, 4, 3, 3], [], [], [], [], []]
    conc = ["", "", "", "[2, 2]", "[1, 1]", "[2, 2]", "2"]
    w = model("aten::conv2d", dims, [F32, F32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar"], conc)
    assert w.flops == 2 * 2 * 16 * 8 * 8 * 4 * 9 == 147456
    assert w.bytes == (2 * 8 * 17 * 17 + 16 * 4 * 9 + 2 * 16 * 8 * 8) * 4
    # convolution_backward: dgrad and wgrad, each the forward's FLOPs
    bwd = model(
        "aten::convolution_backward",
        [[2, 16, 8, 8], *dims[:2], [], [], [], [], [], [], [], []],
        [F32] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"],
        ["", "", "", "[16]", "[2, 2]", "[1, 1]", "[2, 2]", "False", "[0, 0]", "2", "[True, True, True]"],
    )
    assert bwd.flops == 2 * 147456 and bwd.unit_flops == 147456


def test_causal_attention_halves() -> None:
    q = [2, 4, 128, 64]
    types = ["c10::BFloat16"] * 3 + ["", "Scalar", "Scalar", "", "Scalar"]
    full = model("aten::scaled_dot_product_attention", [q, q, q, [], [], [], [], []], types, ["", "", "", "", "0.", "False", "", "False"])
    causal = model("aten::scaled_dot_product_attention", [q, q, q, [], [], [], [], []], types, ["", "", "", "", "0.", "True", "", "False"])
    # Q·Kᵀ and P·V over 2·4 heads of 128x128 scores, 64-wide
    assert full.flops == 2 * 8 * 128 * 128 * (64 + 64) == 33554432
    assert causal.flops == full.flops / 2
    assert full.bytes == 4 * (2 * 4 * 128 * 64) * 2
    dims_b = [q] * 6 + [[]] * 10
    conc_b = [""] * 14 + ["True", ""]
    bwd = model("aten::_scaled_dot_product_cudnn_attention_backward", dims_b, ["c10::BFloat16"] * 6 + [""] * 10, conc_b)
    assert bwd.flops == 2 * causal.flops


def test_elementwise_reduction_norm_softmax_embedding_optimizer() -> None:
    add = model("aten::add", [[35, 20, 200], [35, 1, 200], []], [F32, F32, "Scalar"], ["", "", "1"])
    assert add.flops == 140000 and add.bytes == (140000 + 7000 + 140000) * 4
    assert model("aten::mul_", [[600, 200], []], [F32, "Scalar"], ["", "0.5"]).bytes == 2 * 120000 * 4
    assert model("aten::sum", [[64, 100], []], [F32, "ScalarList"], ["", "[1]"]).flops == 6400
    assert model("aten::norm", [[600, 200], []], [F32, "Scalar"], ["", "2."]).flops == 2 * 120000 + 1
    ln = model("aten::layer_norm", [[16, 256, 512], [], [512], [512], [], []], [F32, "ScalarList", F32, F32, "Scalar", "Scalar"], ["", "[512]", "", "", "1e-05", "True"])
    n = 16 * 256 * 512
    assert ln.flops == 5 * n and ln.bytes == (2 * n + 1024) * 4
    sm = model("aten::_softmax", [[40, 35, 35], [], []], [F32, "Scalar", "Scalar"], ["", "-1", "False"])
    assert sm.bytes == 2 * 40 * 35 * 35 * 4
    emb = model("aten::embedding", [[33278, 200], [35, 20]], [F32, "long int"], ["", ""])
    assert emb.flops == 0 and emb.bytes == 700 * 8 + 2 * 700 * 200 * 4
    params = [[8192, 4096], [8192]]
    adamw = model("aten::_fused_adamw_", [params] * 4, ["TensorList"] * 4, [""] * 4)
    assert adamw.flops == 13 * (8192 * 4096 + 8192) and math.isnan(adamw.bytes)  # a TensorList has no dtype
    assert math.isnan(model("aten::unknown_op", [[4]], [F32], [""]).flops)


def test_kernel_work_sums_to_op_work_on_a_gemm_trace() -> None:
    t = load_trace(str(FIXTURES / "gpu" / "gemm_fp16_aligned.pt.trace.json.gz"))
    kf, kb = kernel_work(t)
    of, _ = op_work(t)
    kern = t.gpu.kind == KERNEL
    assert len(kf) == len(t.gpu) and np.isfinite(kf[kern]).mean() > 0.8
    names = [t.s(int(n)) for n in t.ops.name]
    mm = [i for i, n in enumerate(names) if n in ("aten::mm", "aten::addmm")]
    assert mm and all(of[i] >= 2 * 512 * 1024 * 1024 for i in mm)
    # every GEMM kernel's FLOPs are one of the GEMM ops' FLOPs: 2·512·1024·2048
    gemm = [i for i in np.flatnonzero(kern) if "gemm" in t.s(int(t.gpu.name[i])) or "nvjet" in t.s(int(t.gpu.name[i]))]
    assert gemm and all(kf[i] == 2 * 512 * 1024 * 2048 for i in gemm)


def test_model_agrees_with_the_profilers_own_flop_counter() -> None:
    """fixtures/flops/flops_ops is a real torch.profiler trace (record_shapes, with_flops) of the ops
    PyTorch's counter models; its counts per op and Input Dims are in tests/reference/torch_flops.json
    (PyTorch does not export them into the trace; tests/reference/torch_flops.py made both). The
    model gives the same FLOPs within 1% for every counted op in the trace."""
    want = {(r["op"], json.dumps(r["input_dims"])): float(r["flops"]) for r in json.loads((TESTS / "reference" / "torch_flops.json").read_text())["ops"]}
    t = load_trace(str(FIXTURES / "flops" / "flops_ops.pt.trace.json.gz"))
    of, _ = op_work(t)
    checked = set()
    for i in range(len(t.ops)):
        key = (t.s(int(t.ops.name[i])), json.dumps(t.decoded(int(t.ops.dims[i]))))
        if key in want:
            checked.add(key)
            assert abs(of[i] - want[key]) <= 0.01 * want[key], (key, of[i], want[key])
    # every counted op shape is in the trace: mm, addmm (with and without a row bias), bmm,
    # baddbmm, four convolutions (stride, padding, groups, dilation), mul and add
    assert checked == set(want) and len(want) >= 10
