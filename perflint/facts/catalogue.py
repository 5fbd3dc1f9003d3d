"""The fact catalogue: every scope a rule can run over, with each field's type, unit and meaning,
and the capabilities a rule can `require`. `perflint rules facts` prints it; docs/facts.md is
generated from it (a test keeps the file fresh and checks every type against real rows).

Each field's type and unit are declared where the field is computed (perflint.facts.fields says
how); the catalogue reads them from the registry.
"""

from __future__ import annotations

from dataclasses import dataclass

from perflint.facts import REGISTRY, FieldType, is_builtin
from perflint.facts.builtin import load_all


@dataclass(frozen=True)
class Field:
    name: str
    type: FieldType
    unit: str
    meaning: str


@dataclass(frozen=True)
class Scope:
    name: str
    run_level: bool  # rows over all ranks of a run, not per trace
    key: tuple[str, ...]
    doc: str
    fields: tuple[Field, ...]


def scopes(builtin_only: bool = False) -> list[Scope]:
    """Every scope (with `builtin_only`, perflint's own: what docs/facts.md documents)."""
    load_all()
    out = []
    for name, src in sorted(REGISTRY.sources.items()):
        if not builtin_only or is_builtin(src.module):
            out.append(Scope(name, False, src.key, src.doc, _fields(name, builtin_only)))
    for name, run in sorted(REGISTRY.run_sources.items()):
        if not builtin_only or is_builtin(run.module):
            out.append(Scope(name, True, run.key, run.doc, _fields(name, builtin_only)))
    return out


def _fields(scope: str, builtin_only: bool) -> tuple[Field, ...]:
    module = REGISTRY.declared_in(scope)
    return tuple(
        Field(n, spec.type, spec.unit, spec.doc)
        for n, spec in REGISTRY.fields_of(scope).items()
        if not builtin_only or is_builtin(module[n])
    )


def capabilities(builtin_only: bool = False) -> dict[str, str]:
    """Capability -> what it checks."""
    load_all()
    return {name: cap.checks for name, cap in sorted(REGISTRY.capabilities.items()) if not builtin_only or is_builtin(cap.module)}


__all__ = ["Field", "Scope", "capabilities", "scopes"]
