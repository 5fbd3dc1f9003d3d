"""`perflint diff BASE NEW`: per-metric, per-category and per-kernel-group changes between two
runs (traces, directories or snapshots), with significance over per-step samples."""

from __future__ import annotations

import argparse
import functools
from typing import Any

from perflint.commands.common import add_options, options_of, positive_int, report_skipped, write_all
from perflint.report.html import add_html_option, write_diff
from perflint.report.output import write_file

# Each command imports what it runs when it runs: `perflint check` starts without these.
FORMATS = ("json", "markdown", "text")


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="compare two runs (like HTA's TraceDiff), with significance")
    p.add_argument("base", metavar="BASE", help="baseline trace, directory or snapshot")
    p.add_argument("new", metavar="NEW", help="new trace, directory or snapshot")
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default), markdown or json (every row, full names)")
    p.add_argument("--top", type=positive_int, default=15, help="kernel groups to show per pair (by absolute change)")
    p.add_argument("--alpha", type=_alpha, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")
    # Traces are snapshotted in local worker processes, as a check's baseline is.
    add_options(p, ("allow_device_mismatch", "include_edge_steps", "input_format", "jobs", "memory_budget", "exclude"))
    add_html_option(p)


def _alpha(text: str) -> float:
    try:
        a = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < a < 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return a


def run(args: argparse.Namespace) -> int:
    from perflint.baseline.compare import basis, compare
    from perflint.baseline.matching import pair_traces
    from perflint.report.diff import render_diff_json, render_diff_markdown, render_diff_text
    from perflint.run import load_baseline

    render = {"text": render_diff_text, "markdown": render_diff_markdown, "json": render_diff_json}
    opts = options_of(args)
    docs = []
    for path in (args.base, args.new):
        snap = load_baseline(path, opts)
        report_skipped(snap.skipped)
        docs.append(snap.document)
    base, cur = docs
    out = []
    for b, c in pair_traces(base, cur, args.allow_device_mismatch):
        out.append({"base": b["path"], "current": c["path"], "rank": c.get("rank"), "basis": basis(b, c), "rows": compare(b, c)})
    text = render[args.format](out, args.alpha, args.top)
    html = functools.partial(write_diff, args.html, base, cur, out, args.alpha, args.top)
    wrote = write_all([html, functools.partial(write_file, args.output or "-", text, "the diff")], args.debug)
    return 2 if wrote else 0
