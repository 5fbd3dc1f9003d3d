"""The rule file format, declared once: these msgspec structs validate a rule file's mapping (every
problem named by its key), give the JSON Schema (`perflint rules schema`), and are what the rest of
perflint uses.

A rule selects fact rows (`scope` + `where`), measures named fields (`measure`), asserts a
condition (`assert`), and emits a finding per failing row with a message, evidence, an
estimated recoverable time (`impact`) and a fix. Thresholds are typed `params`.

msgspec rather than pydantic because both halves are measured: the built-in pack is read on every
run's start, and the per-trace work sent to worker processes (--jobs, dask) carries these, so a
worker unpickles it without importing pydantic (an import that costs more than reading a 20 MB
rank file)."""

from __future__ import annotations

import re
import typing
from typing import Annotated, Any, Literal

import msgspec

from perflint.engine.expr import ExprError, compile_expr, names_in
from perflint.findings import Severity
from perflint.stepmodel.whatif import Change

ParamType = Literal["float", "int", "bool", "str", "list"]
CODE_PATTERN = r"^[A-Z]{2,6}[0-9]{3}$"
NAME_PATTERN = r"^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$"
CODE_RE = re.compile(CODE_PATTERN)
NAME_RE = re.compile(NAME_PATTERN)


# Names the engine adds to a finding's fields, for messages, fixes and severity caps.
ENGINE_FIELDS = {
    "impact_us": "estimated recoverable time of the finding (µs)",
    "items": "rows grouped into the finding (1 without a group)",
    "others": "items - 1: rows beside the top one",
    "top": "the grouped row with the most impact (its fields: {top[op]})",
    "skipped_by": "per capability the trace lacks, the codes of the active rules it skips ({skipped_by[steps]:list})",
}


class RuleSchemaError(Exception):
    """A rule mapping the schema refuses: `problems` holds one "key 'x': why" line each.
    Not a ValueError, so msgspec passes it through from `__post_init__` unwrapped."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def coerce_param(kind: str, value: Any) -> Any:
    ok: bool
    if kind == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "str":
        ok = isinstance(value, str)
    else:
        ok = isinstance(value, list)
    if not ok:
        raise ValueError(f"expected {_KIND_WORDS.get(kind, kind)}, got {value!r}")
    return value


_KIND_WORDS = {"float": "a number", "int": "an integer", "bool": "true or false", "str": "a string", "list": "a list"}


def _doc(text: str) -> msgspec.Meta:
    return msgspec.Meta(description=text)


class _Spec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


class Param(_Spec, frozen=True):
    """A typed threshold: its default, overridable per project in the config."""

    type: ParamType
    default: Annotated[Any, _doc("the value, of the param's type")]
    description: str
    source: Annotated[str | None, _doc("where the default threshold comes from")] = None

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "default", coerce_param(self.type, self.default))


class Reference(_Spec, frozen=True):
    title: str
    url: str


class Group(_Spec, frozen=True):
    """How failing rows become findings: rows that share the `by` fields are one finding (no `by`:
    one finding per trace), whose `sum` fields add up over the rows, whose `max` fields take their
    largest value and whose `union` fields (lists) join their distinct values; the `top` rows with the most impact are listed in the evidence."""

    by: Annotated[tuple[str, ...], _doc("fields whose equal values make one finding ([]: one per trace)")] = ()
    sum: Annotated[tuple[str, ...], _doc("fields added up over the grouped rows")] = ()
    max: Annotated[tuple[str, ...], _doc("fields whose largest value over the grouped rows is the finding's")] = ()
    union: Annotated[tuple[str, ...], _doc("list fields whose distinct values are joined over the rows")] = ()
    top: Annotated[int, msgspec.Meta(ge=1, description="rows listed in the finding's evidence, most impact first")] = 5


class WhatIf(_Spec, frozen=True):
    """What the finding's fix changes in the step's dependency graph. The finding's impact is then
    the analysed steps' time the step model's replay with that change saves, not an estimate of
    the work it removes: work the step does not wait on saves nothing."""

    change: Annotated[
        Change,
        _doc(
            "shorten_gpu: its GPU work runs `factor` shorter (default: the rule's impact over that work's time); "
            "overlap_gpu: its GPU work runs beside its stream's other work; unblock_calls: its calls stop waiting "
            "for the GPU; remove_calls: its calls take no time; cap_calls: its calls take at most `to_us`; "
            "pin_copies: its copies run `factor` shorter and their calls return at once; remove_cpu: the CPU time "
            "in its spans is gone; fast_launches: per-launch host overhead is gone (launch calls take `to_us`); "
            "host_keeps_up: all host time but waits for the GPU is gone"
        ),
    ]
    gpu: Annotated[str, _doc("the row field holding the GPU activities it changes")] = "_gpu"
    calls: Annotated[str, _doc("the row field holding the runtime calls it changes")] = "_calls"
    spans: Annotated[str, _doc("the row field holding the CPU spans it removes")] = "_spans"
    factor: Annotated[str | None, _doc("share of the GPU work's time saved (expression over the finding's fields)")] = None
    to_us: Annotated[str | None, _doc("the calls' new length, µs (expression over the finding's fields)")] = None

    def __post_init__(self) -> None:
        for key, text in (("factor", self.factor), ("to_us", self.to_us)):
            if text is not None:
                try:
                    compile_expr(text)
                except ExprError as exc:
                    raise ValueError(f"'{key}': {exc}") from None


class Cap(_Spec, frozen=True):
    """A finding is at most `severity` where `when` holds (e.g. a verdict over a whole trace
    without steps)."""

    when: Annotated[str, _doc("condition (expression over the finding's fields)")]
    severity: Annotated[Severity, _doc("the most severe the finding can be where the condition holds")]

    def __post_init__(self) -> None:
        try:
            compile_expr(self.when)
        except ExprError as exc:
            raise ValueError(f"'when': {exc}") from None


_MESSAGE_DOC = (
    "message template over row fields and params: {field}, {field:.1f}, units by magnitude with "
    "{field:dur} (µs), {field:size} (bytes), {field:kernel} (a short kernel name), {field:count}, {field:list}; "
    "[[ ... ]] is a clause left out when a value in it is missing; grouped findings add {items}, {others}, {top[field]}"
)


class RuleCore(_Spec, frozen=True, kw_only=True, rename={"assert_": "assert"}):
    """A performance rule: one YAML file. Thresholds go in `params`; `where` picks the candidate
    rows, `assert` states the healthy condition over them (a finding where it fails)."""

    code: Annotated[str, msgspec.Meta(pattern=CODE_PATTERN, description="stable code, e.g. TC001 (letters = family, digits = number)")]
    name: Annotated[str, msgspec.Meta(pattern=NAME_PATTERN, description="dotted lowercase name, e.g. gpu.low-utilization")]
    severity: Severity
    groups: list[str] = []
    summary: str
    rationale: str
    scope: Annotated[str, _doc("the fact rows the rule runs over (kernel_groups, op_groups, steps, trace, ...)")]
    requires: Annotated[list[str], _doc("trace capabilities the rule needs, else skipped")] = []
    params: dict[str, Param] = {}
    where: Annotated[str, _doc("which rows are candidates (expression)")] = "true"
    measure: Annotated[list[str], _doc("row fields shown as evidence")] = []
    assert_: Annotated[str, _doc("the condition a row must satisfy; a finding when it fails (expression)")]
    message: Annotated[str, _doc(_MESSAGE_DOC)]
    impact: Annotated[str | None, _doc("estimated recoverable time in us (expression)")] = None
    min_impact_us: Annotated[str | float, _doc("findings below this recoverable time stay quiet (number or expression)")] = 0.0
    fix: Annotated[str, _doc("what to do, a template like the message")]
    references: list[Reference] = []
    group: Annotated[Group | None, _doc("one finding per group of failing rows instead of one per row")] = None
    at_most: Annotated[list[Cap], _doc("severity caps: at most this severity where a condition holds")] = []
    what_if: Annotated[WhatIf | None, _doc("what the fix changes in the step model; the impact is then its step-time saving")] = None
    unjudged: Annotated[
        str | None,
        _doc("when no row meets `where`, the rule is reported skipped with this reason (a template over params), not passed: it could not judge"),
    ] = None

    def __post_init__(self) -> None:
        problems = []
        for key, text in self.expressions():
            try:
                compile_expr(text)
            except ExprError as exc:
                problems.append(f"key '{key}': {exc}")
        if problems:
            raise RuleSchemaError(problems)

    def expressions(self) -> list[tuple[str, str]]:
        """(key, text) of every expression in the rule."""
        out = [("where", self.where), ("assert", self.assert_)]
        out += [(k, v) for k, v in (("impact", self.impact), ("min_impact_us", self.min_impact_us)) if isinstance(v, str)]
        if self.what_if is not None:
            out += [(f"what_if.{k}", v) for k, v in (("factor", self.what_if.factor), ("to_us", self.what_if.to_us)) if v is not None]
        return out + [(f"at_most.{i}.when", c.when) for i, c in enumerate(self.at_most)]

    def defaults(self) -> dict[str, Any]:
        return {k: p.default for k, p in self.params.items()}

    def dump(self) -> dict[str, Any]:
        """The rule as a rule file writes it (keys as in the file, every one), JSON-ready."""
        data: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(self))
        return data

    def expression_names(self) -> set[str]:
        names: set[str] = set()
        for _, text in self.expressions():
            names |= names_in(text)
        return names


_AT = re.compile(r" - at `\$(.*)`$")


def _problem(prefix: str, exc: msgspec.ValidationError) -> str:
    """"key 'params.x.default': why" from msgspec's "why - at `$.x.default`"."""
    text = str(exc)
    m = _AT.search(text)
    sub = m.group(1) if m else ""
    loc = prefix + re.sub(r"\[(\d+)\]", r".\1", sub)
    why = text[: m.start()] if m else text
    return f"key '{loc or '(top level)'}': {why}"


def _value_problems(key: str, value: Any, kind: Any) -> list[str]:
    """The problem with one key's value; a mapping's entries each by their own key (msgspec
    locates a problem in a mapping's value as `[...]`)."""
    if typing.get_origin(kind) is dict and isinstance(value, dict):
        item = typing.get_args(kind)[1]
        return [p for k, v in value.items() for p in _value_problems(f"{key}.{k}", v, item)]
    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        return [_problem(key, exc)]
    return []


def parse_rule(data: Any) -> RuleCore:
    """A rule file's mapping as a RuleCore, or RuleSchemaError naming every problem by its key."""
    try:
        return msgspec.convert(data, RuleCore)
    except msgspec.ValidationError as exc:
        first = exc
    if not isinstance(data, dict):
        raise RuleSchemaError(["a rule file must be a YAML mapping"])
    # msgspec stops at the first problem: look at each key on its own to name them all.
    fields = msgspec.structs.fields(RuleCore)
    known = {f.encode_name for f in fields}
    problems = [f"key '{k}': unknown key{_did_you_mean(str(k), known)}" for k in data if k not in known]
    for f in fields:
        if f.encode_name not in data:
            if f.required:
                problems.append(f"key '{f.encode_name}': required")
            continue
        problems += _value_problems(f.encode_name, data[f.encode_name], f.type)
    raise RuleSchemaError(problems or [_problem("", first)])


def _did_you_mean(key: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a rule file: the rule's object at the top, titled for users, the parts
    it refers to in $defs."""
    defs = msgspec.json.schema(RuleCore)["$defs"]
    for d in defs.values():
        if "description" in d:  # a docstring's line breaks and indentation
            d["description"] = " ".join(d["description"].split())
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **defs.pop("RuleCore"), "title": "Rule", "$defs": defs}


__all__ = [
    "CODE_RE", "ENGINE_FIELDS", "NAME_RE", "Cap", "Group", "Param", "Reference", "RuleCore",
    "RuleSchemaError", "Severity", "WhatIf", "coerce_param", "json_schema", "parse_rule",
]  # fmt: skip
