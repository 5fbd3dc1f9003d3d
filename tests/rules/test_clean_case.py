"""A healthy synthetic training loop: the whole built-in pack finds nothing at error level
(issue 3 point 5), and nothing at all from the rules that must stay quiet on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflint.cli import main
from tests.builder import TraceBuilder

BF16 = ["c10::BFloat16", "c10::BFloat16"]


def healthy(steps: int = 6) -> TraceBuilder:
    b = TraceBuilder(device="NVIDIA H100 80GB HBM3", sm_count=132, cc=(9, 0))
    step_us = 10_000.0
    for i in range(steps):
        t0 = i * step_us
        b.step(i + 1, t0, step_us - 10)
        gpu = t0 + 50
        # Launches run well ahead of the GPU, kernels back to back: ~97% busy.
        for k in range(8):
            t = t0 + 5 + k * 40
            b.op("aten::mm", t, 30, dims=[[4096, 4096], [4096, 4096]], types=BF16)
            b.kernel(
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_cublas",
                gpu, 1000, launch_ts=t + 5, grid=(528, 1, 1), block=(384, 1, 1), blocks_per_sm=4.0, occupancy=37.0,
            )
            gpu += 1002
            b.op("aten::add", t + 35, 4, dims=[[4096, 4096], [4096, 4096], []], types=BF16)
            b.kernel(
                "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>>",
                gpu, 200, launch_ts=t + 36, grid=(2112, 1, 1), block=(256, 1, 1), blocks_per_sm=16.0, occupancy=85.0,
            )
            gpu += 202
        b.memory(t0 + 20, 1 << 20, total_allocated=20 << 30, total_reserved=24 << 30)
    return b


def test_healthy_loop_has_no_error_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = healthy().write(tmp_path / "healthy.pt.trace.json")
    rc = main(["check", path, "--format", "json", "--jobs", "1"])
    doc = json.loads(capsys.readouterr().out)
    (t,) = doc["traces"]
    errors = [f["message"] for f in t["findings"] if f["severity"] == "error"]
    assert rc == 0 and errors == []
    fired = {f["code"] for f in t["findings"]}
    assert not fired & {"TC001", "TC002", "DIM001", "UTIL001", "UTIL002", "LAUNCH001", "SYNC001", "MEM001", "PEAK001"}
    passed = {s["code"] for s in t["statuses"] if s["status"] == "passed"}
    assert {"TC001", "DIM001", "UTIL001", "LAUNCH001", "SYNC001"} <= passed
