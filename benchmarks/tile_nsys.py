#!/usr/bin/env python3
"""Tile an Nsight Systems SQLite export in time, to any size (the nsys counterpart of
../shared/tools/scale_trace.py for Kineto JSON).

    python benchmarks/tile_nsys.py SOURCE.sqlite BIG.sqlite --target-mb 1000

The output starts as a copy of SOURCE; then the activity rows (CUDA kernels, runtime calls,
copies, memsets, syncs, NVTX ranges) are doubled until the file nears the target (the last round
adds only the copies still wanted): each new
copy is shifted in time by the span of what is already there, so copies never overlap, and gets
fresh correlation ids (shifted by the same stride for every table, so each kernel still meets
its own launch). StringIds, device and process tables are kept once. Per-copy counts are exact
multiples of the source's.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sqlite3

TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS",
)  # fmt: skip
SHIFTED = {"start", "end"}
IDS = {"correlationId"}


def _columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def tile(source: str, out: str, target_bytes: int) -> int:
    """Write the tiled export to `out`; the number of copies it holds."""
    shutil.copyfile(source, out)
    con = sqlite3.connect(out)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables = [t for t in TABLES if t in names]
    lo = min(con.execute(f'SELECT min("start") FROM "{t}"').fetchone()[0] or 0 for t in tables)
    hi = max(con.execute(f'SELECT max("end") FROM "{t}"').fetchone()[0] or 0 for t in tables)
    span = hi - lo + 1_000_000  # 1 ms between copies
    stride = max(
        (con.execute(f'SELECT max("correlationId") FROM "{t}"').fetchone()[0] or 0
         for t in tables if "correlationId" in _columns(con, t)),
        default=0,
    ) + 1  # fmt: skip
    first = {t: con.execute(f'SELECT max(rowid) FROM "{t}"').fetchone()[0] or 0 for t in tables}
    base = os.path.getsize(out)
    copies = 1
    while os.path.getsize(out) < target_bytes:
        # Double (every copy so far again, after all of them), or add just the copies still wanted.
        size = os.path.getsize(out)
        per_copy = (size - base) / (copies - 1) if copies > 1 else None
        add = copies if per_copy is None else min(copies, max(1, math.ceil((target_bytes - size) / per_copy)))
        for t in tables:
            cols = _columns(con, t)
            exprs = [
                f'"{c}" + {copies * span}' if c in SHIFTED else
                f'CASE WHEN "{c}" > 0 THEN "{c}" + {copies * stride} ELSE "{c}" END' if c in IDS else f'"{c}"'
                for c in cols
            ]  # fmt: skip
            n = first[t] * add  # rows are in rowid order, copy after copy
            quoted = ", ".join(f'"{c}"' for c in cols)
            con.execute(f'INSERT INTO "{t}" ({quoted}) SELECT {", ".join(exprs)} FROM "{t}" WHERE rowid <= {n}')
        con.commit()
        copies += add
    con.close()
    return copies


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--target-mb", type=float, default=1000.0, help="stop doubling once the file is this big (10^6 bytes)")
    args = ap.parse_args(argv)
    copies = tile(args.source, args.out, int(args.target_mb * 1e6))
    print(f"{args.out}: {copies} copies, {os.path.getsize(args.out) / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
