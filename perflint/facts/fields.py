"""A fact field's declaration: its type, unit and meaning, written once beside the code that
computes it (the fields dict a module hands to `fact`, `run_source` or `enricher`).

A field declared with a plain string (its meaning) takes its type and unit from its name:
`_us` µs, `_ms` ms, `_pct` %, `_bytes` bytes, `_gib` GiB, `_ratio` a number, `has_`/`is_` a
yes/no. Any other field says its type, and its unit where it has one, with `typed(meaning, type,
unit=...)`; so does a field whose values are not what its suffix says (`gaps_ms`: a list of ms).
perflint's own modules must: a plain string on a name without a suffix is refused when the module
registers it, so no field's type is left to a guess. A plugin's such field is text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

FieldType = Literal["number", "integer", "bool", "text", "list", "object"]


@dataclass(frozen=True)
class FieldSpec:
    """What the catalogue says of a field and what rule validation and the type test check."""

    type: FieldType
    unit: str  # "" for counts, names and yes/no
    doc: str  # its meaning


# A module's field declarations: field -> its meaning (typed by its name) or its FieldSpec.
Fields = Mapping[str, str | FieldSpec]

# unit suffix -> (type, unit); the `has_` / `is_` prefixes say a yes/no.
_SUFFIX: dict[str, tuple[FieldType, str]] = {
    "_us": ("number", "µs"),
    "_ms": ("number", "ms"),
    "_pct": ("number", "%"),
    "_bytes": ("integer", "bytes"),
    "_gib": ("number", "GiB"),
    "_ratio": ("number", ""),
}
_BOOL_PREFIX = ("has_", "is_")


def typed(doc: str, type: FieldType, unit: str = "") -> FieldSpec:
    """A field whose name does not say its type (or says another one): `typed("launches per
    step", "number")`, `typed("achieved bandwidth", "number", unit="GB/s")`."""
    if type not in get_args(FieldType):
        raise ValueError(f"field type '{type}' is not one of {', '.join(get_args(FieldType))}")
    return FieldSpec(type, unit, doc)


def by_name(name: str) -> tuple[FieldType, str] | None:
    """(type, unit) that a field's name says, or None where it says none."""
    for suffix, got in _SUFFIX.items():
        if name.endswith(suffix):
            return got
    if name.startswith(_BOOL_PREFIX):
        return "bool", ""
    return None


def specs(fields: Fields, module: str, strict: bool) -> dict[str, FieldSpec]:
    """The declarations `module` registers, each with its type and unit; `strict` (perflint's own
    modules): every field whose name has no suffix must be typed."""
    out = {}
    for name, decl in fields.items():
        if isinstance(decl, FieldSpec):
            out[name] = decl
            continue
        got = by_name(name)
        if got is None and strict:
            raise TypeError(f"{module}: field '{name}' has no unit suffix; declare its type with typed(meaning, type)")
        typ, unit = got or ("text", "")
        out[name] = FieldSpec(typ, unit, decl)
    return out


__all__ = ["FieldSpec", "FieldType", "Fields", "by_name", "specs", "typed"]
