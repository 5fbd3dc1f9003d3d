"""The export's tables as numpy columns: one bulk query per table, fetched in chunks.

Each query selects integers only (NULL as -1 via COALESCE), so a chunk of rows becomes one
(rows, columns) int64 array and the row tuples are dropped at once; each chunk is converted to
the model's columns (times in µs, launch dimensions unpacked) and written into columns allocated
once, so no table is held twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import numpy as np

from perflint.errors import InputError
from perflint.model import GPU_SYNC, KERNEL, MEMCPY, MEMSET
from perflint.readers.nsys import schema as S
from perflint.readers.nsys.schema import Schema
from perflint.readers.tables import ID32_COLUMNS

CHUNK = 1 << 16
NULL = -1
_I32 = np.iinfo(np.int32)
NO_STREAM = 0xFFFFFFFF  # CUPTI's "no stream" (device-wide sync records)

# A chunk of fetched rows (one int64 block, rows x selected columns) -> its output columns.
Convert = Callable[[np.ndarray], dict[str, np.ndarray]]
# column -> (dtype, trailing shape)
Spec = dict[str, tuple[type, tuple[int, ...]]]


class Sink:
    """Output columns filled chunk by chunk. They are allocated once for an upper bound of the
    rows (pages never written are never resident) and shrunk in place at the end, so a table is
    never held twice: no list of chunks to concatenate, no int64 copy beside the final column."""

    def __init__(self, spec: Spec, rows: int) -> None:
        self.spec = spec
        self.cols: dict[str, np.ndarray] = {k: np.empty((max(rows, 1), *shape), dt) for k, (dt, shape) in spec.items()}
        self.n = 0

    def put(self, chunk: dict[str, np.ndarray]) -> None:
        k = len(next(iter(chunk.values())))
        end = self.n + k
        cap = len(next(iter(self.cols.values())))
        if end > cap:  # only if the bound was wrong: grow by doubling
            grown = max(end, 2 * cap)
            for name, arr in self.cols.items():
                arr.resize((grown, *arr.shape[1:]), refcheck=False)
        for name, v in chunk.items():
            col = self.cols[name]
            # CUPTI's correlation and stream ids are unsigned 32-bit: int32 (half the bytes) while
            # they fit in it, int64 from the first value that does not.
            if name in ID32_COLUMNS and col.dtype == np.int32 and len(v) and (v.min() < _I32.min or v.max() > _I32.max):
                col = self.cols[name] = col.astype(np.int64)  # 32 bits no longer hold them
            col[self.n : end] = v
        self.n = end

    def done(self) -> dict[str, np.ndarray]:
        for arr in self.cols.values():
            arr.resize((self.n, *arr.shape[1:]), refcheck=False)
        return self.cols


def capacity(path: str, con: sqlite3.Connection, table: str) -> int:
    """An upper bound of the table's rows: its largest rowid (export tables are rowid tables with
    ids from 1), in one b-tree descent instead of a count over every row."""
    try:
        got = con.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
    return max(int(got or 0), 0)


def fill(
    path: str, con: sqlite3.Connection, sql: str, sink: Sink, convert: Convert, keep: Callable[[np.ndarray], np.ndarray] | None = None
) -> int:
    """The rows of `sql` (integers) into `sink`, chunk by chunk through `convert`; `keep(block)` (a
    bool per row) drops rows first. Returns the rows added."""
    before = sink.n
    try:
        cur = con.execute(sql)
        width = len(cur.description)
        while True:
            rows = cur.fetchmany(CHUNK)
            if not rows:
                break
            block = np.array(rows, dtype=np.int64).reshape(len(rows), width)
            del rows
            if keep is not None:
                block = block[keep(block)]
            if len(block):
                sink.put(convert(block))
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, f"non-integer values where integers belong in: {sql.split(' FROM ')[-1]}") from None
    return sink.n - before


def fetch(path: str, con: sqlite3.Connection, sql: str, dtypes: list[type], rows: int = CHUNK) -> list[np.ndarray]:
    """The columns of `sql` (integers), one array per column in its dtype; `rows`: a guess."""
    spec: Spec = {str(i): (dt, ()) for i, dt in enumerate(dtypes)}
    sink = Sink(spec, rows)
    fill(path, con, sql, sink, lambda b: {str(i): b[:, i] for i in range(len(dtypes))})
    return list(sink.done().values())


def _c(sc: Schema, table: str, *names: str, default: str = str(NULL)) -> str:
    """A select expression for the first of `names` the table has (NULL as -1), else `default`."""
    col = sc.col(table, *names)
    return f'COALESCE("{col}", {NULL})' if col else default


def _times(b: np.ndarray) -> dict[str, np.ndarray]:
    """Columns 0 and 1 (start, end in ns) as the model's ts and dur in µs."""
    return {"ts": b[:, 0] / 1000.0, "dur": (b[:, 1] - b[:, 0]) / 1000.0}


def _common(sc: Schema, t: str) -> str:
    """start, end, device, stream, correlation, pid: columns 0-5 of every activity query."""
    return ", ".join((
        '"start"', '"end"', _c(sc, t, "deviceId"), _c(sc, t, "streamId"), _c(sc, t, "correlationId"),
        _c(sc, t, "globalPid"),
    ))  # fmt: skip


# The GPU rows of every activity table, in the model's dtypes. `pid` is the process (24 bits; -1
# unknown), `name` the format's own key until the reader maps it to a string id.
GPU_SPEC: Spec = {
    "kind": (np.int8, ()), "name": (np.int32, ()), "device": (np.int32, ()), "stream": (np.int32, ()),
    "ts": (np.float64, ()), "dur": (np.float64, ()), "correlation": (np.int32, ()), "pid": (np.int32, ()),
    "grid": (np.int32, (3,)), "block": (np.int32, (3,)), "regs": (np.int32, ()), "shmem": (np.int32, ()),
    "nbytes": (np.int64, ()),
}  # fmt: skip


def _activity(kind: int, b: np.ndarray) -> dict[str, np.ndarray]:
    stream = b[:, 3]
    pid = b[:, 5]
    return {
        **_times(b), "kind": np.full(len(b), kind, np.int8), "device": b[:, 2],
        "stream": np.where(stream == NO_STREAM, NULL, stream), "correlation": b[:, 4],
        "pid": np.where(pid >= 0, (pid >> 24) & 0xFFFFFF, NULL),
    }  # fmt: skip


def _no_launch(b: np.ndarray, nbytes: np.ndarray | int = 0) -> dict[str, np.ndarray]:
    n = len(b)
    return {"grid": np.zeros((n, 3), np.int32), "block": np.zeros((n, 3), np.int32), "regs": np.full(n, NULL, np.int32),
            "shmem": np.full(n, NULL, np.int32), "nbytes": np.broadcast_to(np.int64(nbytes), n) if isinstance(nbytes, int) else nbytes}  # fmt: skip


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


def _shmem(v: np.ndarray) -> np.ndarray:
    return np.where(v <= 2**31 - 1, v, NULL)  # bytes per block: more is no GPU's, unknown


def kernels(path: str, con: sqlite3.Connection, sc: Schema, sink: Sink) -> tuple[int, int]:
    """The kernel rows into `sink` (name: the StringIds id); (first row, rows)."""
    t = S.KERNEL
    shm = " + ".join(f'COALESCE("{c}", 0)' for c in ("staticSharedMemory", "dynamicSharedMemory") if c in sc.cols(t))
    regs = '(COALESCE("registersPerThread", 0) << 40)' if "registersPerThread" in sc.cols(t) else "0"
    sql = (f'SELECT {_common(sc, t)}, {_c(sc, t, sc.kernel_name)}, {_packed(sc, t, GRID)}, {_packed(sc, t, BLOCK)}, '
           f'{regs} | ({shm or 0}) FROM "{t}"')  # fmt: skip

    def convert(b: np.ndarray) -> dict[str, np.ndarray]:
        grid, block, rs = b[:, 7], b[:, 8], b[:, 9]
        regs_v = unpack(rs, 40, 16)
        return {
            **_activity(KERNEL, b), "name": b[:, 6],
            "grid": np.stack([unpack(grid, 32, 31), unpack(grid, 16, 16), unpack(grid, 0, 16)], axis=1),
            "block": np.stack([unpack(block, 42, 21), unpack(block, 21, 21), unpack(block, 0, 21)], axis=1),
            "regs": np.where(regs_v > 0, regs_v, NULL), "shmem": _shmem(unpack(rs, 0, 40)) if shm else np.full(len(b), NULL),
            "nbytes": np.zeros(len(b), np.int64),
        }  # fmt: skip

    first = sink.n
    return first, fill(path, con, sql, sink, convert)


def memcpys(path: str, con: sqlite3.Connection, sc: Schema, sink: Sink) -> tuple[int, int]:
    """The copies into `sink` (name: copy kind * 4096 + (source kind + 1) * 64 + destination kind + 1)."""
    t = S.MEMCPY
    if t not in sc.tables:
        return sink.n, 0
    sql = (f'SELECT {_common(sc, t)}, {_c(sc, t, "bytes", default="0")}, {_c(sc, t, "copyKind")}, '
           f'{_c(sc, t, "srcKind")}, {_c(sc, t, "dstKind")} FROM "{t}"')  # fmt: skip

    def convert(b: np.ndarray) -> dict[str, np.ndarray]:
        code = (b[:, 7] + 1) * 4096 + (b[:, 8] + 1) * 64 + (b[:, 9] + 1)
        return {**_activity(MEMCPY, b), **_no_launch(b, b[:, 6]), "name": code}

    first = sink.n
    return first, fill(path, con, sql, sink, convert)


def memsets(path: str, con: sqlite3.Connection, sc: Schema, sink: Sink) -> tuple[int, int]:
    """The memsets into `sink` (name: the memory kind)."""
    t = S.MEMSET
    if t not in sc.tables:
        return sink.n, 0
    sql = f'SELECT {_common(sc, t)}, {_c(sc, t, "bytes", default="0")}, {_c(sc, t, "memKind")} FROM "{t}"'
    first = sink.n
    return first, fill(path, con, sql, sink, lambda b: {**_activity(MEMSET, b), **_no_launch(b, b[:, 6]), "name": b[:, 7]})


def event_waits(path: str, con: sqlite3.Connection, sc: Schema) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The waits for an event whose record the export holds: per synchronization record of an
    event (event synchronize, stream wait), its correlation id, and the stream and correlation
    id of the cudaEventRecord it waited for (eventSyncId links the two, sorted by the first)."""
    empty = np.zeros(0, np.int64)
    if not (sc.has(S.SYNC, "eventSyncId", "correlationId", "syncType") and sc.has(S.CUDA_EVENT, "eventSyncId", "correlationId", "streamId")):
        return empty, empty, empty
    pid = 'AND e."globalPid" IS s."globalPid"' if sc.has(S.SYNC, "globalPid") and sc.has(S.CUDA_EVENT, "globalPid") else ""
    sql = (
        f'SELECT s."correlationId", e."streamId", e."correlationId" FROM "{S.SYNC}" s JOIN "{S.CUDA_EVENT}" e '
        f'ON e."eventSyncId" = s."eventSyncId" {pid} WHERE s."syncType" IN (1, 2) AND s."correlationId" IS NOT NULL '
        f'AND e."correlationId" IS NOT NULL ORDER BY s."correlationId"'
    )
    try:
        rows = np.asarray(con.execute(sql).fetchall(), np.int64).reshape(-1, 3)
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
    return rows[:, 0], rows[:, 1], rows[:, 2]


def syncs(path: str, con: sqlite3.Connection, sc: Schema, sink: Sink, calls: np.ndarray, keep: np.ndarray) -> tuple[int, int]:
    """The synchronization records that no runtime call in `calls` (sorted correlation ids)
    already stands for (name: the sync type), and those of the waits in `keep` (sorted
    correlation ids: event waits, whose record says what the call does not). CUPTI writes one
    for each host wait (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize,
    cudaStreamWaitEvent) with its call's correlation id and the call's interval: where that call
    is in the export, the record repeats it."""
    t = S.SYNC
    if t not in sc.tables:
        return sink.n, 0

    def unmatched(corr: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.ones(len(corr), bool)
        if len(calls):
            i = np.minimum(np.searchsorted(calls, corr), len(calls) - 1)
            out = (corr < 0) | (calls[i] != corr)
        if len(keep):
            j = np.minimum(np.searchsorted(keep, corr), len(keep) - 1)
            out |= keep[j] == corr
        return out

    if len(calls) and not len(keep):
        # Usually every record repeats a call in the export: their ids alone tell, one column
        # fetched instead of seven.
        (corr,) = fetch(path, con, f'SELECT {_c(sc, t, "correlationId")} FROM "{t}"', [np.int64], capacity(path, con, t))
        if not unmatched(corr).any():
            return sink.n, 0
        del corr
    sql = f'SELECT {_common(sc, t)}, {_c(sc, t, "syncType")} FROM "{t}"'

    first = sink.n
    return first, fill(path, con, sql, sink, lambda b: {**_activity(GPU_SYNC, b), **_no_launch(b), "name": b[:, 6]}, lambda b: unmatched(b[:, 4]))


RUNTIME_SPEC: Spec = {
    "ts": (np.float64, ()), "dur": (np.float64, ()), "correlation": (np.int32, ()), "name": (np.int32, ()),
    "thread": (np.int32, ()),
}  # fmt: skip


def runtime(path: str, con: sqlite3.Connection, sc: Schema, thread_of: Callable[[np.ndarray], np.ndarray]) -> dict[str, np.ndarray] | None:
    """The runtime calls (name: the StringIds id; thread: `thread_of(globalTid values)`)."""
    t = S.RUNTIME
    if not sc.has(t, "start", "end", "nameId"):
        return None
    sql = f'SELECT "start", "end", {_c(sc, t, "globalTid")}, {_c(sc, t, "correlationId")}, "nameId" FROM "{t}"'
    sink = Sink(RUNTIME_SPEC, capacity(path, con, t))
    fill(path, con, sql, sink, lambda b: {**_times(b), "thread": thread_of(b[:, 2]), "correlation": b[:, 3], "name": b[:, 4]})
    return sink.done()


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


__all__ = [
    "GPU_SPEC", "Sink", "capacity", "event_waits", "fetch", "fill", "kernels", "memcpys", "memsets", "process_names", "runtime", "strings",
    "syncs",
]  # fmt: skip
