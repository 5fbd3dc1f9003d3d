"""Convolution shapes from Input Dims and Concrete Inputs, and TF32 alignment of fp32 GEMMs.

A convolution's stride, padding, dilation, groups and transposition are read from its Concrete
Inputs in the argument order of the op's own schema; without them P, Q are taken as H, W and
`shape_basis` says so. Expected sizes below are worked out by hand from PyTorch's Conv /
ConvTranspose output-size formulas, or read from the trace itself (a convolution_backward's
grad_output is the forward output).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from perflint import facts
from perflint.cli import main
from perflint.facts.builtin import load_all
from perflint.graph.load import load_trace
from perflint.metrics.shapes import BASIS_ASSUMED, BASIS_CONCRETE, alignment, conv_shape, op_class, op_shape
from tests.builder import TraceBuilder
from tests.conftest import FIXTURES, shared_trace

load_all()

RESNET_MI300 = "tracelens/traces/mi300/resnet_act_checkpoint.json.gz"
TF32_MIXED = "hta/negative_queue_length_values_check/rank0.json.gz"  # cutlass TF32 + SIMT sgemm
TF32_CUTLASS = "hta/call_stack/backward_thread.json"  # cutlass tensorop_s1688 TF32 GEMM

# ViT-B/16 patch embedding: a 16x16 stride-16 convolution over 224x224 RGB images.
VIT_DIMS = [[4, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []]
VIT_CONCRETE = ["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]


def _rows(path: str) -> list[dict[str, Any]]:
    return facts.rows(facts.Context(load_trace(path)), "op_groups")


def _raw_events(path: str) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as fh:
        doc = json.load(fh)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def test_vit_patch_embedding_uses_the_stride() -> None:
    s = conv_shape("aten::convolution", VIT_DIMS, VIT_CONCRETE)
    assert s is not None and s.basis == BASIS_CONCRETE
    assert (s.m, s.n, s.k) == (4 * 14 * 14, 768, 3 * 16 * 16)  # M = N x P x Q = 784
    assert s.conv is not None and (s.conv["P"], s.conv["Q"]) == (14, 14)
    assert s.flops == 2 * 4 * 768 * 14 * 14 * 3 * 16 * 16
    # Without Concrete Inputs: same padding and stride 1, and the row says so.
    a = conv_shape("aten::convolution", VIT_DIMS)
    assert a is not None and a.basis == BASIS_ASSUMED and (a.m, a.n, a.k) == (4 * 224 * 224, 768, 768)


# One geometry (stride 2, padding 3, a 7x7 filter over 224x224: P = Q = 112) in each op's own
# argument order. Stride and padding read the wrong way round give P = 74.
SAME_CONV = [
    ("aten::conv2d", [[8, 3, 224, 224], [64, 3, 7, 7], [64], [], [], [], []], ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "1"]),
    ("aten::convolution", [[8, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []],
     ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"]),
    ("aten::_convolution", [[8, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], [], [], [], [], []],
     ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1", "False", "False", "True", "True"]),
    ("aten::cudnn_convolution", [[8, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []],
     ["", "", "[3, 3]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"]),
    ("aten::miopen_convolution", [[8, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []],
     ["", "", "", "[3, 3]", "[2, 2]", "[1, 1]", "1", "False", "False"]),
    ("aten::mkldnn_convolution", [[8, 3, 224, 224], [64, 3, 7, 7], [64], [], [], [], []], ["", "", "", "[3, 3]", "[2, 2]", "[1, 1]", "1"]),
    ("aten::_slow_conv2d_forward", [[8, 3, 224, 224], [64, 3, 7, 7], [], [64], [], []], ["", "", "[7, 7]", "", "[2, 2]", "[3, 3]"]),
]  # fmt: skip


@pytest.mark.parametrize("op,dims,concrete", SAME_CONV, ids=[c[0] for c in SAME_CONV])
def test_argument_order_of_each_conv_op(op: str, dims: list[Any], concrete: list[str]) -> None:
    s = conv_shape(op, dims, concrete)
    assert s is not None and s.basis == BASIS_CONCRETE and s.conv is not None
    assert (s.conv["P"], s.conv["Q"], s.conv["stride"], s.conv["padding"]) == (112, 112, [2, 2], [3, 3])
    assert (s.m, s.n, s.k) == (8 * 112 * 112, 64, 3 * 49)


def test_dilated_and_padding_words() -> None:
    x = [[1, 8, 32, 32], [16, 8, 3, 3], [], [], [], [], []]
    # dilation 2 widens a 3x3 filter to 5x5: padding 2 keeps 32, padding 0 gives 28
    assert conv_shape("aten::conv2d", x, ["", "", "", "[1, 1]", "[2, 2]", "[2, 2]", "1"]).conv["P"] == 32  # type: ignore[union-attr]
    assert conv_shape("aten::conv2d", x, ["", "", "", "[1, 1]", "[0, 0]", "[2, 2]", "1"]).conv["P"] == 28  # type: ignore[union-attr]
    # stride 3 with padding 1: floor((32 + 2 - 2 - 1) / 3) + 1 = 11
    assert conv_shape("aten::conv2d", x, ["", "", "", "[3, 3]", "[1, 1]", "[1, 1]", "1"]).conv["Q"] == 11  # type: ignore[union-attr]
    # conv2d(padding="same"/"valid"), and a 1-D convolution's one-element lists
    assert conv_shape("aten::conv2d", x, ["", "", "", "[1, 1]", "same", "[1, 1]", "1"]).conv["P"] == 32  # type: ignore[union-attr]
    assert conv_shape("aten::conv2d", x, ["", "", "", "[1, 1]", "valid", "[1, 1]", "1"]).conv["P"] == 30  # type: ignore[union-attr]
    one = conv_shape("aten::conv1d", [[2, 4, 100], [8, 4, 5], [], [], [], [], []], ["", "", "", "[2]", "[2]", "[1]", "1"])
    assert one is not None and one.conv is not None and one.conv["Q"] == 50 and one.m == 2 * 50


def test_transposed_convolutions() -> None:
    # ConvTranspose2d(16 -> 8, 3x3, stride 2, padding 1, output_padding 1): 8x8 -> (8-1)*2 - 2 + 2 + 1 + 1 = 16
    dims = [[2, 16, 8, 8], [16, 8, 3, 3], [8], [], [], [], [], []]
    t = conv_shape("aten::conv_transpose2d", dims, ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1", "[1, 1]"])
    assert t is not None and t.conv is not None and t.conv["transposed"] and t.conv["output_padding"] == [1, 1]
    assert (t.conv["C"], t.conv["K"], t.conv["P"], t.conv["Q"]) == (16, 8, 16, 16)
    assert (t.m, t.n, t.k) == (2 * 16 * 16, 8, 16 * 9)
    assert t.flops == 2 * 2 * 16 * 8 * 8 * 8 * 9  # each input pixel meets each weight once
    # The same layer as aten::convolution(transposed=True), and as cuDNN's op (padding first)
    c = conv_shape("aten::convolution", dims + [[]], ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[1, 1]", "1"])
    cu = conv_shape("aten::cudnn_convolution_transpose", [[2, 16, 8, 8], [16, 8, 3, 3]] + [[]] * 8,
                    ["", "", "[1, 1]", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"])  # fmt: skip
    for other in (c, cu):
        assert other is not None and (other.m, other.n, other.k, other.flops) == (t.m, t.n, t.k, t.flops)
    # Grouped: weight [C_in, C_out/g, R, S], so 2 groups of 4 output channels make 8
    g = conv_shape("aten::conv_transpose2d", [[2, 16, 8, 8], [16, 4, 3, 3], [8]], ["", "", "", "[1, 1]", "[1, 1]", "[0, 0]", "2", "[1, 1]"])
    assert g is not None and g.conv is not None and (g.conv["K"], g.conv["groups"], g.conv["P"]) == (8, 2, 8)
    assert (g.n, g.k) == (8, 8 * 9)
    # padded back: input C 16, weight C_in 16 (totals), weight C_out/g and the bias
    al = alignment("aten::conv_transpose2d", [[2, 12, 8, 8], [12, 3, 3, 3], [6]],
                   conv_shape("aten::conv_transpose2d", [[2, 12, 8, 8], [12, 3, 3, 3], [6]],
                              ["", "", "", "[1, 1]", "[1, 1]", "[0, 0]", "2", "[1, 1]"]), "fp16")  # type: ignore[arg-type]  # fmt: skip
    assert al is not None and al.misaligned == ["C/g=6", "K/g=3"]
    assert al.padded_dims == [[2, 16, 8, 8], [16, 8, 3, 3], [16]]


def test_unreadable_or_inconsistent_concrete_inputs_fall_back() -> None:
    x = [[1, 8, 32, 32], [16, 8, 3, 3], [], [], [], [], []]
    for bad in (["", "", "", "", "[1, 1]", "[1, 1]", "1"], ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "x"],
                ["", "", "", "[0, 0]", "[1, 1]", "[1, 1]", "1"], ["", "", ""], "[1, 1]"):  # fmt: skip
        s = conv_shape("aten::conv2d", x, bad)
        assert s is not None and s.basis == BASIS_ASSUMED and s.conv is not None and s.conv["P"] == 32, bad
    # groups that the weight shape contradicts (8 input channels, 8 per group, groups 2): no shape
    assert conv_shape("aten::conv2d", x, ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "2"]) is None


def test_convolution_backward_is_not_read_as_a_forward_convolution() -> None:
    """Its Input Dims are [grad_output, input, weight, ...]: not an eligible op, no shape, and
    op_groups reports the forward op's dims (its backward time is attributed to that op)."""
    assert op_class("aten::convolution_backward") is None
    assert op_shape("aten::convolution_backward", [[32, 64, 56, 56], [32, 64, 56, 56], [64, 64, 3, 3]]) is None
    rows = _rows(str(FIXTURES / "gpu" / "conv_fp16.pt.trace.json.gz"))
    assert [r["op"] for r in rows] == ["aten::cudnn_convolution"]
    assert rows[0]["input_dims"][:2] == [[32, 64, 56, 56], [64, 64, 3, 3]] and rows[0]["bwd_kernel_time_us"] > 0


def test_same_dims_different_stride_are_two_groups(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, 0, 1000)
    b.step(2, 1000, 1000)
    dims = [[8, 64, 56, 56], [64, 64, 3, 3], [64], [], [], [], []]
    types = ["c10::Half", "c10::Half", "c10::Half", "ScalarList", "ScalarList", "ScalarList", "Scalar"]
    for ts, stride in ((1100, "[1, 1]"), (1300, "[2, 2]"), (1500, "[1, 1]")):
        b.op("aten::conv2d", ts, 100, dims=dims, types=types, concrete=["", "", "", stride, "[1, 1]", "[1, 1]", "1"])
        b.kernel("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64", ts + 20, 50, launch_ts=ts + 5)
    rows = sorted(_rows(b.write(tmp_path / "t.json")), key=lambda r: -r["m"])
    assert [(r["count"], r["m"], r["conv"]["stride"], r["shape_basis"]) for r in rows] == [
        (2, 8 * 56 * 56, [1, 1], BASIS_CONCRETE),
        (1, 8 * 28 * 28, [2, 2], BASIS_CONCRETE),
    ]


def _forward_outputs(path: str) -> dict[tuple[str, str], list[int]]:
    """(input dims, weight dims) -> output dims, from each convolution_backward's grad_output."""
    out: dict[tuple[str, str], list[int]] = {}
    for e in _raw_events(path):
        if e.get("name") == "aten::convolution_backward":
            d = e["args"]["Input Dims"]
            out[(json.dumps(d[1]), json.dumps(d[2]))] = d[0]
    return out


def test_resnet_strided_convs_match_the_trace() -> None:
    """MI300 ResNet: miopen_convolution puts padding before stride. Each op group's output size
    is what its backward pass recorded as grad_output, and its stride is the one aten::convolution
    (stride before padding) recorded for the same layer."""
    path = shared_trace(RESNET_MI300)
    truth = _forward_outputs(path)
    strides = {
        (json.dumps(e["args"]["Input Dims"][0]), json.dumps(e["args"]["Input Dims"][1])): e["args"]["Concrete Inputs"][3]
        for e in _raw_events(path)
        if e.get("name") == "aten::convolution"
    }
    rows = [r for r in _rows(path) if r["op_class"] == "conv"]
    assert len(rows) == 11 and {r["op"] for r in rows} == {"aten::miopen_convolution"}
    strided = 0
    for r in rows:
        key = (json.dumps(r["input_dims"][0]), json.dumps(r["input_dims"][1]))
        n, k, p, q = truth[key]
        assert r["shape_basis"] == BASIS_CONCRETE
        assert (r["conv"]["P"], r["conv"]["Q"], r["n"], r["m"]) == (p, q, k, n * p * q), key
        assert json.dumps(r["conv"]["stride"]) == strides[key]
        strided += r["conv"]["stride"] == [2, 2]
    assert strided == 7  # the stem, and three 3x3 and three 1x1 downsampling convolutions


def _dim001(path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    cfg = tmp_path / "perflint.yaml"
    cfg.write_text("rules:\n  DIM001: {params: {min_share_pct: 0}}\n")
    rc = main(["check", path, "--config", str(cfg), "--select", "DIM001", "--format", "json", "--fail-on", "never", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return [f for t in json.loads(out)["traces"] for f in t["findings"]]


def _raw_gemm_dims(path: str) -> set[tuple[int, ...]]:
    found = set()
    for e in _raw_events(path):
        if e.get("name") in ("aten::mm", "aten::addmm"):
            d = e["args"]["Input Dims"]
            a, b = (d[0], d[1]) if e["name"] == "aten::mm" else (d[1], d[2])
            found.add((a[0], a[1], b[1]))  # M, K, N
    return found


def test_tf32_alignment_on_mixed_tf32_and_simt_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fp32 ops whose main kernel is a cutlass tensorop_s1688 GEMM (TF32 on an A100, the name
    does not say tf32) are checked for multiples of 4; the one on SIMT ampere_sgemm is not."""
    path = shared_trace(TF32_MIXED)
    rows = _rows(path)
    tf32 = [r for r in rows if r["align_dtype"] == "tf32"]
    simt = [r for r in rows if r["kernel"] == "ampere_sgemm_128x64_nn"]
    assert len(tf32) == 4 and all("tensorop_s1688gemm" in r["kernel"] and r["align"] == 4 for r in tf32)
    assert len(simt) == 1 and simt[0]["align"] is None and simt[0]["misaligned_dims"] is None
    # the dims are the raw trace's; 2798 is the only one that is not a multiple of 4
    assert {(r["m"], r["k"], r["n"]) for r in rows} <= _raw_gemm_dims(path)
    for r in tf32:
        assert r["misaligned_dims"] == [f"{d}={v}" for d, v in (("M", r["m"]), ("N", r["n"]), ("K", r["k"])) if v % 4]
    (f,) = _dim001(path, tmp_path, capsys)
    assert f["evidence"]["align"] == 4 and "multiples of 4 (2798)" in f["message"]
    assert sorted(i["op"] for i in f["evidence"]["top_items"]) == ["aten::addmm", "aten::mm"]
    assert all("tensorop_s1688gemm" in i["kernel"] for i in f["evidence"]["top_items"])


def test_tf32_alignment_on_cutlass_gemm_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One fp32 aten::mm on a cutlass tensorop_s1688 kernel: checked as TF32, and its dims
    (2048 x 256 x 2048) are multiples of 4, so DIM001 has nothing to say."""
    path = shared_trace(TF32_CUTLASS)
    (r,) = _rows(path)
    assert (r["dtype"], r["kernel_dtype"], r["align_dtype"], r["align"]) == ("fp32", "tf32", "tf32", 4)
    assert {(r["m"], r["k"], r["n"])} == _raw_gemm_dims(path) == {(2048, 2048, 256)}
    assert r["misaligned_dims"] == []
    assert _dim001(path, tmp_path, capsys) == []
