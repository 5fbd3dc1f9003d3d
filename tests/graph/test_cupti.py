"""CUPTI profiler-mode traces: counters attached to kernel launches in order, with op stacks
(HTA's get_cupti_counter_data_with_operators), checked against an independent raw-JSON pass."""

from __future__ import annotations

import gzip
import json
from collections import Counter

from perflint.graph.build import op_stack
from perflint.graph.load import load_trace
from tests.conftest import shared_trace

CUPTI = "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"


def _raw_top_ops(path: str) -> tuple[list[str], list[dict[str, float]]]:
    ev = json.load(gzip.open(path))["traceEvents"]
    ranges = sorted((e for e in ev if e.get("cat") == "cuda_profiler_range"), key=lambda e: e["ts"])
    launches = sorted(
        (e for e in ev if e.get("cat") == "cuda_runtime" and e["name"].startswith("cudaLaunchKernel")), key=lambda e: e["ts"]
    )
    ops = [e for e in ev if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    assert len(ranges) == len(launches)
    tops = []
    for lau in launches:
        enclosing = [o for o in ops if o["tid"] == lau["tid"] and o["ts"] <= lau["ts"] <= o["ts"] + o["dur"]]
        outer = min(enclosing, key=lambda o: (o["ts"], -o["dur"]))
        tops.append(outer["name"])
    return tops, [r["args"] for r in ranges]


def test_counter_ranges_get_op_stacks_like_hta() -> None:
    path = shared_trace(CUPTI)
    trace = load_trace(path)
    raw_tops, raw_counters = _raw_top_ops(path)
    assert len(trace.counter_ranges) == len(raw_tops) == 77
    mine = []
    for cr in sorted(trace.counter_ranges, key=lambda c: c.ts):
        assert cr.launch >= 0
        stack = op_stack(trace, int(trace.runtime.op[cr.launch]))
        mine.append(trace.s(int(trace.ops.name[stack[0]])))
    assert mine == raw_tops
    assert Counter(mine)["aten::conv2d"] == 38
    ffma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
    assert sum(c.counters[ffma] for c in trace.counter_ranges) == sum(r[ffma] for r in raw_counters)


def test_tc003_is_skipped_without_tensor_pipe_counters(capsys) -> None:
    """The HTA sample records only SASS FP counters: TC003 says so instead of passing."""
    from perflint.cli import main

    main(["check", shared_trace(CUPTI), "--select", "TC", "--format", "json", "--fail-on", "never", "--jobs", "1"])
    doc = json.loads(capsys.readouterr().out)
    st = {s["code"]: s for s in doc["traces"][0]["statuses"]}
    assert st["TC003"]["status"] == "skipped" and "tensor-pipe counters" in st["TC003"]["reason"]
    assert st["TC001"]["status"] == "skipped"  # profiler-mode traces have no kernel events
