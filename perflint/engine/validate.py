"""Validate rule YAML files without running them (the `perflint-rules` pre-commit hook)."""

from __future__ import annotations

from pathlib import Path

from perflint.engine.loader import RuleProblems, load_rule_file
from perflint.errors import RuleError


def validate_files(paths: list[str]) -> list[str]:
    """One line per problem ("<file>: <problem>"); empty when every file is a valid rule.

    Besides each file's own checks (schema, expressions, scope fields, capabilities) the files
    given together must not reuse a code or a name.
    """
    errors: list[str] = []
    seen: dict[str, str] = {}
    for p in paths:
        try:
            rule = load_rule_file(Path(p))
        except RuleProblems as exc:
            errors += [f"{exc.source}: {p}" for p in exc.problems]  # every problem, each on its line
            continue
        except RuleError as exc:
            errors.append(exc.line())
            continue
        for ident in (rule.code, rule.name):
            if ident in seen:
                errors.append(f"{p}: duplicate rule '{ident}' (also defined in {seen[ident]})")
            else:
                seen[ident] = p
    return errors


__all__ = ["validate_files"]
