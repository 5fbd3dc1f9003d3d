"""Finding messages: templates over a row's fields, written for a person to read.

A template is Python format syntax over row fields and params, plus:
- optional clauses `[[ ... ]]` (not nested), left out when a value inside is missing (None, NaN,
  an empty list);
- format specs for units chosen by magnitude: `{x:dur}` (x in µs: µs, ms or s), `{x:size}` (bytes:
  B, KB, MB, GB), `{x:kernel}` (a kernel name shortened to its function and key template arguments),
  `{x:count}` (an integer with thousands separators), `{x:list}` (items joined with commas).
A missing value outside an optional clause takes the words that introduce it out with it ("from
{op}" goes when op is missing), so no message ever shows placeholder text. Messages are cut at
MAX_CHARS.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping
from typing import Any

from perflint.units import fmt_duration, fmt_size

MAX_CHARS = 400
MAX_VALUE_CHARS = 120  # a single value longer than this (a whole template, a long list) is cut
_OPT = re.compile(r"\[\[(.*?)\]\]", re.S)
_SPECS = ("dur", "size", "kernel", "count", "list")
# Words that introduce a value: "from {op}", "at {source}", "in {file}" ...
_LEADS = re.compile(r"(?:\s+(?:(?:from|at|in|on|with|by|for|under|of|via)(?:\s+[a-z_]+){0,2}|main kernel))?\s*$")


class _Missing(Exception):
    """A placeholder's value is missing."""


def is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, (list, tuple, dict)) and not value


def short_kernel(name: str) -> str:
    from perflint.kernelnames.parse import short_name

    return short_name(name)


class _Fmt(string.Formatter):
    """Values at most MAX_VALUE_CHARS long where `cut` (a message), whole in a fix."""

    def __init__(self, cut: bool = True) -> None:
        super().__init__()
        self.cut = cut

    def format_field(self, value: Any, format_spec: str) -> str:
        if is_missing(value):
            raise _Missing
        if format_spec in _SPECS:
            return _special(value, format_spec, MAX_VALUE_CHARS if self.cut else None)
        if _is_shape_list(value) and not format_spec:
            value = shape_text(value)
        if isinstance(value, float) and not format_spec:
            return f"{value:.4g}"
        try:
            text: str = super().format_field(value, format_spec)
        except (ValueError, TypeError):
            text = str(value)
        return text if not self.cut or len(text) <= MAX_VALUE_CHARS else cut_words(text, MAX_VALUE_CHARS)

    def get_value(self, key: Any, args: Any, kwargs: Mapping[str, Any]) -> Any:
        return kwargs.get(key) if isinstance(key, str) else super().get_value(key, args, kwargs)

    def get_field(self, field_name: str, args: Any, kwargs: Mapping[str, Any]) -> Any:
        try:
            return super().get_field(field_name, args, kwargs)
        except (KeyError, IndexError, TypeError, AttributeError):
            raise _Missing from None


def _is_shape_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, list) for v in value)


def shape_text(dims: list[Any]) -> str:
    """Input Dims as a person reads them: the trailing empty entries (scalar and None arguments)
    left out, `[[32, 256, 14, 14], [1024, 256, 1, 1]]`."""
    end = len(dims)
    while end > 0 and dims[end - 1] == []:
        end -= 1
    return str(dims[:end])


def join_items(items: list[Any] | tuple[Any, ...], limit: int | None) -> str:
    """Items joined with commas; past `limit` characters whole items are dropped and counted
    ("a, b and 12 more"), never cut."""
    texts = [str(x) for x in items]
    whole = ", ".join(texts)
    if limit is None or len(whole) <= limit:
        return whole
    kept: list[str] = []
    for i, x in enumerate(texts):
        tail = f" and {len(texts) - i - 1} more" if i < len(texts) - 1 else ""
        if kept and len(", ".join([*kept, x])) + len(tail) > limit:
            break
        kept.append(x)
    return f"{', '.join(kept)} and {len(texts) - len(kept)} more"


def _special(value: Any, spec: str, limit: int | None = None) -> str:
    if spec == "list":
        return join_items(value if isinstance(value, (list, tuple)) else [value], limit)
    if spec == "kernel":
        return short_kernel(str(value))
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    if spec == "dur":
        return fmt_duration(float(value))
    if spec == "size":
        return fmt_size(float(value))
    return f"{int(round(value)):,}"


_FMT = _Fmt()
_WHOLE = _Fmt(cut=False)


def _render_into(out: list[str], text: str, env: Mapping[str, Any], fmt: _Fmt = _FMT) -> None:
    """Render template text (no optional clauses) onto `out`; a missing value drops itself and
    the words that lead to it."""
    for literal, field, spec, conv in fmt.parse(text):
        out.append(literal)
        if field is None:
            continue
        try:
            out.append(_field(field, spec, conv, env, fmt))
        except _Missing:
            prev = "".join(out)
            out[:] = [_LEADS.sub("", prev, count=1)]


def _field(field: str, spec: str | None, conv: str | None, env: Mapping[str, Any], fmt: _Fmt = _FMT) -> str:
    obj, _ = fmt.get_field(field, (), env)
    obj = fmt.convert_field(obj, conv) if conv else obj
    return fmt.format_field(obj, spec or "")


def _render_strict(text: str, env: Mapping[str, Any], fmt: _Fmt = _FMT) -> str:
    """An optional clause: any missing value drops the whole clause (raises _Missing)."""
    out: list[str] = []
    for literal, field, spec, conv in fmt.parse(text):
        out.append(literal)
        if field is not None:
            out.append(_field(field, spec, conv, env, fmt))
    return "".join(out)


def render(template: str, env: Mapping[str, Any], limit: int | None = MAX_CHARS) -> str:
    """The message for one finding: optional clauses resolved, units by magnitude, at most `limit`
    characters (None: a fix, written by the rule's author, is never cut, nor are its values).
    The template is parsed once; rendered values are never read as template text."""
    out: list[str] = []
    pos = 0
    fmt = _FMT if limit is not None else _WHOLE
    try:
        for m in _OPT.finditer(template):
            _render_into(out, template[pos : m.start()], env, fmt)
            try:
                out.append(_render_strict(m.group(1), env, fmt))
            except _Missing:
                pass
            pos = m.end()
        _render_into(out, template[pos:], env, fmt)
        msg = "".join(out)
    except (ValueError, IndexError) as exc:
        msg = f"{template} [template error: {exc}]"
    # A clause that came out empty leaves "()" or " ," behind; code in the text (".item()",
    # "torch.compile()") keeps its dot and parentheses.
    msg = re.sub(r"(?<![\w\])])\(\)", "", msg)
    msg = re.sub(r"\s+", " ", msg).strip()
    msg = re.sub(r"\s+([,;)]|\.(?!\w))", r"\1", msg).replace("( ", "(")
    return msg if limit is None or len(msg) <= limit else cut_words(msg, limit)


def cut_words(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut between words where one ends in its last 30
    (" …" marks the cut: no word or code is left half)."""
    head = text[: limit - 2]
    space = head.rfind(" ")
    if space >= limit - 32:
        head = head[:space]
    return head.rstrip(" ,;:") + " …"


def placeholders(template: str) -> set[str]:
    """The names a template's placeholders refer to (the part before any '.' or '[')."""
    return {re.split(r"[.\[]", f, maxsplit=1)[0] for f in placeholder_fields(template)}


def placeholder_fields(template: str) -> set[str]:
    """A template's placeholders as written, without conversion or format spec ("top[op]", "x")."""
    names: set[str] = set()
    flat = _OPT.sub(lambda m: m.group(1), template)
    try:
        parsed = list(_FMT.parse(flat))
    except ValueError as exc:
        raise ValueError(f"bad template: {exc}") from None
    for _, field, spec, _ in parsed:
        if field is None:
            continue
        if field == "" or field.isdigit():
            raise ValueError("positional placeholder {} names no field")
        names.add(field)
        if spec and "{" in spec:
            raise ValueError(f"nested placeholder in the format spec of {{{field}}}")
    return names


__all__ = ["MAX_CHARS", "fmt_duration", "fmt_size", "is_missing", "join_items", "placeholder_fields", "placeholders", "render", "shape_text"]
