"""Shape and layout rules (DIM001 misaligned GEMM dims, LAYOUT001 layout transposes) on real traces,
each claim re-derived from the raw JSON independently of perflint's reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, shared_trace
from tests.rules.trace_json import all_findings, events

BERT_H100 = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
RESNET_NW0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def test_dim001_names_bert_h100_mm_addmm_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT_H100)
    # Independent: every aten::mm / addmm in the raw JSON, M/K/N from its operands, bf16.
    shapes = set()
    for e in events(path):
        if e.get("ph") == "X" and e.get("name") in ("aten::mm", "aten::addmm"):
            dims = e["args"]["Input Dims"]
            a, b = (dims[1], dims[2]) if e["name"] == "aten::addmm" else (dims[0], dims[1])
            assert any(d % 8 for d in (a[0], a[1], b[1])), dims  # MANIFEST: every one has a dim not /8
            assert e["args"]["Input type"][1] == "c10::BFloat16"
            shapes.add(json.dumps(dims))
    assert len(shapes) == 4
    (found,) = all_findings(path, "DIM001", capsys)  # one finding: the trace's misaligned bf16 shapes
    items = found["evidence"]["top_items"]
    assert {json.dumps(i["input_dims"]) for i in items} == shapes
    assert all(i["op"] == "aten::addmm" for i in items) and found["evidence"]["items"] == 4
    vocab = next(i for i in items if i["input_dims"][0] == [30522])
    assert vocab["misaligned_dims"] == ["M=141", "N=30522"]
    assert "(141, 30522)" in found["message"]
    assert "[[30528], [144, 512], [512, 30528]]" in found["fix"]


def test_dim001_cpu_trace_uses_cpu_time(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "cpu" / "bf16_linear.pt.trace.json.gz")
    # Independent: the addmm shapes; only [30,100]x[100,37] is misaligned ([32,128]x[128,64] is not).
    addmm = {json.dumps(e["args"]["Input Dims"]) for e in events(path) if e.get("name") == "aten::addmm"}
    assert addmm == {json.dumps([[37], [30, 100], [100, 37], [], []]), json.dumps([[64], [32, 128], [128, 64], [], []])}
    assert not any(e.get("cat") == "kernel" for e in events(path))
    found = all_findings(path, "DIM001", capsys)
    assert [f["input_dims"] for f in found] == [[[37], [30, 100], [100, 37], [], []]]
    ev = found[0]["evidence"]
    assert ev["time_basis"] == "cpu" and ev["misaligned_dims"] == ["M=30", "N=37", "K=100"]
    assert "pad M 30->32, N 37->40, K 100->104" in found[0]["message"]
    assert "[[40], [32, 104], [104, 40]]" in found[0]["fix"]


def test_layout001_quiet_below_share(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(RESNET_NW0)
    # Independent: resnet50 V100 has 18 cuDNN nchw<->nhwc transposes, ~0.1% of kernel time (< 1%).
    kern = [e for e in events(path) if e.get("cat") in ("Kernel", "kernel")]
    conv = [e for e in kern if "nchwToNhwc" in e["name"] or "nhwcToNchw" in e["name"]]
    assert len(conv) == 18 and 100 * sum(e["dur"] for e in conv) / sum(e["dur"] for e in kern) < 1.0
    assert all_findings(path, "LAYOUT001", capsys) == []


def test_fixture_dir_exists() -> None:
    assert Path(FIXTURES / "rules" / "DIM001" / "make.py").exists()
