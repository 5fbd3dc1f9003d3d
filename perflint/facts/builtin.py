"""The built-in fact modules, in one explicit list: importing each registers its scopes, fields,
enrichers and capabilities (a test checks that every module that registers something is here)."""

from __future__ import annotations

import importlib

# Alphabetical: enrichers run in registration order, so the order is part of the rows' layout.
MODULES = (
    "baseline",
    "capabilities",
    "comm",
    "counters",
    "cudnn",
    "dataloader",
    "gaps",
    "kernel_groups",
    "launch",
    "memcpy",
    "matrix_owner",
    "memory",
    "occupancy",
    "ops",
    "patterns",
    "ranks",
    "roofline",
    "stages",
    "steps",
    "streams",
    "syncs",
    "trace",
)

for _mod in MODULES:
    importlib.import_module(f"perflint.facts.{_mod}")
