"""Every Kineto-family trace in ../shared/traces loads, and its tables agree with an
independent count made here with plain `json`/`gzip` (issue 2, point 2)."""

from __future__ import annotations

import functools
import gzip
import json
import math
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perflint.errors import InputError
from perflint.graph.load import load_trace
from perflint.model import GPU_SYNC, KERNEL, MEMCPY, MEMSET, OP_ANNOTATION, OP_CPU, Trace
from perflint.readers import discover
from tests.conftest import shared_trace

# Files under ../shared/traces that are *not* Kineto / Chrome traces of PyTorch's profiler.
NOT_KINETO = {
    "hta/execution_trace/benchmark_simple_add_et.json.gz",  # PyTorch execution trace (ET) graph
    "tracelens/rocprof/908_results.json.gz",  # rocprofiler-sdk JSON
}
NOT_KINETO_PREFIXES = ("mindinsight/",)  # MindSpore / Ascend profiler output

# The corpus as listed in ../shared/traces/MANIFEST.md (kept explicit so that a missing corpus
# file is a failure, not a silently shorter parametrization).
KINETO_FILES = [
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/call_stack/backward_thread.json",
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
    "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
    "hta/df_index_resolver/df_index_resolver.json.gz",
    "hta/distributed_info_unavailable/distributed_info_not_found.json.gz",
    "hta/execution_trace/benchmark_simple_add_trace.json.gz",
    "hta/mixed_files/rank_non_gpu.json.gz",
    "hta/mtia_trace_single_rank/mtia_rank_0.json.gz",
    "hta/negative_queue_length_values_check/rank0.json.gz",
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/trace_compare/base/base.json.gz",
    "hta/trace_compare/test/test.json.gz",
    "hta/trace_file_list/inference_rank_1.json.gz",
    "hta/trace_filter/sampled_rank-0.json.gz",
    "hta/trace_filter/sampled_rank-1.json.gz",
    "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "kineto/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz",
    "kineto/test/gpu_metrics_expected.json",
    "kineto/test/gpu_metrics_input.json",
    "param/resnet_kineto.json.gz",
    "tracelens/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens/traces/inference/vllm_decode_full/graph_execution.json.gz",
    "tracelens/traces/mi210/gpu_only_trace/gpu_only_trace.json.gz",
    "tracelens/traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "tracelens/traces/mi300/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens/traces/mi300/resnet_act_checkpoint.json.gz",
    "tracelens/traces/perf_model/normalization/normalization_layer_test.json.gz",
    "tracelens/traces/torch_compile_triton/trace.json.gz",
]

NON_TRACE_FILES = [
    "hta/execution_trace/benchmark_simple_add_et.json.gz",
    "tracelens/rocprof/908_results.json.gz",
    "mindinsight/profiler/gpu_timeline_display_0.json",
    "mindinsight/profiler/gpu_timeline_summary_0.json",
    "mindinsight/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC/device_0/timeline/hccl_0_2_1.json",
    "mindinsight/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC/device_0/timeline/msprof_0_2_1.json",
    "mindinsight/run_1/normal_run/profiler/timeline_display_1.json",
    "mindinsight/run_1/normal_run/profiler/step_trace_point_info.json",
]

# Category families (DESIGN §3), spelled out here independently of the reader's table.
FAMILIES = {
    "cpu_op": {"cpu_op", "Operator"},
    "user_annotation": {"user_annotation"},
    "runtime": {"cuda_runtime", "Runtime", "cuda_driver", "mtia_runtime"},
    "kernel": {"kernel", "Kernel", "mtia_ccp_events"},
    "memcpy": {"gpu_memcpy", "Memcpy"},
    "memset": {"gpu_memset", "Memset"},
    "sync": {"cuda_sync"},
    "python_function": {"python_function"},
    "cuda_profiler_range": {"cuda_profiler_range"},
}
_FAMILY_OF = {cat: fam for fam, cats in FAMILIES.items() for cat in cats}


def _raw(rel: str) -> Any:
    path = shared_trace(rel)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


@functools.lru_cache(maxsize=None)
def independent_counts(rel: str) -> dict[str, Any]:
    """Counts and duration sums per category family, kernel (ts, dur) pairs, and the top-level
    metadata, from the raw JSON. Cached: the biggest corpus files take seconds to parse."""
    doc = _raw(rel)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    counts: Counter[str] = Counter()
    dur_sum: Counter[str] = Counter()
    kernels: list[tuple[float, float]] = []
    for e in events:
        if e.get("ph") == "X":
            fam = _FAMILY_OF.get(e.get("cat"))
            if fam is not None:
                counts[fam] += 1
                dur_sum[fam] += float(e.get("dur", 0))
                if fam == "kernel":
                    kernels.append((float(e["ts"]), float(e["dur"])))
        elif e.get("ph") in ("i", "I") and e.get("name") == "[memory]":
            counts["memory"] += 1
    meta = {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {}
    info = meta.get("distributedInfo")
    return {
        "counts": counts,
        "dur": dur_sum,
        "kernels": sorted(kernels),
        "meta": meta,
        "rank": info.get("rank") if isinstance(info, dict) else None,
    }


@functools.lru_cache(maxsize=None)
def trace_of(rel: str) -> Trace:
    """perflint's reading of a corpus file, shared by the tests below (they only read it)."""
    return load_trace(shared_trace(rel))


def test_corpus_list_is_complete(traces_dir: Path) -> None:
    """Every *.json / *.json.gz in the corpus is either in KINETO_FILES or a known non-trace."""
    found = {
        str(p.relative_to(traces_dir))
        for pattern in ("**/*.json", "**/*.json.gz")
        for p in traces_dir.glob(pattern)
    }
    non = {f for f in found if f in NOT_KINETO or f.startswith(NOT_KINETO_PREFIXES)}
    assert found - non == set(KINETO_FILES)


@pytest.mark.parametrize("rel", KINETO_FILES)
def test_counts_match_independent_count(rel: str) -> None:
    exp = independent_counts(rel)
    c, d = exp["counts"], exp["dur"]
    trace = trace_of(rel)

    ops = trace.ops
    assert len(ops) == c["cpu_op"] + c["user_annotation"]
    assert int(np.sum(ops.kind == OP_CPU)) == c["cpu_op"]
    assert int(np.sum(ops.kind == OP_ANNOTATION)) == c["user_annotation"]
    assert len(trace.runtime) == c["runtime"]
    g = trace.gpu
    assert len(g) == c["kernel"] + c["memcpy"] + c["memset"] + c["sync"]
    assert int(np.sum(g.kind == KERNEL)) == c["kernel"]
    assert int(np.sum(g.kind == MEMCPY)) == c["memcpy"]
    assert int(np.sum(g.kind == MEMSET)) == c["memset"]
    assert int(np.sum(g.kind == GPU_SYNC)) == c["sync"]
    assert len(trace.pyfn) == c["python_function"]
    assert len(trace.memory) == c["memory"]
    assert len(trace.counter_ranges) == c["cuda_profiler_range"]

    # Durations are carried through exactly (sums in float64, so allow rounding only).
    assert float(ops.dur.sum()) == pytest.approx(d["cpu_op"] + d["user_annotation"], rel=1e-9, abs=1e-6)
    assert float(g.dur[g.kind == KERNEL].sum()) == pytest.approx(d["kernel"], rel=1e-9, abs=1e-6)
    assert float(trace.runtime.dur.sum()) == pytest.approx(d["runtime"], rel=1e-9, abs=1e-6)

    # Rank: distributedInfo wins; otherwise a "rank-N"/"rank_N" in the file name; otherwise None.
    if exp["rank"] is not None:
        assert trace.rank == exp["rank"]
    else:
        m = re.search(r"rank[-_]?(\d+)", os.path.basename(rel), re.IGNORECASE)
        assert trace.rank == (int(m.group(1)) if m else None)


@pytest.mark.parametrize("rel", NON_TRACE_FILES)
def test_non_kineto_files_are_rejected(rel: str) -> None:
    path = shared_trace(rel)
    with pytest.raises(InputError) as info:
        load_trace(path)
    msg = info.value.line()
    assert msg.startswith(path + ": ")
    assert re.search(r"not a (Chrome/Kineto )?trace|no PyTorch profiler events", msg), msg
    assert "\n" not in msg


def test_ns_resolution_trace_keeps_fractional_ts() -> None:
    rel = "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    exp = independent_counts(rel)
    assert exp["meta"]["displayTimeUnit"] == "ns"
    raw = exp["kernels"]
    assert sum(ts != math.floor(ts) for ts, _ in raw) > len(raw) // 2
    trace = trace_of(rel)
    k = trace.gpu.kind == KERNEL
    got = sorted(zip(trace.gpu.ts[k].tolist(), trace.gpu.dur[k].tolist()))
    assert got == raw  # bit-exact, not rounded to whole microseconds
    assert trace.rank == 0


@pytest.mark.parametrize(
    ("rel", "rank"),
    [
        ("hta/trace_filter/sampled_rank-1.json.gz", 1),
        ("hta/trace_filter/sampled_rank-0.json.gz", 0),
        ("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", 34),
        ("hta/trace_file_list/inference_rank_1.json.gz", 1),
        ("kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz", None),
        ("tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz", None),
        ("hta/distributed_info_unavailable/distributed_info_not_found.json.gz", None),
    ],
)
def test_rank(rel: str, rank: int | None) -> None:
    assert trace_of(rel).rank == rank


def test_cpu_only_rank_comes_from_distributed_info(tmp_path: Path) -> None:
    """rank-34 file: the rank is distributedInfo's, even under a name that says otherwise."""
    src = shared_trace("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    dst = tmp_path / "rank-7.pt.trace.json.gz"
    dst.write_bytes(Path(src).read_bytes())
    trace = load_trace(str(dst))
    assert trace.rank == 34
    assert trace.world_size == 300
    assert len(trace.gpu) == 0 and len(trace.runtime) == 0


def test_rocm_mi250_trace_loads() -> None:
    trace = trace_of("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert int(np.sum(trace.gpu.kind == KERNEL)) == 14
    dev = trace.primary_device
    assert dev is not None and dev.vendor == "amd" and dev.warp_size == 64
    # MI250 kernels carry no grid/block/occupancy args: unknown, not garbage.
    assert np.isnan(trace.gpu.occupancy).all()


def test_mtia_trace_loads() -> None:
    rel = "hta/mtia_trace_single_rank/mtia_rank_0.json.gz"
    c = independent_counts(rel)["counts"]
    trace = trace_of(rel)
    assert c["kernel"] > 0 and int(np.sum(trace.gpu.kind == KERNEL)) == c["kernel"]
    assert len(trace.runtime) == c["runtime"] > 0


def test_cupti_counter_trace() -> None:
    rel = "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"
    raw = [e for e in _raw(rel)["traceEvents"] if e.get("cat") == "cuda_profiler_range"]
    trace = load_trace(shared_trace(rel))
    assert len(trace.counter_ranges) == len(raw) == 77
    assert len(trace.gpu) == 0
    for cr, ev in zip(trace.counter_ranges, raw):
        assert trace.s(cr.name) == ev["name"]
        assert cr.ts == ev["ts"] and cr.dur == ev["dur"]
        assert cr.counters == {k: float(v) for k, v in ev["args"].items()}
        assert cr.counters and all(k.startswith("smsp__sass_thread_inst_executed_op_") for k in cr.counters)


@pytest.mark.parametrize(
    ("rel", "name", "sm_count", "cc", "vendor", "warp"),
    [
        ("hta/df_index_resolver/df_index_resolver.json.gz", "Tesla V100-SXM2-32GB", 80, (7, 0), "nvidia", 32),
        ("tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz", "NVIDIA H100 80GB HBM3", 132, (9, 0), "nvidia", 32),
        ("tracelens/traces/mi300/resnet_act_checkpoint.json.gz", "AMD Instinct MI300X", 304, (9, 4), "amd", 64),
        # old Kineto: "computeProperties" with major/minor/multiProcessorCount
        ("kineto/test/gpu_metrics_input.json", "Tesla V100-DGXS-32GB", 80, (7, 0), "nvidia", 32),
        # vLLM on ROCm: empty device name
        ("tracelens/traces/inference/vllm_decode_full/graph_execution.json.gz", "", 304, (9, 4), "amd", 64),
    ],
)
def test_device_properties(rel: str, name: str, sm_count: int, cc: tuple[int, int], vendor: str, warp: int) -> None:
    meta = independent_counts(rel)["meta"]
    props = meta.get("deviceProperties") or meta.get("computeProperties")
    trace = trace_of(rel)
    assert set(trace.devices) == {p["id"] for p in props}
    dev = trace.devices[0]
    assert dev.name == name
    assert dev.sm_count == sm_count
    assert dev.compute_capability == cc
    assert dev.vendor == vendor
    assert dev.warp_size == warp
    p0 = props[0]
    assert dev.total_memory == p0["totalGlobalMem"]
    assert dev.max_threads_per_sm == p0.get("maxThreadsPerMultiprocessor", p0.get("maxThreadsPerMultiProcessor"))


def test_old_compute_properties_register_limits() -> None:
    trace = trace_of("kineto/test/gpu_metrics_input.json")
    dev = trace.devices[0]
    assert dev.regs_per_sm == 65536
    assert dev.shared_mem_per_sm == 98304
    assert dev.cc_str == "7.0"


def _copy(src: str, dst: Path) -> None:
    dst.write_bytes(Path(src).read_bytes())


def test_discover_rank_directory_picks_only_rank_files(tmp_path: Path) -> None:
    r0 = shared_trace("hta/trace_filter/sampled_rank-0.json.gz")
    r1 = shared_trace("hta/trace_filter/sampled_rank-1.json.gz")
    _copy(r0, tmp_path / "host_0.1700000000.pt.trace.json.gz")
    (tmp_path / "host_1.1700000001.pt.trace.json.gz").symlink_to(r1)
    (tmp_path / "notes.json").write_text('{"comment": "not a trace"}')
    files, errors, skipped = discover([str(tmp_path)])
    assert errors == []
    assert [(os.path.basename(p), "traceEvents" in why) for p, why in skipped] == [("notes.json", True)]
    assert [os.path.basename(f) for f in files] == [
        "host_0.1700000000.pt.trace.json.gz",
        "host_1.1700000001.pt.trace.json.gz",
    ]
    assert sorted(load_trace(f).rank for f in files) == [0, 1]


def test_discover_directory_of_other_json(tmp_path: Path) -> None:
    _copy(shared_trace("hta/trace_compare/base/base.json.gz"), tmp_path / "a.json.gz")
    _copy(shared_trace("kineto/test/gpu_metrics_input.json"), tmp_path / "b.json")
    (tmp_path / "README.txt").write_text("hello")
    (tmp_path / ".hidden.json").write_text("{}")
    files, errors, skipped = discover([str(tmp_path)])
    assert errors == [] and [os.path.basename(p) for p, _ in skipped] == ["README.txt"]
    assert [os.path.basename(f) for f in files] == ["a.json.gz", "b.json"]


def test_discover_empty_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    files, errors, skipped = discover([str(tmp_path)])
    assert files == [] and len(skipped) == 1
    assert len(errors) == 1 and errors[0].source == str(tmp_path)


def test_bare_event_list(tmp_path: Path) -> None:
    """A trace given as a bare JSON list of events (no traceEvents wrapper) loads the same."""
    rel = "hta/trace_compare/base/base.json.gz"
    doc = _raw(rel)
    p = tmp_path / "bare.json"
    p.write_text(json.dumps(doc["traceEvents"]))
    bare = load_trace(str(p))
    full = load_trace(shared_trace(rel))
    assert len(bare.ops) == len(full.ops) and len(bare.gpu) == len(full.gpu)
    assert np.array_equal(bare.gpu.ts, full.gpu.ts)
