"""`perflint ops`: the operator view grouped by op, op+shape, module and layer, against
torch-tb-profiler's own operator table (tests/reference/tb_plugin_op_view.json), MindSpore's files,
and sums over the trace's own events."""

from __future__ import annotations

import collections
import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perflint.cli import main
from perflint.graph.load import load_traces
from perflint.listings import kernel_rows, op_rows
from perflint.model import Trace
from perflint.op_view import GROUPS, op_view
from tests.conftest import FIXTURES, TESTS, shared_trace

GEMM = str(FIXTURES / "gpu" / "gemm_fp16_unaligned.pt.trace.json.gz")
REFERENCE = json.loads((TESTS / "reference" / "tb_plugin_op_view.json").read_text())
ASCEND = "mindinsight/run_1/normal_run/profiler"
TIMES = ("device_self_us", "device_total_us", "host_total_us")


def _one(path: str) -> Trace:
    (t,) = load_traces(path, None)
    return t


def _close(a: float | None, b: float) -> bool:
    return a is not None and abs(a - b) <= max(1e-6, 1e-9 * abs(b))


def _csv(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    assert main(argv) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_mm_flops_are_2mnk_per_call() -> None:
    rows = [r for r in op_view(_one(GEMM), "op+shape") if r["name"] == "aten::mm"]
    assert rows
    for r in rows:
        (m, k), (k2, n) = r["input_shape"][:2]
        assert k == k2 and r["flops"] == r["calls"] * 2 * m * n * k
        assert r["tflops"] == pytest.approx(r["flops"] / (r["device_total_us"] * 1e-6) / 1e12)


def test_op_grouping_keeps_the_op_tables_numbers() -> None:
    t = _one(GEMM)
    old = {r["name"]: r for r in op_rows(t)}
    new = {r["name"]: r for r in op_view(t)}
    assert old.keys() == new.keys()
    for name, r in old.items():
        for col in ("kind", "calls", *TIMES, "host_self_us"):
            assert new[name][col] == pytest.approx(r[col]), (name, col)


def test_tc_self_pct_is_tensor_core_share_of_self_device_time() -> None:
    t = _one(GEMM)
    kern = kernel_rows(t)
    for r in op_view(t):
        mine = [k for k in kern if k["bottom_level_op"] == r["name"]]
        if not mine or r["name"] not in ("aten::mm", "aten::addmm"):
            continue
        tc = sum(k["dur_us"] for k in mine if k["tensor_cores"])
        assert r["tc_eligible"] and r["tc_self_pct"] == pytest.approx(100 * tc / r["device_self_us"])
        assert 0 < r["tc_self_pct"] <= 100


@pytest.mark.parametrize("name", sorted(REFERENCE["traces"]))
def test_tensorboard_operator_view(name: str) -> None:
    """torch-tb-profiler 0.4.3's operator view, by name and by name + input shape: the same
    calls, device self/total, host total, Tensor Cores eligible and self %. Its host self time
    also leaves out the op's own runtime calls (cudaLaunchKernel...); perflint's keeps them."""
    ref = REFERENCE["traces"][name]
    (path,) = Path(shared_trace(ref["path"])).glob("*.json.gz")
    t = _one(str(path))
    rt_by_name: dict[str, float] = collections.defaultdict(float)
    for op, dur in zip(t.runtime.op.tolist(), t.runtime.dur.tolist()):
        if op >= 0:
            rt_by_name[t.s(int(t.ops.name[op]))] += dur
    for group, key, theirs in (("op", lambda r: r["name"], ref["ops"]), ("op+shape", lambda r: (r["name"], json.dumps(r["input_shape"])), ref["ops_by_shape"])):
        ours = {key(r): r for r in op_view(t, group)}
        if group == "op+shape":
            theirs = [{**r, "input_shape": json.loads(r["input_shape"])} for r in theirs]
        assert len(theirs) > 60
        for r in theirs:
            o = ours[key(r)]
            assert (o["calls"], o["tc_eligible"]) == (r["calls"], r["tc_eligible"]), r
            for col in TIMES:
                assert o[col] == pytest.approx(r[col], abs=0.5), (r, col)
            assert (o["tc_self_pct"] or 0.0) == pytest.approx(r["tc_self_pct"])
            if group == "op":
                assert o["host_self_us"] - rt_by_name[r["name"]] == pytest.approx(r["host_self_us"], abs=0.5), r
    # The plugin leaves out step, optimizer and data-loader ranges; perflint keeps them as rows.
    extra = {r["name"] for r in op_view(t)} - {r["name"] for r in ref["ops"]}
    assert extra and all(n.startswith(("ProfilerStep#", "Optimizer.", "enumerate(DataLoader)")) for n in extra)


def test_mindspore_ascend_op_type_by_shape() -> None:
    """MindSpore's op view (op type x input shape: occurrences, total and average time) from the
    run's op timeline and the input shapes its timeline_display file records."""
    d = Path(shared_trace(ASCEND))
    shapes = {}
    for e in json.loads((d / "timeline_display_1.json").read_text()):
        a = e.get("args") or {}
        if "fullname" in a:
            ins = sorted((k for k in a if k.startswith("input_")), key=lambda k: int(k[6:]))
            shapes[a["fullname"]] = (a["type"], json.dumps([[int(x) for x in str(a[k]["shape"]).split(",") if x.strip()] for k in ins]))
    want: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0, 0.0])
    with open(d / "output_timeline_data_1.txt", newline="") as f:
        for name, _, _, dur in list(csv.reader(f))[1:]:
            w = want[shapes[name]]
            w[0] += 1
            w[1] += float(dur) * 1000.0
    ours = {(r["name"], json.dumps(r["input_shape"])): r for r in op_view(_one(str(d)), "op+shape")}
    assert len(want) > 100
    for k, (n, total) in want.items():
        r = ours[k]
        assert r["calls"] == n and _close(r["host_total_us"], total) and _close(r["host_avg_us"], total / n), k


@pytest.mark.parametrize("run", ["data_stall", "two_rank"])
def test_mindspore_gpu_op_types(run: str, capsys: pytest.CaptureFixture[str]) -> None:
    """gpu_op_type_info_N.csv (per op type: occurrences, total and average time in ms) against
    `--group-by op+shape` (MindSpore's GPU ops carry no shapes: one row per type)."""
    d = FIXTURES / "mindspore" / "gpu" / run
    rows = _csv(["ops", str(d), "--group-by", "op+shape", "--format", "csv", "-c", "name,input_shape,calls,host_total_us,host_avg_us"], capsys)
    many = "rank" in rows[0]
    for path in sorted(d.glob("gpu_op_type_info_*.csv")):
        rank = path.stem.rsplit("_", 1)[1]
        mine = {r["name"]: r for r in rows if not many or r["rank"] == rank}
        with open(path, newline="") as f:
            theirs = list(csv.DictReader(f))
        assert theirs
        for r in theirs:
            o = mine[r["op_type"]]
            assert o["input_shape"] == "" and int(o["calls"]) == int(r["type_occurrences"])
            assert float(o["host_total_us"]) == pytest.approx(float(r["total_time"]) * 1000.0)
            assert float(o["host_avg_us"]) == pytest.approx(float(r["avg_time"]) * 1000.0)


def test_module_and_layer_groups() -> None:
    """nn.Module ranges: a module's totals count its outermost ops once; its FLOPs are its GEMMs'."""
    t = _one(GEMM)
    by_op = op_view(t, "op+shape")
    mods = {r["module"]: r for r in op_view(t, "module")}
    layers = {r["layer"]: r for r in op_view(t, "layer")}
    lin = [m for m in mods if m and m.startswith("Linear_")]
    assert lin and all(any(k and k.endswith("/" + m) for k in layers) for m in lin)
    for m in lin:
        assert mods[m]["tc_eligible"] and mods[m]["flops"] > 0
        path = next(k for k in layers if k and k.endswith("/" + m))
        assert {c: layers[path][c] for c in TIMES} == {c: mods[m][c] for c in TIMES}
    # Every op is in one group: self times add up to the same whole in every grouping.
    for g in GROUPS:
        rows = op_view(t, g)
        assert sum(r["device_self_us"] for r in rows) == pytest.approx(sum(r["device_self_us"] for r in by_op))
        assert sum(r["host_self_us"] for r in rows) == pytest.approx(sum(r["host_self_us"] for r in by_op))
    # Module FLOPs count each call's work once, at the innermost modelled op: aten::addmm, not the
    # aten::linear around it; aten::clamp_min, not aten::relu; aten::_log_softmax, not aten::log_softmax.
    outer = {"aten::linear", "aten::relu", "aten::log_softmax"}
    inner = sum(r["flops"] for r in by_op if r["flops"] and r["name"] not in outer)
    assert sum(r["flops"] or 0 for r in mods.values()) == pytest.approx(inner)


def test_pyprof_module_is_pyprofs_mod() -> None:
    """pyprof's Module column (lm.csv, its prof table; "na" where no pyprof call is open)."""
    t = _one(shared_trace("pyprof/lm_da6bcc3/net.sql"))
    mods = {r["module"]: r for r in op_view(t, "module")}
    with open(shared_trace("pyprof/lm_da6bcc3/lm.csv"), newline="") as f:
        theirs = {r["Module"] for r in csv.DictReader(f)}
    assert set(mods) - {None} == theirs - {"na"} and len(theirs) == 3
    assert all(mods[m]["device_total_us"] > 0 for m in theirs - {"na"})


def test_sort_top_columns_and_formats(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _csv(["ops", GEMM, "--format", "csv", "--sort", "calls", "--top", "4", "-c", "name,calls,flops,tflops"], capsys)
    calls = [int(r["calls"]) for r in rows]
    assert len(rows) == 4 and calls == sorted(calls, reverse=True)
    full = _csv(["ops", GEMM, "--format", "csv", "-c", "name,calls"], capsys)
    assert calls == sorted((int(r["calls"]) for r in full), reverse=True)[:4]
    assert main(["ops", GEMM, "--format", "json", "--group-by", "op+shape", "--sort", "name", "--top", "3"]) == 0
    doc: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in doc] == sorted(r["name"] for r in doc) and "input_shape" in doc[0]
    assert main(["ops", GEMM, "-w", "170", "--group-by", "module"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["module", "calls"] and all(len(x) <= 170 for x in lines)
    for argv, word in ((["--sort", "nope"], "--sort"), (["--top", "0"], "--top")):
        assert main(["ops", GEMM, *argv]) == 2
        assert word in capsys.readouterr().err


def test_default_sort_is_device_total_descending() -> None:
    rows = op_view(_one(GEMM))
    dev = np.asarray([r["device_total_us"] for r in rows])
    assert (np.diff(dev) <= 0).all() and dev[0] > 0


def test_op_groups_have_a_roofline_from_their_kernels() -> None:
    t = _one(GEMM)  # an H100 SXM: its peaks are known
    rows = {r["name"]: r for r in op_view(t)}
    mm = rows["aten::mm"]
    assert mm["bound"] in ("compute", "memory", "latency") and 0 < mm["pct_of_peak"] <= 100
    assert mm["bytes"] > 0 and mm["gbps"] > 0
    # An op that launched no kernel of its own has no roofline, whatever ran under it.
    assert rows["aten::linear"]["bound"] is None and rows["aten::linear"]["flops"] == rows["aten::addmm"]["flops"]
