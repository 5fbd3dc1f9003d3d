"""The JSON report's schema, as pydantic models: `perflint/report/schema/report.schema.json` is
generated from them (`PERFLINT_UPDATE_GOLDEN=1 pytest tests/report/test_report_formats.py` rewrites it)
and a test keeps the two equal and validates reports against them. Apart from json_report.py,
so that writing a report does not import pydantic."""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from perflint.findings import FailOn, Severity


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FindingModel(_Model):
    code: str = Field(description="rule code, e.g. TC001")
    name: str = Field(description="rule name, e.g. tensor-cores.half-precision-without-tensor-cores")
    severity: Severity
    message: str
    trace: str = Field(description="trace file the finding comes from (first rank's file for run-level rules)")
    rank: int | None = Field(description="rank of the trace, when it has one")
    fingerprint: str = Field(
        description="stable identity across runs: rule, subject, the trace's role and rank (never times or file names)"
    )
    impact_us: float | None = Field(default=None, description="estimated recoverable time in microseconds")
    evidence: dict[str, Any] = Field(default_factory=dict, description="the measured fields the rule declares")
    kernel: str | None = None
    op: str | None = None
    op_stack: list[str] = Field(default_factory=list)
    input_dims: Any = None
    source: str | None = Field(default=None, description="user's source file:line when stacks were recorded")
    fix: str = ""
    suppressed: str | None = Field(default=None, description="the suppression's reason; not gated when set")
    accepted: str | None = Field(default=None, description="the accepted-findings entry's reason; not gated when set")
    role: str = Field(default="", description="the trace's role: its path under the checked directory, run-varying parts as *")
    subject: dict[str, Any] = Field(
        default_factory=dict, description="the fact row's key fields the fingerprint hashes (a trace path as its role)"
    )


class RuleStatusModel(_Model):
    code: str
    name: str
    severity: Severity
    status: Literal["passed", "failed", "skipped"]
    reason: str | None = Field(default=None, description="why the rule was skipped (missing trace data)")
    findings: int = Field(default=0, description="findings of the rule on this trace, suppressed ones included")


class TraceModel(_Model):
    path: str
    rank: int | None
    device: dict[str, Any] = Field(description="name, vendor, sm_count, compute_capability")
    metrics: dict[str, Any] = Field(
        description="headline numbers as `perflint summary` prints them: steps, gpu, temporal, tensor_cores, kernels, "
        "and step_model (window, bound_by, replay_error_pct, critical_path, what_if_all: the findings' fixes replayed; "
        "ranks: the join with the other ranks checked together, who waited for whom in the collectives)"
    )
    statuses: list[RuleStatusModel]
    findings: list[FindingModel] = Field(description="most severe first, then by recoverable time")
    warnings: list[str] = Field(default_factory=list)
    role: str = Field(default="", description="identity of the trace across runs (see docs/report-json-schema.md)")


class CountsModel(_Model):
    error: int = Field(description="active (gated) findings of severity error")
    warning: int
    info: int
    suppressed: int = Field(description="findings silenced by a suppression (not gated)")
    accepted: int = Field(description="findings listed in the accepted-findings file (not gated)")
    traces: int = Field(default=0, description="traces checked")
    skipped: int = Field(default=0, description="files a directory scan passed over (see `skipped`)")


class SkippedModel(_Model):
    path: str
    reason: str = Field(description="excluded by a pattern, not a trace file name, or not a profiler trace (what it is)")


class ReferenceModel(_Model):
    title: str
    url: str


class RuleModel(_Model):
    code: str
    name: str
    severity: Severity = Field(description="effective severity (after config overrides)")
    groups: list[str] = Field(default_factory=list)
    summary: str = ""
    rationale: str = ""
    fix: str = ""
    params: dict[str, Any] = Field(default_factory=dict, description="effective parameter values")
    references: list[ReferenceModel] = Field(default_factory=list)


class ReportModel(_Model):
    """perflint check report (JSON)."""

    model_config = ConfigDict(extra="forbid", title="perflint check report")

    schema_version: Literal[1] = Field(description="bumped on incompatible changes")
    perflint_version: str
    verdict: Literal["passed", "failed", "error"] = Field(
        description="error: a trace/config/rule could not be used (exit 2); failed: findings reached fail_on (exit 1)"
    )
    fail_on: FailOn
    counts: CountsModel
    traces: list[TraceModel]
    run_findings: list[FindingModel] = Field(description="findings of run-level (multi-rank) rules")
    run_statuses: list[RuleStatusModel]
    errors: list[str] = Field(description="one line each: '<path>: <problem>'")
    notices: list[str] = Field(description="unused or expired suppressions, stale accepted entries, files a baseline directory scan skipped")
    skipped: list[SkippedModel] = Field(default_factory=list, description="files under the directories given that were not checked")
    rules: list[RuleModel] = Field(description="the enabled rules")


def json_schema() -> dict[str, Any]:
    schema = ReportModel.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def schema_text() -> str:
    return orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"
