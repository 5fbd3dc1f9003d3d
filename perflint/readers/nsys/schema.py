"""Which Nsight Systems export this is: its tables and columns, and where each datum lives.

Exports from nsys 2021 to 2025 hold the same data under a few different names: the kernel name
is `demangledName` (2021+), `shortName` or `mangledName`; NVTX text is inline (`text`) or a
`StringIds` reference (`textId`, later versions); device properties are in `TARGET_INFO_GPU`
(2021+) with `TARGET_INFO_CUDA_DEVICE` mapping a process's CUDA device to it where the export has
it; the `ENUM_*` tables that label copy kinds are missing from older exports (the values are
CUPTI's enums either way). `Schema` records which names this file uses, once, so the queries
never guess.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from perflint.errors import InputError

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
CUDA_EVENT = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"  # event records (nsys --cuda-event-trace)
NVTX = "NVTX_EVENTS"
GPU_INFO = "TARGET_INFO_GPU"
CUDA_DEVICE = "TARGET_INFO_CUDA_DEVICE"
STRINGS = "StringIds"

NO_KERNEL_TABLE = f"Nsight Systems export without a kernel table ({KERNEL}): was the profile recorded with --trace=cuda?"


def is_nsys(tables: dict[str, set[str]]) -> bool:
    """An Nsight Systems export: its string table (nvprof's is `StringTable`) and an activity,
    NVTX or target-info table."""
    if STRINGS not in tables:
        return False
    return any(t.startswith(("CUPTI_ACTIVITY_KIND_", "TARGET_INFO_")) or t == NVTX for t in tables)


def _first(cols: set[str], *names: str) -> str | None:
    return next((n for n in names if n in cols), None)


@dataclass(frozen=True)
class Schema:
    tables: dict[str, set[str]]
    version: str | None  # EXPORT_SCHEMA_VERSION, when the export records it
    product: str | None  # EXPORT_PRODUCT_VERSION (the nsys release)
    string_id: str  # StringIds' key column
    string_text: str  # StringIds' text column
    kernel_name: str  # the kernel table's name column (a StringIds reference)

    def cols(self, table: str) -> set[str]:
        return self.tables.get(table, set())

    def has(self, table: str, *columns: str) -> bool:
        return table in self.tables and all(c in self.tables[table] for c in columns)

    def col(self, table: str, *names: str) -> str | None:
        """The first of `names` that `table` has."""
        return _first(self.cols(table), *names)


def detect(path: str, con: sqlite3.Connection) -> Schema:
    """The schema of the export open in `con`; InputError when it is no Nsight Systems export
    perflint can read (another application's database, no kernel table)."""
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
        tables = {n: {r[1] for r in con.execute(f'PRAGMA table_info("{n}")')} for n in names}
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
    if not is_nsys(tables):
        from perflint.readers.sqlite import describe_other

        raise InputError(path, describe_other(path))
    if KERNEL not in tables:
        raise InputError(path, NO_KERNEL_TABLE)
    s_cols = tables[STRINGS]
    sid = _first(s_cols, "id", "_id_")
    stext = _first(s_cols, "value", "string", "text")
    kname = _first(tables[KERNEL], "demangledName", "shortName", "mangledName", "name")
    if sid is None or stext is None:
        raise InputError(path, f"{STRINGS} table without id/value columns (has {', '.join(sorted(s_cols))})")
    if kname is None or not {"start", "end"} <= tables[KERNEL]:
        raise InputError(path, f"{KERNEL} table without start/end/name columns")
    meta: dict[str, str] = {}
    if "META_DATA_EXPORT" in tables:
        try:
            meta = {str(k): str(v) for k, v in con.execute("SELECT name, value FROM META_DATA_EXPORT")}
        except sqlite3.DatabaseError:
            meta = {}
    return Schema(
        tables=tables,
        version=meta.get("EXPORT_SCHEMA_VERSION"),
        product=meta.get("EXPORT_PRODUCT_VERSION"),
        string_id=sid,
        string_text=stext,
        kernel_name=kname,
    )


__all__ = ["NO_KERNEL_TABLE", "Schema", "detect", "is_nsys"]
