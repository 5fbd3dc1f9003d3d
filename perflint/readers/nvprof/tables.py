"""nvprof's CUPTI tables as columns: kernels, memcpy, memset, runtime and driver calls, devices.

nvprof (`nvprof -o file`) writes one SQLite table per CUPTI activity kind, names as ids into
`StringTable`, and times as integer nanoseconds. Everything here is read with one query per table
into numpy columns; strings are interned once per distinct id.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np

from perflint.kernelnames.demangle import demangle
from perflint.model import CUPTI_SYNC_NAMES, GPU_SYNC, KERNEL, MEMCPY, MEMSET, NONE, Device
from perflint.readers.nvprof.apis import driver_name, memcpy_name, memset_name, runtime_name
from perflint.readers.tables import Strings

KERNEL_TABLES = ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL")
STRING_TABLE = "StringTable"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
DRIVER = "CUPTI_ACTIVITY_KIND_DRIVER"
MEMCPY_T = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_T = "CUPTI_ACTIVITY_KIND_MEMSET"
DEVICE_T = "CUPTI_ACTIVITY_KIND_DEVICE"

_KERNEL_COLS = (
    "start", "end", "deviceId", "streamId", "correlationId", "name", "gridX", "gridY", "gridZ",
    "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory",
)  # fmt: skip


class StringIds:
    """nvprof's StringTable: its ids turned into the trace's interned string ids, per distinct id."""

    def __init__(self, con: sqlite3.Connection, strings: Strings) -> None:
        self.values: dict[int, str] = dict(con.execute(f"SELECT _id_, value FROM {STRING_TABLE}"))
        self.strings = strings

    def text(self, sid: int) -> str | None:
        return self.values.get(sid)

    def intern(self, ids: np.ndarray, fallback: str = "<unknown name>") -> np.ndarray:
        """Interned string ids for an array of StringTable ids (an id the table lacks: `fallback`)."""
        return self.strings.map(ids, lambda u: self.values.get(u, fallback))

    def intern_kernels(self, ids: np.ndarray) -> np.ndarray:
        """`intern` for kernel names: nvprof keeps only the mangled name, so it is demangled here,
        once per distinct name, for every report to show what other readers show."""
        return self.strings.map(ids, lambda u: _demangled(self.values.get(u, "<unknown name>")))


def _demangled(name: str) -> str:
    return demangle(name) or name


def _rows(con: sqlite3.Connection, sql: str, width: int) -> np.ndarray:
    rows = con.execute(sql).fetchall()
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), width)


@dataclass
class Columns:
    """GPU activity columns (kernels, copies, memsets together); times still in ns."""

    start: np.ndarray
    end: np.ndarray
    cols: dict[str, Any]


def gpu_rows(con: sqlite3.Connection, present: dict[str, set[str]], ids: StringIds) -> Columns:
    """Kernels (both kernel tables), memcpys and memsets, as one set of GPU columns."""
    parts: list[tuple[np.ndarray, int]] = []
    names: list[np.ndarray] = []
    extra: list[dict[str, np.ndarray]] = []
    for table in KERNEL_TABLES:
        if table not in present or not set(_KERNEL_COLS) <= present[table]:
            continue
        r = _rows(con, f"SELECT {', '.join(_KERNEL_COLS)} FROM {table}", len(_KERNEL_COLS))
        parts.append((r, KERNEL))
        names.append(ids.intern_kernels(r[:, 5]))
        extra.append(
            {
                "grid": r[:, 6:9], "block": r[:, 9:12], "regs": r[:, 12], "shmem": r[:, 13] + r[:, 14],
                "nbytes": np.zeros(len(r), dtype=np.int64),
            }
        )  # fmt: skip
    copy_cols = ("start", "end", "deviceId", "streamId", "correlationId", "copyKind", "srcKind", "dstKind", "bytes")
    if MEMCPY_T in present and set(copy_cols) <= present[MEMCPY_T]:
        r = _rows(con, f"SELECT {', '.join(copy_cols)} FROM {MEMCPY_T}", len(copy_cols))
        parts.append((r, MEMCPY))
        names.append(_named(ids.strings, r[:, 5:8], lambda k: memcpy_name(*k)))
        extra.append(_no_launch(len(r)) | {"nbytes": r[:, 8]})
    set_cols = ("start", "end", "deviceId", "streamId", "correlationId", "memoryKind", "bytes")
    if MEMSET_T in present and set(set_cols) <= present[MEMSET_T]:
        r = _rows(con, f"SELECT {', '.join(set_cols)} FROM {MEMSET_T}", len(set_cols))
        parts.append((r, MEMSET))
        names.append(_named(ids.strings, r[:, 5:6], lambda k: memset_name(k[0])))
        extra.append(_no_launch(len(r)) | {"nbytes": r[:, 6]})
    wait_stream: list[np.ndarray] = [np.full(len(p), NONE, dtype=np.int64) for p, _ in parts]
    wait_corr: list[np.ndarray] = [np.full(len(p), NONE, dtype=np.int64) for p, _ in parts]
    sync = _syncs(con, present)
    if sync is not None:
        r, stream_of, record = sync
        parts.append((r, GPU_SYNC))
        names.append(_named(ids.strings, r[:, 5:6], lambda k: CUPTI_SYNC_NAMES.get(k[0], "Unknown Sync")))
        extra.append(_no_launch(len(r)) | {"nbytes": np.zeros(len(r), dtype=np.int64)})
        wait_stream.append(stream_of)
        wait_corr.append(record)
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return Columns(empty, empty, {})
    start = np.concatenate([p[:, 0] for p, _ in parts])
    end = np.concatenate([p[:, 1] for p, _ in parts])
    cols: dict[str, Any] = {
        "kind": np.concatenate([np.full(len(p), k, dtype=np.int8) for p, k in parts]),
        "name": np.concatenate(names),
        "device": np.concatenate([p[:, 2] for p, _ in parts]),
        "stream": np.concatenate([p[:, 3] for p, _ in parts]),
        "correlation": np.concatenate([p[:, 4] for p, _ in parts]),
    }
    for key in ("grid", "block", "regs", "shmem", "nbytes"):
        cols[key] = np.concatenate([e[key] for e in extra])
    if sync is not None and (sync[2] != NONE).any():
        cols["wait_stream"], cols["wait_corr"] = np.concatenate(wait_stream), np.concatenate(wait_corr)
    return Columns(start, end, cols)


SYNC_T = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
EVENT_T = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
_SYNC_COLS = ("start", "end", "contextId", "streamId", "correlationId", "type", "cudaEventId")


def _syncs(con: sqlite3.Connection, present: dict[str, set[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The synchronization records as rows shaped like the activity rows (start, end, device,
    stream, correlation, sync type), and per row the stream and correlation id of the event
    record it waited for: the last cudaEventRecord of its event before it (CUDA_EVENT rows, by
    event id and correlation order); NONE where it waited for no event or the record is missing."""
    if SYNC_T not in present or not set(_SYNC_COLS) <= present[SYNC_T]:
        return None
    r = _rows(con, f"SELECT {', '.join(_SYNC_COLS)} FROM {SYNC_T}", len(_SYNC_COLS))
    if not len(r):
        return None
    event = r[:, 6].copy()
    r = r[:, :6].copy()
    r[:, 2] = _context_device(con, present, r[:, 2])
    stream_of = np.full(len(r), NONE, dtype=np.int64)
    record = np.full(len(r), NONE, dtype=np.int64)
    ev_cols = ("correlationId", "streamId", "eventId")
    if EVENT_T in present and set(ev_cols) <= present[EVENT_T]:
        ev = _rows(con, f"SELECT {', '.join(ev_cols)} FROM {EVENT_T}", len(ev_cols))
        ev = ev[np.lexsort((ev[:, 0], ev[:, 2]))] if len(ev) else ev
        for i in np.flatnonzero(event >= 0).tolist():
            mine = ev[ev[:, 2] == event[i]]
            k = int(np.searchsorted(mine[:, 0], r[i, 4], side="left")) - 1
            if k >= 0:
                stream_of[i], record[i] = int(mine[k, 1]), int(mine[k, 0])
    return r, stream_of, record


def _context_device(con: sqlite3.Connection, present: dict[str, set[str]], ctx: np.ndarray) -> np.ndarray:
    """The device of each context id, as the kernels record them (0 where none does)."""
    pairs: dict[int, int] = {}
    for table in KERNEL_TABLES:
        if table in present and {"contextId", "deviceId"} <= present[table]:
            pairs.update((int(c), int(d)) for c, d in con.execute(f"SELECT DISTINCT contextId, deviceId FROM {table}"))
    return np.asarray([pairs.get(int(c), 0) for c in ctx.tolist()], dtype=np.int64)


def _no_launch(n: int) -> dict[str, np.ndarray]:
    # Copies and memsets have no launch configuration: grid/block 0, registers/shared memory unknown.
    return {
        "grid": np.zeros((n, 3), dtype=np.int64), "block": np.zeros((n, 3), dtype=np.int64),
        "regs": np.full(n, -1, dtype=np.int64), "shmem": np.full(n, -1, dtype=np.int64),
    }  # fmt: skip


def _named(strings: Strings, keys: np.ndarray, name: Any) -> np.ndarray:
    """Interned names of rows named by a few integer columns, one name per distinct key."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int32)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    mapped = np.asarray([strings.id(name(tuple(int(x) for x in u))) for u in uniq], dtype=np.int32)
    return mapped[inv.reshape(-1)]


@dataclass
class ApiCalls:
    start: np.ndarray  # ns
    end: np.ndarray
    pid: np.ndarray
    tid: np.ndarray  # unsigned 32-bit thread id, as nvprof's marker object ids carry it
    correlation: np.ndarray
    name: np.ndarray  # interned


def api_calls(con: sqlite3.Connection, present: dict[str, set[str]], strings: Strings) -> ApiCalls:
    """Runtime and driver API calls (a kernel's correlation id is on one or the other)."""
    cols = ("cbid", "start", "end", "processId", "threadId", "correlationId")
    parts: list[np.ndarray] = []
    names: list[np.ndarray] = []
    for table, namer in ((RUNTIME, runtime_name), (DRIVER, driver_name)):
        if table not in present or not set(cols) <= present[table]:
            continue
        r = _rows(con, f"SELECT {', '.join(cols)} FROM {table}", len(cols))
        parts.append(r)
        names.append(_named(strings, r[:, 0:1], lambda k, namer=namer: namer(k[0])))
    if not parts:
        e = np.zeros(0, dtype=np.int64)
        return ApiCalls(e, e, e, e, e, np.zeros(0, dtype=np.int32))
    r = np.concatenate(parts)
    return ApiCalls(r[:, 1], r[:, 2], r[:, 3], r[:, 4] & 0xFFFFFFFF, r[:, 5], np.concatenate(names))


def devices(con: sqlite3.Connection, present: dict[str, set[str]], ids: StringIds) -> dict[int, Device]:
    """`model.Device` per CUPTI device record (all NVIDIA: nvprof profiles CUDA only)."""
    cols = (
        "id", "name", "computeCapabilityMajor", "computeCapabilityMinor", "numMultiprocessors",
        "maxWarpsPerMultiprocessor", "numThreadsPerWarp", "maxRegistersPerMultiprocessor",
        "maxRegistersPerBlock", "maxSharedMemoryPerMultiprocessor", "maxSharedMemoryPerBlock",
        "maxBlocksPerMultiprocessor", "globalMemorySize",
    )  # fmt: skip
    if DEVICE_T not in present or not set(cols) <= present[DEVICE_T]:
        return {}
    out: dict[int, Device] = {}
    for row in con.execute(f"SELECT {', '.join(cols)} FROM {DEVICE_T}"):
        (dev, name, major, minor, sms, warps, warp, regs_sm, regs_blk, sh_sm, sh_blk, blocks, mem) = (
            int(v) if isinstance(v, int) else 0 for v in row
        )
        out[dev] = Device(
            id=dev,
            name=ids.text(name) or "",
            vendor="nvidia",
            sm_count=sms or None,
            compute_capability=(major, minor) if major else None,
            max_threads_per_sm=(warps * (warp or 32)) or None,
            regs_per_sm=regs_sm or None,
            regs_per_block=regs_blk or None,
            shared_mem_per_sm=sh_sm or None,
            shared_mem_per_block=sh_blk or None,
            max_blocks_per_sm=blocks or None,
            warp_size=warp or 32,
            total_memory=mem or None,
        )
    return out


__all__ = ["KERNEL_TABLES", "STRING_TABLE", "ApiCalls", "Columns", "StringIds", "api_calls", "devices", "gpu_rows"]
