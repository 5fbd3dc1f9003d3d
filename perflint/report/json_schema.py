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


class CollectiveRowModel(_Model):
    """One collective type on one process group over the analysis window (docs/communication.md)."""

    name: str = Field(description="collective type (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send, recv, "
                      "send_recv, gather, scatter, barrier), else the recorded name, else the kernel's name")  # fmt: skip
    process_group: str | None = Field(description="the process group's name as recorded (else its description, else its rank list)")
    group_size: int | None = Field(description="ranks in the group (n of the bus bandwidth factor)")
    count: int = Field(description="collective calls")
    kernels: int = Field(description="calls with kernel time on this rank")
    bytes: int | None = Field(description="summed size of the calls with a recorded size, as nccl-tests counts it")
    sized: int = Field(description="calls with a recorded size")
    time_us: float | None = Field(description="summed kernel time on this rank (each kernel from its start to its end)")
    algbw_gbps: float | None = Field(description="bytes / time over the calls with both, GB/s (10^9 bytes/s)")
    busbw_gbps: float | None = Field(description="algorithm bandwidth times nccl-tests' bus factor of the collective, GB/s")
    wait_us: float | None = Field(description="time waiting for the last member to arrive (ranks joined; null for a trace alone)")
    transfer_us: float | None = Field(description="the joined calls' kernel time after the last member arrived")
    joined: int | None = Field(description="calls joined with the other ranks")
    busbw_transfer_gbps: float | None = Field(description="bus bandwidth over the transfer time of the fully joined calls")
    link: str | None = Field(description="the device's GPU-to-GPU link (NVLink, PCIe ...), where the part fixes it")
    link_gbps: float | None = Field(description="its peak in one direction, GB/s (the datasheet's figure halved)")
    dtype: str | None = Field(description="element types of the calls, comma-separated")
    algorithm: str | None = Field(description="NCCL algorithms the kernel names say (RING, TREE, NVLS ...)")
    protocol: str | None = Field(description="NCCL protocols the kernel names say (LL, LL128, SIMPLE)")
    process_group_desc: str | None = Field(description="the process group's description as recorded (default_pg ...)")


class LinkModel(_Model):
    kind: str
    gbps: float = Field(description="peak in one direction, GB/s")
    part: str
    source: str


class CommunicationModel(_Model):
    """`communication`: the per-collective table of the analysis window."""

    collectives: list[CollectiveRowModel] = Field(description="most kernel time first")
    count: int = Field(description="collective calls in the window")
    time_us: float | None
    wait_us: float | None = Field(description="the trace's total wait in its joined collectives (null unless ranks were joined)")
    transfer_us: float | None
    link: LinkModel | None
    notes: list[str] = Field(description="what is unknown and why")


class MetricsModel(BaseModel):
    """Headline numbers as `perflint summary` prints them."""

    model_config = ConfigDict(extra="allow")

    communication: CommunicationModel | None = Field(default=None, description="the per-collective table (docs/communication.md)")


class TraceModel(_Model):
    path: str
    rank: int | None
    device: dict[str, Any] = Field(description="name, vendor, sm_count, compute_capability")
    metrics: MetricsModel = Field(
        description="headline numbers as `perflint summary` prints them: steps, gpu, temporal, tensor_cores, kernels, "
        "communication, and step_model (window, bound_by, replay_error_pct, critical_path, what_if_all: the findings' "
        "fixes replayed; ranks: the join with the other ranks checked together, who waited for whom in the collectives)"
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
