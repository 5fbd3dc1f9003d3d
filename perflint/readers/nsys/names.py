"""Names of copies, memsets, syncs and runtime calls, spelled as Kineto spells them so that facts
read every format alike: "Memcpy HtoD (Pageable -> Device)", "Memset (Device)", "Context Sync"
(the export's `syncType`, as Kineto names CUPTI's), "cudaLaunchKernel".

Exports label copy and memory kinds in `ENUM_CUDA_MEMCPY_OPER` / `ENUM_CUDA_MEM_KIND` (read when
present); older exports lack those tables and use the same values, written out below.
"""

from __future__ import annotations

import re
import sqlite3

from perflint.model import CUPTI_SYNC_NAMES

# ENUM_CUDA_MEMCPY_OPER ids -> Kineto's direction words.
_COPY = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD",
         9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD"}  # fmt: skip
# ENUM_CUDA_MEM_KIND ids -> labels (the export's own numbering, not CUPTI's).
_MEM = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
        6: "Managed Static", 7: "Unknown"}  # fmt: skip
# ENUM_CUPTI_SYNC_TYPE ids -> Kineto's cuda_sync names.
_SYNC = CUPTI_SYNC_NAMES
_DIR = re.compile(r"CUDA_MEMCPY_KIND_(?:UVM_)?([A-Z]+)$")
_VERSION = re.compile(r"_v\d+$")


def _enum(con: sqlite3.Connection, tables: set[str], table: str) -> dict[int, tuple[str, str]]:
    if table not in tables:
        return {}
    try:
        return {int(i): (str(n), str(lab)) for i, n, lab in con.execute(f'SELECT id, name, label FROM "{table}"')}
    except (sqlite3.DatabaseError, TypeError, ValueError):
        return {}


class Labels:
    """The export's enum labels, read once."""

    def __init__(self, con: sqlite3.Connection, tables: set[str]) -> None:
        self.copy = dict(_COPY)
        for i, (name, _) in _enum(con, tables, "ENUM_CUDA_MEMCPY_OPER").items():
            m = _DIR.search(name)
            if m and "TO" in m.group(1):  # HTOD -> HtoD
                word = m.group(1)
                self.copy[i] = word[0] + word[1:].replace("TO", "to", 1)
        self.mem = dict(_MEM)
        for i, (_, label) in _enum(con, tables, "ENUM_CUDA_MEM_KIND").items():
            self.mem[i] = label
        self.sync = dict(_SYNC)

    def memcpy(self, copy_kind: int, src: int, dst: int) -> str:
        direction = self.copy.get(copy_kind, "Unknown")
        if src < 0 or dst < 0:
            return f"Memcpy {direction}"
        return f"Memcpy {direction} ({self.mem.get(src, 'Unknown')} -> {self.mem.get(dst, 'Unknown')})"

    def memset(self, mem_kind: int) -> str:
        return f"Memset ({self.mem.get(mem_kind, 'Unknown')})" if mem_kind >= 0 else "Memset"

    def sync_name(self, sync_type: int) -> str:
        return self.sync.get(sync_type, "Unknown Sync")


def runtime_name(api: str) -> str:
    """A runtime entry point as Kineto names it: without the `_v3020`-style version suffix (the
    per-thread-stream `_ptsz` / `_ptds` forms stay: they are different calls)."""
    return _VERSION.sub("", api)


__all__ = ["Labels", "runtime_name"]
