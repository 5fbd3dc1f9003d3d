"""Imports every fact module in this package so their sources register themselves."""

from __future__ import annotations

import importlib
import pkgutil

import perflint.facts as _pkg

for _mod in sorted(m.name for m in pkgutil.iter_modules(_pkg.__path__)):
    if _mod not in ("builtin",) and not _mod.startswith("_"):
        importlib.import_module(f"perflint.facts.{_mod}")
