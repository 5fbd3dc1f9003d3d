"""The rule file format: one YAML document per rule, validated by pydantic on load.

A rule selects fact rows (`scope` + `where`), measures named fields (`measure`), asserts a
condition (`assert`), and emits a finding per failing row with a message, evidence, an
estimated recoverable time (`impact`) and a fix. Thresholds are typed `params`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from perflint.engine.expr import ExprError, compile_expr
from perflint.engine.rule_core import CODE_RE, NAME_RE, Severity, coerce_param
from perflint.findings import SEVERITY_RANK

__all__ = ["SEVERITY_RANK", "Cap", "Group", "Param", "Reference", "Rule", "Severity", "coerce_param"]


class Param(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["float", "int", "bool", "str", "list"]
    default: Any
    description: str
    source: str | None = Field(default=None, description="where the default threshold comes from")

    @model_validator(mode="after")
    def _default_matches_type(self) -> Param:
        self.default = coerce_param(self.type, self.default)
        return self


class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    url: str


class Group(BaseModel):
    model_config = ConfigDict(extra="forbid")
    by: list[str] = Field(default_factory=list, description="fields whose equal values make one finding ([]: one per trace)")
    sum: list[str] = Field(default_factory=list, description="fields added up over the grouped rows")
    union: list[str] = Field(default_factory=list, description="list fields whose distinct values are joined over the rows")
    top: int = Field(default=5, ge=1, description="rows listed in the finding's evidence, most impact first")


class Cap(BaseModel):
    model_config = ConfigDict(extra="forbid")
    when: str = Field(description="condition (expression over the finding's fields)")
    severity: Severity = Field(description="the most severe the finding can be where the condition holds")

    @field_validator("when")
    @classmethod
    def _expression(cls, v: str) -> str:
        try:
            compile_expr(v)
        except ExprError as exc:
            raise ValueError(str(exc)) from None
        return v


class Rule(BaseModel):
    """A performance rule. See `perflint rules schema` for the JSON Schema."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    code: str = Field(description="stable code, e.g. TC001 (letters = family, digits = number)")
    name: str = Field(description="dotted name, e.g. tensor-cores.half-gemm-without-tensor-cores")
    severity: Severity
    groups: list[str] = Field(default_factory=list)
    summary: str
    rationale: str
    scope: str = Field(description="the fact rows the rule runs over (kernel_groups, op_groups, steps, trace, ...)")
    requires: list[str] = Field(default_factory=list, description="trace capabilities the rule needs, else skipped")
    params: dict[str, Param] = Field(default_factory=dict)
    where: str = Field(default="true", description="which rows are candidates (expression)")
    measure: list[str] = Field(default_factory=list, description="row fields shown as evidence")
    assert_: str = Field(alias="assert", description="the condition a row must satisfy; a finding when it fails")
    message: str = Field(
        description="message template over row fields and params: {field}, {field:.1f}, units by magnitude with "
        "{field:dur} (µs), {field:size} (bytes), {field:kernel} (a short kernel name), {field:count}, {field:list}; "
        "[[ ... ]] is a clause left out when a value in it is missing; grouped findings add {items}, {others}, {top[field]}"
    )
    impact: str | None = Field(default=None, description="estimated recoverable time in us (expression)")
    min_impact_us: str | float = Field(default=0.0, description="findings below this recoverable time stay quiet")
    fix: str
    references: list[Reference] = Field(default_factory=list)
    group: Group | None = Field(default=None, description="one finding per group of failing rows instead of one per row")
    at_most: list[Cap] = Field(default_factory=list, description="severity caps: at most this severity where a condition holds")

    @field_validator("code")
    @classmethod
    def _code(cls, v: str) -> str:
        if not CODE_RE.match(v):
            raise ValueError("must be 2-6 capital letters then 3 digits, e.g. TC001")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("must be a dotted lowercase name, e.g. gpu.low-utilization")
        return v

    @field_validator("where", "assert_", "impact", "min_impact_us")
    @classmethod
    def _expression(cls, v: str | float | None) -> str | float | None:
        if isinstance(v, str):
            try:
                compile_expr(v)
            except ExprError as exc:
                raise ValueError(str(exc)) from None
        return v
