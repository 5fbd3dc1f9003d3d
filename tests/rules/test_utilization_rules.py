"""GPU utilization rules (UTIL001/UTIL002 busy share per step, GAP001 long idle gaps) on real traces,
checked against the busy share computed from the raw JSON."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import shared_trace
from tests.rules.trace_json import of_code, only_trace, raw_step_busy

BERT = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
RN0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
RN4 = "kineto/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz"
ALEXNET = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
VLLM = "tracelens/traces/inference/vllm_decode_full/graph_execution.json.gz"


def test_bert_small_h100_low_busy_fires_util001(capsys: pytest.CaptureFixture[str]) -> None:
    t = only_trace(shared_trace(BERT), "UTIL", capsys)
    (f,) = of_code(t, "UTIL001")
    assert not of_code(t, "UTIL002")
    (raw,) = raw_step_busy(shared_trace(BERT))  # one ProfilerStep (#6)
    assert f["severity"] == "warning"  # one step, which may be the warm-up: not a merge-blocking verdict
    assert f["evidence"]["step_busy_median_pct"] == pytest.approx(raw, abs=0.05)
    assert 5 < raw < 10  # MANIFEST: busy ~8% of the kernel span; 6.9% of the step window


def test_resnet50_num_workers_0_busier_than_num_workers_4(capsys: pytest.CaptureFixture[str]) -> None:
    t0, t4 = only_trace(shared_trace(RN0), "UTIL", capsys), only_trace(shared_trace(RN4), "UTIL", capsys)
    (f0,), (f4,) = of_code(t0, "UTIL002"), of_code(t4, "UTIL002")  # 50-80%: warnings, not errors
    assert not of_code(t0, "UTIL001") and not of_code(t4, "UTIL001")
    b0, b4 = f0["evidence"]["step_busy_median_pct"], f4["evidence"]["step_busy_median_pct"]
    assert b0 == pytest.approx(float(np.median(raw_step_busy(shared_trace(RN0)))), abs=0.05)
    assert b4 == pytest.approx(float(np.median(raw_step_busy(shared_trace(RN4)))), abs=0.05)
    assert b0 < b4 - 20  # ~51.7% vs ~77.2%: data loading leaves the GPU idle with num_workers=0


def test_resnet50_num_workers_0_gaps_blame_the_dataloader() -> None:
    from perflint.facts import Context, rows
    from perflint.facts.builtin import load_all
    from perflint.graph.load import load_trace

    load_all()
    gaps = rows(Context(load_trace(shared_trace(RN0), None)), "gpu_gaps")
    top = gaps[0]
    assert top["op"] == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert 40 < top["longest_gap_ms"] < 500  # ~60 ms per step: below GAP001's 500 ms


def test_alexnet_critical_path_low_busy_and_long_gaps(capsys: pytest.CaptureFixture[str]) -> None:
    t = only_trace(shared_trace(ALEXNET), "UTIL,GAP001", capsys)
    (u,) = of_code(t, "UTIL001")
    assert u["evidence"]["step_busy_median_pct"] < 0.5  # no steps: whole trace, ~0.1% busy
    assert u["evidence"]["step_count"] == 0
    gaps = of_code(t, "GAP001")
    assert gaps and all(f["evidence"]["longest_gap_ms"] >= 500 for f in gaps)
    # The whole trace starts with 30 s of CUDA initialisation under the first .to(device), then
    # the 10 s gap of cuDNN's algorithm search.
    assert gaps[0]["evidence"]["op"] == "aten::empty_strided" and gaps[0]["op_stack"][0] == "aten::to"
    assert gaps[1]["evidence"]["op"] == "aten::cudnn_convolution"


def test_vllm_graph_execution_is_busy(capsys: pytest.CaptureFixture[str]) -> None:
    t = only_trace(shared_trace(VLLM), "UTIL,GAP001", capsys)
    assert t["findings"] == []
    assert {s["code"]: s["status"] for s in t["statuses"]} == {"UTIL001": "passed", "UTIL002": "passed", "GAP001": "passed"}


def test_util001_names_what_sets_the_pace(capsys: pytest.CaptureFixture[str]) -> None:
    """A launch-bound step (fixtures/gpu/launch_bound: hundreds of tiny kernels): UTIL001 says the
    host leads the median step's critical path and its fix starts from that."""
    import json

    from perflint.cli import main
    from tests.conftest import FIXTURES

    assert main(["check", str(FIXTURES / "gpu" / "launch_bound.pt.trace.json.gz"), "--select", "UTIL001", "--format", "json", "--fail-on", "never"]) == 0
    (f,) = [f for t in json.loads(capsys.readouterr().out)["traces"] for f in t["findings"]]
    assert "the median step's critical path is" in f["message"] and "CPU op dispatch / Python" in f["message"]
    assert "(here CPU op dispatch / Python)" in f["fix"] and "CUDA graph" in f["fix"]
