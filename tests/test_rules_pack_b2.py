"""Rule pack B2 (LAUNCH, SYNC, MEM) on real traces, each claim cross-checked from the raw JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from tests.conftest import FIXTURES, shared_trace

BERT = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
ALEXNET = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
RESNET0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
SYNC_ITEM = str(FIXTURES / "cpu" / "sync_item.pt.trace.json.gz")


def _events(path: str) -> list[dict[str, Any]]:
    doc = json.loads(gzip.decompress(Path(path).read_bytes()))
    return doc["traceEvents"] if isinstance(doc, dict) else doc  # type: ignore[no-any-return]


def _check(path: str, codes: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    rc = main(["check", path, "--select", codes, "--format", "json", "--fail-on", "never", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    (t,) = json.loads(out)["traces"]
    return t["findings"]  # type: ignore[no-any-return]


def test_bert_small_h100_is_launch_bound(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT)
    kernels = [e for e in _events(path) if e.get("cat") in ("kernel", "Kernel")]
    short = sum(1 for e in kernels if e["dur"] < 10)
    assert (len(kernels), short) == (60, 58)  # raw JSON: 96.7% short (MANIFEST: 97%)
    (f,) = [f for f in _check(path, "LAUNCH001", capsys) if f["code"] == "LAUNCH001"]
    ev = f["evidence"]
    assert (ev["kernel_count"], ev["short_kernels"]) == (60, 58)
    assert ev["gpu_busy_pct"] < 10  # MANIFEST: busy ~8% of the kernel span
    assert "reduce-overhead" in f["fix"]


def test_alexnet_host_syncs_without_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """No ProfilerStep markers: the whole trace is examined; 21 synchronize calls as in MANIFEST."""
    path = shared_trace(ALEXNET)
    raw = [e for e in _events(path) if e.get("cat") in ("cuda_runtime", "Runtime") and e["name"].endswith("Synchronize")]
    assert len(raw) == 21
    groups = _sync_rows(path)
    assert sum(r["count"] for r in groups) == 21
    kinds = {r["kind"]: 0 for r in groups}
    for r in groups:
        kinds[r["kind"]] += r["count"]
    assert kinds == {"cudaDeviceSynchronize": 5, "cudaStreamSynchronize": 16}
    assert len(groups) < 21  # grouped, never one row per call
    found = [f for f in _check(path, "SYNC001", capsys) if f["code"] == "SYNC001"]
    # A finding only where the syncs cost the GPU idle time (>= 50 µs): the 16 stream syncs.
    assert [f["evidence"]["kind"] for f in found] == ["cudaStreamSynchronize"]
    assert found[0]["impact_us"] == pytest.approx(found[0]["evidence"]["gpu_idle_us"])
    assert found[0]["impact_us"] <= found[0]["evidence"]["blocked_us"]


def _sync_rows(path: str) -> list[dict[str, Any]]:
    from perflint.facts import Context, load_all, rows
    from perflint.graph.load import load_trace

    load_all()
    return rows(Context(load_trace(path)), "sync_groups")


def test_cpu_only_profile_item_is_no_sync(capsys: pytest.CaptureFixture[str]) -> None:
    """A CPU-only profile records no runtime call: nothing shows that .item() waited on a GPU
    (on a CPU tensor it waits for nothing), so no sync is counted and SYNC001 stays quiet."""
    raw = _events(SYNC_ITEM)
    assert any(e.get("name") == "aten::item" for e in raw)
    assert not any(e.get("cat") in ("cuda_runtime", "Runtime") for e in raw)
    assert _sync_rows(SYNC_ITEM) == []
    assert not [f for f in _check(SYNC_ITEM, "SYNC001", capsys) if f["code"] == "SYNC001"]


def test_resnet50_pageable_memcpy(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(RESNET0)
    names = {e["name"] for e in _events(path) if e.get("cat") in ("gpu_memcpy", "Memcpy")}
    assert names == {"Memcpy HtoD (Pageable -> Device)"}
    (f,) = [f for f in _check(path, "MEM001", capsys) if f["code"] == "MEM001"]
    assert f["evidence"]["memcpy"] == "Memcpy HtoD (Pageable -> Device)"
    assert f["op"] == "aten::copy_"
    assert "pin_memory=True" in f["fix"]


def test_alexnet_launch_outliers_are_grouped(capsys: pytest.CaptureFixture[str]) -> None:
    """HTA cutoffs, per API x op; the multi-second lazy-loading cudaLaunchKernel is no launch
    overhead a user can win back: counted apart (slow_calls), never as recoverable outlier time."""
    from perflint.facts import Context, load_all, rows
    from perflint.graph.load import load_trace

    load_all()
    path = shared_trace(ALEXNET)
    found = _check(path, "LAUNCH003", capsys)
    assert len(found) == len({(f["evidence"]["api"], f["op"]) for f in found})
    assert all(f["impact_us"] < 1e6 for f in found)
    groups = rows(Context(load_trace(path)), "launch_groups")
    (conv,) = [r for r in groups if r["op"] == "aten::cudnn_convolution" and r["api"] == "cudaLaunchKernel"]
    assert conv["runtime_max_us"] > 1e6 and conv["slow_calls"] >= 1 and conv["slow_call_us"] > 1e6
    assert conv["runtime_outlier_us"] < 1e6
