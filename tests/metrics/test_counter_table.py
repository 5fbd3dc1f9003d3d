"""`perflint kernels` on CUPTI counter traces: one row per measured kernel with its counters by
metric name, op stack and counter-based FLOPs, checked against the raw JSON and against HTA's own
get_cupti_counter_data_with_operators where HTA is installed."""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import os

import pytest

from perflint.cli import main
from perflint.graph.load import load_trace
from perflint.metrics.counter_listing import counter_flops, counter_rows
from tests.conftest import shared_trace
from tests.graph.test_cupti import CUPTI, _raw_top_ops

FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"


def _hand_flops(args: dict[str, float]) -> float:
    """2 x FMA + ADD + MUL over d, f, h, written out from the counter names."""
    total = 0.0
    for k, v in args.items():
        if k.startswith("smsp__sass_thread_inst_executed_op_") and k.endswith("_pred_on.sum"):
            op = k[len("smsp__sass_thread_inst_executed_op_") : -len("_pred_on.sum")]
            assert op[0] in "dfh" and op[1:] in ("fma", "add", "mul"), k
            total += (2 if op[1:] == "fma" else 1) * v
    return total


def test_counter_rows_equal_the_raw_json() -> None:
    path = shared_trace(CUPTI)
    rows = counter_rows(load_trace(path))
    tops, raw = _raw_top_ops(path)
    assert len(rows) == len(raw) == 77
    for row, top, args in zip(rows, tops, raw):
        assert row["top_level_op"] == top == row["op_stack"][0]
        assert row["bottom_level_op"] == row["op_stack"][-1]
        assert {k: row[k] for k in args} == args
        assert row["flops"] == _hand_flops(args)
    assert sum(r["flops"] for r in rows) > 0
    ev = json.load(gzip.open(path))["traceEvents"]
    names = sorted((e for e in ev if e.get("cat") == "cuda_profiler_range"), key=lambda e: e["ts"])
    assert [r["name"] for r in rows] == [e["name"] for e in names]


def test_counter_flops_weights() -> None:
    got = counter_flops(
        {
            FFMA: 3.0,
            "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum": 5.0,
            "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum": 7.0,
            "sm__inst_executed_pipe_tensor.sum": 2.0,
            "sm__inst_executed_pipe_tensor_op_hmma.sum": 2.0,  # part of the total above: not added again
            "dram__bytes_read.sum": 1e9,  # not an instruction counter
        }
    )
    assert got == 6.0 + 5.0 + 7.0 + 1024.0
    assert counter_flops({"smsp__inst_executed_pipe_tensor.sum": 1.0}) == 512.0
    assert counter_flops({"dram__bytes_read.sum": 1.0}) is None


def _csv(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    assert main(argv) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_cli_shows_counters_by_metric_name(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(CUPTI)
    rows = _csv(["kernels", path, "--format", "csv"], capsys)
    assert len(rows) == 77
    assert {"flops", "top_level_op", "bottom_level_op", FFMA} <= set(rows[0])
    picked = _csv(["kernels", path, "--format", "csv", "-c", f"idx,{FFMA},flops,op_stack"], capsys)
    assert list(picked[0]) == ["idx", FFMA, "flops", "op_stack"]
    assert [r[FFMA] for r in picked] == [r[FFMA] for r in rows]


def test_counter_columns_need_a_counter_trace(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import FIXTURES

    assert main(["kernels", str(FIXTURES / "gpu/gemm_fp32.pt.trace.json.gz"), "-c", f"idx,{FFMA}"]) == 2
    assert FFMA in capsys.readouterr().err
    assert main(["kernels", shared_trace(CUPTI), "-c", "idx,no_such_column"]) == 2


def test_counter_table_equals_live_hta() -> None:
    try:
        from hta.analyzers.cupti_counter_analysis import CUDA_SASS_INSTRUCTION_COUNTER_FLOPS
        from hta.trace_analysis import TraceAnalysis
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"HTA (pip extra 'hta') must be installed in CI: {exc}")
        pytest.skip("HTA not installed (pip install 'perflint-gpu[hta]')")
    path = os.path.abspath(shared_trace(CUPTI))
    logging.getLogger("hta").setLevel(logging.ERROR)
    (df,) = TraceAnalysis(trace_files={0: path}).get_cupti_counter_data_with_operators(ranks=[0])
    df = df.sort_values("ts").reset_index(drop=True)
    rows = counter_rows(load_trace(path))
    assert len(rows) == len(df) == 77
    counters = [c for c in df.columns if c.startswith(("sm__", "smsp__"))]
    assert len(counters) == 9
    for row, (_, theirs) in zip(rows, df.iterrows()):
        assert row["name"] == theirs["name"]
        assert row["op_stack"] == list(theirs["op_stack"])
        assert (row["top_level_op"], row["bottom_level_op"]) == (theirs["top_level_op"], theirs["bottom_level_op"])
        for c in counters:
            assert row[c] == float(theirs[c]), c
        assert row["flops"] == sum(w * float(theirs[k]) for k, w in CUDA_SASS_INSTRUCTION_COUNTER_FLOPS.items())
