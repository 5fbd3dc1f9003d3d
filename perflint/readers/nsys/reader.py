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
from perflint.model import GPU_SYNC, KERNEL, MEMCPY, MEMSET, NONE, Device, Trace
from perflint.readers import sqlite
from perflint.readers.nsys import queries as Q
from perflint.readers.nsys import schema as S
from perflint.readers.nsys.devices import devices_of, read_devices
from perflint.readers.nsys.names import Labels, runtime_name
from perflint.readers.nsys.nvtx import Ranges, op_columns, read_ranges
from perflint.readers.nsys.schema import Schema
from perflint.readers.protocol import Reader, ReadOptions
from perflint.readers.tables import Strings, Threads, build_trace

FORMAT = "nsys"
_NO_STREAM = 0xFFFFFFFF  # CUPTI's "no stream" (device-wide sync records)


def split_global_id(gid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pid, tid) of serialized globalTid/globalPid values: 24-bit fields at bits 24 and 0
    (the bits above hold the VM / hardware ids); -1 stays -1."""
    ok = gid >= 0
    return np.where(ok, (gid >> 24) & 0xFFFFFF, -1), np.where(ok, gid & 0xFFFFFF, -1)


class _Gpu:
    """The GPU rows of every activity table, concatenated (integer ns times, file-wide names)."""

    def __init__(self, parts: list[tuple[int, Q.Columns, np.ndarray]]) -> None:
        def cat(key: str, default: int = NONE) -> np.ndarray:
            return np.concatenate([c[key] if key in c.cols else np.full(len(c), default, np.int64) for _, c, _ in parts]) if parts else np.zeros(0, np.int64)

        self.kind = np.concatenate([np.full(len(c), k, np.int8) for k, c, _ in parts]) if parts else np.zeros(0, np.int8)
        self.name = np.concatenate([n for _, _, n in parts]) if parts else np.zeros(0, np.int64)
        self.start, self.end = cat("start", 0), cat("end", 0)
        self.device, self.correlation = cat("device", 0), cat("correlation")
        stream = cat("stream")
        self.stream = np.where(stream == _NO_STREAM, NONE, stream)
        self.pid = split_global_id(cat("pid"))[0]
        self.grid = np.stack([cat(k, 0) for k in ("gridX", "gridY", "gridZ")], axis=1) if parts else np.zeros((0, 3), np.int64)
        self.block = np.stack([cat(k, 0) for k in ("blockX", "blockY", "blockZ")], axis=1) if parts else np.zeros((0, 3), np.int64)
        self.regs, self.shmem, self.nbytes = cat("regs"), cat("shmem"), cat("bytes", 0)

    def __len__(self) -> int:
        return len(self.kind)


def _gpu_rows(path: str, con: sqlite3.Connection, sc: Schema, names: Strings, calls: np.ndarray) -> _Gpu:
    """Every activity table's rows; `calls`: the runtime calls' correlation ids, sorted."""
    labels = Labels(con, set(sc.tables))
    k = Q.kernels(path, con, sc)
    kernel_names = Q.strings(path, con, sc, k["name"])
    parts: list[tuple[int, Q.Columns, np.ndarray]] = [(KERNEL, k, names.map(k["name"], lambda i: kernel_names.get(i, "")))]
    m = Q.memcpys(path, con, sc)
    if m is not None:
        code = (m["copy_kind"] + 1) * 4096 + (m["src_kind"] + 1) * 64 + (m["dst_kind"] + 1)
        parts.append((MEMCPY, m, names.map(code, lambda c: labels.memcpy(c // 4096 - 1, (c // 64) % 64 - 1, c % 64 - 1))))
    ms = Q.memsets(path, con, sc)
    if ms is not None:
        parts.append((MEMSET, ms, names.map(ms["mem_kind"], labels.memset)))
    sy = Q.syncs(path, con, sc, calls)
    if sy is not None:
        parts.append((GPU_SYNC, sy, names.map(sy["sync_type"], labels.sync_name)))
    return _Gpu(parts)


def _fill_pids(gpu: _Gpu, rt_corr: np.ndarray, rt_pid: np.ndarray) -> None:
    """GPU rows without a process (no globalPid column) take their launching call's process."""
    miss = np.flatnonzero(gpu.pid < 0)
    if len(miss) == 0 or len(rt_corr) == 0:
        return
    order = np.argsort(rt_corr, kind="stable")
    sc = rt_corr[order]
    at = np.minimum(np.searchsorted(sc, gpu.correlation[miss]), len(sc) - 1)
    hit = (sc[at] == gpu.correlation[miss]) & (gpu.correlation[miss] >= 0)
    gpu.pid[miss[hit]] = rt_pid[order[at[hit]]]


def _ranks(gpu: _Gpu, rt_pid: np.ndarray) -> list[tuple[int, int]]:
    """(pid, device) per rank, in a stable order: processes by pid, devices by id."""
    if len(gpu):
        # One int64 key per (pid, device): pid is 24 bits (or -1), device ids are small.
        keys = np.unique((gpu.pid.astype(np.int64) << 32) | (gpu.device.astype(np.int64) & 0xFFFFFFFF))
        return [(k >> 32, (k & 0xFFFFFFFF) - ((k & 0x80000000) << 1)) for k in keys.tolist()]
    pids = np.unique(rt_pid)
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
    rt = Q.runtime(path, con, sc)
    if rt is None:
        rt = Q.Columns({k: np.zeros(0, np.int64) for k in ("start", "end", "tid", "correlation", "name")})
    gpu = _gpu_rows(path, con, sc, names, np.sort(rt["correlation"]))
    rt_pid = split_global_id(rt["tid"])[0]
    api = Q.strings(path, con, sc, rt["name"])
    rt_name = names.map(rt["name"], lambda i: runtime_name(api.get(i, "")))
    _fill_pids(gpu, rt["correlation"], rt_pid)
    nvtx = read_ranges(path, con, sc, {})
    nv_pid = split_global_id(nvtx.tid)[0] if nvtx is not None else np.zeros(0, np.int64)
    devices = read_devices(con, sc)
    procs = Q.process_names(con, sc)
    ranks = _ranks(gpu, rt_pid)
    warnings = _warnings(sc, nvtx, len(rt))
    many = len(ranks) > 1
    out = []
    for i, (pid, dev) in enumerate(ranks):
        g = np.flatnonzero((gpu.pid == pid) & (gpu.device == dev)) if dev != NONE else np.zeros(0, np.int64)
        r = _runtime_rows(gpu, ranks, pid, dev, rt_pid, rt["correlation"])
        ops = np.flatnonzero(nv_pid == pid)
        out.append(
            _trace(path, sc, names, gpu, g, rt, rt_name, rt_pid, r, nvtx, ops, devices, pid, dev,
                   rank=i if many else None, world=len(ranks) if many else None, process=procs.get(pid),
                   warnings=warnings)
        )  # fmt: skip
    return out


def _runtime_rows(gpu: _Gpu, ranks: list[tuple[int, int]], pid: int, dev: int, rt_pid: np.ndarray, rt_corr: np.ndarray) -> np.ndarray:
    mine = rt_pid == pid
    devs = [d for p, d in ranks if p == pid]
    if len(devs) <= 1:
        return np.flatnonzero(mine)
    # One process, several devices: a call belongs to the device of the work it launched.
    own = (gpu.pid == pid) & (gpu.correlation >= 0)
    elsewhere = np.unique(gpu.correlation[own & (gpu.device != dev)])
    here = np.unique(gpu.correlation[own & (gpu.device == dev)])
    other = np.isin(rt_corr, elsewhere) & ~np.isin(rt_corr, here)
    return np.flatnonzero(mine & ~other)


def _blocks_per_sm(cols: dict[str, np.ndarray], devs: dict[int, Device]) -> np.ndarray:
    """Kineto's "blocks per SM" of each kernel: its grid's blocks over the device's SM count (NaN
    where that is unknown; memcpy and sync rows have no grid)."""
    out = np.full(len(cols["kind"]), np.nan)
    blocks = cols["grid"].prod(axis=1)
    for d, dev in devs.items():
        if dev.sm_count:
            m = (cols["device"] == d) & (cols["kind"] == KERNEL) & (blocks > 0)
            out[m] = blocks[m] / dev.sm_count
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
    path: str, sc: Schema, names: Strings, gpu: _Gpu, g: np.ndarray, rt: Q.Columns, rt_name: np.ndarray,
    rt_pid: np.ndarray, r: np.ndarray, nvtx: Ranges | None, ops: np.ndarray,
    devices: dict[tuple[int, int], Device], pid: int, dev: int, *, rank: int | None, world: int | None,
    process: str | None, warnings: list[str],
) -> Trace:  # fmt: skip
    strings, threads = Strings(), Threads()

    def interned(idx: np.ndarray) -> np.ndarray:
        if len(idx) == 0:
            return np.zeros(0, np.int32)
        uniq, inv = np.unique(idx, return_inverse=True)
        return np.asarray([strings.id(names.list[int(u)]) for u in uniq.tolist()], np.int32)[inv.reshape(-1)]

    def thread_ids(gtid: np.ndarray) -> np.ndarray:
        """Thread table ids of globalTid values (one per distinct thread)."""
        if len(gtid) == 0:
            return np.zeros(0, np.int32)
        keys, inv = np.unique(gtid, return_inverse=True)
        p, t = split_global_id(keys)
        return np.asarray([threads.id(int(a), int(b)) for a, b in zip(p.tolist(), t.tolist())], np.int32)[inv.reshape(-1)]

    # A file with one rank (the usual case) hands its columns over whole, without a copy.
    gt: Callable[[np.ndarray], np.ndarray] = (lambda a: a) if len(g) == len(gpu) else (lambda a: a[g])
    rtt: Callable[[np.ndarray], np.ndarray] = (lambda a: a) if len(r) == len(rt) else (lambda a: a[r])
    gpu_cols = {
        "kind": gt(gpu.kind), "name": interned(gt(gpu.name)), "device": gt(gpu.device), "stream": gt(gpu.stream),
        "ts": gt(gpu.start) / 1000.0, "dur": (gt(gpu.end) - gt(gpu.start)) / 1000.0, "correlation": gt(gpu.correlation),
        "grid": gt(gpu.grid), "block": gt(gpu.block), "regs": gt(gpu.regs), "shmem": gt(gpu.shmem), "nbytes": gt(gpu.nbytes),
    }  # fmt: skip
    rt_cols = {
        "name": interned(rtt(rt_name)), "thread": thread_ids(rtt(rt["tid"])), "ts": rtt(rt["start"]) / 1000.0,
        "dur": (rtt(rt["end"]) - rtt(rt["start"])) / 1000.0, "correlation": rtt(rt["correlation"]),
    }  # fmt: skip
    op_cols = None
    if nvtx is not None and len(ops):
        op_cols = op_columns(
            nvtx, ops, strings.id, thread_ids(nvtx.tid[ops]), split_global_id(nvtx.tid[ops])[1], nvtx.start[ops] / 1000.0, (nvtx.end[ops] - nvtx.start[ops]) / 1000.0
        )
    used = sorted({int(d) for d in np.unique(gpu.device[g]).tolist()}) if dev != NONE else []
    devs = devices_of(devices, pid, used)
    gpu_cols["blocks_per_sm"] = _blocks_per_sm(gpu_cols, devs)
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
