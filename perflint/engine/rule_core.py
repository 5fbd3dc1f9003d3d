"""What evaluating a rule over a trace needs of it, in a plain class: the per-trace work sent to
worker processes (--jobs, dask) carries these, so a worker imports neither pydantic nor the rule
models to unpickle it (that import costs more than reading a 20 MB rank file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perflint.engine.rule import Rule


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

    @classmethod
    def of(cls, rule: Rule | RuleCore) -> RuleCore:
        if isinstance(rule, RuleCore):
            return rule
        return cls(
            code=rule.code, name=rule.name, scope=rule.scope, where=rule.where, assert_=rule.assert_,
            message=rule.message, fix=rule.fix, impact=rule.impact, min_impact_us=rule.min_impact_us,
            requires=list(rule.requires), measure=list(rule.measure),
        )  # fmt: skip


__all__ = ["RuleCore"]
