"""The export's tables as numpy columns: one bulk query per table, fetched in chunks.

Each query selects integers only (NULL as -1 via COALESCE), so a chunk of rows becomes one
(rows, columns) int64 array and the row tuples are dropped at once; nothing per row is kept.
Times stay integer nanoseconds here (the reader converts them once).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from perflint.errors import InputError
from perflint.readers.nsys import schema as S
from perflint.readers.nsys.schema import Schema

CHUNK = 1 << 16
NULL = -1


def fetch(path: str, con: sqlite3.Connection, sql: str, width: int) -> np.ndarray:
    """The rows of `sql` (integer columns) as an int64 array of shape (rows, width)."""
    parts: list[np.ndarray] = []
    try:
        cur = con.execute(sql)
        while True:
            rows = cur.fetchmany(CHUNK)
            if not rows:
                break
            parts.append(np.array(rows, dtype=np.int64).reshape(len(rows), width))
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, f"non-integer values where integers belong in: {sql.split(' FROM ')[-1]}") from None
    if not parts:
        return np.zeros((0, width), dtype=np.int64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


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


def _table(path: str, con: sqlite3.Connection, table: str, exprs: dict[str, str]) -> Columns:
    sql = f"SELECT {', '.join(exprs.values())} FROM \"{table}\""
    arr = fetch(path, con, sql, len(exprs))
    return Columns({k: arr[:, i] for i, k in enumerate(exprs)})


def _common(sc: Schema, t: str) -> dict[str, str]:
    return {
        "start": '"start"', "end": '"end"', "device": _c(sc, t, "deviceId"), "stream": _c(sc, t, "streamId"),
        "correlation": _c(sc, t, "correlationId"), "pid": _c(sc, t, "globalPid"),
    }  # fmt: skip


def kernels(path: str, con: sqlite3.Connection, sc: Schema) -> Columns:
    t = S.KERNEL
    shm = " + ".join(f'COALESCE("{c}", 0)' for c in ("staticSharedMemory", "dynamicSharedMemory") if c in sc.cols(t))
    exprs = {
        **_common(sc, t), "name": _c(sc, t, sc.kernel_name),
        **{k: _c(sc, t, k, default="0") for k in ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")},
        "regs": _c(sc, t, "registersPerThread"), "shmem": shm or str(NULL),
    }  # fmt: skip
    return _table(path, con, t, exprs)


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


def syncs(path: str, con: sqlite3.Connection, sc: Schema) -> Columns | None:
    t = S.SYNC
    if t not in sc.tables:
        return None
    return _table(path, con, t, {**_common(sc, t), "sync_type": _c(sc, t, "syncType")})


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
