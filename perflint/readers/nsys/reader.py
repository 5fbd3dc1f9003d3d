"""`NsysReader`: an Nsight Systems SQLite export (`nsys export --type sqlite report.nsys-rep`)
as one Trace per rank.

A rank is a process, and a (process, device) pair when one process drives several GPUs: GPU rows
name both (`globalPid`, `deviceId`; an export without `globalPid` on GPU rows gets the process of
the runtime call with the same correlation id). A runtime call goes to the rank of the GPU work it
launched, else to every rank of its process; NVTX ranges go to every rank of their process.
Processes that ran no GPU work (the rest of the machine, listed in PROCESSES) are no ranks.
Times are the export's nanoseconds since the session start, as microseconds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import numpy as np

from perflint.errors import InputError
from perflint.model import GPU_SYNC, KERNEL, NONE, Device, Trace
from perflint.readers import sqlite
from perflint.readers.nsys import queries as Q
from perflint.readers.nsys import schema as S
from perflint.readers.nsys.devices import devices_of, read_devices
from perflint.readers.nsys.names import Labels, runtime_name
from perflint.readers.nsys.nvtx import Ranges, op_columns, read_ranges
from perflint.readers.nsys.schema import Schema
from perflint.readers.protocol import Reader, ReadOptions
from perflint.readers.tables import Strings, Threads, build_trace, distinct

FORMAT = "nsys"
_GPU_TABLES = (S.KERNEL, S.MEMCPY, S.MEMSET, S.SYNC)


def split_global_id(gid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pid, tid) of serialized globalTid/globalPid values: 24-bit fields at bits 24 and 0
    (the bits above hold the VM / hardware ids); -1 stays -1."""
    ok = gid >= 0
    return np.where(ok, (gid >> 24) & 0xFFFFFF, -1), np.where(ok, gid & 0xFFFFFF, -1)


class _Threads:
    """File-wide thread ids of globalTid values, with each thread's process."""

    def __init__(self) -> None:
        self.table = Threads()
        self.pid: list[int] = []

    def ids(self, gtid: np.ndarray) -> np.ndarray:
        if len(gtid) == 0:
            return np.zeros(0, np.int32)
        keys, inv = np.unique(gtid, return_inverse=True)
        p, t = split_global_id(keys)
        out = []
        for a, b in zip(p.tolist(), t.tolist()):
            i = self.table.id(a, b)
            if i == len(self.pid):
                self.pid.append(a)
            out.append(i)
        return np.asarray(out, np.int32)[inv.reshape(-1)]


EventWaits = tuple[np.ndarray, np.ndarray, np.ndarray]  # queries.event_waits


def _gpu_rows(path: str, con: sqlite3.Connection, sc: Schema, names: Strings, calls: np.ndarray) -> tuple[dict[str, np.ndarray], EventWaits]:
    """Every activity table's rows in one set of columns, and the event waits whose records the
    export holds; `calls`: the runtime calls' correlation ids, sorted. Names become `names` ids,
    one table's slice at a time."""
    labels = Labels(con, set(sc.tables))
    sink = Q.Sink(Q.GPU_SPEC, sum(Q.capacity(path, con, t) for t in _GPU_TABLES if t in sc.tables))
    kernel = Q.kernels(path, con, sc, sink)
    copies = Q.memcpys(path, con, sc, sink)
    sets = Q.memsets(path, con, sc, sink)
    event = Q.event_waits(path, con, sc)
    waits = Q.syncs(path, con, sc, sink, calls, event[0])
    cols = sink.done()
    name = cols["name"]
    (a, n) = kernel
    kernel_names = Q.strings(path, con, sc, distinct(name[a : a + n]))
    names.remap(name[a : a + n], lambda i: kernel_names.get(i, ""))
    (a, n) = copies
    names.remap(name[a : a + n], lambda c: labels.memcpy(c // 4096 - 1, (c // 64) % 64 - 1, c % 64 - 1))
    (a, n) = sets
    names.remap(name[a : a + n], labels.memset)
    (a, n) = waits
    names.remap(name[a : a + n], labels.sync_name)
    _sync_devices(cols)
    _in_time_order(cols)
    return cols, event


def _sync_devices(cols: dict[str, np.ndarray]) -> None:
    """A sync record on the device its process's work ran on: CUPTI's sync records can name
    device 0 for a process whose kernels all ran on another, which would make a rank of its own
    out of sync records alone. A process whose work ran on several devices keeps the records'."""
    sync = cols["kind"] == GPU_SYNC
    if not sync.any() or sync.all():
        return
    work = ~sync
    for pid in distinct(cols["pid"][sync]):
        devs = distinct(cols["device"][work & (cols["pid"] == pid)])
        if len(devs) == 1:
            cols["device"][sync & (cols["pid"] == pid)] = devs[0]

def _in_time_order(cols: dict[str, np.ndarray]) -> None:
    """The GPU rows in start order, a table's own order kept among equal starts. An export holds
    each activity table in start order, one table after the other; the analysis merges GPU
    intervals many times over, and rows already in start order merge without a sort (one sort
    here instead of one per union, each with column-sized keys and results)."""
    ts = cols["ts"]
    if bool((ts[1:] >= ts[:-1]).all()):
        return
    order = np.argsort(ts, kind="stable")
    if len(order) < 2**31:
        order = order.astype(np.int32)
    for k in list(cols):
        cols[k] = cols[k][order]  # one column's copy at a time


def _fill_pids(gpu: dict[str, np.ndarray], rt_corr: np.ndarray, rt_pid: np.ndarray) -> None:
    """GPU rows without a process (no globalPid column) take their launching call's process."""
    pid, corr = gpu["pid"], gpu["correlation"]
    miss = np.flatnonzero(pid < 0)
    if len(miss) == 0 or len(rt_corr) == 0:
        return
    order = np.argsort(rt_corr, kind="stable")
    sc = rt_corr[order]
    at = np.minimum(np.searchsorted(sc, corr[miss]), len(sc) - 1)
    hit = (sc[at] == corr[miss]) & (corr[miss] >= 0)
    pid[miss[hit]] = rt_pid[order[at[hit]]]


def _ranks(gpu: dict[str, np.ndarray], rt_pid: np.ndarray) -> list[tuple[int, int]]:
    """(pid, device) per rank, in a stable order: processes by pid, devices by id."""
    if len(gpu["pid"]):
        # One int64 key per (pid, device): pid is 24 bits (or -1), device ids are small.
        keys = distinct((gpu["pid"].astype(np.int64) << 32) | (gpu["device"].astype(np.int64) & 0xFFFFFFFF))
        return [(k >> 32, (k & 0xFFFFFFFF) - ((k & 0x80000000) << 1)) for k in keys.tolist()]
    pids = distinct(rt_pid)
    return [(int(p), NONE) for p in pids.tolist()] or [(NONE, NONE)]


class NsysReader(Reader):
    name = FORMAT
    title = "Nsight Systems SQLite export"
    suffixes = (".sqlite", ".sqlite3")

    def sniff(self, path: str, head: bytes) -> bool:
        if not sqlite.is_sqlite(head):
            return False
        found = sqlite.tables(path)
        return found is not None and S.is_nsys(found)

    def read(self, path: str, options: ReadOptions) -> list[Trace]:
        con = sqlite.connect(path)
        try:
            return _read(path, con)
        except sqlite3.DatabaseError as exc:
            raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
        finally:
            con.close()


def _read(path: str, con: sqlite3.Connection) -> list[Trace]:
    sc = S.detect(path, con)
    names = Strings()  # file-wide: every GPU row and runtime call names an index here
    threads = _Threads()
    rt = Q.runtime(path, con, sc, threads.ids)
    if rt is None:
        rt = {k: np.zeros(0, dt) for k, (dt, _) in Q.RUNTIME_SPEC.items()}
    api = Q.strings(path, con, sc, distinct(rt["name"]))
    names.remap(rt["name"], lambda i: runtime_name(api.get(i, "")))
    gpu, event = _gpu_rows(path, con, sc, names, np.sort(rt["correlation"]))
    # Processes are 24-bit ids (split_global_id): int32 holds them, at half the bytes per call.
    rt_pid = np.asarray(threads.pid, np.int32)[rt["thread"]] if len(rt["thread"]) else np.zeros(0, np.int32)
    _fill_pids(gpu, rt["correlation"], rt_pid)
    nvtx = read_ranges(path, con, sc, {})
    nv_pid = split_global_id(nvtx.tid)[0] if nvtx is not None else np.zeros(0, np.int64)
    devices = read_devices(con, sc)
    procs = Q.process_names(con, sc)
    ranks = _ranks(gpu, rt_pid)
    warnings = _warnings(sc, nvtx, len(rt["ts"]))
    many = len(ranks) > 1
    out = []
    for i, (pid, dev) in enumerate(ranks):
        g = _where((gpu["pid"] == pid) & (gpu["device"] == dev)) if dev != NONE else np.zeros(0, np.int64)
        r = _runtime_rows(gpu, ranks, pid, dev, rt_pid, rt["correlation"])
        ops = np.flatnonzero(nv_pid == pid)
        out.append(
            _trace(path, sc, names, threads, gpu, g, rt, r, nvtx, ops, devices, pid, dev,
                   rank=i if many else None, world=len(ranks) if many else None, process=procs.get(pid),
                   warnings=warnings, shared=not many, event=event)
        )  # fmt: skip
    return out


def _where(mask: np.ndarray) -> np.ndarray | None:
    """The rows of `mask`; None when it is every row (the columns are then handed over whole)."""
    return None if mask.all() else np.flatnonzero(mask)


def _runtime_rows(
    gpu: dict[str, np.ndarray], ranks: list[tuple[int, int]], pid: int, dev: int, rt_pid: np.ndarray, rt_corr: np.ndarray
) -> np.ndarray | None:
    mine = rt_pid == pid
    devs = [d for p, d in ranks if p == pid]
    if len(devs) <= 1:
        return _where(mine)
    # One process, several devices: a call belongs to the device of the work it launched.
    own = (gpu["pid"] == pid) & (gpu["correlation"] >= 0)
    elsewhere = np.unique(gpu["correlation"][own & (gpu["device"] != dev)])
    here = np.unique(gpu["correlation"][own & (gpu["device"] == dev)])
    other = np.isin(rt_corr, elsewhere) & ~np.isin(rt_corr, here)
    return np.flatnonzero(mine & ~other)


def _event_columns(gpu_cols: dict[str, np.ndarray], event: EventWaits) -> dict[str, np.ndarray]:
    """The wait_stream and wait_corr columns of the sync records of event waits (none: the
    model's default, one broadcast value)."""
    sync_corr, stream, record = event
    if not len(sync_corr):
        return {}
    rows = np.flatnonzero(gpu_cols["kind"] == GPU_SYNC)
    i = np.minimum(np.searchsorted(sync_corr, gpu_cols["correlation"][rows]), len(sync_corr) - 1)
    hit = sync_corr[i] == gpu_cols["correlation"][rows]
    if not hit.any():
        return {}
    n = len(gpu_cols["kind"])
    ws, wc = np.full(n, NONE, np.int64), np.full(n, NONE, np.int64)
    ws[rows[hit]], wc[rows[hit]] = stream[i[hit]], record[i[hit]]
    return {"wait_stream": ws, "wait_corr": wc}


def _one_value(col: np.ndarray) -> np.ndarray:
    """A column that holds one value as a read-only broadcast of that value (no memory per row),
    as the model holds the columns a format does not record; others as they are."""
    if len(col) == 0 or bool((col != col[0]).any()):
        return col
    return np.broadcast_to(col[:1].copy().reshape(()), col.shape)


def _blocks_per_sm(kind: np.ndarray, grid: np.ndarray, device: np.ndarray, devs: dict[int, Device]) -> np.ndarray:
    """Kineto's "blocks per SM" of each kernel: its grid's blocks over the device's SM count (NaN
    where that is unknown; memcpy and sync rows have no grid). A slice at a time: no full-size
    int64 temporaries."""
    out = np.full(len(kind), np.nan)
    sms = {d: dev.sm_count for d, dev in devs.items() if dev.sm_count}
    if not sms:
        return out
    step = 1 << 20
    for i in range(0, len(kind), step):
        s = slice(i, i + step)
        blocks = grid[s].prod(axis=1)
        for d, n in sms.items():
            m = (device[s] == d) & (kind[s] == KERNEL) & (blocks > 0)
            out[s][m] = blocks[m] / n
    return out


def _warnings(sc: Schema, nvtx: Ranges | None, n_runtime: int) -> list[str]:
    # No per-kernel occupancy estimate either: the summary says so where the number is null, and the
    # occupancy rules use each launch configuration's theoretical occupancy (not worth a line per run).
    out: list[str] = []
    if nvtx is None:
        out.append(
            f"no NVTX table ({S.NVTX}): no CPU ops, shapes or ProfilerStep steps, so no op-level rules and "
            "no summary gpu.* metrics (they are measured over the steps); record with `nsys profile "
            "--trace=cuda,nvtx` and torch.autograd.profiler.emit_nvtx()"
        )
    if S.RUNTIME not in sc.tables:
        out.append(f"no CUDA runtime table ({S.RUNTIME}): GPU work is not linked to host calls")
    elif n_runtime == 0:
        out.append("the export holds no CUDA runtime calls: GPU work is not linked to host calls")
    return out


def _trace(
    path: str, sc: Schema, names: Strings, file_threads: _Threads, gpu: dict[str, np.ndarray], g: np.ndarray | None,
    rt: dict[str, np.ndarray], r: np.ndarray | None, nvtx: Ranges | None, ops: np.ndarray,
    devices: dict[tuple[int, int], Device], pid: int, dev: int, *, rank: int | None, world: int | None,
    process: str | None, warnings: list[str], shared: bool, event: EventWaits,
) -> Trace:  # fmt: skip
    """One rank's Trace; `g`, `r`: its GPU rows and runtime calls (None: all of them). `shared`:
    the only rank, which takes the file-wide string and thread tables as they are."""
    strings, threads = (names, file_threads.table) if shared else (Strings(), Threads())

    def interned(idx: np.ndarray) -> np.ndarray:
        if shared or len(idx) == 0:
            return idx
        uniq, inv = np.unique(idx, return_inverse=True)
        return np.asarray([strings.id(names.list[int(u)]) for u in uniq.tolist()], np.int32)[inv.reshape(-1)]

    def rethread(idx: np.ndarray) -> np.ndarray:
        if shared or len(idx) == 0:
            return idx
        uniq, inv = np.unique(idx, return_inverse=True)
        return np.asarray([threads.id(*file_threads.table.list[int(u)]) for u in uniq.tolist()], np.int32)[inv.reshape(-1)]

    def thread_ids(gtid: np.ndarray) -> np.ndarray:
        """Thread table ids of globalTid values (one per distinct thread)."""
        if len(gtid) == 0:
            return np.zeros(0, np.int32)
        keys, inv = np.unique(gtid, return_inverse=True)
        p, t = split_global_id(keys)
        return np.asarray([threads.id(int(a), int(b)) for a, b in zip(p.tolist(), t.tolist())], np.int32)[inv.reshape(-1)]

    # The only rank (the usual case) takes its columns whole, without a copy.
    gt: Callable[[np.ndarray], np.ndarray] = (lambda a: a) if g is None else (lambda a: a[g])
    rtt: Callable[[np.ndarray], np.ndarray] = (lambda a: a) if r is None else (lambda a: a[r])
    gpu_cols = {k: gt(gpu[k]) for k in ("kind", "device", "stream", "ts", "dur", "correlation", "grid", "block", "regs", "shmem", "nbytes")}
    gpu_cols["name"] = interned(gt(gpu["name"]))
    for k in ("device", "stream"):  # usually one GPU and one stream: one value, not a column of it
        gpu_cols[k] = _one_value(gpu_cols[k])
    rt_cols = {k: rtt(rt[k]) for k in ("ts", "dur", "correlation")}
    rt_cols.update(name=interned(rtt(rt["name"])), thread=rethread(rtt(rt["thread"])))
    op_cols = None
    if nvtx is not None and len(ops):
        op_cols = op_columns(
            nvtx, ops, strings.id, thread_ids(nvtx.tid[ops]), split_global_id(nvtx.tid[ops])[1], nvtx.start[ops] / 1000.0, (nvtx.end[ops] - nvtx.start[ops]) / 1000.0
        )
    used = sorted(int(d) for d in distinct(gpu_cols["device"]).tolist()) if dev != NONE else []
    devs = devices_of(devices, pid, used)
    gpu_cols["blocks_per_sm"] = _blocks_per_sm(gpu_cols["kind"], gpu_cols["grid"], gpu_cols["device"], devs)
    gpu_cols.update(_event_columns(gpu_cols, event))
    meta = {"nsys_version": sc.product, "export_schema": sc.version, "pid": pid if pid >= 0 else None, "process": process}
    return build_trace(
        path, FORMAT, strings, threads, ops=op_cols, runtime=rt_cols, gpu=gpu_cols,
        devices=devs,
        rank=rank, world_size=world, meta=meta, warnings=list(warnings), recording=RECORDING,
    )  # fmt: skip


# What an Nsight Systems export may lack, in nsys's terms (Trace.recording).
RECORDING = {
    "steps": "ProfilerStep#N NVTX ranges",
    "steps_hint": "profile with --trace=cuda,nvtx and mark each iteration with an NVTX range",
    "steps_fix": (
        "Record with `nsys profile --trace=cuda,nvtx` and mark each training/inference iteration with an NVTX "
        "range named ProfilerStep#N (torch.cuda.nvtx.range_push(f'ProfilerStep#{i}') / range_pop(), or "
        "torch.profiler's schedule with emit_nvtx)."
    ),
    "shapes": "operator input shapes (emit_nvtx ranges with sizes)",
    "shapes_hint": "wrap the run in torch.autograd.profiler.emit_nvtx(record_shapes=True)",
    "shapes_fix": "Wrap the profiled iterations in torch.autograd.profiler.emit_nvtx(record_shapes=True) and record with `nsys profile --trace=cuda,nvtx`.",
    "device": "GPU properties (TARGET_INFO_GPU)",
    "device_hint": "an export without the target information tables",
    "device_fix": "Export the whole report (`nsys export --type sqlite`): the TARGET_INFO_GPU table holds the GPU's properties.",
    "memory": "memory allocation events",
    "memory_hint": "nsys's CUDA memory usage tracking is not read",
}


__all__ = ["NsysReader", "split_global_id"]
