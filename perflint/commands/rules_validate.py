"""`perflint rules validate FILE...`: check rule YAML files (used by the pre-commit hook).

Wired as a subcommand of `perflint rules` (perflint/commands/rules.py calls `add_arguments`
on its `validate` subparser and dispatches to `run`). Exit 0 when all files are valid, 2 when
any is not, with one line per problem on stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="rule YAML files")


def add_parser(sub: Any, name: str = "validate") -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help="check rule YAML files (schema, expressions, fields); exit 2 on a bad rule")
    add_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    from perflint.engine.validate import validate_files

    errors = validate_files(list(args.files))
    for e in errors:
        print(f"perflint: error: {e}", file=sys.stderr)
    if not errors:
        print(f"perflint: {len(args.files)} rule file{'s' if len(args.files) != 1 else ''} valid", file=sys.stderr)
    return 2 if errors else 0
