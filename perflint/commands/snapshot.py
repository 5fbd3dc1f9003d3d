"""`perflint snapshot`: a small reference file of per-step metrics, committed as the baseline."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from perflint.commands.common import add_input_options, options_of, report_skipped, write_json


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="write a compact baseline snapshot of traces (per-step samples)")
    add_input_options(p)
    p.add_argument("--output", "-o", required=True, metavar="FILE", help="snapshot file to write ('-' for stdout)")


def run(args: argparse.Namespace) -> int:
    from perflint.run import run_snapshot

    snap = run_snapshot(args.paths, options_of(args), debug=args.debug)
    report_skipped(snap.skipped)
    for e in snap.errors:
        print(f"perflint: error: {e}", file=sys.stderr)
    if snap.document["traces"]:
        write_json(args.output, snap.document, "the snapshot")
    return 2 if snap.errors else 0
