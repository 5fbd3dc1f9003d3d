"""`perflint diff BASE NEW`: per-metric, per-category and per-kernel-group changes between two
runs (traces, directories or snapshots), with significance over per-step samples."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from perflint.commands.common import add_exclude_option, exclude_of, jobs_of
from perflint.errors import InputError
from perflint.report.html import add_html_option, write_diff

# Each command imports what it runs when it runs: `perflint check` starts without these.
FORMATS = ("json", "markdown", "text")


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="compare two runs (like HTA's TraceDiff), with significance")
    p.add_argument("base", metavar="BASE", help="baseline trace, directory or snapshot")
    p.add_argument("new", metavar="NEW", help="new trace, directory or snapshot")
    p.add_argument("--format", choices=FORMATS, default="text")
    p.add_argument("--top", type=int, default=15, help="kernel groups to show per pair (by absolute change)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level")
    p.add_argument("--allow-device-mismatch", action="store_true")
    p.add_argument("--include-edge-steps", action="store_true")
    p.add_argument("--input-format", default=None)
    p.add_argument("--jobs", "-j", type=int, default=None)
    p.add_argument("--output", "-o", default=None, metavar="FILE")
    add_exclude_option(p)
    add_html_option(p)


def pair_snapshots(base: dict[str, Any], cur: dict[str, Any], allow_mismatch: bool) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    from perflint.facts.baseline import identity_mismatch

    bt, ct = base["traces"], cur["traces"]
    if len(bt) == 1 and len(ct) == 1:
        pairs = [(bt[0], ct[0])]
    else:
        by_rank = {b.get("rank"): b for b in bt}
        pairs = [(by_rank[c.get("rank")], c) for c in ct if c.get("rank") in by_rank]
        if not pairs:
            raise InputError("diff", "no traces to pair: the two runs share no rank")
    for b, c in pairs:
        why = identity_mismatch(b.get("identity", {}), c.get("identity", {}))
        if why and not allow_mismatch:
            raise InputError(c["path"], f"not comparable with {b['path']}: {why}; use --allow-device-mismatch")
    return pairs


def run(args: argparse.Namespace) -> int:
    from perflint.commands.baseline_io import load_baseline
    from perflint.facts._compare import compare
    from perflint.report.diff import render_diff_json, render_diff_markdown, render_diff_text

    render = {"text": render_diff_text, "markdown": render_diff_markdown, "json": render_diff_json}
    jobs = jobs_of(args)
    exclude = exclude_of(args)
    base = load_baseline(args.base, args.include_edge_steps, args.input_format, jobs, exclude=exclude)
    cur = load_baseline(args.new, args.include_edge_steps, args.input_format, jobs, exclude=exclude)
    out = []
    for b, c in pair_snapshots(base, cur, args.allow_device_mismatch):
        out.append({"base": b["path"], "current": c["path"], "rank": c.get("rank"), "rows": compare(b, c)})
    text = render[args.format](out, args.alpha, args.top)
    write_diff(args.html, base, cur, out, args.alpha, args.top)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0
