"""`perflint accept`: record today's findings as accepted, so `check --accepted` fails only on new ones."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from perflint.commands import check
from perflint.commands.common import add_check_options, report_skipped, write_json
from perflint.errors import UsageError
from perflint.units import plural

_WHAT = "record today's findings as accepted (ratchet): later checks with --accepted fail only on new findings"


# Every finding is recorded whatever its severity, and the findings an accepted-findings file
# already holds are recorded again: a gate and such a file would change nothing.
IGNORED = ("fail_on", "accepted")


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help=_WHAT + "; writes -o FILE", description=_WHAT + ".")
    add_check_options(p, omit=IGNORED)
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="accepted-findings file to write ('-' for stdout)")
    p.add_argument("--reason", required=True, help="why these findings are accepted (stored with each entry)")
    existing = p.add_mutually_exclusive_group()
    existing.add_argument("--merge", action="store_true", help="add to the output file, keeping its entries")
    existing.add_argument("--force", action="store_true", help="replace the output file")


def run(args: argparse.Namespace) -> int:
    if not args.output:
        raise UsageError("accept", "--output/-o FILE is required")
    exists = args.output != "-" and os.path.exists(args.output)
    if exists and not (args.merge or args.force):
        raise UsageError(args.output, "already exists: pass --merge to add to its entries, or --force to replace it")
    from perflint.baseline.accepted import accepted_document, load_accepted
    from perflint.config import load_config

    cfg = load_config(args.config)
    previous = load_accepted(args.output) if args.merge and exists else None  # a bad file fails before the traces
    result = check.execute(args, cfg)
    report_skipped([(s.path, s.reason) for s in result.skipped])
    doc, stats = accepted_document(result, args.reason, previous)
    write_json(args.output, doc, "the accepted findings")
    tail = ""
    if previous is not None:
        tail = f", {stats.kept} kept from the previous file"
    elif exists:
        tail = ", replacing the previous file"
    where = "stdout" if args.output == "-" else args.output
    print(
        f"perflint: {plural(stats.accepted, 'finding')} accepted from {plural(stats.traces, 'trace')} into {where}{tail}",
        file=sys.stderr,
    )
    return 2 if result.errors else 0
