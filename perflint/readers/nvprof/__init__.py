"""nvprof SQLite databases (`nvprof -o net.sql`), with pyprof's and emit_nvtx's NVTX markers as ops.

`tables` reads the CUPTI tables (kernels, copies, memsets, runtime/driver calls, devices),
`apis` names the API callback ids, `markers` pairs and classifies the NVTX ranges, `ops` turns
them into the op layer. One database is one process's profile: one trace.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from perflint.errors import InputError
from perflint.model import KERNEL, Trace
from perflint.readers import sqlite
from perflint.readers.nvprof.markers import read_ranges
from perflint.readers.nvprof.ops import op_columns
from perflint.readers.nvprof.tables import KERNEL_TABLES, STRING_TABLE, StringIds, api_calls, devices, gpu_rows
from perflint.readers.protocol import Reader, ReadOptions
from perflint.readers.tables import Strings, Threads, build_trace


def is_nvprof(found: dict[str, set[str]] | None) -> bool:
    """nvprof's tables: its StringTable and CUPTI activity tables (a database without a kernel
    table is still nvprof's: reading it says what is missing)."""
    return found is not None and STRING_TABLE in found and any(t.startswith("CUPTI_ACTIVITY_KIND_") for t in found)


class NvprofReader(Reader):
    name = "nvprof"
    title = "nvprof database"
    # nvprof writes whatever -o names; pyprof's documentation uses .sql, the Visual Profiler .nvvp.
    suffixes = (".sql", ".nvvp")

    def sniff(self, path: str, head: bytes) -> bool:
        return sqlite.is_sqlite(head) and is_nvprof(sqlite.tables(path))

    def read(self, path: str, options: ReadOptions) -> list[Trace]:
        return [read_nvprof(path)]


def read_nvprof(path: str) -> Trace:
    found = sqlite.tables(path)
    if found is None:
        raise InputError(path, "corrupt or truncated SQLite database (its schema cannot be read)")
    if STRING_TABLE not in found:
        raise InputError(path, sqlite.describe_other(path))
    if not any(t in found for t in KERNEL_TABLES):
        raise InputError(path, "nvprof database without a kernel table (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL or _KERNEL): profile with kernel tracing on")
    con = sqlite.connect(path)
    try:
        return _read(path, con, found)
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
    finally:
        con.close()


def _read(path: str, con: sqlite3.Connection, found: dict[str, set[str]]) -> Trace:
    strings, threads = Strings(), Threads()
    ids = StringIds(con, strings)
    g = gpu_rows(con, found, ids)
    api = api_calls(con, found, strings)
    ranges = read_ranges(con, found, ids.values)
    starts = [a.min() for a in (g.start, api.start, ranges.start) if len(a)]
    origin = int(min(starts)) if starts else 0  # times relative to the profile's first event keep ns precision in float µs
    warnings: list[str] = []
    ops, malformed = op_columns(ranges, ids.values, strings, threads, origin)
    if malformed:
        warnings.append(f"{malformed} NVTX marker name(s) look like pyprof markers but are not Python literals: kept as plain range names")
    if ranges.unclosed:
        warnings.append(f"{ranges.unclosed} NVTX range(s) without an end ignored")
    bad = g.end < g.start
    if bad.any():
        warnings.append(f"{int(bad.sum())} GPU activity record(s) ending before they start: duration taken as 0")
    gpu = dict(g.cols)
    gpu["ts"] = (g.start - origin) / 1000.0
    gpu["dur"] = np.maximum(g.end - g.start, 0) / 1000.0
    rt_thread = np.asarray([threads.id(p, t) for p, t in _pairs(api.pid, api.tid)], dtype=np.int32)[_pair_index(api.pid, api.tid)]
    runtime = {
        "name": api.name,
        "thread": rt_thread,
        "ts": (api.start - origin) / 1000.0,
        "dur": np.maximum(api.end - api.start, 0) / 1000.0,
        "correlation": api.correlation,
    }
    # nvprof records per-kernel SM efficiency and achieved occupancy only as --metrics counters.
    warnings.append("nvprof database: no per-kernel SM efficiency or achieved occupancy recorded (summary gpu.sm_efficiency_pct and achieved_occupancy_pct are null)")
    if not (g.cols.get("kind", np.zeros(0)) == KERNEL).any():
        warnings.append("the database holds no kernel records")
    return build_trace(
        path, "nvprof", strings, threads, ops=ops, runtime=runtime, gpu=gpu, devices=devices(con, found, ids),
        meta={"time_origin_ns": origin}, warnings=warnings, recording=RECORDING,
    )  # fmt: skip


# What an nvprof database may lack, in nvprof's and pyprof's terms (Trace.recording).
RECORDING = {
    "steps": "ProfilerStep#N NVTX ranges",
    "steps_hint": "mark each iteration with an NVTX range",
    "steps_fix": (
        "Mark each training/inference iteration with an NVTX range named ProfilerStep#N "
        "(torch.cuda.nvtx.range_push(f'ProfilerStep#{i}') / range_pop()) inside the profiled region."
    ),
    "shapes": "operator input shapes (pyprof markers or emit_nvtx ranges with sizes)",
    "shapes_hint": "profile with pyprof.init() or emit_nvtx(record_shapes=True)",
    "shapes_fix": "Call pyprof.init() before the model runs, or wrap the profiled iterations in torch.autograd.profiler.emit_nvtx(record_shapes=True).",
    "device": "device properties (CUPTI_ACTIVITY_KIND_DEVICE)",
    "device_hint": "a database without the device table",
    "device_fix": "Keep nvprof's whole database: its CUPTI_ACTIVITY_KIND_DEVICE table holds the GPU's properties.",
    "memory": "memory allocation events",
    "memory_hint": "nvprof does not record allocations",
}


def _pairs(pid: np.ndarray, tid: np.ndarray) -> list[tuple[int, int]]:
    if len(pid) == 0:
        return []
    u = np.unique(np.stack([pid, tid], axis=1), axis=0)
    return [(int(a), int(b)) for a, b in u]


def _pair_index(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    if len(pid) == 0:
        return np.zeros(0, dtype=np.int64)
    _, inv = np.unique(np.stack([pid, tid], axis=1), axis=0, return_inverse=True)
    return inv.reshape(-1)


__all__ = ["NvprofReader", "is_nvprof", "read_nvprof"]
