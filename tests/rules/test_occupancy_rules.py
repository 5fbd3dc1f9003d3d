"""Occupancy rules (OCC001-OCC004) on a real V100 trace, checked against the launch configs and
Kineto's occupancy estimates in the raw JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import shared_trace
from tests.rules.trace_json import of_code, only_trace

RN0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def test_resnet50_occupancy_findings(capsys: pytest.CaptureFixture[str]) -> None:
    t = only_trace(shared_trace(RN0), "OCC", capsys)
    # bn_bw_1C11_kernel_new launches 64 blocks on 80 SMs, but it is 1.4% of kernel time: filling
    # the idle fifth of the SMs would win 0.3% of the step, under OCC002's 1% floor.
    assert not [f for f in of_code(t, "OCC002") if "bn_bw_1C11_kernel_new" in f["kernel"]]
    tail = [f for f in of_code(t, "OCC004") if "dgrad_engine<float, 512, 6, 5, 3, 3, 3" in f["kernel"]]
    assert tail and tail[0]["evidence"]["blocks"] == 896 and tail[0]["evidence"]["max_blocks_per_sm"] == 10
    assert not of_code(t, "OCC003")
    # Raw JSON: the dgrad kernel's grid is 896 blocks and Kineto's own estimate agrees with 10
    # resident blocks per SM: 896/80 = 11.2 blocks per SM > 10, so occupancy = 10 x warps / 64.
    with gzip.open(shared_trace(RN0)) as fh:
        ev = json.load(fh)["traceEvents"]
    k = [e for e in ev if e.get("cat") == "Kernel" and "dgrad_engine<float, 512, 6, 5, 3, 3, 3" in e["name"]]
    big = [e for e in k if int(np.prod(e["args"]["grid"])) == 896]
    assert big
    a = big[0]["args"]
    warps = -(-int(np.prod(a["block"])) // 32)
    assert a["est. achieved occupancy %"] == pytest.approx(100 * 10 * warps / 64, abs=0.6)


def _decode_gemm(tmp_path: Path, kernel_us: float) -> str:
    """A bf16 decode GEMM on an H100: M = 32 tokens x a 4096 x 4096 weight (32 MiB), 16 blocks on
    132 SMs. At 3.35 TB/s the weight alone takes about 10 us to stream."""
    from tests.builder import TraceBuilder

    b = TraceBuilder(device="NVIDIA H100 80GB HBM3", sm_count=132, cc=(9, 0))
    for n in range(1, 5):
        s = (n - 1) * 1000.0
        b.step(n, s, 1000)
        b.op("aten::mm", s + 5, 10, dims=[[32, 4096], [4096, 4096]], types=["c10::BFloat16", "c10::BFloat16"])
        b.kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                 s + 20, kernel_us, launch_ts=s + 8, grid=(16, 1, 1), block=(384, 1, 1), blocks_per_sm=16 / 132, occupancy=10.0)
        b.wait_for_gpu(s + 30, s + 20 + kernel_us)
    return b.write(tmp_path / f"decode{kernel_us}.json")


def test_occ002_leaves_a_kernel_at_its_roof_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from perflint.cli import main

    def found(kernel_us: float) -> list[dict[str, object]]:
        assert main(["check", _decode_gemm(tmp_path, kernel_us), "--select", "OCC002", "--format", "json", "--fail-on", "never"]) == 0
        return [f for t in json.loads(capsys.readouterr().out)["traces"] for f in t["findings"]]

    assert found(12.0) == []  # about 85% of the memory roof: the grid is not the problem
    (f,) = found(60.0)  # five times slower than the roof: the small grid is
    assert f["evidence"]["roof_pct"] < 20


def test_occ004_judges_each_launch_by_its_own_grid(tmp_path: Path) -> None:
    """One kernel launched with two grids: 1.1 waves (a 10%-full tail) and exactly 2 waves. The
    tail loss counts the first launches only."""
    import perflint.facts.builtin  # noqa: F401
    from perflint.facts import Context, rows
    from perflint.graph.load import load_trace
    from tests.builder import TraceBuilder

    b = TraceBuilder(sm_count=100)
    for n in range(1, 5):
        s = (n - 1) * 1000.0
        b.step(n, s, 1000)
        b.op("aten::add", s + 5, 10)
        b.kernel("void at::native::vectorized_elementwise_kernel<4, add>", s + 20, 200, launch_ts=s + 6, grid=(110, 1, 1), block=(1024, 1, 1), blocks_per_sm=None, occupancy=None)
        b.kernel("void at::native::vectorized_elementwise_kernel<4, add>", s + 300, 200, launch_ts=s + 8, grid=(200, 1, 1), block=(1024, 1, 1), blocks_per_sm=None, occupancy=None)
        b.wait_for_gpu(s + 30, s + 500)
    ctx = Context(load_trace(b.write(tmp_path / "t.json")))
    (row,) = [r for r in rows(ctx, "kernel_groups") if r["kernel"].startswith("void at::native::vectorized")]
    assert row["max_blocks_per_sm"] == 2  # 1024 threads per block, 2048 per SM
    # 110 blocks = 0.55 waves (no full wave: no tail loss); 200 blocks = 1.0 wave: whole.
    assert row["tail_loss_us"] == 0.0 and row["waves"] == pytest.approx((0.55 + 1.0) / 2)
    assert row["tail_wave_pct"] == pytest.approx(55.0)


def test_occ002_judges_a_grid_against_the_sms_communication_leaves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A GEMM of 112 blocks on a 132-SM H100 fills 0.85 of the SMs; beside a DeepEP dispatch
    kernel holding 20 SMs it fills the 112 left: no finding then."""
    import json

    from perflint.cli import main
    from tests.builder import TraceBuilder

    def found(with_comm: bool) -> list[dict[str, object]]:
        b = TraceBuilder(device="NVIDIA H100 80GB HBM3", sm_count=132, cc=(9, 0))
        for n in range(1, 5):
            s = (n - 1) * 1000.0
            b.step(n, s, 1000)
            b.op("aten::mm", s + 5, 10, dims=[[8192, 4096], [4096, 4096]], types=["c10::BFloat16", "c10::BFloat16"])
            b.kernel("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(Params)", s + 20, 600,
                     launch_ts=s + 8, grid=(112, 1, 1), block=(128, 1, 1), blocks_per_sm=112 / 132, occupancy=20.0)
            if with_comm:
                b.op("deep_ep::dispatch", s + 12, 5)
                b.kernel("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)", s + 10, 620, launch_ts=s + 13, stream=9,
                         grid=(20, 1, 1), block=(768, 1, 1), blocks_per_sm=20 / 132, occupancy=5.0)
            b.wait_for_gpu(s + 30, s + 640)
        path = b.write(tmp_path / f"ep{with_comm}.json")
        assert main(["check", path, "--select", "OCC002", "--format", "json", "--fail-on", "never"]) == 0
        return [f for t in json.loads(capsys.readouterr().out)["traces"] for f in t["findings"]]

    assert len(found(False)) == 1
    assert found(True) == []


def test_grid_knobs_name_what_the_user_can_change() -> None:
    from perflint.metrics.grid_knobs import grid_knob

    assert "batch" in str(grid_knob("cuBLAS", "gemm")) and "split-K" in str(grid_knob("CUTLASS", "gemm"))
    assert "launch grid" in str(grid_knob(None, "other"))  # the user's own kernel
    assert "max-autotune" in str(grid_knob("Triton (Inductor)", "triton_pointwise"))
    assert grid_knob("cuDNN", "other") is None  # the library decides alone: information only
