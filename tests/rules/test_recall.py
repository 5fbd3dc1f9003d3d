"""Problems real traces show that the rules once missed, each checked on the trace where it was seen,
against the raw JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from perflint.metrics.apis import is_kernel_launch, is_launch, is_sync_copy, sync_kind
from tests.conftest import shared_trace

ALEXNET = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
GLOO = "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
QUEUE = "hta/negative_queue_length_values_check/rank0.json.gz"


def _events(path: str) -> list[dict[str, Any]]:
    with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as fh:
        doc = json.load(fh)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _check(path: str, select: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["check", path, "--select", select, "--format", "json", "--fail-on", "never", "--jobs", "1"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["traces"]
    return t  # type: ignore[no-any-return]


def test_fp32_simt_convolution_known_by_its_kernel_name(capsys: pytest.CaptureFixture[str]) -> None:
    """alexnet on an A100 records no Input type: the scudnn kernel's name says fp32 SIMT."""
    path = shared_trace(ALEXNET)
    ev = _events(path)
    assert not any("Input type" in e.get("args", {}) for e in ev)
    scudnn = [e for e in ev if e.get("cat") == "kernel" and "scudnn" in e["name"]]
    assert scudnn
    t = _check(path, "TC002", capsys)
    conv = [f for f in t["findings"] if f["evidence"]["top_items"][0]["op"] == "aten::cudnn_convolution"]
    assert len(conv) == 1
    assert "scudnn" in conv[0]["evidence"]["top_items"][0]["kernel"]
    assert conv[0]["evidence"]["top_items"][0]["kernel_time_us"] >= sum(e["dur"] for e in scudnn) / 2


def test_gloo_collectives_on_the_host_are_communication(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(GLOO)
    ev = _events(path)
    assert not any(e.get("cat") == "kernel" for e in ev)
    (step,) = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")]
    lo, hi = step["ts"], step["ts"] + step["dur"]
    spans = sorted((max(lo, e["ts"]), min(hi, e["ts"] + e["dur"])) for e in ev if e.get("name") == "gloo:all_reduce")
    union, end = 0.0, lo
    for a, b in spans:
        if b > a and b > end:
            union += b - max(a, end)
            end = b
    t = _check(path, "COMM001", capsys)
    (f,) = t["findings"]
    assert f["evidence"]["comm_pct"] == pytest.approx(100 * union / (hi - lo), abs=0.01)
    assert f["evidence"]["comm_pct"] > 80 and "on the host" in f["message"]
    assert {s["code"]: s["status"] for s in t["statuses"]}["COMM001"] == "failed"


def test_tiny_copies_to_pageable_memory_are_host_syncs(capsys: pytest.CaptureFixture[str]) -> None:
    """704-byte device-to-pageable copies (tensor.cpu()) wait for the GPU: 140 ms each."""
    path = shared_trace(QUEUE)
    ev = _events(path)
    corr = {e["args"].get("correlation"): e for e in ev if e.get("cat") == "gpu_memcpy"}
    waits = [
        e for e in ev if e.get("name") == "cudaMemcpyAsync"
        and corr.get(e["args"].get("correlation"), {}).get("name") == "Memcpy DtoH (Device -> Pageable)"
    ]  # fmt: skip
    assert waits and max(e["dur"] for e in waits) > 100_000
    assert max(corr[e["args"]["correlation"]]["args"]["bytes"] for e in waits) <= 1024  # tiny: MEM001 exempts them
    t = _check(path, "SYNC001,MEM001", capsys)
    pageable = [f for f in t["findings"] if f["code"] == "SYNC001" and "pageable" in f["message"]]
    assert len(pageable) == 1
    f = pageable[0]
    assert f["evidence"]["kind"] == "cudaMemcpyAsync"
    # The wait is the CPU's; what removing it wins is the GPU idle time after it, at most the wait.
    assert 0 < f["impact_us"] <= f["evidence"]["blocked_us"]
    assert not [x for x in t["findings"] if x["code"] == "MEM001" and "DtoH" in x["message"]]


@pytest.mark.parametrize(
    "api",
    ["cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
     "cudaStreamSynchronize_ptsz", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
     "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipCtxSynchronize"],
)  # fmt: skip
def test_every_sync_call_is_known(api: str) -> None:
    assert sync_kind(api) in ("device", "stream", "event")
    assert not is_sync_copy(api) and not is_launch(api)


@pytest.mark.parametrize(
    "api",
    ["cudaMemcpy", "cudaMemcpy_ptds", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
     "cudaMemcpyPeer", "cudaMemcpyToArray", "cudaMemcpy2DFromArray", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
     "cuMemcpyDtoD_v2", "cuMemcpy", "cuMemcpy3D_v2", "hipMemcpy", "hipMemcpyHtoD", "hipMemcpyDtoH", "hipMemcpyDtoD",
     "hipMemcpy2D", "hipMemcpyWithStream", "hipMemcpyToSymbol", "hipMemcpyPeer", "hipMemcpyParam2D"],
)  # fmt: skip
def test_every_blocking_copy_is_known(api: str) -> None:
    assert is_sync_copy(api)
    assert sync_kind(api) is None


@pytest.mark.parametrize(
    ("api", "kernel"),
    [("cudaMemcpyAsync", False), ("cudaMemcpyAsync_ptsz", False), ("hipMemcpyAsync", False), ("cudaMemsetAsync", False),
     ("cudaLaunchKernel", True), ("cudaLaunchKernel_ptsz", True), ("cuLaunchKernel", True), ("cuLaunchKernelEx", True),
     ("hipLaunchKernel", True), ("hipExtModuleLaunchKernel", True), ("hipModuleLaunchKernel", True),
     ("cudaGraphLaunch", True), ("hipGraphLaunch", True), ("cudaLaunchCooperativeKernel", True)],
)  # fmt: skip
def test_async_calls_launch_and_never_block(api: str, kernel: bool) -> None:
    assert is_launch(api) and not is_sync_copy(api) and sync_kind(api) is None
    assert is_kernel_launch(api) is kernel


def test_cpu_profile_items_and_gpu_absent_skips_are_said(capsys: pytest.CaptureFixture[str]) -> None:
    """A trace without GPU work says why each GPU rule did not run; communication is checked."""
    t = _check(shared_trace(GLOO), "ALL", capsys)
    status = {s["code"]: s for s in t["statuses"]}
    assert status["COMM001"]["status"] == "failed"
    assert status["TC001"]["status"] == "skipped" and "GPU kernel" in status["TC001"]["reason"]
    assert Path(shared_trace(GLOO)).exists()
