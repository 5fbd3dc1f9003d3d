"""The kernel/operator graph (issue 2, point 3), checked against facts computed here from the
raw JSON of the recorded CPU fixtures (fixtures/cpu, see its README) and of corpus GPU traces,
and against synthetic traces with exact values (tests/builder.py)."""

from __future__ import annotations

import functools
import gzip
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perflint.graph.build import forward_op, op_chain, op_stack
from perflint.graph.load import load_trace
from perflint.model import KERNEL, MEMCPY, MEMSET, NONE, OP_ANNOTATION, Trace
from tests.builder import TraceBuilder
from tests.conftest import FIXTURES, shared_trace

CPU_DIR = FIXTURES / "cpu"
CPU_FIXTURES = sorted(p.name for p in CPU_DIR.glob("*.pt.trace.json.gz"))
BERT_H100 = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
RESNET_OLD = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
OP_CATS = {"cpu_op", "Operator", "user_annotation"}
RT_CATS = {"cuda_runtime", "Runtime", "cuda_driver"}


def _load_json(path: str | Path) -> Any:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


@functools.lru_cache(maxsize=None)
def raw_events(path: str) -> list[dict[str, Any]]:
    doc = _load_json(path)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


@functools.lru_cache(maxsize=None)
def loaded(path: str) -> Trace:
    return load_trace(path)


def fixture(name: str) -> str:
    p = CPU_DIR / name
    assert p.exists(), f"missing fixture {p}"
    return str(p)


def raw_ops(path: str) -> list[dict[str, Any]]:
    """cpu_op / user_annotation X events in file order (the reader's op table order)."""
    return [e for e in raw_events(path) if e.get("ph") == "X" and e.get("cat") in OP_CATS]


def _containers(ops: list[dict[str, Any]], tid: Any, pid: Any, t: float) -> list[dict[str, Any]]:
    return [o for o in ops if o["tid"] == tid and o["pid"] == pid and o["ts"] <= t <= o["ts"] + o["dur"]]


# --------------------------------------------------------------------------------------------
# op tree


@pytest.mark.parametrize("name", CPU_FIXTURES)
def test_op_tree_matches_brute_force_containment(name: str) -> None:
    path = fixture(name)
    trace = loaded(path)
    ops = trace.ops
    raw = raw_ops(path)
    assert len(ops) == len(raw)
    assert [trace.s(int(n)) for n in ops.name] == [e["name"] for e in raw]
    for i, e in enumerate(raw):
        end = e["ts"] + e["dur"]
        cont = [
            j
            for j, o in enumerate(raw)
            if j != i and o["tid"] == e["tid"] and o["ts"] <= e["ts"] and end <= o["ts"] + o["dur"]
        ]
        # innermost container = the shortest one (no two ops share an interval in the fixtures)
        want = min(cont, key=lambda j: raw[j]["dur"]) if cont else NONE
        assert int(ops.parent[i]) == want, (i, e["name"])
        p = int(ops.parent[i])
        if p != NONE:
            assert ops.thread[p] == ops.thread[i]
            assert ops.ts[p] <= ops.ts[i] and ops.ts[i] + ops.dur[i] <= ops.ts[p] + ops.dur[p]
            assert ops.depth[i] == ops.depth[p] + 1
        else:
            assert ops.depth[i] == 0


def test_op_tree_known_nesting() -> None:
    """README: addmm runs inside aten::linear inside the step; backward mm inside AddmmBackward0."""
    trace = loaded(fixture("mlp_fp32_unaligned.pt.trace.json.gz"))
    names = [trace.s(int(n)) for n in trace.ops.name]
    for i, n in enumerate(names):
        if n == "aten::addmm":
            chain = [names[o] for o in op_chain(trace, i)]
            assert chain[0].startswith("ProfilerStep#")
            assert chain[-2:] == ["aten::linear", "aten::addmm"]
        if n == "aten::mm":
            chain = [names[o] for o in op_chain(trace, i)]
            assert "AddmmBackward0" in chain and chain[-1] == "aten::mm"
            assert chain.index("autograd::engine::evaluate_function: AddmmBackward0") < chain.index("AddmmBackward0")


# --------------------------------------------------------------------------------------------
# steps


@pytest.mark.parametrize("name", CPU_FIXTURES)
def test_steps_in_cpu_fixtures(name: str) -> None:
    trace = loaded(fixture(name))
    assert [s.number for s in trace.steps] == [2, 3, 4]
    raw = {e["name"]: e for e in raw_ops(fixture(name)) if e["name"].startswith("ProfilerStep#")}
    for s in trace.steps:
        assert s.name == f"ProfilerStep#{s.number}"
        assert s.ts == raw[s.name]["ts"] and s.dur == raw[s.name]["dur"]
        assert trace.ops.kind[s.op] == OP_ANNOTATION


def test_steps_from_old_operator_markers() -> None:
    path = shared_trace(RESNET_OLD)
    markers = [e for e in raw_events(path) if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    assert markers and {e["cat"] for e in markers} == {"Operator"}
    first: dict[int, dict[str, Any]] = {}
    for e in sorted(markers, key=lambda e: e["ts"]):
        first.setdefault(int(e["name"].split("#")[1]), e)
    trace = loaded(path)
    assert [s.number for s in trace.steps] == sorted(first)
    for s in trace.steps:
        assert (s.ts, s.dur) == (first[s.number]["ts"], first[s.number]["dur"])


# --------------------------------------------------------------------------------------------
# kernels -> runtime launch -> op stack


def test_every_kernel_links_to_its_launch_by_correlation() -> None:
    path = shared_trace(BERT_H100)
    evs = raw_events(path)
    rt_by_corr = {e["args"]["correlation"]: e for e in evs if e.get("ph") == "X" and e.get("cat") in RT_CATS}
    gpu_raw = [e for e in evs if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    linked_raw = sum(e["args"]["correlation"] in rt_by_corr for e in gpu_raw)
    kernels_raw = [e for e in gpu_raw if e["cat"] == "kernel"]
    assert all(e["args"]["correlation"] in rt_by_corr for e in kernels_raw)

    trace = loaded(path)
    g, rt = trace.gpu, trace.runtime
    assert int(np.sum(g.launch != NONE)) == linked_raw
    k = np.flatnonzero(g.kind == KERNEL)
    assert len(k) == len(kernels_raw) and (g.launch[k] != NONE).all()
    for i in k.tolist():
        r = int(g.launch[i])
        assert rt.correlation[r] == g.correlation[i]
        want = rt_by_corr[int(g.correlation[i])]
        assert trace.s(int(rt.name[r])) == want["name"]
        assert rt.ts[r] == want["ts"]


def _raw_op_stack(ops: list[dict[str, Any]], rt: dict[str, Any]) -> list[str]:
    cont = _containers(ops, rt["tid"], rt["pid"], rt["ts"])
    cont.sort(key=lambda o: (o["ts"], -o["dur"]))
    return [o["name"] for o in cont if not o["name"].startswith("ProfilerStep#")]


def test_kernel_op_stack_top_and_bottom() -> None:
    path = shared_trace(BERT_H100)
    evs = raw_events(path)
    ops_raw = [e for e in evs if e.get("ph") == "X" and e.get("cat") in OP_CATS]
    rt_by_corr = {e["args"]["correlation"]: e for e in evs if e.get("ph") == "X" and e.get("cat") in RT_CATS}
    trace = loaded(path)
    g = trace.gpu
    checked = 0
    for i in np.flatnonzero(g.kind == KERNEL).tolist():
        want = _raw_op_stack(ops_raw, rt_by_corr[int(g.correlation[i])])
        op = int(trace.runtime.op[int(g.launch[i])])
        got = [trace.s(int(trace.ops.name[o])) for o in op_stack(trace, op)] if op != NONE else []
        assert got == want
        if want:
            checked += 1
            top, bottom = got[0], got[-1]  # top_level_op / bottom_level_op
            assert top == want[0] and bottom == want[-1]
    assert checked >= 50
    # the first GEMM of the model is launched by aten::linear -> ... -> aten::addmm
    names = [trace.s(int(n)) for n in g.name]
    gemm = next(i for i in range(len(g)) if g.kind[i] == KERNEL and ("gemm" in names[i].lower() or "matmul" in names[i].lower()))
    stack = [trace.s(int(trace.ops.name[o])) for o in op_stack(trace, int(trace.runtime.op[int(g.launch[gemm])]))]
    assert stack[-1] in ("aten::addmm", "aten::mm", "aten::bmm", "aten::matmul")


def test_kernel_args_equal_raw_json() -> None:
    path = shared_trace(BERT_H100)
    raw = {e["args"]["correlation"]: e for e in raw_events(path) if e.get("ph") == "X" and e.get("cat") == "kernel"}
    trace = loaded(path)
    g = trace.gpu
    k = np.flatnonzero(g.kind == KERNEL).tolist()
    assert len(k) == len(raw)
    for i in k:
        a = raw[int(g.correlation[i])]["args"]
        assert g.grid[i].tolist() == a["grid"]
        assert g.block[i].tolist() == a["block"]
        assert g.regs[i] == a["registers per thread"]
        assert g.shmem[i] == a["shared memory"]
        assert g.blocks_per_sm[i] == a["blocks per SM"]
        assert g.warps_per_sm[i] == a["warps per SM"]
        assert g.occupancy[i] == a["est. achieved occupancy %"]
        assert g.stream[i] == a["stream"]
        assert g.device[i] == a["device"]


@pytest.mark.parametrize("native", ["0", "1"])
@pytest.mark.parametrize(
    "path",
    [
        str(CPU_DIR / "conv_bmm.pt.trace.json.gz"),
        str(FIXTURES / "gpu" / "conv_fp16.pt.trace.json.gz"),
        "tracelens/traces/mi300/resnet_act_checkpoint.json.gz",
    ],
)
def test_concrete_inputs_equal_raw_json(path: str, native: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every op's "Concrete Inputs" (conv stride/padding/... as text) is kept as read, with and
    without the C scanner; ops without the argument have none."""
    if not path.startswith("/"):
        path = shared_trace(path)
    monkeypatch.setenv("PERFLINT_NATIVE", native)
    trace = load_trace(path)
    raw = raw_ops(path)
    assert len(raw) == len(trace.ops)
    got = [trace.decoded(int(c)) for c in trace.ops.concrete]
    want = [(e.get("args") or {}).get("Concrete Inputs") for e in raw]
    assert got == want
    assert sum(w is not None for w in want) > 100
    convs = [g for g, e in zip(got, raw) if e["name"] == "aten::convolution"]
    assert convs and all(len(c) == 9 for c in convs)  # input, weight, bias, stride ... groups


def test_kernel_args_old_kineto_external_id_lowercase() -> None:
    """Old Kineto: cat 'Kernel', 'external id' lowercase, tid 'stream 7'."""
    path = shared_trace("kineto/test/gpu_metrics_input.json")
    raw = [e for e in raw_events(path) if e.get("ph") == "X" and e.get("cat") == "Kernel"]
    trace = loaded(path)
    g = trace.gpu
    k = np.flatnonzero(g.kind == KERNEL).tolist()
    assert len(k) == len(raw)
    for i, e in zip(k, raw):
        a = e["args"]
        assert g.ext_id[i] == a.get("external id", a.get("External id"))
        assert g.stream[i] == a["stream"]
        assert g.grid[i].tolist() == a["grid"]
        assert g.launch[i] != NONE


# --------------------------------------------------------------------------------------------
# forward <-> backward


def test_backward_maps_to_forward_addmm_by_sequence_number() -> None:
    path = fixture("mlp_fp32_unaligned.pt.trace.json.gz")
    raw = raw_ops(path)
    trace = loaded(path)
    ops = trace.ops
    wrappers = [i for i, e in enumerate(raw) if e["name"] == "autograd::engine::evaluate_function: AddmmBackward0"]
    assert len(wrappers) == 6  # 2 Linear layers x 3 steps
    for i in wrappers:
        seq = raw[i]["args"]["Sequence number"]
        f = int(ops.fwd_op[i])
        assert f != NONE
        assert raw[f]["name"] == "aten::addmm"
        assert raw[f]["args"]["Sequence number"] == seq
        assert raw[f]["args"]["Fwd thread id"] == 0
        assert raw[f]["ts"] < raw[i]["ts"]


def test_forward_op_of_backward_mm() -> None:
    path = fixture("mlp_fp32_unaligned.pt.trace.json.gz")
    raw = raw_ops(path)
    trace = loaded(path)
    fwd_addmm = {e["args"]["Sequence number"]: j for j, e in enumerate(raw)
                 if e["name"] == "aten::addmm" and e["args"].get("Fwd thread id") == 0}
    mms = [i for i, e in enumerate(raw) if e["name"] == "aten::mm"]
    assert len(mms) == 9
    for i in mms:
        e = raw[i]
        # independent: the AddmmBackward0 node containing this mm, and its sequence number
        node = [o for o in _containers(raw, e["tid"], e["pid"], e["ts"]) if o["name"] == "AddmmBackward0"]
        assert len(node) == 1
        want = fwd_addmm[node[0]["args"]["Sequence number"]]
        assert forward_op(trace, i) == want
    # a forward op has no forward op
    assert forward_op(trace, next(iter(fwd_addmm.values()))) == NONE


def test_shared_sequence_number_picks_the_node_named_op() -> None:
    """nll_loss_nd > nll_loss > nll_loss_forward share one sequence number (fixtures README):
    NllLossBackward0 is blamed on the op its node is named after, not on an arbitrary one."""
    path = fixture("mlp_fp32_unaligned.pt.trace.json.gz")
    raw = raw_ops(path)
    trace = loaded(path)
    bwd = [i for i, e in enumerate(raw) if e["name"] == "NllLossBackward0"]
    assert len(bwd) == 3
    for i in bwd:
        seq = raw[i]["args"]["Sequence number"]
        sharing = {e["name"] for e in raw if e["args"].get("Sequence number") == seq and e["args"].get("Fwd thread id") == 0}
        assert {"aten::nll_loss_nd", "aten::nll_loss", "aten::nll_loss_forward"} <= sharing
        assert raw[int(trace.ops.fwd_op[i])]["name"] == "aten::nll_loss"


def test_every_backward_sequence_number_has_a_forward_op() -> None:
    path = fixture("conv_bmm.pt.trace.json.gz")
    raw = raw_ops(path)
    trace = loaded(path)
    fwd_seqs = {e["args"]["Sequence number"] for e in raw if e["args"].get("Fwd thread id") == 0 and "Sequence number" in e["args"]}
    bwd = [i for i, e in enumerate(raw) if (e["args"].get("Fwd thread id") or 0) > 0]
    assert bwd
    for i in bwd:
        assert raw[i]["args"]["Sequence number"] in fwd_seqs
        f = int(trace.ops.fwd_op[i])
        assert f != NONE and raw[f]["args"]["Sequence number"] == raw[i]["args"]["Sequence number"]


# --------------------------------------------------------------------------------------------
# source lines


_USER_PYFN = re.compile(r"^record_cpu_traces\.py\((\d+)\): ")


@pytest.mark.parametrize("name", ["mlp_fp32_unaligned.pt.trace.json.gz", "dataloader.pt.trace.json.gz"])
def test_source_from_python_function_events(name: str) -> None:
    path = fixture(name)
    evs = raw_events(path)
    pyfns = [e for e in evs if e.get("ph") == "X" and e.get("cat") == "python_function" and _USER_PYFN.match(e["name"])]
    raw = raw_ops(path)
    trace = loaded(path)
    with_source = 0
    for i, e in enumerate(raw):
        cont = _containers(pyfns, e["tid"], e["pid"], e["ts"])
        if cont:
            inner = max(cont, key=lambda p: (p["ts"], -p["dur"]))
            want = f"record_cpu_traces.py:{_USER_PYFN.match(inner['name']).group(1)}"
            with_source += 1
        else:
            want = ""
        assert trace.s(int(trace.ops.source[i])) == want, e["name"]
    assert with_source > len(raw) // 2
    addmm = [i for i, e in enumerate(raw) if e["name"] == "aten::addmm"]
    assert addmm and all(trace.s(int(trace.ops.source[i])).startswith("record_cpu_traces.py:") for i in addmm)


def _first_user_frame(stack: str) -> str:
    """Innermost frame that is not Python itself (stdlib, built-ins) nor PyTorch (torch/...).
    Other site-packages (torchvision here, transformers elsewhere) count as user code."""
    for frame in stack.split(";"):
        m = re.match(r"^(.*)\((\d+)\): ", frame.strip())
        if not m or m.group(1).startswith("<"):
            continue
        path = m.group(1)
        if "site-packages/" in path:
            if path.split("site-packages/", 1)[1].split("/", 1)[0] in ("torch", "triton", "functorch", "torchgen"):
                continue
        elif "/lib/python" in path:
            continue
        return f"{path}:{m.group(2)}"
    return ""


def test_source_from_call_stack() -> None:
    path = shared_trace(RESNET_OLD)
    raw = raw_ops(path)
    trace = loaded(path)
    n = 0
    for i, e in enumerate(raw):
        stack = e.get("args", {}).get("Call stack")
        if not stack:
            assert trace.ops.source[i] == NONE
            continue
        assert trace.s(int(trace.ops.source[i])) == _first_user_frame(stack)
        n += 1
    assert n > 10000
    assert "resnet50_profiler_api.py:54" in {trace.s(int(s)) for s in trace.ops.source.tolist()}


# --------------------------------------------------------------------------------------------
# input dims and types


@pytest.mark.parametrize("name", ["mlp_fp32_unaligned.pt.trace.json.gz", "bf16_linear.pt.trace.json.gz", "conv_bmm.pt.trace.json.gz"])
def test_op_input_dims_and_types(name: str) -> None:
    path = fixture(name)
    raw = raw_ops(path)
    trace = loaded(path)
    for i, e in enumerate(raw):
        a = e.get("args", {})
        assert trace.decoded(int(trace.ops.dims[i])) == a.get("Input Dims")
        assert trace.decoded(int(trace.ops.types[i])) == a.get("Input type")


def test_known_gemm_dims_from_readme() -> None:
    trace = loaded(fixture("mlp_fp32_unaligned.pt.trace.json.gz"))
    ops = trace.ops
    got = sorted(
        {json.dumps(trace.decoded(int(ops.dims[i]))) for i in range(len(ops)) if trace.s(int(ops.name[i])) == "aten::addmm"}
    )
    assert got == sorted(json.dumps(d) for d in ([[37], [30, 100], [100, 37], [], []], [[10], [30, 37], [37, 10], [], []]))
    i = next(i for i in range(len(ops)) if trace.s(int(ops.name[i])) == "aten::addmm")
    assert trace.decoded(int(ops.types[i])) == ["float", "float", "float", "Scalar", "Scalar"]
    bf = loaded(fixture("bf16_linear.pt.trace.json.gz"))
    types = {tuple(bf.decoded(int(bf.ops.types[i]))[:3]) for i in range(len(bf.ops)) if bf.s(int(bf.ops.name[i])) == "aten::addmm"}
    assert types == {("c10::BFloat16",) * 3}


# --------------------------------------------------------------------------------------------
# synthetic traces: exact values


def _synthetic(tmp_path: Path) -> tuple[Trace, dict[str, int]]:
    b = TraceBuilder(device="NVIDIA H100 80GB HBM3", sm_count=132, cc=(9, 0))
    b.step(2, ts=0, dur=1000)
    b.step(3, ts=1000, dur=1000)
    b.step(4, ts=2000, dur=1000)
    b.op("aten::linear", ts=1100, dur=300, dims=[[64, 128], [256, 128], [256]], types=["c10::Half"] * 3)
    b.op("aten::addmm", ts=1150, dur=200, dims=[[256], [64, 128], [128, 256], [], []],
         types=["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"], seq=7, fwd_tid=0)
    k1 = b.kernel("sm90_xmma_gemm_f16f16_f32", ts=1400, dur=80, launch_ts=1200, stream=7,
                  grid=(2, 4, 1), block=(128, 1, 1), blocks_per_sm=0.06, occupancy=12.5, registers=168,
                  shared_memory=49152)
    k2 = b.kernel("vectorized_elementwise_kernel", ts=1500, dur=10, launch_ts=1500, stream=13, grid=(64, 1, 1),
                  block=(512, 1, 1), blocks_per_sm=None, occupancy=None)  # launched outside any op
    b.op("autograd::engine::evaluate_function: AddmmBackward0", ts=2100, dur=400, seq=7, fwd_tid=1)
    b.op("AddmmBackward0", ts=2110, dur=380, seq=7, fwd_tid=1)
    b.op("aten::mm", ts=2120, dur=100, dims=[[64, 256], [256, 128]], types=["c10::Half", "c10::Half"])
    k3 = b.kernel("sm90_xmma_gemm_bwd", ts=2300, dur=50, launch_ts=2150)
    m1 = b.memcpy(ts=2600, dur=4, nbytes=4096, launch_ts=2550)
    m2 = b.memset(ts=2700, dur=2, nbytes=1024, launch_ts=2650)
    path = b.write(tmp_path / "synthetic.pt.trace.json.gz")
    return load_trace(path), {"k1": k1, "k2": k2, "k3": k3, "m1": m1, "m2": m2}


def _row(trace: Trace, corr: int) -> int:
    (i,) = np.flatnonzero(trace.gpu.correlation == corr).tolist()
    return i


def _stack_names(trace: Trace, row: int) -> list[str]:
    r = int(trace.gpu.launch[row])
    assert r != NONE
    op = int(trace.runtime.op[r])
    return [trace.s(int(trace.ops.name[o])) for o in op_stack(trace, op)] if op != NONE else []


def test_synthetic_kernel_in_op_in_step(tmp_path: Path) -> None:
    trace, c = _synthetic(tmp_path)
    g = trace.gpu
    i = _row(trace, c["k1"])
    assert trace.s(int(g.name[i])) == "sm90_xmma_gemm_f16f16_f32"
    assert (g.ts[i], g.dur[i]) == (1400.0, 80.0)
    assert g.grid[i].tolist() == [2, 4, 1] and g.block[i].tolist() == [128, 1, 1]
    assert (g.regs[i], g.shmem[i], g.blocks_per_sm[i], g.occupancy[i], g.stream[i], g.device[i]) == (
        168, 49152, 0.06, 12.5, 7, 0)
    assert _stack_names(trace, i) == ["aten::linear", "aten::addmm"]
    op = int(trace.runtime.op[int(g.launch[i])])
    chain = [trace.s(int(trace.ops.name[o])) for o in op_chain(trace, op)]
    assert chain == ["ProfilerStep#3", "aten::linear", "aten::addmm"]
    addmm = op
    assert trace.decoded(int(trace.ops.dims[addmm])) == [[256], [64, 128], [128, 256], [], []]
    assert trace.decoded(int(trace.ops.types[addmm]))[0] == "c10::Half"
    assert [s.number for s in trace.steps] == [2, 3, 4]
    assert [(s.ts, s.dur) for s in trace.steps] == [(0.0, 1000.0), (1000.0, 1000.0), (2000.0, 1000.0)]


def test_synthetic_kernel_outside_ops_and_unknown_args(tmp_path: Path) -> None:
    trace, c = _synthetic(tmp_path)
    g = trace.gpu
    i = _row(trace, c["k2"])
    assert g.launch[i] != NONE
    # launched inside ProfilerStep#3 but inside no op: the HTA op stack is empty
    assert _stack_names(trace, i) == []
    assert np.isnan(g.blocks_per_sm[i]) and np.isnan(g.occupancy[i])
    assert g.stream[i] == 13


def test_synthetic_backward_kernel(tmp_path: Path) -> None:
    trace, c = _synthetic(tmp_path)
    i = _row(trace, c["k3"])
    assert _stack_names(trace, i) == [
        "autograd::engine::evaluate_function: AddmmBackward0", "AddmmBackward0", "aten::mm"]
    mm = int(trace.runtime.op[int(trace.gpu.launch[i])])
    f = forward_op(trace, mm)
    assert trace.s(int(trace.ops.name[f])) == "aten::addmm" and trace.ops.ts[f] == 1150.0


def test_synthetic_memcpy_memset(tmp_path: Path) -> None:
    trace, c = _synthetic(tmp_path)
    g = trace.gpu
    i, j = _row(trace, c["m1"]), _row(trace, c["m2"])
    assert (g.kind[i], g.nbytes[i], g.dur[i]) == (MEMCPY, 4096, 4.0)
    assert (g.kind[j], g.nbytes[j], g.dur[j]) == (MEMSET, 1024, 2.0)
    assert trace.s(int(trace.runtime.name[int(g.launch[i])])) == "cudaMemcpyAsync"
    assert trace.s(int(trace.runtime.name[int(g.launch[j])])) == "cudaMemsetAsync"


def test_overlapping_siblings_are_not_nested(tmp_path: Path) -> None:
    """Clock skew: an op that starts inside another but ends after it is its sibling."""
    b = TraceBuilder()
    b.op("a", ts=0, dur=100)
    b.op("b", ts=50, dur=100)  # overlaps a, not contained
    b.op("c", ts=60, dur=10)  # inside both: the innermost container is b, which starts later
    trace = load_trace(b.write(tmp_path / "t.json"))
    names = [trace.s(int(n)) for n in trace.ops.name]
    parent = {names[i]: (names[p] if (p := int(trace.ops.parent[i])) != NONE else None) for i in range(len(names))}
    assert parent == {"a": None, "b": None, "c": "b"}


def test_ops_on_different_threads_do_not_nest(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("outer", ts=0, dur=100, tid=1)
    b.op("inner_other_thread", ts=10, dur=10, tid=2)
    corr = b.kernel("k", ts=200, dur=5, launch_ts=20)  # launch on tid 1000: no op there
    trace = load_trace(b.write(tmp_path / "t.json"))
    assert (trace.ops.parent == NONE).all()
    assert trace.runtime.op[int(trace.gpu.launch[_row(trace, corr)])] == NONE
