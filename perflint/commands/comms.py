"""`perflint comms PATH`: one row per collective type and process group of each trace's analysis
window (perflint.stepmodel.comm_table): count, bytes, kernel time, algorithm and bus bandwidth,
and the wait / transfer split when PATH holds the ranks of a run. csv, tsv, json or text, as
`perflint kernels` writes them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from perflint.commands.common import add_input_options

DEFAULT_COLUMNS = (
    "name", "process_group", "group_size", "count", "bytes", "time_us", "algbw_gbps", "busbw_gbps", "wait_us",
    "transfer_us", "link_gbps",
)  # fmt: skip


def add_parser(sub: Any, name: str) -> None:
    from perflint.stepmodel.comm_table import COLUMNS

    p = sub.add_parser(name, help="one row per collective type and process group: count, bytes, time, algbw / busbw, wait / transfer")
    add_input_options(p)
    p.add_argument(
        "-c", "--columns", default=None, metavar="COL,...",
        help=f"columns, in this order (default {','.join(DEFAULT_COLUMNS)}; all: {','.join(COLUMNS)})",
    )  # fmt: skip
    p.add_argument("--format", choices=("text", "csv", "tsv", "json"), default="text", help="output format (default: text)")
    p.add_argument("-w", "--width", type=int, default=None, metavar="N", help="text: total line width (default: the terminal's; no limit when piped)")


def run(args: argparse.Namespace) -> int:
    from perflint.commands.common import options_of, report_errors, report_skipped
    from perflint.commands.listings import _check_columns, write
    from perflint.errors import UsageError
    from perflint.run import prepare, run_comms
    from perflint.stepmodel.comm_table import COLUMNS

    if args.width is not None and args.width < 20:
        raise UsageError("--width", f"must be 20 or more, not {args.width}")
    # a typo fails before a large trace is read
    cols = _check_columns(args.columns, COLUMNS) if args.columns is not None else list(DEFAULT_COLUMNS)
    opts = options_of(args)
    prepared = prepare(args.paths, opts, debug=args.debug)
    outcomes = run_comms(prepared, opts.include_edge_steps)
    failed = report_errors(outcomes, args.debug)
    done = [o.result for o in outcomes if o.error is None]
    many = len(done) > 1
    if many:
        cols = ["path", "rank", *cols]
    write([{**r, "path": d["path"], "rank": d["rank"]} for d in done for r in d["communication"]["collectives"]], cols, args.format, args.width)
    for d in done:
        label = f"{d['label']}: " if many else ""
        if not d["communication"]["collectives"]:
            print(f"perflint: notice: {label}no collectives in the analysis window", file=sys.stderr)
        elif args.format == "text":
            for note in d["communication"]["notes"]:
                print(f"perflint: notice: {label}{note}", file=sys.stderr)
    report_skipped(prepared.skipped)
    return 2 if failed else 0


__all__ = ["DEFAULT_COLUMNS", "add_parser", "run"]
