"""Roofline: achieved rates, the binding roof and the bound of kernels and kernel groups, on
synthetic numbers whose answers are worked by hand, and the kernel table's roofline columns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflint.graph.load import load_trace
from perflint.listings import PERFLINT_COLUMNS, kernel_table
from perflint.metrics.roofline import LATENCY_PCT, LATENCY_US, group_roofline, kernel_peaks, roofline
from tests.conftest import FIXTURES

NAN = float("nan")
# An H100 SXM's bf16 Tensor Core peak and bandwidth: ridge 989.5e12 / 3350e9 = 295.4 FLOP/B.
PEAK, BW = 989.5, 3350.0


def test_compute_memory_latency_and_unknown() -> None:
    # 1) 4096^3 GEMM (137.4 GFLOP, 100.7 MB) in 400 us: 343.6 TFLOP/s, intensity 1365 > ridge
    # 2) elementwise: 1 GB moved in 500 us, 0.25 GFLOP: 2000 GB/s, intensity 0.25 < ridge
    # 3) 3 us kernel: too short for a roof whatever it does
    # 4) a 100 us kernel reaching 5% of compute and 1% of memory: neither roof binds
    # 5) no counts at all
    # 6) bytes without FLOPs: memory work
    f = np.array([2 * 4096.0**3, 0.25e9, 1e6, 0.05 * PEAK * 1e6 * 100, NAN, 0.0])
    b = np.array([3 * 4096.0**2 * 2, 1e9, 1e6, 0.01 * BW * 1e3 * 100, NAN, 5e8])
    t = np.array([400.0, 500.0, 3.0, 100.0, 50.0, 250.0])
    r = roofline(f, b, t, np.full(6, PEAK), np.full(6, BW))
    assert r.tflops[0] == pytest.approx(2 * 4096.0**3 / 400e-6 / 1e12)
    assert r.gbps[1] == pytest.approx(2000.0)
    assert r.ridge[0] == pytest.approx(PEAK * 1e12 / (BW * 1e9))
    assert r.pct_of_peak[0] == pytest.approx(100 * r.tflops[0] / PEAK)
    assert r.pct_of_peak[1] == pytest.approx(100 * 2000.0 / BW)
    assert r.pct_of_peak[5] == pytest.approx(100 * 2000.0 / BW)
    assert r.bound == ["compute", "memory", "latency", "latency", None, "memory"]
    assert 3.0 < LATENCY_US and 5.0 < LATENCY_PCT
    assert math.isnan(r.pct_of_peak[4]) and math.isnan(r.tflops[4])


def test_unknown_peaks_leave_only_the_known_roof() -> None:
    # A dtype without a compute peak: only the memory roof can bind; no bandwidth: only compute.
    r = roofline(np.array([1e9, 1e12]), np.array([1e9, 1e9]), np.array([100.0, 100.0]), np.array([NAN, PEAK]), np.array([BW, NAN]))
    assert r.bound == ["memory", "compute"]
    assert r.pct_of_peak[0] == pytest.approx(100 * 10000.0 / BW)
    assert r.pct_of_peak[1] == pytest.approx(100 * 10000.0 / PEAK)
    assert np.isnan(r.ridge).all()


def test_zero_duration_has_no_rates() -> None:
    r = roofline(np.array([1e9]), np.array([1e6]), np.array([0.0]), np.array([PEAK]), np.array([BW]))
    assert math.isnan(r.tflops[0]) and r.bound == [None]


def test_group_roofline_sums_and_mixes_peaks() -> None:
    # group 0: two kernels, one at a 1000 TFLOP/s peak, one at a 100 TFLOP/s peak; group 1: one
    # kernel with unknown bytes: the group's bytes are unknown.
    gid = np.array([0, 0, 1])
    f = np.array([1e12, 1e11, 1e9])
    b = np.array([1e9, 1e8, NAN])
    t = np.array([2000.0, 2000.0, 10.0])
    pk = np.array([1000.0, 100.0, PEAK])
    r = group_roofline(gid, 2, f, b, t, pk, np.full(3, BW))
    # time at peak: 1e12/1e15 + 1e11/1e14 = 2 ms for 1.1e12 FLOPs -> an effective 550 TFLOP/s
    assert r.tflops[0] == pytest.approx(1.1e12 / 4000e-6 / 1e12)
    assert r.pct_compute[0] == pytest.approx(100 * r.tflops[0] / 550.0)
    assert r.bound[0] == "compute"
    assert math.isnan(r.gbps[1]) and r.bound[1] == "compute"


def test_kernel_peaks_are_the_devices_for_each_dtype_and_unit() -> None:
    t = load_trace(str(FIXTURES / "gpu" / "gemm_fp16_aligned.pt.trace.json.gz"))  # an H100 SXM
    dev = t.primary_device
    assert dev is not None
    rows = [
        {"device": dev.id, "dtype": "fp16", "tensor_cores": True, "dur_us": 100.0, "flops": 0.25 * 989.5e12 * 100e-6, "bytes": 1e6},
        {"device": dev.id, "dtype": "fp32", "tensor_cores": False, "dur_us": 100.0, "flops": 1e6, "bytes": 3.35e8 * 0.5},
        {"device": dev.id, "dtype": "fp16", "tensor_cores": True, "dur_us": 100.0},
        {"device": 99, "dtype": "fp16", "tensor_cores": True, "dur_us": 100.0, "flops": 1e12, "bytes": 1e6},
    ]
    nan = float("nan")
    flops = np.asarray([r.get("flops", nan) for r in rows], dtype=np.float64)
    nbytes = np.asarray([r.get("bytes", nan) for r in rows], dtype=np.float64)
    pk, bw = kernel_peaks(t, [r["device"] for r in rows], [r["dtype"] for r in rows], [r["tensor_cores"] for r in rows])
    r = roofline(flops, nbytes, np.asarray([r["dur_us"] for r in rows]), pk, bw)
    assert r.pct_of_peak[0] == pytest.approx(25.0)  # a quarter of the bf16/fp16 Tensor Core peak
    assert r.bound[0] == "compute"
    assert r.pct_of_peak[1] == pytest.approx(50.0) and r.bound[1] == "memory"
    assert r.bound[2] is None  # no counts
    # A device id the trace does not describe: one device in the trace stands for it (Trace.device).
    assert r.bound[3] == "compute"


def test_kernel_table_roofline_columns_follow_the_kernels_work() -> None:
    assert PERFLINT_COLUMNS[-4:] == ("tflops", "gbps", "pct_of_peak", "bound")
    t = load_trace(str(FIXTURES / "gpu" / "gemm_fp16_aligned.pt.trace.json.gz"))  # an H100 SXM
    rows = list(kernel_table(t))
    assert rows and all(set(PERFLINT_COLUMNS) <= set(r) for r in rows)
    gemms = [r for r in rows if r["category"] == "gemm" and r["flops"]]
    assert gemms
    for r in gemms:
        assert r["tflops"] == pytest.approx(r["flops"] / (r["sil"] * 1e-9) / 1e12, rel=1e-3)
        assert r["bound"] in ("compute", "memory", "latency") and 0 < r["pct_of_peak"] <= 100
    # Rows without a FLOP or byte count have no roofline.
    assert all(r["tflops"] is None for r in rows if r["flops"] is None)
