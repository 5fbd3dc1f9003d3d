"""Reading MindSpore's CSV and text tables: header checks and numbers, with one-line errors."""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence

import orjson

from perflint.errors import InputError


def rows(path: str, required: Sequence[str], sep: str = ",") -> tuple[list[str], list[list[str]]]:
    """(header, data rows) of a CSV whose header must name `required`; InputError naming the file
    otherwise. Surrounding blanks of names and values are dropped."""
    name = os.path.basename(path)
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            got = [[c.strip() for c in r] for r in csv.reader(f, delimiter=sep)]
    except OSError as exc:
        raise InputError(path, f"cannot read {name}: {exc.strerror or exc}") from None
    except csv.Error as exc:
        raise InputError(path, f"malformed CSV in {name}: {exc}") from None
    got = [r for r in got if any(r)]
    if not got:
        raise InputError(path, f"{name} is empty (expected a header with {', '.join(required)})")
    header = got[0]
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(path, f"{name}: bad header, no column {', '.join(missing)} (got {', '.join(header[:6])})")
    return header, got[1:]


def column(path: str, header: list[str], data: list[list[str]], col: str) -> list[str]:
    i = header.index(col)
    for n, r in enumerate(data):
        if len(r) <= i:
            raise InputError(path, f"{os.path.basename(path)} line {n + 2}: {len(r)} fields, no '{col}'")
    return [r[i] for r in data]


def numbers(path: str, header: list[str], data: list[list[str]], col: str) -> list[float]:
    """Column `col` as floats; InputError naming the file, line and value when one is not a number."""
    out: list[float] = []
    for n, v in enumerate(column(path, header, data, col)):
        try:
            out.append(float(v))
        except ValueError:
            raise InputError(path, f"{os.path.basename(path)} line {n + 2}: {col} '{v[:40]}' is not a number") from None
    return out


def json_file(path: str) -> object:
    try:
        with open(path, "rb") as f:
            return orjson.loads(f.read())
    except OSError as exc:
        raise InputError(path, f"cannot read {os.path.basename(path)}: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(path, f"{os.path.basename(path)} is not valid JSON: {exc}") from None


def json_events(path: str) -> list[dict[str, object]]:
    """A Chrome-trace event list (a bare JSON list, or an object with `traceEvents`)."""
    doc = json_file(path)
    if isinstance(doc, dict):
        doc = doc.get("traceEvents")
    if not isinstance(doc, list):
        raise InputError(path, f"{os.path.basename(path)}: expected a JSON list of timeline events")
    return [e for e in doc if isinstance(e, dict)]
