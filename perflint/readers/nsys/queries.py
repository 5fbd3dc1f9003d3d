"""The export's tables as numpy columns: one bulk query per table, fetched in chunks.

Each query selects integers only (NULL as -1 via COALESCE), so a chunk of rows becomes one
(rows, columns) int64 array and the row tuples are dropped at once; nothing per row is kept.
Times stay integer nanoseconds here (the reader converts them once).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perflint.errors import InputError
from perflint.readers.nsys import schema as S
from perflint.readers.nsys.schema import Schema

CHUNK = 1 << 16
NULL = -1


def fetch(
    path: str, con: sqlite3.Connection, sql: str, dtypes: list[type], keep: Callable[[np.ndarray], np.ndarray] | None = None
) -> list[np.ndarray]:
    """The columns of `sql` (integers), one array per column in its dtype. Each chunk of rows is
    one transient int64 block, cast column by column, so the row tuples never pile up; `keep(block)`
    (a bool per row) drops rows chunk by chunk."""
    width = len(dtypes)
    parts: list[list[np.ndarray]] = [[] for _ in range(width)]
    try:
        cur = con.execute(sql)
        while True:
            rows = cur.fetchmany(CHUNK)
            if not rows:
                break
            block = np.array(rows, dtype=np.int64).reshape(len(rows), width)
            del rows
            if keep is not None:
                block = block[keep(block)]
            for i, dt in enumerate(dtypes):
                parts[i].append(block[:, i].astype(dt))
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, f"non-integer values where integers belong in: {sql.split(' FROM ')[-1]}") from None
    return [p[0] if len(p) == 1 else np.concatenate(p) if p else np.zeros(0, dtype=dt) for p, dt in zip(parts, dtypes)]


def _c(sc: Schema, table: str, *names: str, default: str = str(NULL)) -> str:
    """A select expression for the first of `names` the table has (NULL as -1), else `default`."""
    col = sc.col(table, *names)
    return f'COALESCE("{col}", {NULL})' if col else default


@dataclass
class Columns:
    """One table's columns by name (int64 arrays of equal length)."""

    cols: dict[str, np.ndarray]

    def __getitem__(self, k: str) -> np.ndarray:
        return self.cols[k]

    def __len__(self) -> int:
        return len(next(iter(self.cols.values()))) if self.cols else 0


# Columns that fit in 32 bits (ids, counts, launch dimensions); the rest stay int64.
_NARROW = {"device", "name", "regs", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "copy_kind",
           "src_kind", "dst_kind", "mem_kind", "sync_type"}  # fmt: skip


def _table(
    path: str, con: sqlite3.Connection, table: str, exprs: dict[str, str], keep: Callable[[np.ndarray], np.ndarray] | None = None
) -> Columns:
    sql = f"SELECT {', '.join(exprs.values())} FROM \"{table}\""
    cols = fetch(path, con, sql, [np.int32 if k in _NARROW else np.int64 for k in exprs], keep)
    return Columns(dict(zip(exprs, cols)))


def _common(sc: Schema, t: str) -> dict[str, str]:
    return {
        "start": '"start"', "end": '"end"', "device": _c(sc, t, "deviceId"), "stream": _c(sc, t, "streamId"),
        "correlation": _c(sc, t, "correlationId"), "pid": _c(sc, t, "globalPid"),
    }  # fmt: skip


def _packed(sc: Schema, t: str, fields: tuple[tuple[str, int], ...]) -> str:
    """One integer holding several small columns (NULL and absent as 0): fewer Python objects per
    fetched row. `fields` are (column, bit offset), unpacked by `unpack`."""
    parts = [f'(COALESCE("{c}", 0) << {shift})' for c, shift in fields if c in sc.cols(t)]
    return " | ".join(parts) or "0"


def unpack(packed: np.ndarray, shift: int, bits: int) -> np.ndarray:
    return (packed >> shift) & ((1 << bits) - 1)


# Launch dimensions: grid x < 2^31, y, z < 2^16; block x, y <= 1024, z <= 64; registers < 2^8
# per thread above shared memory bytes < 2^40.
GRID = (("gridX", 32), ("gridY", 16), ("gridZ", 0))
BLOCK = (("blockX", 42), ("blockY", 21), ("blockZ", 0))


def kernels(path: str, con: sqlite3.Connection, sc: Schema) -> Columns:
    t = S.KERNEL
    shm = " + ".join(f'COALESCE("{c}", 0)' for c in ("staticSharedMemory", "dynamicSharedMemory") if c in sc.cols(t))
    regs = '(COALESCE("registersPerThread", 0) << 40)' if "registersPerThread" in sc.cols(t) else "0"
    exprs = {
        **_common(sc, t), "name": _c(sc, t, sc.kernel_name), "grid": _packed(sc, t, GRID),
        "block": _packed(sc, t, BLOCK), "regs_shmem": f"{regs} | ({shm or 0})",
    }  # fmt: skip
    cols = _table(path, con, t, exprs)
    c = cols.cols
    grid, block, rs = c.pop("grid"), c.pop("block"), c.pop("regs_shmem")
    c.update({"gridX": unpack(grid, 32, 31), "gridY": unpack(grid, 16, 16), "gridZ": unpack(grid, 0, 16)})
    c.update({"blockX": unpack(block, 42, 21), "blockY": unpack(block, 21, 21), "blockZ": unpack(block, 0, 21)})
    regs_v = unpack(rs, 40, 16)
    c["regs"] = np.where(regs_v > 0, regs_v, NULL).astype(np.int32)
    c["shmem"] = unpack(rs, 0, 40) if shm else np.full(len(rs), NULL, np.int64)
    return cols


def memcpys(path: str, con: sqlite3.Connection, sc: Schema) -> Columns | None:
    t = S.MEMCPY
    if t not in sc.tables:
        return None
    exprs = {
        **_common(sc, t), "bytes": _c(sc, t, "bytes", default="0"), "copy_kind": _c(sc, t, "copyKind"),
        "src_kind": _c(sc, t, "srcKind"), "dst_kind": _c(sc, t, "dstKind"),
    }  # fmt: skip
    return _table(path, con, t, exprs)


def memsets(path: str, con: sqlite3.Connection, sc: Schema) -> Columns | None:
    t = S.MEMSET
    if t not in sc.tables:
        return None
    exprs = {**_common(sc, t), "bytes": _c(sc, t, "bytes", default="0"), "mem_kind": _c(sc, t, "memKind")}
    return _table(path, con, t, exprs)


def syncs(path: str, con: sqlite3.Connection, sc: Schema, calls: np.ndarray) -> Columns | None:
    """The synchronization records that no runtime call in `calls` (sorted correlation ids)
    already stands for. CUPTI writes one for each host wait (cudaStreamSynchronize,
    cudaEventSynchronize, cudaDeviceSynchronize, cudaStreamWaitEvent) with its call's correlation id
    and the call's interval: where that call is in the export, the record repeats it."""
    t = S.SYNC
    if t not in sc.tables:
        return None
    exprs = {**_common(sc, t), "sync_type": _c(sc, t, "syncType")}
    at = list(exprs).index("correlation")

    def unmatched(block: np.ndarray) -> np.ndarray:
        corr = block[:, at]
        i = np.minimum(np.searchsorted(calls, corr), max(len(calls) - 1, 0))
        return (corr < 0) | (calls[i] != corr) if len(calls) else np.ones(len(corr), bool)

    return _table(path, con, t, exprs, unmatched)


def runtime(path: str, con: sqlite3.Connection, sc: Schema) -> Columns | None:
    t = S.RUNTIME
    if not sc.has(t, "start", "end", "nameId"):
        return None
    exprs = {
        "start": '"start"', "end": '"end"', "tid": _c(sc, t, "globalTid"),
        "correlation": _c(sc, t, "correlationId"), "name": '"nameId"',
    }  # fmt: skip
    return _table(path, con, t, exprs)


def strings(path: str, con: sqlite3.Connection, sc: Schema, ids: np.ndarray) -> dict[int, str]:
    """The StringIds texts of `ids` (the distinct ids the tables reference)."""
    want = set(int(i) for i in np.unique(ids) if i >= 0)
    if not want:
        return {}
    sql = f'SELECT "{sc.string_id}", "{sc.string_text}" FROM "{S.STRINGS}"'
    try:
        return {int(k): str(v) for k, v in con.execute(sql) if k in want}
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None


def process_names(con: sqlite3.Connection, sc: Schema) -> dict[int, str]:
    """pid -> process name (PROCESSES), for the rank labels."""
    if not sc.has("PROCESSES", "pid", "name"):
        return {}
    try:
        return {int(p): str(n) for p, n in con.execute("SELECT pid, name FROM PROCESSES") if p is not None and n}
    except sqlite3.DatabaseError:
        return {}


__all__ = ["Columns", "fetch", "kernels", "memcpys", "memsets", "process_names", "runtime", "strings", "syncs"]
