"""CLI subcommands: each module has `add_parser(subparsers, name)` and `run(args) -> int`."""

from __future__ import annotations

from types import ModuleType

from perflint.commands import accept, check, classify, comms, diff, explain, listings, rules, snapshot, summary

COMMANDS: dict[str, ModuleType] = {
    "summary": summary,
    "check": check,
    "rules": rules,
    "explain": explain,
    "snapshot": snapshot,
    "diff": diff,
    "accept": accept,
    "classify": classify,
    "kernels": listings,
    "ops": listings,
    "comms": comms,
}
