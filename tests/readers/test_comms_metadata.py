"""The Kineto reader keeps collective metadata in the comms table: one row per op or kernel with a
Collective name, the same from every builder (reference, strict, lenient, C scanner), damaged
values unknown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perflint.model import COMM_GPU, COMM_OP, NONE, Trace
from perflint.readers.kineto import native_scan
from perflint.readers.kineto import reader as kineto
from tests.builder import TraceBuilder
from tests.conftest import shared_trace
from tests.readers.test_perf_equivalence import _reference, assert_same_trace

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
META = {
    "dtype": "BFloat16", "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 4, "Process Group Name": "3",
    "Process Group Description": "dp", "Process Group Ranks": "[0, 1, 2, 3]", "Global rank start": 0,
    "Global rank stride": 1,
}  # fmt: skip
DAMAGED = {
    "dtype": 7, "In msg nelems": "12", "Out msg nelems": -1, "Group size": 2.0, "Seq": True, "Process Group Name": None,
    "Process Group Ranks": ["0", "1"], "Global rank start": 2**64,
}  # fmt: skip


def _data(lenient: bool = False) -> bytes:
    b = TraceBuilder(device="NVIDIA H100 80GB HBM3", sm_count=132, cc=(9, 0), rank=0)
    b.op("aten::mm", 0, 5, args={"dtype": "Float", "In msg nelems": 5})  # the keys without a Collective name: no row
    b.op("record_param_comms", 10, 30, args={"Collective name": "allreduce", **META, "Seq": 2})
    b.kernel(NCCL, 100, 50, launch_ts=20, collective={"Collective name": "allreduce", **META, "Seq": 2})
    b.op("record_param_comms", 200, 30, args={"Collective name": "_allgather_base", **DAMAGED})
    if lenient:  # a value only the lenient schema reads (the strict decode of its slice fails)
        b.op("aten::add", 300, 5, args={"Sequence number": "x"})
    b.op("record_param_comms", 400, 30, args={"Collective name": 5, "Seq": 9})  # not a name: no row
    return json.dumps(b.to_dict()).encode()


def _read(path: str, data: bytes, monkeypatch: pytest.MonkeyPatch, native: bool, chunk: int) -> Trace:
    with monkeypatch.context() as m:
        m.setenv("PERFLINT_NATIVE", "1" if native else "0")
        m.setenv("PERFLINT_CHUNK_BYTES", str(chunk))
        return kineto.read_kineto(path, data)


def _rows(t: Trace) -> list[dict[str, Any]]:
    c = t.comms
    out = []
    for i in range(len(c)):
        row: dict[str, Any] = {}
        for k in ("side", "ext_id", "correlation", "in_nelems", "out_nelems", "group_size", "seq", "rank_start", "rank_stride"):
            row[k] = int(getattr(c, k)[i])
        for k in ("name", "dtype", "pg_name", "pg_desc", "pg_ranks"):
            sid = int(getattr(c, k)[i])
            row[k] = t.s(sid) if sid != NONE else None
        out.append(row)
    return out


@pytest.mark.parametrize("lenient", [False, True])
def test_every_builder_keeps_the_same_metadata(lenient: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _data(lenient)
    want = _reference("t.json", data)
    for native in ([False, True] if native_scan.built() else [False]):
        for chunk in (1 << 22, 300):
            assert_same_trace(want, _read("t.json", data, monkeypatch, native, chunk))
    rows = _rows(want)
    assert [r["side"] for r in rows] == [COMM_OP, COMM_GPU, COMM_OP]
    good, kernel, damaged = rows
    assert good == {
        "side": COMM_OP, "ext_id": good["ext_id"], "correlation": NONE, "in_nelems": 1024, "out_nelems": 1024, "group_size": 4,
        "seq": 2, "rank_start": 0, "rank_stride": 1, "name": "allreduce", "dtype": "BFloat16", "pg_name": "3", "pg_desc": "dp",
        "pg_ranks": "[0, 1, 2, 3]",
    }  # fmt: skip
    assert good["ext_id"] != NONE
    assert kernel["correlation"] == int(want.gpu.correlation[0]) and kernel["seq"] == 2
    # damaged values are unknown, never a failed read
    assert {k: damaged[k] for k in ("in_nelems", "out_nelems", "group_size", "seq", "rank_start", "dtype", "pg_name", "pg_ranks")} == {
        "in_nelems": NONE, "out_nelems": NONE, "group_size": NONE, "seq": NONE, "rank_start": NONE, "dtype": None,
        "pg_name": None, "pg_ranks": None,
    }  # fmt: skip
    assert (damaged["name"], damaged["pg_desc"]) == ("_allgather_base", None)


def test_a_trace_without_collectives_has_an_empty_table(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::mm", 0, 5)
    b.kernel("ampere_sgemm_128x64_nn", 10, 20, launch_ts=1)
    t = kineto.read_kineto(b.write(tmp_path / "t.json"), None)
    assert len(t.comms) == 0


@pytest.mark.parametrize(
    ("rel", "ops", "kernels"),
    [
        # every record_param_comms op and every NCCL kernel with a Collective name (counted in the raw JSON)
        ("tracelens/traces/mi300/resnet_act_checkpoint.json.gz", 18, 12),
        ("hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 45, 0),
    ],
)
def test_real_traces(rel: str, ops: int, kernels: int) -> None:
    from perflint.readers import read_trace

    path = shared_trace(rel)
    t = read_trace(path)
    side = t.comms.side
    assert (int((side == COMM_OP).sum()), int((side == COMM_GPU).sum())) == (ops, kernels)
    import gzip

    raw = json.loads(gzip.decompress(Path(path).read_bytes()))
    recorded = [e["args"] for e in raw["traceEvents"] if isinstance(e.get("args"), dict) and "Collective name" in e["args"]]
    assert len(recorded) == ops + kernels
    assert sorted(int(x) for x in t.comms.in_nelems) == sorted(a["In msg nelems"] for a in recorded)
    assert sorted(int(x) for x in t.comms.group_size) == sorted(a["Group size"] for a in recorded)
    names = [t.s(int(x)) for x in t.comms.name]
    assert sorted(names) == sorted(a["Collective name"] for a in recorded)
