"""The nvprof database reader: numbers equal the database's own (sqlite3 over the same file), pyprof's
kernel attribution equals pyprof's outputs beside the database, bad input is one line."""

from __future__ import annotations

import ast
import csv
import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from perflint.graph.attribution import attribute
from perflint.graph.build import link
from perflint.model import GPU_SYNC, MEMCPY, NONE
from perflint.readers import read_trace
from perflint.readers.nvprof.markers import OTHER, SEQ, TRACE, parse_name
from tests.conftest import ROOT, shared_trace

RUN = "pyprof/lm_da6bcc3"
KERNELS = "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"


def _summary(path: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["summary", path, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["traces"][0]  # type: ignore[no-any-return]


def test_summary_equals_the_database(capsys: pytest.CaptureFixture[str]) -> None:
    db = shared_trace(f"{RUN}/net.sql")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    n, kernel_ns = con.execute(f"SELECT count(*), sum(end - start) FROM {KERNELS}").fetchone()
    copy_ns, copy_bytes = con.execute("SELECT sum(end - start), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
    top, top_count, top_ns = con.execute(
        f"SELECT s.value, count(*), sum(k.end - k.start) AS t FROM {KERNELS} k JOIN StringTable s ON s._id_ = k.name "
        "GROUP BY k.name ORDER BY t DESC LIMIT 1"
    ).fetchone()
    device = con.execute("SELECT s.value, numMultiprocessors FROM CUPTI_ACTIVITY_KIND_DEVICE d JOIN StringTable s ON s._id_ = d.name").fetchone()
    con.close()
    s = _summary(db, capsys)
    cats = s["kernels"]["by_category"]
    assert s["kernels"]["count"] == n
    assert sum(v["time_us"] for k, v in cats.items() if k not in ("memcpy", "memset")) == pytest.approx(kernel_ns / 1000, abs=0.01)
    assert cats["memcpy"]["time_us"] == pytest.approx(copy_ns / 1000, abs=0.001)
    first = s["kernels"]["top"][0]
    assert (first["name"], first["count"], first["total_us"]) == (top, top_count, pytest.approx(top_ns / 1000, abs=0.001))
    assert s["steps"]["count"] == 0  # nvprof has no ProfilerStep markers
    assert (s["device"]["name"], s["device"]["sm_count"]) == device
    trace = read_trace(db)
    assert int(trace.gpu.nbytes[trace.gpu.kind == MEMCPY].sum()) == copy_bytes
    # pyprof's own per-kernel time (lm.csv "Sil(ns)") adds up to the same kernel time.
    with open(shared_trace(f"{RUN}/lm.csv"), newline="") as f:
        sil = sum(int(r["Sil(ns)"]) for r in csv.DictReader(f))
    assert sil == kernel_ns


def test_summary_keys_equal_kinetos(capsys: pytest.CaptureFixture[str]) -> None:
    nv = _summary(shared_trace(f"{RUN}/net.sql"), capsys)
    kineto = _summary(str(ROOT / "fixtures/gpu/alloc_churn.pt.trace.json.gz"), capsys)

    def keys(d: Any, at: str = "") -> set[str]:
        if not isinstance(d, dict):
            return set()
        return {f"{at}.{k}" for k in d} | {x for k, v in d.items() if k != "top" for x in keys(v, f"{at}.{k}")}

    def nulls(d: Any, at: str = "") -> set[str]:
        if not isinstance(d, dict):
            return set()
        return {f"{at}.{k}" for k, v in d.items() if v is None} | {x for k, v in d.items() for x in nulls(v, f"{at}.{k}")}

    # The same keys; where one format lacks a whole group of data the group is null (its keys absent).
    differ = keys(nv) ^ keys(kineto)
    empty = nulls(nv) | nulls(kineto)
    assert all(any(k.startswith(n + ".") for n in empty) for k in differ), sorted(differ)[:5]
    assert nv["gpu"]["sm_efficiency_pct"] is None and any("SM efficiency" in w for w in nv["warnings"])


def _pyprof() -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    with open(shared_trace(f"{RUN}/net.dict")) as f:
        kernels = [ast.literal_eval(line) for line in f if line.strip()]
    with open(shared_trace(f"{RUN}/lm.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return kernels, rows


def test_every_kernel_is_attributed_as_pyprof_does() -> None:
    a = attribute(link(read_trace(shared_trace(f"{RUN}/net.sql"))))
    kernels, _ = _pyprof()
    assert len(a) == len(kernels) == 284
    differ = Counter()
    for i, k in enumerate(kernels):
        r = a.record(i)
        want = {
            "op": k["op"], "mod": k["mod"], "dir": k["dir"], "layer": k["layer"], "trace": k["trace"], "tid": k["tid"],
            "sub": k["subSeqId"], "seq": k["seqId"][:1], "altseq": sorted(k["seqId"][1:] + k["altSeqId"]),
        }  # fmt: skip
        for field, value in want.items():
            differ[field] += r[field] != value
    assert sum(differ.values()) == 0, differ
    assert Counter(a.record(i)["dir"] for i in range(len(a))) == Counter(k["dir"] for k in kernels)
    linear = next(i for i, k in enumerate(kernels) if k["op"][-1:] == ["matmul"] and "linear" in k["op"])
    assert {"type": "tensor", "shape": (35, 20, 200), "dtype": "float"} in a.record(linear)["params"][-1]


def test_pyprof_table_ops_and_directions() -> None:
    """lm.csv's op and direction: bprop kernels take the op of their fprop kernel (same sequence
    number). pyprof's Linear class alone renames the bias-add kernel of a linear "bias"."""
    a = attribute(link(read_trace(shared_trace(f"{RUN}/net.sql"))))
    _, rows = _pyprof()
    differ = []
    for i, row in enumerate(rows):
        mod, op = a.shown(i)
        assert a.record(i)["dir"] == row["Direction"]
        if (mod, op) != (row["Module"], row["Op"]):
            differ.append((mod, op, row["Module"], row["Op"]))
    assert differ == [("torch.nn.functional", "linear", "torch.nn.functional", "bias")] * 5
    bprop = [i for i, r in enumerate(rows) if r["Direction"] == "bprop" and r["Op"] == "linear"]
    assert bprop and all(int(a.fprop[i]) >= 0 for i in bprop)


def test_pyprof_markers_become_ops() -> None:
    t = link(read_trace(shared_trace(f"{RUN}/net.sql")))
    names = {t.s(int(n)) for n in t.ops.name}
    assert {"aten::linear", "aten::matmul", "aten::embedding", "MmBackward"} <= names
    i = next(i for i in range(len(t.ops)) if t.s(int(t.ops.name[i])) == "aten::linear")
    assert t.s(int(t.ops.pycall[i])) == "torch.nn.functional.linear"
    assert t.decoded(int(t.ops.dims[i])) == [[35, 20, 200], [600, 200], [600]]
    assert t.decoded(int(t.ops.types[i])) == ["float", "float", "float"]
    assert t.s(int(t.ops.source[i])) == "profile2.py:110"
    bwd = [i for i in range(len(t.ops)) if t.s(int(t.ops.name[i])) == "MmBackward"]
    assert bwd and all(t.ops.fwd_tid[i] > 0 and t.ops.fwd_op[i] >= 0 for i in bwd)


def test_marker_names_are_read_never_run() -> None:
    evil = "{'mod': 'torch', 'op': __import__('os').getcwd(), 'args': []}"
    assert parse_name(evil).kind == OTHER and parse_name(evil).malformed
    assert parse_name("{'traceMarker': ['a.py:3']}").kind == TRACE
    p = parse_name("aten::linear, seq = 12, op_id = 3, sizes = [[32, 64], [128, 64], [128]]")
    assert (p.kind, p.name, p.seq, p.payload) == (SEQ, "aten::linear", 12, [[32, 64], [128, 64], [128]])
    assert parse_name("layer:conv1").kind == OTHER


def _tiny_db(path: Path, marker_names: list[str]) -> None:
    """A minimal nvprof database: one kernel launched inside the given nested ranges."""
    con = sqlite3.connect(path)
    con.executescript(
        f"""CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, value TEXT NOT NULL UNIQUE);
        CREATE TABLE {KERNELS}(_id_ INTEGER PRIMARY KEY, start INT, end INT, deviceId INT, streamId INT,
          correlationId INT, name INT, gridX INT, gridY INT, gridZ INT, blockX INT, blockY INT, blockZ INT,
          registersPerThread INT, staticSharedMemory INT, dynamicSharedMemory INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY, cbid INT, start INT, end INT,
          processId INT, threadId INT, correlationId INT, returnValue INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(_id_ INTEGER PRIMARY KEY, flags INT, timestamp INT, id INT,
          objectKind INT, objectId BLOB, name INT, domain INT);"""
    )
    con.execute("INSERT INTO StringTable(value) VALUES ('my_kernel')")
    obj = (7).to_bytes(4, "little") + (9).to_bytes(8, "little")
    for i, text in enumerate(marker_names):
        sid = con.execute("INSERT INTO StringTable(value) VALUES (?)", (text,)).lastrowid
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId, name, domain) VALUES (2, ?, ?, 2, ?, ?, 0)", (1000 + i, i + 1, obj, sid))
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId, name, domain) VALUES (4, ?, ?, 2, ?, 0, 0)", (9000 - i, i + 1, obj))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(cbid, start, end, processId, threadId, correlationId, returnValue) VALUES (211, 5000, 5100, 7, 9, 1, 0)")
    con.execute(f"INSERT INTO {KERNELS} VALUES (1, 6000, 8000, 0, 7, 1, 1, 4, 1, 1, 128, 1, 1, 32, 0, 0)")
    con.commit()
    con.close()


def test_a_malformed_marker_is_a_plain_range_with_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "tiny.sql"
    _tiny_db(db, ["{'mod': 'torch', 'op': open('/etc/passwd').read(), 'args': []}", "{'mod': 'Tensor', 'op': '__matmul__', 'args': []}", "mm, seq = 4"])
    t = link(read_trace(str(db)))
    assert [t.s(int(n)) for n in t.ops.name][1:] == ["aten::matmul", "mm"]
    assert t.s(int(t.ops.name[0])).startswith("{'mod': 'torch', 'op': open(")
    assert any("1 NVTX marker name(s)" in w for w in t.warnings)
    r = attribute(t).record(0)
    assert (r["mod"], r["op"], r["seq"], r["dir"]) == (["Tensor"], ["__matmul__"], [4], "fprop")
    assert t.s(int(t.runtime.name[0])) == "cudaLaunchKernel"
    s = _summary(str(db), capsys)
    assert s["kernels"]["count"] == 1 and s["kernels"]["top"][0]["total_us"] == 2.0


def _other_app(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users(id INT, name TEXT)")
    con.commit()
    con.close()


def _no_kernels(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, value TEXT)")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY, cbid INT)")
    con.commit()
    con.close()


def _truncated(path: Path) -> None:
    data = Path(shared_trace(f"{RUN}/net.sql")).read_bytes()
    path.write_bytes(data[: len(data) // 3])


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_other_app, "neither an Nsight Systems export nor an nvprof database"),
        (_no_kernels, "nvprof database without a kernel table"),
        (_truncated, "corrupt or truncated"),
    ],
)
def test_bad_databases_are_one_line_and_others_still_checked(make: Any, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import re

    bad = tmp_path / "bad.sql"
    make(bad)
    good = tmp_path / "good.sql"
    shutil.copy(shared_trace(f"{RUN}/net.sql"), good)
    code = main(["check", str(bad), str(good), "--format", "json", "--fail-on", "never", "-j", "1"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 2 and len(doc["errors"]) == 1 and "Traceback" not in err
    (line,) = doc["errors"]
    assert line.startswith(str(bad)) and "\n" not in line and re.search(problem, line), line
    assert [Path(t["path"]).name for t in doc["traces"]] == ["good.sql"]


def test_a_database_without_kernel_table_named_as_nvprof(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "nokernels.sql"
    _no_kernels(bad)
    assert main(["check", str(bad), "--input-format", "nvprof", "-j", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "without a kernel table" in err[0]


def test_directory_scan_reads_the_database_and_skips_pyprofs_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    run = shared_trace(RUN)
    code = main(["check", run, "--format", "json", "--fail-on", "never", "-j", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and [Path(t["path"]).name for t in doc["traces"]] == ["net.sql"]
    assert sorted(Path(s["path"]).name for s in doc["skipped"]) == ["lm.csv", "net.dict", "profile.sh"]


def test_sync_records_name_the_event_record_they_waited_for() -> None:
    """nvprof's synchronization records become sync rows; an event wait's row carries the stream
    and correlation id of the last cudaEventRecord of its event before it (CUDA_EVENT rows)."""
    db = shared_trace(f"{RUN}/net.sql")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    syncs = con.execute("SELECT correlationId, cudaEventId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION").fetchall()
    records = con.execute("SELECT correlationId, streamId, eventId FROM CUPTI_ACTIVITY_KIND_CUDA_EVENT").fetchall()
    con.close()
    expected = {}
    for corr, event in syncs:
        before = [(c, s) for c, s, e in records if e == event and c < corr]
        if before:
            c, s = max(before)
            expected[corr] = (s, c)
    assert expected
    t = read_trace(db)
    g = t.gpu
    rows = (g.kind == GPU_SYNC).nonzero()[0]
    assert len(rows) == len(syncs)
    got = {int(g.correlation[i]): (int(g.wait_stream[i]), int(g.wait_corr[i])) for i in rows if g.wait_corr[i] != NONE}
    assert got == expected
