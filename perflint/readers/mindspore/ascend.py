"""Ascend outputs: the op timeline (`output_timeline_data_{dev}.txt`, else `timeline_display_{dev}.json`)
and the input shapes of each op (`timeline_display` args, else `framework_raw_{dev}.csv` op_info).

Every timeline row is one task of one op on a device stream: it becomes a kernel row named by the
op's full name (the file's `op_name`) and an op row named by the op type with its input shapes
(`dims`, `types`), so that MindSpore's op view (op type x input shape: occurrences, total and
average time) is the op table grouped by name and dims.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from perflint.errors import InputError
from perflint.readers.mindspore.columns import Columns, op_type
from perflint.readers.mindspore.table import column, json_events, numbers, rows

TIMELINE_COLS = ("op_name", "stream_id", "start_time(ms)", "duration(ms)")


def _shape(v: Any) -> list[int] | None:
    if isinstance(v, list):
        return [int(x) for x in v if isinstance(x, (int, float))]
    if isinstance(v, str):
        parts = [p.strip() for p in v.replace("[", "").replace("]", "").split(",") if p.strip()]
        return [int(p) for p in parts if p.lstrip("-").isdigit()]
    return None


def _inputs(info: dict[str, Any]) -> tuple[str, str] | None:
    """(dims JSON, types JSON) of an op's `input_N` entries, in input order."""
    keys = sorted((k for k in info if k.startswith("input_") and k[6:].isdigit()), key=lambda k: int(k[6:]))
    if not keys:
        return None
    dims, types = [], []
    for k in keys:
        v = info[k] if isinstance(info[k], dict) else {}
        dims.append(_shape(v.get("shape")) or [])
        dt = str(v.get("data_type", ""))
        types.append(dt.replace("NUMBER_TYPE_", "").lower())
    return orjson.dumps(dims).decode(), orjson.dumps(types).decode()


def shapes_from_display(events: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for e in events:
        args = e.get("args")
        if isinstance(args, dict) and isinstance(args.get("fullname"), str) and args["fullname"] not in out:
            got = _inputs(args)
            if got:
                out[args["fullname"]] = got
    return out


def shapes_from_framework(path: str) -> dict[str, tuple[str, str]]:
    header, data = rows(path, ("full_kernel_name",))
    if "op_info" not in header:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for name, text in zip(column(path, header, data, "full_kernel_name"), column(path, header, data, "op_info")):
        try:
            info = orjson.loads(text) if text else {}
        except orjson.JSONDecodeError:
            raise InputError(path, f"{os.path.basename(path)}: op_info of {name[:60]} is not JSON") from None
        got = _inputs(info) if isinstance(info, dict) else None
        if got and name not in out:
            out[name] = got
    return out


def read_text_timeline(path: str, dev: int, cols: Columns, shapes: dict[str, tuple[str, str]]) -> None:
    header, data = rows(path, TIMELINE_COLS)
    names = column(path, header, data, "op_name")
    stream = numbers(path, header, data, "stream_id")
    ts = numbers(path, header, data, "start_time(ms)")
    dur = numbers(path, header, data, "duration(ms)")
    for n, s, t, d in zip(names, stream, ts, dur):
        _add(cols, dev, n, int(s), t * 1000.0, d * 1000.0, shapes)


def read_display_timeline(path: str, dev: int, cols: Columns, events: list[dict[str, Any]], shapes: dict[str, tuple[str, str]]) -> None:
    for e in events:
        if e.get("ph") != "X":
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        name = args.get("fullname") if isinstance(args, dict) and isinstance(args.get("fullname"), str) else e.get("name")
        try:
            ts, dur, stream = float(e["ts"]), float(e["dur"]), int(e.get("tid", -1))
        except (KeyError, TypeError, ValueError):
            raise InputError(path, f"{os.path.basename(path)}: an op event without numeric ts/dur/tid") from None
        _add(cols, dev, str(name), stream, ts, dur, shapes)


def _add(cols: Columns, dev: int, name: str, stream: int, ts: float, dur: float, shapes: dict[str, tuple[str, str]]) -> None:
    dims, types = shapes.get(name, (None, None))
    cols.kernel(name, dev, stream, ts, dur)
    cols.op(op_type(name), (f"device {dev}", f"stream {stream}"), ts, dur, dims, types)


def read_ascend(files: dict[str, str], dev: int, cols: Columns) -> str:
    """Fill `cols` from the Ascend files; returns the timeline file read. InputError when the
    device has no op timeline."""
    display = json_events(files["ascend_display"]) if "ascend_display" in files else None
    shapes = shapes_from_display(display) if display else {}
    if not shapes and "framework" in files:
        shapes = shapes_from_framework(files["framework"])
    if "ascend_timeline" in files:
        read_text_timeline(files["ascend_timeline"], dev, cols, shapes)
        return files["ascend_timeline"]
    if display is not None:
        read_display_timeline(files["ascend_display"], dev, cols, display, shapes)
        return files["ascend_display"]
    some = next(iter(files.values()))
    raise InputError(os.path.dirname(some), f"missing output_timeline_data_{dev}.txt (or timeline_display_{dev}.json): device {dev} has no op timeline")
