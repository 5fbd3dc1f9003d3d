"""Tensor Core rules (TC001 GEMMs off the Tensor Cores, TC002 fp32 work that could use them) on real
traces, each claim re-derived from the raw JSON independently of perflint's reader."""

from __future__ import annotations

import json

import pytest

from tests.conftest import shared_trace
from tests.rules.trace_json import all_findings, events, raw

BERT_H100 = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
BERT_MI300 = "tracelens/traces/mi300/gaunernst_bert-small-uncased__1016001.json.gz"
INFER_R1 = "hta/trace_file_list/inference_rank_1.json.gz"
RESNET_NW0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
PARAM_RESNET = "param/resnet_kineto.json.gz"


def test_tc001_inference_rank_1_gemmk1(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(INFER_R1)
    kernels = [e["name"] for e in events(path) if e.get("cat") in ("Kernel", "kernel")]
    assert any("gemmk1" in k and "__half" in k for k in kernels)
    assert any("wmma_tensorop_f16" in k for k in kernels)
    assert not any("ProfilerStep" in str(e.get("name")) for e in events(path))  # no steps: whole trace
    found = all_findings(path, "TC001", capsys)
    assert len(found) == 1 and "gemmk1" in found[0]["kernel"] and found[0]["evidence"]["dtype"] == "fp16"


@pytest.mark.parametrize("rel", [BERT_H100, BERT_MI300])
def test_tc001_quiet_on_tensor_core_bert(rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(rel)
    gemm = [e["name"] for e in events(path) if e.get("cat") == "kernel" and ("gemm" in e["name"].lower() or "Cijk" in e["name"])]
    assert gemm and all(("xmma" in k or "tensorop" in k or "nvjet" in k or "MFMA" in k or "_MI" in k) for k in gemm), gemm
    assert all_findings(path, "TC001", capsys) == []


def test_tc002_resnet50_v100_fp32(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(RESNET_NW0)
    meta = raw(path)[0]
    assert {(d["computeMajor"], d["computeMinor"]) for d in meta["deviceProperties"]} == {(7, 0)}
    kernels = {e["name"] for e in events(path) if e.get("cat") in ("Kernel", "kernel")}
    assert any("sgemm" in k for k in kernels)
    assert not any(m in k for k in kernels for m in ("h884", "s884", "hmma", "tensorop", "wmma"))
    (f,) = all_findings(path, "TC002", capsys)  # one finding: the trace's fp32 convolutions
    items = f["evidence"]["top_items"]
    assert f["evidence"]["items"] >= 5 and len(items) == 5
    assert {i["op"] for i in items} == {"aten::cudnn_convolution"}
    assert all(i["tensor_core_kernel_pct"] == 0.0 for i in items)
    assert "autocast" in f["fix"] and "allow_tf32" not in f["fix"].split(".")[0]  # cc 7.0: AMP, no TF32
    # The op and its dims are the forward convolution's; its main kernel is the data gradient's.
    assert "dgrad_engine" in f["message"] and f["message"].endswith("(its backward pass)")


def test_tc002_param_resnet_2080ti_and_health(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(PARAM_RESNET)
    assert "Input Dims" not in json.dumps(events(path)[:5000])
    assert not any("Input Dims" in e.get("args", {}) for e in events(path))
    found = all_findings(path, "TC002,HEALTH", capsys)
    codes = sorted(f["code"] for f in found)
    assert "TC002" in codes and "HEALTH003" in codes and "HEALTH001" in codes
    tc = next(f for f in found if f["code"] == "TC002")
    assert tc["op"] == "aten::cudnn_convolution" and tc["evidence"]["compute_capability"] == 75


def test_tc002_not_on_amd(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert all_findings(path, "TC002", capsys) == []
