"""`perflint accept`: record today's findings as accepted, so `check --accepted` fails only on new ones."""

from __future__ import annotations

import argparse
import os
from typing import Any

from perflint.commands import check


def add_parser(sub: Any, name: str) -> None:
    check.add_parser(sub, name)
    p = sub.choices[name]
    p.description = "record current findings as accepted (ratchet): later checks fail only on new findings"
    p.add_argument("--reason", required=True, help="why these findings are accepted (stored with each entry)")
    p.add_argument("--merge", action="store_true", help="keep entries already in the output file")


def run(args: argparse.Namespace) -> int:
    if not args.output:
        from perflint.errors import UsageError

        raise UsageError("accept", "--output/-o FILE is required")
    from perflint.commands.baseline_io import accepted_document, load_accepted, write_json
    from perflint.config import load_config

    cfg = load_config(args.config)
    result = check.execute(args, cfg)
    previous = load_accepted(args.output) if args.merge and os.path.exists(args.output) else None
    write_json(args.output, accepted_document(result, args.reason, previous))
    return 2 if result.errors else 0
