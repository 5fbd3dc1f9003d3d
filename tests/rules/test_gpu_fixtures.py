"""Real H100 traces (fixtures/gpu, see its README): the kernel-name table, the rules and the reader
against what cuBLAS, cuDNN, Triton and Kineto actually wrote on Hopper."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from perflint.graph.load import load_trace
from perflint.metrics.kernel_classes import kernel_category, uses_tensor_cores
from perflint.metrics.shapes import alignment, op_shape
from perflint.metrics.temporal import temporal_breakdown
from perflint.model import KERNEL
from tests.conftest import FIXTURES
from tests.rules.trace_json import raw_step_busy

GPU = FIXTURES / "gpu"
NAMES = sorted(p.name.removesuffix(".pt.trace.json.gz") for p in GPU.glob("*.pt.trace.json.gz"))


def _path(name: str) -> str:
    return str(GPU / f"{name}.pt.trace.json.gz")


def _raw(name: str) -> list[dict[str, Any]]:
    with gzip.open(_path(name)) as f:
        return json.load(f)["traceEvents"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("gpu") / "report.json"
    rc = main(["check", *(_path(n) for n in NAMES), "--json", str(out), "--format", "text",
               "--output", str(out.with_suffix(".txt")), "--fail-on", "never", "--jobs", "1"])
    assert rc == 0
    doc = json.loads(out.read_text())
    return {Path(t["path"]).name.removesuffix(".pt.trace.json.gz"): t for t in doc["traces"]}


def test_all_twenty_scenarios_are_there() -> None:
    assert len(NAMES) == 20, NAMES


# (scenario, substring of a kernel that scenario really launched, category, Tensor Cores)
KERNELS = [
    ("gemm_fp16_aligned", "nvjet_sm90_hsh_", "gemm", True),
    ("gemm_fp32", "sm80_xmma_gemm_f32f32_f32f32_f32_", "gemm", False),
    ("gemm_tf32", "sm90_xmma_gemm_f32f32_tf32f32_", "gemm", True),
    ("gemm_tf32", "cutlass_80_tensorop_s1688gemm", "gemm", True),
    ("gemm_fp16_unaligned", "cutlass_75_tensorop_f16_s1688gemm", "gemm", True),
    ("gemv_fp16", "cublasLt::splitKreduce_kernel", "gemm", None),
    ("depthwise_conv_fp16", "conv2d_c1_k1_nchw_shmem_tiling", "conv", False),
    ("depthwise_conv_fp16", "wgrad2d_shmem_tiling", "conv", False),
    ("conv_fp16", "sm90_xmma_fprop_implicit_gemm_f16f16", "conv", True),
    ("conv_fp16", "init_device_workspace_kernel", "conv", None),
    ("sdpa_bf16", "sdpa_sm90_flash_fprop_wgmma", "attention", True),
    ("sdpa_bf16", "sdpa_sm90_flash_bprop_wgmma", "attention", True),
    ("sdpa_bf16", "cudnn::fusion::convert_dq_to_16bits", "elementwise", None),
    ("compiled_mlp", "triton_poi_fused_gelu_0", "triton_pointwise", None),
    ("transformer_bf16", "multi_tensor_apply_kernel", "elementwise", None),
    ("transformer_bf16", "GammaBetaBackwardCUDAKernel", "normalization", None),
    ("sdpa_bf16", "compute_dot_do_o_specialized", "attention", None),
    ("regress_head", "cutlass_80_tensorop_bf16_s16816gemm_bf16", "gemm", True),
]


@pytest.mark.parametrize(("scenario", "part", "category", "tc"), KERNELS, ids=[k[1] for k in KERNELS])
def test_kernel_table_on_hopper_names(scenario: str, part: str, category: str, tc: bool | None) -> None:
    names = {e["name"] for e in _raw(scenario) if e.get("cat") == "kernel" and part in e["name"]}
    assert names, f"{scenario} has no kernel named like {part!r}"
    for name in names:
        assert (kernel_category(name), uses_tensor_cores(name)) == (category, tc), name


def _findings(report: dict[str, dict[str, Any]], scenario: str, code: str) -> list[dict[str, Any]]:
    return [f for f in report[scenario]["findings"] if f["code"] == code]


def _status(report: dict[str, dict[str, Any]], scenario: str, code: str) -> dict[str, Any]:
    return next(s for s in report[scenario]["statuses"] if s["code"] == code)


# (scenario, rule, whether it must flag the trace)
VERDICTS = [
    ("gemm_fp16_aligned", "TC001", False),
    ("gemm_fp16_aligned", "DIM001", False),
    ("gemm_fp16_unaligned", "DIM001", True),
    ("gemm_fp16_unaligned", "TC001", False),
    ("gemm_fp32", "TC002", True),
    ("gemm_tf32", "TC002", False),
    ("gemv_fp16", "TC001", False),
    ("depthwise_conv_fp16", "TC001", True),
    ("depthwise_conv_fp16", "DIM001", False),
    ("conv_fp16", "LAYOUT001", True),
    ("sdpa_bf16", "TC001", False),
    ("launch_bound", "LAUNCH001", True),
    ("sync_item", "SYNC001", True),
    ("memcpy_pageable", "MEM001", True),
    ("alloc_churn", "MEM003", True),
    ("dataloader", "DATA001", True),
]


@pytest.mark.parametrize(("scenario", "code", "fires"), VERDICTS, ids=[f"{s}-{c}" for s, c, _ in VERDICTS])
def test_rule_verdicts_on_h100_traces(report: dict[str, dict[str, Any]], scenario: str, code: str, fires: bool) -> None:
    found = _findings(report, scenario, code)
    assert bool(found) == fires, [f["message"] for f in found]
    assert _status(report, scenario, code)["status"] == ("failed" if fires else "passed")


def test_tc002_names_the_simt_sgemm_kernels(report: dict[str, dict[str, Any]]) -> None:
    raw = {e["name"] for e in _raw("gemm_fp32") if e.get("cat") == "kernel" and "_ffma_" in e["name"]}
    (f,) = _findings(report, "gemm_fp32", "TC002")  # one finding for the trace's fp32 GEMMs
    flagged = {i["kernel"] for i in f["evidence"]["top_items"]}
    assert flagged and flagged <= raw


def test_tc001_flags_the_depthwise_simt_kernels(report: dict[str, dict[str, Any]]) -> None:
    (f,) = _findings(report, "depthwise_conv_fp16", "TC001")  # one finding: fp16 conv work
    flagged = {i["kernel"] for i in f["evidence"]["top_items"]}
    assert flagged == {"conv2d_c1_k1_nchw_shmem_tiling", "wgrad2d_shmem_tiling"}
    # A fifth of the GPU time, but the step is host-bound: the step model finds it waits on none
    # of it, so the finding is info and says so.
    assert f["evidence"]["gpu_time_saved_us"] > 0 and f["impact_us"] < 0.01 * f["evidence"]["gpu_time_saved_us"]
    assert f["severity"] == "info" and "the step waits on" in f["evidence"]["step_model_note"]


def test_dim001_names_the_odd_dims(report: dict[str, dict[str, Any]]) -> None:
    odd = {1019, 2043, 1021, 509}
    (f,) = _findings(report, "gemm_fp16_unaligned", "DIM001")
    for item in f["evidence"]["top_items"]:
        dims = {int(d.split("=")[1]) for d in item["misaligned_dims"]}
        assert dims and dims <= odd, f["message"]


def test_layout001_flags_copies_inside_convolutions(report: dict[str, dict[str, Any]]) -> None:
    (f,) = _findings(report, "conv_fp16", "LAYOUT001")  # one finding for the trace's conversions
    items = f["evidence"]["top_items"]
    assert {i["op"] for i in items} == {"aten::copy_"}
    stacks = [i["op_stack"] for i in items]
    assert any("aten::_convolution" in s for s in stacks)
    assert any("aten::convolution_backward" in s for s in stacks)
    # The output's dtype cast (aten::to outside any convolution) is not a layout conversion.
    assert all("aten::_convolution" in s or "aten::convolution_backward" in s for s in stacks)


def test_depthwise_conv_needs_no_channel_padding() -> None:
    dims = [[32, 256, 56, 56], [256, 1, 3, 3], [256]]  # what depthwise_conv_fp16 recorded
    s = op_shape("aten::_convolution", dims)
    assert s is not None and s.conv is not None and s.conv["groups"] == 256
    a = alignment("aten::_convolution", dims, s, "fp16")
    assert a is not None and a.misaligned == [] and a.padded_dims == dims
    # A grouped (not depthwise) convolution is checked per group, and padded back to totals.
    g = [[32, 96, 56, 56], [96, 12, 3, 3], [96]]
    s = op_shape("aten::_convolution", g)
    a = alignment("aten::_convolution", g, s, "fp16")
    assert a is not None and a.misaligned == ["C/g=12", "K/g=12"]
    assert a.padded_dims == [[32, 128, 56, 56], [128, 16, 3, 3], [128]]


def test_tensor_core_share_follows_precision() -> None:
    share = {}
    for name in ("gemm_fp32", "gemm_tf32", "gemm_fp16_aligned"):
        doc_t = load_trace(_path(name))
        g = doc_t.gpu
        kern = g.kind == KERNEL
        names = [doc_t.s(int(n)) for n in g.name[kern]]
        tc_time = sum(float(d) for n, d in zip(names, g.dur[kern]) if uses_tensor_cores(n))
        share[name] = tc_time / float(g.dur[kern].sum())
    assert share["gemm_fp32"] == 0.0
    assert share["gemm_tf32"] > 0.3 and share["gemm_fp16_aligned"] > 0.2


def test_untimed_records_are_dropped_with_a_warning() -> None:
    raw = _raw("cupti_metrics")
    untimed = [e for e in raw if e.get("cat") == "kernel" and e["ts"] == 0 and e["dur"] == 0]
    kernels = [e for e in raw if e.get("cat") == "kernel"]
    assert len(untimed) == 4
    t = load_trace(_path("cupti_metrics"))
    assert int((t.gpu.kind == KERNEL).sum()) == len(kernels) - len(untimed)
    assert float(t.gpu.ts.min()) > 0 and float(t.runtime.ts.min()) > 0
    assert any("4 GPU activities without timestamps" in w for w in t.warnings)
    idle = temporal_breakdown(t)["idle_pct"]
    assert idle is not None and idle < 95.0  # 100.0 with the untimed kernels at ts = 0


def test_counters_asked_of_a_stock_wheel_leave_tc003_skipped(report: dict[str, dict[str, Any]]) -> None:
    assert not [e for e in _raw("cupti_metrics") if e.get("cat") == "cuda_profiler_range"]
    st = _status(report, "cupti_metrics", "TC003")
    assert st["status"] == "skipped" and "no CUPTI profiler-mode counter ranges" in st["reason"]


def test_one_rank_nccl_group(report: dict[str, dict[str, Any]]) -> None:
    t = report["nccl_one_rank"]
    assert t["rank"] == 0
    assert any(e.get("name") == "record_param_comms" for e in _raw("nccl_one_rank"))
    st = _status(report, "nccl_one_rank", "COMM001")
    assert st["status"] == "skipped" and "no communication" in st["reason"]


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def _step_spans(raw: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(start, end) of each ProfilerStep annotation in the raw JSON, in time order."""
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in raw
                  if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))


def _analysis_step_durations(name: str) -> list[float]:
    """Step times from the raw JSON, first and last left out (perflint's default): each
    ProfilerStep's span extended to the end of the GPU work launched in it (by the launch call's
    correlation id), starting no earlier than the previous step's end."""
    raw = _raw(name)
    spans = _step_spans(raw)
    launch = {e["args"]["correlation"]: e["ts"] for e in raw if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    gpu_end = [e["ts"] + e["dur"] for e in raw if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    gpu_launch = [launch.get(e["args"].get("correlation")) for e in raw if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    out, prev = [], spans[0][0]
    for start, end in spans:
        mine = [g for g, at in zip(gpu_end, gpu_launch) if at is not None and start <= at <= end]
        lo, hi = max(prev, start), max([end, *mine])
        out.append(hi - lo)
        prev = hi
    return out[1:-1]


def test_regression_pair_gates_the_change(tmp_path: Path) -> None:
    """regress_head is regress_base after hidden sizes 4096 -> 4100/4090 and a logged loss.item():
    cuBLAS leaves nvjet for cutlass sm80 align2 kernels, GEMM time triples, the step slows down."""
    out = tmp_path / "reg.json"
    rc = main(["check", _path("regress_head"), "--baseline", _path("regress_base"), "--json", str(out),
               "--format", "text", "--output", str(tmp_path / "reg.txt"), "--jobs", "1"])
    assert rc == 1  # REG001 is an error: the CI gate fails
    t = json.loads(out.read_text())["traces"][0]
    by = {f["code"]: f for f in t["findings"]}
    base, cur = _analysis_step_durations("regress_base"), _analysis_step_durations("regress_head")
    assert len(base) == len(cur) == 8
    ev = by["REG001"]["evidence"]
    assert ev["base_median"] == pytest.approx(_median(base)) and ev["cur_median"] == pytest.approx(_median(cur))
    assert ev["worse_pct"] > 100
    assert by["REG003"]["evidence"]["key"] == "gemm" and by["REG003"]["evidence"]["worse_pct"] > 100
    assert "SYNC001" in by and "DIM001" in by


def test_a_trace_is_no_regression_of_itself(tmp_path: Path) -> None:
    out = tmp_path / "self.json"
    rc = main(["check", _path("regress_base"), "--baseline", _path("regress_base"), "--select", "REG",
               "--json", str(out), "--format", "text", "--output", str(tmp_path / "self.txt"), "--jobs", "1"])
    assert rc == 0
    t = json.loads(out.read_text())["traces"][0]
    assert t["findings"] == []
    assert {s["status"] for s in t["statuses"] if s["code"] != "REG008"} == {"passed"}


def test_cpu_side_item_is_not_a_host_sync(report: dict[str, dict[str, Any]]) -> None:
    """AdamW calls .item() on its CPU step counters every step: no runtime call inside, no sync."""
    raw = _raw("regress_base")
    items = [e for e in raw if e.get("cat") == "cpu_op" and e["name"] == "aten::item"]
    assert len(items) >= 8
    assert _findings(report, "regress_base", "SYNC001") == []
    head = _findings(report, "regress_head", "SYNC001")
    assert [f["evidence"]["count"] for f in head] == [8]  # the logged loss, once per analysis step


@pytest.mark.parametrize("name", NAMES)
def test_reader_keeps_every_timed_gpu_activity(name: str) -> None:
    raw = _raw(name)
    want = sum(1 for e in raw if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and not (e["ts"] == 0 and e["dur"] == 0))
    t = load_trace(_path(name))
    assert len(t.gpu) == want


def test_dim001_names_the_narrow_kernel_odd_dims_fall_back_to(report: dict[str, dict[str, Any]]) -> None:
    found = _findings(report, "regress_head", "DIM001")
    raw = {e["name"] for e in _raw("regress_head") if e.get("cat") == "kernel" and "_align2" in e["name"]}
    noted = [f for f in found if "(2-element loads instead of 8)" in f["message"]]
    assert noted and raw
    for f in noted:
        assert f["evidence"]["kernel_align"] == 2 and f["evidence"]["kernel"] in raw
    # Aligned shapes run kernels without an alignment in their name: no note.
    assert all(f["evidence"]["kernel_align"] is None for f in _findings(report, "gemm_fp16_aligned", "DIM001"))


def _innermost_user_frame(raw: list[dict[str, Any]], tid: Any, ts: float) -> str:
    frames = [e for e in raw if e.get("cat") == "python_function" and e["tid"] == tid
              and e["ts"] <= ts <= e["ts"] + e["dur"] and e["name"].startswith("record_gpu_traces.py(")]
    inner = max(frames, key=lambda e: e["ts"])
    path, line = inner["name"].split(":")[0].rstrip(")").split("(")
    return f"{path}:{line}"


def test_syncs_outside_ops_get_the_users_line(report: dict[str, dict[str, Any]]) -> None:
    """torch.cuda.synchronize() in the step has no op around it but the ProfilerStep annotation:
    its source comes from the python_function frames."""
    raw = _raw("sync_item")
    lo, hi = _step_spans(raw)[1]
    call = next(e for e in raw if e.get("name") == "cudaDeviceSynchronize" and lo <= e["ts"] <= hi)
    # Three 5 µs waits cost the GPU too little idle time for a finding: read the fact row.
    from perflint.facts import Context, rows
    from perflint.facts.builtin import load_all

    load_all()
    ctx = Context(load_trace(_path("sync_item")))
    found = [r for r in rows(ctx, "sync_groups") if r["kind"] == "cudaDeviceSynchronize"]
    assert len(found) == 1
    assert found[0]["source"] == _innermost_user_frame(raw, call["tid"], call["ts"])


def test_allocator_calls_under_empty_cache_get_the_users_line(report: dict[str, dict[str, Any]]) -> None:
    raw = _raw("alloc_churn")
    lo, hi = _step_spans(raw)[1]
    call = next(e for e in raw if e.get("name") == "cudaFree" and lo <= e["ts"] <= hi)
    frees = [f for f in _findings(report, "alloc_churn", "MEM003") if f["evidence"]["api"] == "cudaFree"]
    assert len(frees) == 1 and frees[0]["op"] is None
    assert frees[0]["source"] == _innermost_user_frame(raw, call["tid"], call["ts"])


def test_a_saturated_gpu_is_not_reported_idle(report: dict[str, dict[str, Any]]) -> None:
    """clean_bf16: GPU-bound bf16 training, the CPU runs a step ahead. Each step's CPU span starts
    while the GPU still runs the previous step; counting that as idle said 60% busy (UTIL002)."""
    t = report["clean_bf16"]
    assert [f["code"] for f in t["findings"] if f["severity"] in ("error", "warning")] == []
    raw = raw_step_busy(_path("clean_bf16"))
    assert len(raw) == 3 and min(raw) > 90.0
    summary = next(s for s in t["statuses"] if s["code"] == "UTIL002")
    assert summary["status"] == "passed"
    doc = load_trace(_path("clean_bf16"))
    assert temporal_breakdown(doc)["idle_pct"] < 5.0
    from perflint import facts
    from perflint.facts.builtin import load_all

    load_all()
    mine = [r["gpu_busy_pct"] for r in facts.rows(facts.Context(doc), "steps")]
    assert mine == pytest.approx(raw, abs=0.05)
