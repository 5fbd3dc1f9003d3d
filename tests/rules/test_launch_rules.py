"""Launch rules (LAUNCH001 launch-bound, LAUNCH003 launch outliers) on real traces, each claim
cross-checked from the raw JSON."""

from __future__ import annotations

import pytest

from tests.conftest import shared_trace
from tests.rules.trace_json import events, only_trace

BERT = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
ALEXNET = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"


def test_bert_small_h100_is_launch_bound(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT)
    kernels = [e for e in events(path) if e.get("cat") in ("kernel", "Kernel")]
    short = sum(1 for e in kernels if e["dur"] < 10)
    assert (len(kernels), short) == (60, 58)  # raw JSON: 96.7% short (MANIFEST: 97%)
    (f,) = [f for f in only_trace(path, "LAUNCH001", capsys)["findings"] if f["code"] == "LAUNCH001"]
    ev = f["evidence"]
    assert (ev["kernel_count"], ev["short_kernels"]) == (60, 58)
    assert ev["gpu_busy_pct"] < 10  # MANIFEST: busy ~8% of the kernel span
    assert "reduce-overhead" in f["fix"]


def test_alexnet_launch_outliers_are_grouped(capsys: pytest.CaptureFixture[str]) -> None:
    """HTA cutoffs, per API x op; the multi-second lazy-loading cudaLaunchKernel is no launch
    overhead a user can win back: counted apart (slow_calls), never as recoverable outlier time."""
    from perflint.facts import Context, rows
    from perflint.facts.builtin import load_all
    from perflint.graph.load import load_trace

    load_all()
    path = shared_trace(ALEXNET)
    found = only_trace(path, "LAUNCH003", capsys)["findings"]
    assert len(found) == len({(f["evidence"]["api"], f["op"]) for f in found})
    assert all(f["impact_us"] < 1e6 for f in found)
    groups = rows(Context(load_trace(path)), "launch_groups")
    (conv,) = [r for r in groups if r["op"] == "aten::cudnn_convolution" and r["api"] == "cudaLaunchKernel"]
    assert conv["runtime_max_us"] > 1e6 and conv["slow_calls"] >= 1 and conv["slow_call_us"] > 1e6
    assert conv["runtime_outlier_us"] < 1e6
