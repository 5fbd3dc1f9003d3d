"""A rule as the rest of perflint uses it, in plain classes: the pydantic model
(`engine/rule.py`) is the rule file's schema, checked where rules come from outside (a
`--rule-dir`, `perflint rules validate`), and this is what it turns into.

Two reasons for the split, both measured: the per-trace work sent to worker processes (--jobs,
dask) carries these, so a worker imports neither pydantic nor the models to unpickle it (that
import costs more than reading a 20 MB rank file); and the built-in pack, which the test suite
validates with the model file by file (tests/test_rule_core.py), is read straight into them, so
a run with no rule files of its own never imports pydantic (0.2-0.3 s of every run's start)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from perflint.engine.expr import ExprError, compile_expr, names_in

if TYPE_CHECKING:
    from perflint.engine.rule import Rule

Severity = Literal["error", "warning", "info"]
SEVERITIES = ("error", "warning", "info")
PARAM_TYPES = ("float", "int", "bool", "str", "list")
CODE_RE = re.compile(r"^[A-Z]{2,6}[0-9]{3}$")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$")


# Names the engine adds to a finding's fields, for messages, fixes and severity caps.
ENGINE_FIELDS = {
    "impact_us": "estimated recoverable time of the finding (µs)",
    "items": "rows grouped into the finding (1 without a group)",
    "others": "items - 1: rows beside the top one",
    "top": "the grouped row with the most impact (its fields: {top[op]})",
}


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
        raise ValueError(f"expected a {kind}, got {value!r}")
    return value


@dataclass(frozen=True)
class ParamSpec:
    type: str
    default: Any
    description: str
    source: str | None = None


@dataclass(frozen=True)
class RefSpec:
    title: str
    url: str


@dataclass(frozen=True)
class GroupSpec:
    """How failing rows become findings: rows that share the `by` fields are one finding (no `by`:
    one finding per trace), whose `sum` fields add up over the rows and whose `union` fields (lists) join
    their distinct values; the `top` rows with the most
    impact are listed in the evidence."""

    by: tuple[str, ...] = ()
    sum: tuple[str, ...] = ()
    union: tuple[str, ...] = ()
    top: int = 5


@dataclass(frozen=True)
class CapSpec:
    """A finding is at most `severity` where `when` holds (e.g. a verdict over a whole trace
    without steps)."""

    when: str
    severity: str


@dataclass(frozen=True)
class RuleCore:
    code: str
    name: str
    scope: str
    where: str
    assert_: str
    message: str
    fix: str
    impact: str | None = None
    min_impact_us: str | float = 0.0
    requires: list[str] = field(default_factory=list)
    measure: list[str] = field(default_factory=list)
    severity: str = "warning"
    groups: list[str] = field(default_factory=list)
    summary: str = ""
    rationale: str = ""
    params: dict[str, ParamSpec] = field(default_factory=dict)
    references: list[RefSpec] = field(default_factory=list)
    group: GroupSpec | None = None
    at_most: list[CapSpec] = field(default_factory=list)

    def defaults(self) -> dict[str, Any]:
        return {k: p.default for k, p in self.params.items()}

    def expression_names(self) -> set[str]:
        names: set[str] = set()
        for text in (self.where, self.assert_, self.impact, self.min_impact_us, *(c.when for c in self.at_most)):
            if isinstance(text, str):
                names |= names_in(text)
        return names

    def template_names(self) -> set[str]:
        """Names the message and fix templates refer to."""
        from perflint.engine.message import placeholders

        return placeholders(self.message) | placeholders(self.fix)

    def dump(self) -> dict[str, Any]:
        """The rule as the model dumps it (`Rule.model_dump(by_alias=True)`), keys in its order."""
        return {
            "code": self.code, "name": self.name, "severity": self.severity, "groups": list(self.groups),
            "summary": self.summary, "rationale": self.rationale, "scope": self.scope, "requires": list(self.requires),
            "params": {k: {"type": p.type, "default": p.default, "description": p.description, "source": p.source}
                       for k, p in self.params.items()},
            "where": self.where, "measure": list(self.measure), "assert": self.assert_, "message": self.message,
            "impact": self.impact, "min_impact_us": self.min_impact_us, "fix": self.fix,
            "references": [{"title": r.title, "url": r.url} for r in self.references],
            "group": None if self.group is None else {"by": list(self.group.by), "sum": list(self.group.sum), "union": list(self.group.union), "top": self.group.top},
            "at_most": [{"when": c.when, "severity": c.severity} for c in self.at_most],
        }  # fmt: skip

    @classmethod
    def of(cls, rule: Rule | RuleCore) -> RuleCore:
        if isinstance(rule, RuleCore):
            return rule
        return cls(
            code=rule.code, name=rule.name, scope=rule.scope, where=rule.where, assert_=rule.assert_,
            message=rule.message, fix=rule.fix, impact=rule.impact, min_impact_us=rule.min_impact_us,
            requires=list(rule.requires), measure=list(rule.measure), severity=rule.severity,
            groups=list(rule.groups), summary=rule.summary, rationale=rule.rationale,
            params={k: ParamSpec(p.type, p.default, p.description, p.source) for k, p in rule.params.items()},
            references=[RefSpec(r.title, r.url) for r in rule.references],
            group=None if rule.group is None else GroupSpec(tuple(rule.group.by), tuple(rule.group.sum), tuple(rule.group.union), rule.group.top),
            at_most=[CapSpec(c.when, c.severity) for c in rule.at_most],
        )  # fmt: skip

    @classmethod
    def from_mapping(cls, data: Any) -> RuleCore | None:
        """A built-in rule file's mapping read without the model; None at anything the model
        might take differently (the caller then validates it with the model, which also words
        any error). Only the built-in pack comes this way: the suite checks every one of its
        files gives what the model gives."""
        try:
            return _from_mapping(data)
        except (KeyError, TypeError, ValueError, AttributeError, ExprError):
            return None


_REQUIRED = frozenset(("code", "name", "severity", "summary", "rationale", "scope", "assert", "message", "fix"))
_KEYS = _REQUIRED | {"groups", "requires", "params", "where", "measure", "impact", "min_impact_us", "references", "group", "at_most"}


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError
    return v


def _texts(v: Any) -> list[str]:
    if not isinstance(v, list):
        raise TypeError
    return [_text(x) for x in v]


def _expr(v: Any) -> Any:
    if isinstance(v, str):
        compile_expr(v)  # raises ExprError as the model's validator would refuse it
    return v


def _from_mapping(data: Any) -> RuleCore | None:
    if not isinstance(data, dict) or not _REQUIRED <= data.keys() or not data.keys() <= _KEYS:
        return None
    code, name, severity = _text(data["code"]), _text(data["name"]), _text(data["severity"])
    if not CODE_RE.match(code) or not NAME_RE.match(name) or severity not in SEVERITIES:
        return None
    params: dict[str, ParamSpec] = {}
    for k, p in (data.get("params") or {}).items():
        if not isinstance(p, dict) or not {"type", "default", "description"} <= p.keys() <= {"type", "default", "description", "source"}:
            return None
        if p["type"] not in PARAM_TYPES or (p.get("source") is not None and not isinstance(p["source"], str)):
            return None
        params[_text(k)] = ParamSpec(p["type"], coerce_param(p["type"], p["default"]), _text(p["description"]), p.get("source"))
    refs = []
    for r in data.get("references") or []:
        if not isinstance(r, dict) or r.keys() != {"title", "url"}:
            return None
        refs.append(RefSpec(_text(r["title"]), _text(r["url"])))
    impact = data.get("impact")
    min_impact = data.get("min_impact_us", 0.0)
    if (impact is not None and not isinstance(impact, str)) or isinstance(min_impact, bool):
        return None
    if not isinstance(min_impact, (str, int, float)):
        return None
    group = data.get("group")
    if group is not None:
        if not isinstance(group, dict) or not group.keys() <= {"by", "sum", "union", "top"}:
            return None
        top = group.get("top", 5)
        if not isinstance(top, int) or isinstance(top, bool) or top < 1:
            return None
        by, sums, union = (tuple(_texts(group.get(k, []))) for k in ("by", "sum", "union"))
        group = GroupSpec(by, sums, union, top)
    caps = []
    for c in data.get("at_most") or []:
        if not isinstance(c, dict) or c.keys() != {"when", "severity"} or c["severity"] not in SEVERITIES:
            return None
        caps.append(CapSpec(_expr(_text(c["when"])), c["severity"]))
    return RuleCore(
        code=code, name=name, scope=_text(data["scope"]), where=_expr(_text(data.get("where", "true"))),
        assert_=_expr(_text(data["assert"])), message=_text(data["message"]), fix=_text(data["fix"]),
        impact=_expr(impact), min_impact_us=_expr(min_impact if isinstance(min_impact, str) else float(min_impact)),
        requires=_texts(data.get("requires", [])), measure=_texts(data.get("measure", [])), severity=severity,
        groups=_texts(data.get("groups", [])), summary=_text(data["summary"]), rationale=_text(data["rationale"]),
        params=params, references=refs, group=group, at_most=caps,
    )  # fmt: skip


__all__ = [
    "CODE_RE", "ENGINE_FIELDS", "NAME_RE", "PARAM_TYPES", "SEVERITIES", "CapSpec", "GroupSpec", "ParamSpec", "RefSpec", "RuleCore", "Severity",
    "coerce_param",
]  # fmt: skip
