"""CLI subcommands: each module has `add_parser(subparsers, name)` and `run(args) -> int`."""

from __future__ import annotations

from types import ModuleType

from perflint.commands import check, explain, rules, summary

COMMANDS: dict[str, ModuleType] = {
    "summary": summary,
    "check": check,
    "rules": rules,
    "explain": explain,
}
