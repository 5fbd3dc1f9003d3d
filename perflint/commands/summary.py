"""`perflint summary`: the metrics performance engineers know, per trace (rank)."""

from __future__ import annotations

import argparse
from typing import Any

from perflint._version import __version__
from perflint.commands.common import add_input_options, options_of, report_errors, report_skipped, write_all
from perflint.report.html import add_html_option, with_panels, write_summary
from perflint.report.output import write_file
from perflint.run import prepare, run_summary

SCHEMA_VERSION = 1


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="print GPU/kernel metrics of traces (agrees with HTA and the TB plugin)")
    add_input_options(p)
    p.add_argument("--format", choices=("text", "json"), default="text", help="text for people (default), json for tools")
    p.add_argument(
        "--timeline",
        action="store_true",
        help="add the TensorBoard plugin's bucketed GPU-utilization / SM-efficiency series",
    )
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")
    add_html_option(p)


def run(args: argparse.Namespace) -> int:
    # The read begins before the metrics modules are imported (pipeline.Prepared).
    prepared = prepare(args.paths, options_of(args), debug=args.debug)
    outcomes = run_summary(
        prepared, args.include_edge_steps, args.timeline, wrap=lambda fn: with_panels(fn, args, args.include_edge_steps)
    )
    failed = report_errors(outcomes, args.debug)
    traces = [o.result for o in outcomes if o.error is None]
    # The page first: it takes its panels out of the traces' summaries.
    errors = [o.error for o in outcomes if o.error]
    html_failed = write_all([lambda: write_summary(args.html, traces, errors)], args.debug)
    if args.format == "json":
        doc = {
            "schema_version": SCHEMA_VERSION,
            "perflint_version": __version__,
            "traces": traces,
            "errors": [{"path": o.path, "error": o.error} for o in outcomes if o.error],
            "skipped": [{"path": p, "reason": why} for p, why in prepared.skipped],
        }
        import orjson

        text = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    else:
        from perflint.report.summary_text import render_summary

        text = "\n\n".join(render_summary(t) for t in traces) + ("\n" if traces else "")
        report_skipped(prepared.skipped)  # stdout holds the traces' summaries
    text_failed = write_all([lambda: write_file(args.output or "-", text, "the summary")], args.debug)
    return 2 if failed or html_failed or text_failed else 0
