"""GPU outputs: `gpu_timeline_display_{dev}.json`, a Chrome-trace list where thread "Ops" holds the
ops (by full name) and the other threads (CUDA streams) the kernels and copies, with args
`op_full_name`, `block_dim` and `grid_dim` ("x,y,z"). The per-op and per-kernel CSVs
(`gpu_op_detail_info`, `gpu_op_type_info`, `gpu_activity_data`) are aggregates of the same
timeline and are only checked for their header."""

from __future__ import annotations

import os
from typing import Any

from perflint.errors import InputError
from perflint.model import KERNEL, MEMCPY, MEMSET
from perflint.readers.mindspore.columns import Columns, op_type
from perflint.readers.mindspore.table import json_events, rows

CSV_COLUMNS = {
    "gpu_op_detail": ("op_side", "op_type", "op_name", "op_full_name", "op_occurrences", "op_total_time"),
    "gpu_op_type": ("op_type",),
    "gpu_activity": ("name", "type", "op_full_name", "stream_id", "block_dim", "grid_dim"),
}
_DIRECTIONS = ("HtoD", "DtoH", "DtoD", "HtoH")


def _dim3(v: Any) -> tuple[int, int, int]:
    if not isinstance(v, str):
        return (0, 0, 0)
    parts = [p.strip() for p in v.split(",")]
    try:
        got = [int(p) for p in parts][:3]
    except ValueError:
        return (0, 0, 0)
    return tuple(got + [1] * (3 - len(got)))  # type: ignore[return-value]


def _kind(name: str, api: str) -> tuple[int, str]:
    """(GPU kind, name): copies and sets are named as Kineto names them ("Memcpy HtoD ...")."""
    text = f"{api} {name}"
    if "memcpy" in text.lower():
        d = next((d for d in _DIRECTIONS if d in text), "")
        return MEMCPY, f"Memcpy {d}".strip()
    if "memset" in text.lower():
        return MEMSET, "Memset (Device)"
    return KERNEL, name


def read_gpu(files: dict[str, str], dev: int, cols: Columns) -> str:
    for fam, need in CSV_COLUMNS.items():
        if fam in files:
            rows(files[fam], need)
    path = files.get("gpu_timeline")
    if path is None:
        some = next(iter(files.values()))
        raise InputError(os.path.dirname(some), f"missing gpu_timeline_display_{dev}.json: device {dev} has no kernel timeline")
    for e in json_events(path):
        if e.get("ph") != "X":
            continue
        try:
            ts, dur = float(e["ts"]), float(e["dur"])  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError):
            raise InputError(path, f"{os.path.basename(path)}: an event without numeric ts/dur ({str(e.get('name'))[:60]})") from None
        name, tid = str(e.get("name", "")), str(e.get("tid", ""))
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        assert isinstance(args, dict)
        if tid == "Ops":
            cols.op(op_type(name), (f"device {dev}", "Ops"), ts, dur)
        elif tid.isdigit():
            kind, kname = _kind(name, str(args.get("type", "")))
            cols.kernel(kname, dev, int(tid), ts, dur, _dim3(args.get("grid_dim")), _dim3(args.get("block_dim")), kind=kind)
    return path
