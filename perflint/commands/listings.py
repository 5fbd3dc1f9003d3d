"""`perflint kernels PATH`: one row per kernel launch, pyprof's columns by pyprof's names beside
perflint's; `perflint ops PATH`: one row per op. csv, tsv and json rows stream out as they are
formatted; a text table sizes its columns to all of its rows first."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from perflint.commands.common import add_options, terminal_columns
from perflint.errors import UsageError


def add_parser(sub: Any, name: str) -> None:
    from perflint.listings import DEFAULT_COLUMNS, TABLE_COLUMNS
    from perflint.op_view import DEFAULT_COLUMNS as VIEW_DEFAULTS
    from perflint.op_view import GROUPS, VIEW_COLUMNS

    ops = name == "ops"
    cols, default = (VIEW_COLUMNS, VIEW_DEFAULTS["op"]) if ops else (TABLE_COLUMNS, DEFAULT_COLUMNS)
    what = "one row per op (or op+shape, module, layer): calls, host/device self/total time, Tensor Cores, FLOPs" if ops else "one row per kernel launch (pyprof's columns and perflint's)"
    p = sub.add_parser(name, help=what)
    p.add_argument("path", help="a trace file or profiler output directory")
    p.add_argument(
        "-c",
        "--columns",
        default=None,
        metavar="COL,...",
        help=f"columns, in this order (default {','.join(default)}; all: {','.join(cols)})"
        + ("" if ops else "; a CUPTI counter trace adds its counters by metric name, shown by default"),
    )
    if ops:
        p.add_argument("--group-by", choices=GROUPS, default="op", help="one row per op name (default), name and input shape, module or layer")
        p.add_argument("--sort", default="device_total_us", metavar="COL", help="sort by this column: numbers descending, text ascending (default device_total_us)")
        p.add_argument("--top", type=int, default=None, metavar="N", help="only the first N rows (per trace)")
    p.add_argument("--format", choices=("text", "csv", "tsv", "json"), default="text", help="output format (default: text)")
    p.add_argument("-w", "--width", type=int, default=None, metavar="N", help="text: total line width (default: the terminal's; no limit when piped)")
    add_options(p, ("input_format",))


def run(args: argparse.Namespace) -> int:
    from perflint.graph.load import load_traces
    from perflint.listings import TABLE_COLUMNS, kernel_columns, kernel_table, table_columns
    from perflint.metrics.counter_listing import COUNTER_TABLE_COLUMNS
    from perflint.op_view import DEFAULT_COLUMNS as VIEW_DEFAULTS
    from perflint.op_view import VIEW_COLUMNS, op_view, sort_rows

    ops = args.command == "ops"
    if args.width is not None and args.width < 20:
        raise UsageError("--width", f"must be 20 or more, not {args.width}")
    if ops and args.sort not in VIEW_COLUMNS:
        raise UsageError("--sort", f"unknown column {args.sort} (known: {', '.join(VIEW_COLUMNS)})")
    if ops and args.top is not None and args.top < 1:
        raise UsageError("--top", f"must be 1 or more, not {args.top}")
    if args.columns is not None:  # a typo fails before a large trace is read
        _check_columns(args.columns, VIEW_COLUMNS if ops else TABLE_COLUMNS + COUNTER_TABLE_COLUMNS, lenient=not ops)
    traces = load_traces(args.path, args.input_format)
    known, default = (VIEW_COLUMNS, VIEW_DEFAULTS[args.group_by]) if ops else table_columns(traces)
    cols = _check_columns(args.columns, known) if args.columns is not None else list(default)
    many = len(traces) > 1
    if many:
        cols = ["rank", *cols]

    if not ops and args.format in ("csv", "tsv") and not any(t.counter_ranges for t in traces):
        # Whole columns, formatted a column at a time: the big tables' fast path.
        names = [c for c in cols if c != "rank"]
        w = csv.writer(sys.stdout, delimiter="," if args.format == "csv" else "\t", lineterminator="\n")
        w.writerow(cols)
        for t in traces:
            got = kernel_columns(t, [c for c in names if c in TABLE_COLUMNS])
            n = len(next(iter(got.values()), []))
            data = [[t.rank] * n if c == "rank" else _column_cells(got.get(c) or [None] * n) for c in cols]
            w.writerows(zip(*data))
        return 0

    # In text, the row of the ops outside every module (or layer) gets a name; csv and json keep
    # the empty key that scripts test for.
    unnamed = _OUTSIDE.get(args.group_by) if ops and args.format == "text" else None

    def rows() -> Iterator[dict[str, Any]]:
        for t in traces:
            for r in sort_rows(op_view(t, args.group_by), args.sort)[: args.top] if ops else kernel_table(t):
                if unnamed is not None and r.get(args.group_by) is None:
                    r = {**r, args.group_by: unnamed}
                yield {**r, "rank": t.rank} if many else r

    write(rows(), cols, args.format, args.width)
    return 0


_OUTSIDE = {"module": "(outside any module)", "layer": "(outside any layer)"}


def _column_cells(vals: list[Any]) -> list[Any]:
    """A column's csv cells: text and integers as they are, the rest through `_cell`."""
    if set(map(type, vals)) <= {str, int}:
        return vals
    seen: dict[int, Any] = {}  # rows share one list per distinct grid or block: format it once
    out = []
    for v in vals:
        if type(v) is list:
            got = seen.get(id(v))
            if got is None:
                got = seen[id(v)] = _cell(v)
            out.append(got)
        else:
            out.append(_cell(v))
    return out


def _check_columns(spec: str, known: tuple[str, ...], lenient: bool = False) -> list[str]:
    """The columns of -c, in order. `lenient`: before the traces are read, a name that could be a
    counter's metric name (it has a dot or two underscores) passes."""
    cols = [c.strip() for c in spec.split(",") if c.strip()]
    bad = [c for c in cols if c not in known and not (lenient and ("." in c or "__" in c))]
    if bad or not cols:
        raise UsageError("--columns", f"unknown column(s) {', '.join(bad) or '(none given)'} (known: {', '.join(dict.fromkeys(known))})")
    return cols


def _cell(v: Any) -> Any:
    t = type(v)
    if t is str or t is int:  # most cells: the csv writer and str() take them as they are
        return v
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))
    if t is list and len(v) == 3 and type(v[0]) is int and type(v[1]) is int and type(v[2]) is int:
        return f"{v[0]},{v[1]},{v[2]}"  # grid, block: "640,1,1" as pyprof writes them
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, int) for x in v):
            return ",".join(str(x) for x in v)  # grid, block: "640,1,1" as pyprof writes them
        return json.dumps(v, default=str) if v and isinstance(v[0], (list, tuple, dict)) else ";".join(str(_cell(x)) for x in v)
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True)
    return str(v)


def write(rows: Iterable[dict[str, Any]], cols: list[str], fmt: str, width: int | None) -> None:
    out = sys.stdout
    if fmt == "json":
        out.write("[")
        for i, r in enumerate(rows):
            out.write(("," if i else "") + "\n  " + json.dumps({c: r.get(c) for c in cols}, default=str))
        out.write("\n]\n")
        return
    if fmt in ("csv", "tsv"):
        w = csv.writer(out, delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
        w.writerow(cols)
        for r in rows:
            w.writerow([_cell(r.get(c)) for c in cols])
        return
    # Text: every row is needed to size the columns to their content.
    from perflint.report.text_table import render

    cells = [[str(_cell(r.get(c))) for c in cols] for r in rows]
    for line in render(cols, cells, width if width is not None else terminal_columns()):
        out.write(line + "\n")


__all__ = ["add_parser", "run", "write"]
