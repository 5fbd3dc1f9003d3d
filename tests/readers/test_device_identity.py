"""Which vendor made a device (read from what the trace records, "unknown" when it does not say),
and which device properties the kernels' devices take when the trace numbers them differently."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from perflint.graph.load import load_trace
from perflint.readers.kineto import parse_devices
from tests.builder import TraceBuilder
from tests.conftest import shared_trace

# deviceProperties entries as each runtime's Kineto writes them (CUPTI: regsPerMultiprocessor,
# sharedMemPerBlockOptin, sharedMemPerMultiprocessor; roctracer: maxSharedMemoryPerMultiProcessor).
_CUDA = {"totalGlobalMem": 85_018_279_936, "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024,
         "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
         "numSms": 132, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472}
_ROCM = {"totalGlobalMem": 206_141_652_992, "computeMajor": 9, "computeMinor": 4, "maxThreadsPerBlock": 1024,
         "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 64, "sharedMemPerBlock": 65536,
         "numSms": 304, "maxSharedMemoryPerMultiProcessor": 65536}
# An accelerator that is neither: a chip codename, a version in computeMajor, no runtime's own keys.
_OTHER = {"totalGlobalMem": 137_438_953_472, "computeMajor": 2, "computeMinor": 0, "numSms": 64}


@pytest.mark.parametrize(
    ("entry", "vendor"),
    [
        ({"name": "NVIDIA H100 80GB HBM3", **_CUDA}, "nvidia"),
        ({"name": "Tesla V100-SXM2-32GB", **_CUDA}, "nvidia"),
        ({"name": "NVIDIA GeForce RTX 4090"}, "nvidia"),
        ({"name": "A100-SXM4-80GB"}, "nvidia"),  # a part named without the brand
        ({"name": "", **_CUDA}, "nvidia"),  # no name, but the keys only CUDA's Kineto writes
        ({"name": "AMD Instinct MI300X", **_ROCM}, "amd"),
        ({"name": "AMD Radeon Graphics", **_ROCM}, "amd"),
        ({"name": "", **_ROCM}, "amd"),  # vLLM on ROCm: an empty name, wavefronts of 64
        ({"name": "gfx942", "computeMajor": 9, "computeMinor": 4}, "amd"),
        ({"name": "", "computeMajor": 9, "computeMinor": 4, "gcnArchName": "gfx942:sramecc+:xnack-"}, "amd"),
        ({"name": "MTIA v2", **_OTHER}, "mtia"),
        ({"name": "Artemis", **_OTHER}, "unknown"),  # a codename: no vendor is guessed
        ({"name": "", **_OTHER}, "unknown"),
        ({"name": "Freya"}, "unknown"),
    ],
)
def test_vendor_is_what_the_entry_says(entry: dict[str, Any], vendor: str) -> None:
    (dev,) = parse_devices([{"id": 0, **entry}]).values()
    assert dev.vendor == vendor


def test_mtia_trace_device_is_mtia_without_invented_properties() -> None:
    rel = "hta/mtia_trace_single_rank/mtia_rank_0.json.gz"
    with gzip.open(shared_trace(rel)) as fh:
        doc = json.load(fh)
    assert doc["deviceProperties"] == [] and doc["distributedInfo"]["backend"].startswith("mtia:")
    trace = load_trace(shared_trace(rel))
    dev = trace.primary_device
    assert trace.devices == {}  # nothing the trace does not record
    assert dev is not None and dev.vendor == "mtia" and dev.sm_count is None


def test_real_traces_keep_their_vendor() -> None:
    for rel, vendor in (("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", "amd"),
                        ("tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz", "nvidia"),
                        ("kineto/test/gpu_metrics_input.json", "nvidia"),
                        ("tracelens/traces/inference/vllm_decode_full/graph_execution.json.gz", "amd")):
        assert {d.vendor for d in load_trace(shared_trace(rel)).devices.values()} == {vendor}, rel


def test_one_listed_device_is_the_kernels_device_on_a_real_trace() -> None:
    """TraceLens's MI300X VF run lists device 0 while its kernels record device 2 (ROCm numbers the
    visible device differently): device 2 is that device, and a warning says so."""
    rel = "tracelens/traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    with gzip.open(shared_trace(rel)) as fh:
        doc = json.load(fh)
    assert [p["id"] for p in doc["deviceProperties"]] == [0]
    assert {e["args"]["device"] for e in doc["traceEvents"] if e.get("cat") == "kernel"} == {2}
    trace = load_trace(shared_trace(rel))
    dev = trace.primary_device
    assert dev is not None and (dev.id, dev.name, dev.sm_count, dev.vendor) == (2, "AMD Instinct MI300X VF", 304, "amd")
    assert any("device 2" in w and "deviceProperties' device 0" in w for w in trace.warnings)


def _mi300x(tmp_path: Path, entries: list[dict[str, Any]], device: int = 6) -> str:
    """An MI300X run whose deviceProperties lists `entries` while its kernels run on `device`: a
    Tensile GEMM of 112 blocks, too few for 304 CUs, in four steps."""
    b = TraceBuilder(device="AMD Instinct MI300X", sm_count=304, cc=(9, 4), total_memory=206_141_652_992, warp_size=64)
    b.meta["deviceProperties"] = entries
    for n in range(1, 5):
        s = (n - 1) * 1000.0
        b.step(n, s, 1000)
        b.op("aten::mm", s + 5, 10, dims=[[8192, 4096], [4096, 4096]], types=["c10::BFloat16", "c10::BFloat16"])
        b.kernel("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1", s + 20, 600, launch_ts=s + 8,
                 grid=(112, 1, 1), block=(256, 1, 1), blocks_per_sm=None, occupancy=None, runtime="hipLaunchKernel",
                 device=device)
        b.wait_for_gpu(s + 30, s + 640)
    return b.write(tmp_path / "mi300x.json")


def _report(path: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["check", path, "--select", "OCC002", "--format", "json", "--fail-on", "never"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["traces"]
    return t  # type: ignore[no-any-return]


def test_kernels_on_an_unlisted_device_take_the_one_part_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """deviceProperties lists four MI300X (ids 0-3), the kernels ran on device 6: the same part,
    so the occupancy rules run with its 304 CUs."""
    path = _mi300x(tmp_path, [{"id": i, "name": "AMD Instinct MI300X", **_ROCM} for i in range(4)])
    trace = load_trace(path)
    dev = trace.primary_device
    assert dev is not None and (dev.id, dev.sm_count, dev.vendor, dev.warp_size) == (6, 304, "amd", 64)
    assert sorted(trace.devices) == [0, 1, 2, 3]  # what the trace lists, unchanged
    (note,) = [w for w in trace.warnings if "device 6" in w]
    assert "devices 0-3" in note and "AMD Instinct MI300X" in note and "takes their properties" in note
    t = _report(path, capsys)
    assert t["device"]["sm_count"] == 304
    (status,) = [s for s in t["statuses"] if s["code"] == "OCC002"]
    assert status["status"] == "failed" and [f["code"] for f in t["findings"]] == ["OCC002"]


def test_kernels_on_an_unlisted_device_among_different_parts_stay_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """When the listed devices differ, which one ran the kernels cannot be told: no properties."""
    entries = [{"id": 0, "name": "AMD Instinct MI300X", **_ROCM}, {"id": 1, "name": "AMD Instinct MI300X", **_ROCM},
               {"id": 2, "name": "AMD Instinct MI210", **_ROCM, "numSms": 104, "totalGlobalMem": 68_702_699_520}]
    path = _mi300x(tmp_path, entries)
    trace = load_trace(path)
    dev = trace.primary_device
    assert dev is not None and (dev.id, dev.sm_count, dev.name) == (6, None, "")
    (note,) = [w for w in trace.warnings if "device 6" in w]
    assert "differ" in note and "unknown" in note
    t = _report(path, capsys)
    (status,) = [s for s in t["statuses"] if s["code"] == "OCC002"]
    assert status["status"] == "skipped" and t["findings"] == []


def test_listed_devices_of_one_part_may_differ_slightly_in_memory(tmp_path: Path) -> None:
    """Drivers reserve a few MB more on some devices of one machine (the V100s of Kineto's own
    sample differ by 3 MB): still one part."""
    entries = [{"id": i, "name": "AMD Instinct MI300X", **_ROCM, "totalGlobalMem": 206_141_652_992 - i * 3_276_800} for i in range(4)]
    dev = load_trace(_mi300x(tmp_path, entries)).primary_device
    assert dev is not None and dev.sm_count == 304
