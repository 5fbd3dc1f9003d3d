"""The Nsight Systems SQLite reader: every summary number equals the same quantity computed with
sqlite3 over the export itself (the real pipit export and the synthetic 2021 / 2025 exports), and
the export's vintages, ranks, devices and NVTX op layer are read as documented."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fixtures.nsys.make_fixtures import build_2021, build_2025, build_one_process_two_gpus
from perflint.cli import main
from perflint.graph.build import link
from perflint.model import GPU_SYNC, KERNEL, MEMCPY, MEMSET, NONE, OP_ANNOTATION, OP_CPU
from perflint.readers import read_traces, reader_for
from perflint.readers.nsys.nvtx import parse
from perflint.readers.nsys.reader import split_global_id
from tests.conftest import FIXTURES, shared_trace

PIPIT = "pipit/cloverleaf-nsys/perlmutter-cloverleaf-cuda.sqlite"
OLD = FIXTURES / "nsys" / "nsys2021_emit_nvtx.sqlite"
NEW = FIXTURES / "nsys" / "nsys2025_two_ranks.sqlite"


def _summary(capsys: pytest.CaptureFixture[str], path: str | Path) -> dict[str, Any]:
    assert main(["summary", str(path), "--format", "json", "-j", "1"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _expected(path: str | Path) -> list[dict[str, Any]]:
    """Per process (rank), from the raw tables: kernel time, memcpy time and bytes, the top kernel
    by total time and its count, and the analysis steps (ProfilerStep ranges less warm-up and last)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    q = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    tables = {r[0] for r in q("SELECT name FROM sqlite_master")}
    out = []
    for (gpid,) in q("SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY globalPid"):
        ((ktime,),) = q(f"SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = {gpid}")
        ((mtime, mbytes),) = q(f"SELECT sum(end - start), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE globalPid = {gpid}")
        top = q(
            "SELECT s.value, count(*), sum(k.end - k.start) AS t FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            f"JOIN StringIds s ON s.id = k.demangledName WHERE k.globalPid = {gpid} GROUP BY s.value ORDER BY t DESC LIMIT 1"
        )[0]
        steps = 0
        if "NVTX_EVENTS" in tables:
            pid = (gpid >> 24) & 0xFFFFFF
            text = "COALESCE(n.text, s.value)" if "textId" in {r[1] for r in q("PRAGMA table_info(NVTX_EVENTS)")} else "n.text"
            join = "LEFT JOIN StringIds s ON s.id = n.textId" if text != "n.text" else ""
            ((steps,),) = q(
                f"SELECT count(DISTINCT {text}) FROM NVTX_EVENTS n {join} WHERE {text} LIKE 'ProfilerStep#%' "
                f"AND ((n.globalTid >> 24) & 16777215) = {pid}"
            )
            steps = steps - 2 if steps >= 3 else steps
        out.append({"kernel_us": ktime / 1e3, "memcpy_us": (mtime or 0) / 1e3, "memcpy_bytes": mbytes or 0,
                    "top": top[0], "top_count": top[1], "steps": steps})  # fmt: skip
    return out


@pytest.mark.parametrize("which", ["pipit", "2021", "2025"])
def test_summary_equals_sqlite(capsys: pytest.CaptureFixture[str], which: str) -> None:
    path = {"pipit": lambda: shared_trace(PIPIT), "2021": lambda: str(OLD), "2025": lambda: str(NEW)}[which]()
    got = _summary(capsys, path)["traces"]
    want = _expected(path)
    assert len(got) == len(want) >= 1
    traces = read_traces(path)
    for t, tr, w in zip(got, traces, want):
        cats = t["kernels"]["by_category"]
        kernel_us = sum(v["time_us"] for k, v in cats.items() if k not in ("memcpy", "memset"))
        assert kernel_us == pytest.approx(w["kernel_us"], abs=0.01)
        assert cats["memcpy"]["time_us"] == pytest.approx(w["memcpy_us"], abs=0.001)
        assert int(tr.gpu.nbytes[tr.gpu.kind == MEMCPY].sum()) == w["memcpy_bytes"]
        top = t["kernels"]["top"][0]
        assert (top["name"], top["count"]) == (w["top"], w["top_count"])
        assert t["steps"]["count"] == w["steps"]
        assert set(t) == set(_summary(capsys, FIXTURES / "gpu" / "memcpy_pageable.pt.trace.json.gz")["traces"][0])


def test_pipit_sample_is_one_rank_on_the_device_that_ran_kernels() -> None:
    path = shared_trace(PIPIT)
    (t,) = read_traces(path)
    assert t.rank is None and t.world_size is None and t.format == "nsys"
    assert sorted(t.devices) == [0]  # four A100s are listed; only device 0 ran anything
    dev = t.devices[0]
    assert (dev.sm_count, dev.compute_capability, dev.regs_per_sm, dev.shared_mem_per_sm, dev.max_threads_per_sm) == (
        108, (8, 0), 65536, 167936, 2048,
    )  # fmt: skip
    names = {t.s(int(i)) for i in np.unique(t.runtime.name)}
    assert {"cudaLaunchKernel", "cudaDeviceSynchronize", "cudaMemcpy", "cudaMalloc"} <= names  # no _v3020 suffix
    g = t.gpu
    copies = {t.s(int(i)) for i in np.unique(g.name[g.kind == MEMCPY])}
    assert copies == {"Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)"}
    # Each of the 1312 sync records is the host wait of a cudaDeviceSynchronize call in the export:
    # the call carries it, the record adds no row.
    assert not (g.kind == GPU_SYNC).any()
    assert sum(t.s(int(i)) == "cudaDeviceSynchronize" for i in t.runtime.name) == 1312
    k = g.kind == KERNEL
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    raw = np.array(con.execute(
        "SELECT gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory + dynamicSharedMemory "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid"
    ).fetchall())  # fmt: skip
    assert (g.grid[k] == raw[:, 0:3]).all() and (g.block[k] == raw[:, 3:6]).all()
    assert (g.regs[k] == raw[:, 6]).all() and (g.shmem[k] == raw[:, 7]).all()
    link(t)
    assert (g.launch[k] != NONE).all()  # every kernel linked to its cudaLaunchKernel
    assert {t.s(int(t.runtime.name[r])) for r in g.launch[k]} == {"cudaLaunchKernel"}
    assert any("no NVTX table" in w for w in t.warnings)
    assert float(g.ts[k].min()) == 533338.240  # ns as µs, relative to the session start


def test_2021_export_inline_nvtx_text_and_emit_nvtx_ops() -> None:
    (t,) = read_traces(str(OLD))
    link(t)
    ops = t.ops
    names = [t.s(int(i)) for i in ops.name]
    assert [s.name for s in t.steps][:2] == ["ProfilerStep#1", "ProfilerStep#2"] and len(t.steps) == 4
    addmm = [i for i, n in enumerate(names) if n == "aten::addmm"]
    assert len(addmm) == 4 and all(ops.kind[i] == OP_CPU for i in addmm)
    assert t.s(int(ops.dims[addmm[0]])) == "[[128], [256, 512], [512, 128]]"
    assert ops.kind[names.index("backward")] == OP_ANNOTATION
    bwd = [i for i, n in enumerate(names) if n.endswith("AddmmBackward0")]
    assert bwd and all(names[int(ops.fwd_op[i])] == "aten::addmm" for i in bwd)
    assert all(ops.seq[int(ops.fwd_op[i])] == ops.seq[i] for i in bwd)
    # Each kernel's launch sits inside its emit_nvtx op.
    k = np.flatnonzero(t.gpu.kind == KERNEL)
    assert {names[int(t.runtime.op[t.gpu.launch[i]])] for i in k} == {"aten::addmm", "aten::relu"}
    assert {t.s(int(i)) for i in np.unique(t.gpu.name[t.gpu.kind == MEMSET])} == {"Memset (Device)"}
    assert t.devices[0].name == "NVIDIA A100-SXM4-40GB" and t.devices[0].sm_count == 108


def test_2025_export_two_processes_are_two_ranks_with_their_own_gpus() -> None:
    traces = read_traces(str(NEW))
    assert [(t.rank, t.world_size, t.meta["pid"]) for t in traces] == [(0, 2, 5001), (1, 2, 5002)]
    for t in traces:
        assert list(t.devices) == [0] and t.devices[0].sm_count == 132  # TARGET_INFO_CUDA_DEVICE mapped
        assert {p for p, _ in t.threads} == {str(t.meta["pid"])}
        assert t.meta["nsys_version"] == "2025.1.1" and t.meta["export_schema"] == "3.15.0"
        assert not (t.gpu.kind == GPU_SYNC).any()  # each sync record's cudaStreamSynchronize is there
        link(t)
        assert len(t.steps) == 3
    assert (traces[1].gpu.kind == KERNEL).sum() == (traces[0].gpu.kind == KERNEL).sum() + 1


def test_a_sync_record_whose_call_is_missing_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "no_sync_call.sqlite"
    shutil.copy(NEW, path)
    con = sqlite3.connect(path)
    corr, pid = con.execute("SELECT correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ORDER BY start LIMIT 1").fetchone()
    assert con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = ?", (corr,)).rowcount == 1
    con.commit()
    con.close()
    traces = read_traces(str(path))
    kept = [(t, i) for t in traces for i in np.flatnonzero(t.gpu.kind == GPU_SYNC)]
    assert len(kept) == 1
    t, i = kept[0]
    assert t.meta["pid"] == split_global_id(np.array([pid]))[0][0]
    assert (t.s(int(t.gpu.name[i])), int(t.gpu.correlation[i])) == ("Stream Sync", corr)


def test_rows_beyond_the_largest_rowid_are_all_read(tmp_path: Path) -> None:
    # Columns are sized by the table's largest rowid; rows stored under negative rowids exceed it.
    path = tmp_path / "negative_rowids.sqlite"
    shutil.copy(OLD, path)
    con = sqlite3.connect(path)
    (n,) = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = -rowid")
    con.commit()
    con.close()
    assert n > 1
    (before,), (after,) = read_traces(str(OLD)), read_traces(str(path))
    k = after.gpu.kind == KERNEL
    assert int(k.sum()) == n
    assert sorted(after.gpu.ts[k].tolist()) == sorted(before.gpu.ts[before.gpu.kind == KERNEL].tolist())


def test_one_process_on_two_gpus_is_two_ranks(tmp_path: Path) -> None:
    path = tmp_path / "two_gpus.sqlite"
    build_one_process_two_gpus(str(path))
    traces = read_traces(str(path))
    assert [(t.rank, t.world_size, t.meta["pid"], sorted(t.devices)) for t in traces] == [(0, 2, 6001, [0]), (1, 2, 6001, [1])]
    for t in traces:
        link(t)
        k = t.gpu.kind == KERNEL
        assert (t.gpu.launch[k] != NONE).all()  # each rank keeps the launches of its own kernels
        launches = {int(t.runtime.correlation[r]) for r in t.gpu.launch[k]}
        others = {int(c) for u in traces if u is not t for c in u.gpu.correlation[u.gpu.kind == KERNEL]}
        assert not launches & others and not set(t.runtime.correlation.tolist()) & others
        assert len(t.steps) == 3  # the process's NVTX ranges go to both ranks


@pytest.mark.parametrize(
    ("text", "name", "seq", "dims", "is_op"),
    [
        ("aten::addmm, seq = 12, op_id = 3, sizes = [[32, 64], [64, 128]]", "aten::addmm", 12, "[[32, 64], [64, 128]]", True),
        ("aten::mm, seq = 4, sizes = [[2, 3], [3, 4]]", "aten::mm", 4, "[[2, 3], [3, 4]]", True),
        ("aten::add, seq = 7, op_id = 9, sizes = [[8], []], input_op_ids = [(5, 0), (6, 0)]", "aten::add", 7, "[[8], []]", True),
        ("ProfilerStep#3, op_id = 11", "ProfilerStep#3", NONE, None, True),
        ("aten::empty, seq = -1, op_id = 2", "aten::empty", NONE, None, True),
        ("my region, with a comma", "my region, with a comma", NONE, None, False),
    ],
)
def test_emit_nvtx_text(text: str, name: str, seq: int, dims: str | None, is_op: bool) -> None:
    p = parse(text)
    assert (p.name, p.seq, p.dims, p.is_op) == (name, seq, dims, is_op)


def test_global_ids_split_into_pid_and_tid() -> None:
    gid = np.array([(1 << 48) | (1701896 << 24) | 1701896, 310028055214088, -1])
    pid, tid = split_global_id(gid)
    assert pid.tolist() == [1701896, 1701896, -1] and tid.tolist()[0] == 1701896 and tid[2] == -1


def _check_bad(capsys: pytest.CaptureFixture[str], bad: Path, problem: str) -> None:
    good = str(OLD)
    code = main(["summary", str(bad), good, "--format", "json", "-j", "1"])
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"perflint: error: {bad}: ") and "Traceback" not in lines[0]
    assert re.search(problem, lines[0], re.IGNORECASE), lines[0]
    assert [t["path"] for t in json.loads(out)["traces"]] == [good]


def test_another_applications_sqlite(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "app.sqlite"
    con = sqlite3.connect(bad)
    con.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    _check_bad(capsys, bad, r"neither an Nsight Systems export nor an nvprof database \(tables: users\)")


def test_truncated_export(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "cut.sqlite"
    bad.write_bytes(Path(shared_trace(PIPIT)).read_bytes()[:100_000])
    _check_bad(capsys, bad, r"corrupt or truncated")


def test_export_without_kernel_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "nokernels.sqlite"
    build_2021(str(bad), kernel_table=False)
    assert reader_for(str(bad)).name == "nsys"
    _check_bad(capsys, bad, r"without a kernel table .*--trace=cuda")


def test_fixtures_are_what_the_generator_writes(tmp_path: Path) -> None:
    """The committed fixtures match their generator (rows, not bytes: SQLite pages may differ)."""
    for name, build in (("old.sqlite", build_2021), ("new.sqlite", build_2025)):
        build(str(tmp_path / name))
    for mine, committed in ((tmp_path / "old.sqlite", OLD), (tmp_path / "new.sqlite", NEW)):
        a, b = sqlite3.connect(mine), sqlite3.connect(committed)
        for (table,) in a.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            assert a.execute(f"SELECT * FROM {table}").fetchall() == b.execute(f"SELECT * FROM {table}").fetchall(), table


def test_event_records_give_the_stream_waits_their_source(tmp_path: Path) -> None:
    """An export with event records (nsys --cuda-event-trace) links each cudaStreamWaitEvent's
    sync record to its cudaEventRecord through eventSyncId (per process: the ids repeat across
    processes), and the sync records carry the recording stream and the record call: what the
    step graph ties a waiting stream's work to. The real export holds the sync records but an
    empty event table: its records are filled in here from its own cudaEventRecord calls (the last
    one before each wait, on the stream its process last launched work on)."""
    path = tmp_path / "events.sqlite"
    shutil.copy(shared_trace("nsysai/h100_2gpu_1s.sqlite"), path)
    con = sqlite3.connect(path)
    waits = con.execute(
        "SELECT eventSyncId, min(correlationId), globalPid FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE syncType = 2 GROUP BY eventSyncId, globalPid"
    ).fetchall()
    records: dict[int, tuple[int, int]] = {}  # wait's correlation id -> (record call, recording stream)
    for sync_id, corr, pid in waits:
        rec = con.execute(
            "SELECT r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaEventRecord%' "
            "AND r.correlationId < ? AND r.globalTid >> 24 = ? >> 24 ORDER BY r.correlationId DESC LIMIT 1",
            (corr, pid),
        ).fetchone()
        stream = con.execute(
            "SELECT streamId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId < ? AND globalPid = ? ORDER BY correlationId DESC LIMIT 1", (rec[0], pid)
        ).fetchone()
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT (timestamp, deviceId, contextId, streamId, correlationId, globalPid, eventId, eventSyncId) "
            "VALUES (0, 0, 1, ?, ?, ?, 0, ?)",
            (stream[0], rec[0], pid, sync_id),
        )
        for (c,) in con.execute("SELECT correlationId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE eventSyncId = ? AND globalPid = ?", (sync_id, pid)):
            records[c] = (rec[0], stream[0])
    con.commit()
    con.close()
    assert records
    traces = read_traces(str(path))
    assert len(traces) == len(read_traces(shared_trace("nsysai/h100_2gpu_1s.sqlite"))) == 2  # sync records make no rank of their own
    seen = {}
    for t in traces:
        g = t.gpu
        rows = np.flatnonzero((g.kind == GPU_SYNC) & (g.wait_corr != NONE))
        assert all(t.s(int(g.name[i])) == "Stream Wait Event" for i in rows)
        seen.update({int(g.correlation[i]): (int(g.wait_corr[i]), int(g.wait_stream[i])) for i in rows})
    assert seen == records
