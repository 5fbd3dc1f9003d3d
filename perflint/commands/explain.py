"""`perflint explain CODE`: what a rule checks, why, its thresholds, fix and references."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from perflint.commands.common import add_options
from perflint.errors import UsageError


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="explain a rule: what, why, params/thresholds, fix, references")
    p.add_argument("rule", metavar="CODE|NAME", help="the rule's code (TC001) or name")
    add_options(p, ("config", "rule_dirs"))


def run(args: argparse.Namespace) -> int:
    from perflint.config import load_config
    from perflint.engine.docs import explain
    from perflint.engine.loader import load_rules
    from perflint.selection import selector_score

    cfg = load_config(args.config)
    rules = load_rules(cfg.rule_dirs + list(args.rule_dirs))
    exact = [r for r in rules if selector_score(args.rule, r) >= 900]
    if not exact:
        raise UsageError(args.rule, "no rule with this code or name (see 'perflint rules')")
    sys.stdout.write(explain(exact[0]))
    return 0
