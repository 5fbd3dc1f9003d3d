"""Rule pack A (TC001, TC002, DIM001, LAYOUT001, HEALTH00x): shape parsing units and pins on
real traces, each claim re-derived from the raw JSON independently of perflint's reader."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from perflint.metrics.shapes import alignment, ceil_to, conv_shape, gemm_shape, op_shape
from tests.conftest import FIXTURES, shared_trace

BERT_H100 = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
BERT_MI300 = "tracelens/traces/mi300/gaunernst_bert-small-uncased__1016001.json.gz"
INFER_R1 = "hta/trace_file_list/inference_rank_1.json.gz"
RESNET_NW0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
PARAM_RESNET = "param/resnet_kineto.json.gz"
COMPARE_BASE = "hta/trace_compare/base/base.json.gz"


# --- shapes.py ------------------------------------------------------------------------------


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


# --- real traces ----------------------------------------------------------------------------


def _check(path: str, codes: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    rc = main(["check", path, "--select", codes, "--format", "json", "--fail-on", "never", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    doc = json.loads(out)
    return [f for t in doc["traces"] for f in t["findings"]]


@lru_cache(maxsize=8)
def _raw(path: str) -> tuple[dict[str, Any], ...]:
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    meta = {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {}
    return (meta, *events)


def _events(path: str) -> list[dict[str, Any]]:
    return list(_raw(path)[1:])


def test_dim001_names_bert_h100_mm_addmm_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT_H100)
    # Independent: every aten::mm / addmm in the raw JSON, M/K/N from its operands, bf16.
    shapes = set()
    for e in _events(path):
        if e.get("ph") == "X" and e.get("name") in ("aten::mm", "aten::addmm"):
            dims = e["args"]["Input Dims"]
            a, b = (dims[1], dims[2]) if e["name"] == "aten::addmm" else (dims[0], dims[1])
            assert any(d % 8 for d in (a[0], a[1], b[1])), dims  # MANIFEST: every one has a dim not /8
            assert e["args"]["Input type"][1] == "c10::BFloat16"
            shapes.add(json.dumps(dims))
    assert len(shapes) == 4
    (found,) = _check(path, "DIM001", capsys)  # one finding: the trace's misaligned bf16 shapes
    items = found["evidence"]["top_items"]
    assert {json.dumps(i["input_dims"]) for i in items} == shapes
    assert all(i["op"] == "aten::addmm" for i in items) and found["evidence"]["items"] == 4
    vocab = next(i for i in items if i["input_dims"][0] == [30522])
    assert vocab["misaligned_dims"] == ["M=141", "N=30522"]
    assert "(141, 30522)" in found["message"]
    assert "[[30528], [144, 512], [512, 30528], [], []]" in found["fix"]


def test_dim001_cpu_trace_uses_cpu_time(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "cpu" / "bf16_linear.pt.trace.json.gz")
    # Independent: the addmm shapes; only [30,100]x[100,37] is misaligned ([32,128]x[128,64] is not).
    addmm = {json.dumps(e["args"]["Input Dims"]) for e in _events(path) if e.get("name") == "aten::addmm"}
    assert addmm == {json.dumps([[37], [30, 100], [100, 37], [], []]), json.dumps([[64], [32, 128], [128, 64], [], []])}
    assert not any(e.get("cat") == "kernel" for e in _events(path))
    found = _check(path, "DIM001", capsys)
    assert [f["input_dims"] for f in found] == [[[37], [30, 100], [100, 37], [], []]]
    ev = found[0]["evidence"]
    assert ev["time_basis"] == "cpu" and ev["misaligned_dims"] == ["M=30", "N=37", "K=100"]
    assert "pad M 30->32, N 37->40, K 100->104" in found[0]["message"]
    assert "[[40], [32, 104], [104, 40], [], []]" in found[0]["fix"]


def test_tc001_inference_rank_1_gemmk1(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(INFER_R1)
    kernels = [e["name"] for e in _events(path) if e.get("cat") in ("Kernel", "kernel")]
    assert any("gemmk1" in k and "__half" in k for k in kernels)
    assert any("wmma_tensorop_f16" in k for k in kernels)
    assert not any("ProfilerStep" in str(e.get("name")) for e in _events(path))  # no steps: whole trace
    found = _check(path, "TC001", capsys)
    assert len(found) == 1 and "gemmk1" in found[0]["kernel"] and found[0]["evidence"]["dtype"] == "fp16"


@pytest.mark.parametrize("rel", [BERT_H100, BERT_MI300])
def test_tc001_quiet_on_tensor_core_bert(rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(rel)
    gemm = [e["name"] for e in _events(path) if e.get("cat") == "kernel" and ("gemm" in e["name"].lower() or "Cijk" in e["name"])]
    assert gemm and all(("xmma" in k or "tensorop" in k or "nvjet" in k or "MFMA" in k or "_MI" in k) for k in gemm), gemm
    assert _check(path, "TC001", capsys) == []


def test_tc002_resnet50_v100_fp32(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(RESNET_NW0)
    meta = _raw(path)[0]
    assert {(d["computeMajor"], d["computeMinor"]) for d in meta["deviceProperties"]} == {(7, 0)}
    kernels = {e["name"] for e in _events(path) if e.get("cat") in ("Kernel", "kernel")}
    assert any("sgemm" in k for k in kernels)
    assert not any(m in k for k in kernels for m in ("h884", "s884", "hmma", "tensorop", "wmma"))
    (f,) = _check(path, "TC002", capsys)  # one finding: the trace's fp32 convolutions
    items = f["evidence"]["top_items"]
    assert f["evidence"]["items"] >= 5 and len(items) == 5
    assert {i["op"] for i in items} == {"aten::cudnn_convolution"}
    assert all(i["tensor_core_kernel_pct"] == 0.0 for i in items)
    assert "autocast" in f["fix"] and "allow_tf32" not in f["fix"].split(".")[0]  # cc 7.0: AMP, no TF32


def test_tc002_param_resnet_2080ti_and_health(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(PARAM_RESNET)
    assert "Input Dims" not in json.dumps(_events(path)[:5000])
    assert not any("Input Dims" in e.get("args", {}) for e in _events(path))
    found = _check(path, "TC002,HEALTH", capsys)
    codes = sorted(f["code"] for f in found)
    assert "TC002" in codes and "HEALTH003" in codes and "HEALTH001" in codes
    tc = next(f for f in found if f["code"] == "TC002")
    assert tc["op"] == "aten::cudnn_convolution" and tc["evidence"]["compute_capability"] == 75


def test_tc002_not_on_amd(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert _check(path, "TC002", capsys) == []


def test_health_on_hta_traces(capsys: pytest.CaptureFixture[str]) -> None:
    base = shared_trace(COMPARE_BASE)
    ev = _events(base)
    # trace_compare/base HAS ProfilerStep markers (so no HEALTH001) but no deviceProperties.
    assert any(str(e.get("name", "")).startswith("ProfilerStep#") for e in ev)
    assert "deviceProperties" not in _raw(base)[0]
    assert sorted(f["code"] for f in _check(base, "HEALTH", capsys)) == ["HEALTH002"]
    r1 = shared_trace(INFER_R1)
    assert sorted(f["code"] for f in _check(r1, "HEALTH", capsys)) == ["HEALTH001", "HEALTH002", "HEALTH003"]
    bert = shared_trace(BERT_H100)
    assert _check(bert, "HEALTH", capsys) == []


def test_layout001_quiet_below_share(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(RESNET_NW0)
    # Independent: resnet50 V100 has 18 cuDNN nchw<->nhwc transposes, ~0.1% of kernel time (< 1%).
    kern = [e for e in _events(path) if e.get("cat") in ("Kernel", "kernel")]
    conv = [e for e in kern if "nchwToNhwc" in e["name"] or "nhwcToNchw" in e["name"]]
    assert len(conv) == 18 and 100 * sum(e["dur"] for e in conv) / sum(e["dur"] for e in kern) < 1.0
    assert _check(path, "LAYOUT001", capsys) == []


def test_fixture_dir_exists() -> None:
    assert Path(FIXTURES / "rules" / "DIM001" / "make.py").exists()
