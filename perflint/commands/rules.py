"""`perflint rules` (list), `perflint rules schema`, `perflint rules docs`, `perflint rules validate`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from perflint.commands import rules_validate
from perflint.commands.common import add_options
from perflint.errors import UsageError


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="list rules; 'schema' exports the rule JSON Schema; 'docs'; 'validate FILE...'")
    p.add_argument(
        "action",
        nargs="?",
        choices=("list", "schema", "docs", "facts", "validate"),
        default="list",
        help="list the rules (default), print the rule JSON Schema, the rules' Markdown docs, the fact catalogue "
        "(scopes, fields, capabilities), or validate rule files",
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="rule files to validate")
    add_options(p, ("config", "rule_dirs"))
    p.add_argument(
        "--format", choices=("text", "json", "markdown"), default="text", help="list or facts format: text (default), json, markdown (facts)"
    )


def run(args: argparse.Namespace) -> int:
    from perflint.config import load_config
    from perflint.engine.docs import markdown
    from perflint.engine.loader import load_rules
    from perflint.engine.rule_core import json_schema

    if args.action == "schema":
        sys.stdout.write(json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n")
        return 0
    if args.action == "facts":
        return _facts(args.format)
    if args.action == "validate":
        if not args.files:
            raise UsageError("rules validate", "give the rule files to validate")
        return rules_validate.run(args)
    cfg = load_config(args.config)
    rules = load_rules(cfg.rule_dirs + list(args.rule_dirs))
    if args.action == "docs":
        sys.stdout.write(markdown(rules))
        return 0
    if args.format == "json":
        rows = [{"code": r.code, "name": r.name, "severity": r.severity, "groups": r.groups, "summary": r.summary} for r in rules]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    for r in rules:
        sys.stdout.write(f"{r.code:<10} {r.severity:<8} {r.name:<58} {','.join(r.groups)}\n  {r.summary}\n")
    return 0


def _facts(fmt: str) -> int:
    from dataclasses import asdict

    from perflint.engine.docs import facts_markdown
    from perflint.facts.catalogue import capabilities, scopes

    if fmt == "markdown":
        sys.stdout.write(facts_markdown())
    elif fmt == "json":
        doc = {"scopes": [asdict(s) for s in scopes()], "capabilities": capabilities()}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        for s in scopes():
            sys.stdout.write(f"{s.name}{' (run-level)' if s.run_level else ''}: {s.doc.splitlines()[0] if s.doc else ''}\n")
            for f in s.fields:
                unit = f" [{f.unit}]" if f.unit else ""
                sys.stdout.write(f"  {f.name:<28} {f.type:<8}{unit} {f.meaning}\n")
        sys.stdout.write("capabilities (requires:):\n")
        for name, what in capabilities().items():
            sys.stdout.write(f"  {name:<28} {what}\n")
    return 0
