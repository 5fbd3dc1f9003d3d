"""Results of a check: findings, per-rule status, per-trace and per-run results.

Plain dataclasses: the engine fills them, every report renders them, and they pickle across
worker processes. The JSON report turns them into its versioned, documented schema.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

Status = Literal["passed", "failed", "skipped"]
# The severities, most severe first, and the gate's floors (`--fail-on`): a severity, or "never"
# (no finding fails the gate). Everything else that names them derives from these two lines.
Severity = Literal["error", "warning", "info"]
FailOn = Literal[Severity, "never"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
FAIL_ON: tuple[FailOn, ...] = get_args(FailOn)
SEVERITY_RANK: dict[str, int] = {s: len(SEVERITIES) - 1 - i for i, s in enumerate(SEVERITIES)}  # info 0 .. error 2


def reaches(severity: str, fail_on: str) -> bool:
    """A finding of `severity` fails a gate at `fail_on`."""
    return fail_on != "never" and SEVERITY_RANK[severity] >= SEVERITY_RANK[fail_on]


@dataclass
class Finding:
    code: str
    name: str
    severity: Severity
    message: str
    trace: str
    rank: int | None
    fingerprint: str
    impact_us: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    kernel: str | None = None
    op: str | None = None
    op_stack: list[str] = field(default_factory=list)
    input_dims: Any = None
    source: str | None = None  # user's file:line when stacks were recorded
    fix: str = ""
    suppressed: str | None = None  # the suppression's reason, when one matched
    accepted: str | None = None  # the accepted-findings entry's reason, when one matched
    role: str = ""  # the trace's role (perflint.baseline.identity): which trace this is, across runs
    subject: dict[str, Any] = field(default_factory=dict)  # the row key fields the fingerprint hashes

    @property
    def source_file_line(self) -> tuple[str, int] | None:
        if not self.source or ":" not in self.source:
            return None
        path, _, line = self.source.rpartition(":")
        return (path, int(line)) if line.isdigit() else None

    @property
    def active(self) -> bool:
        return self.suppressed is None and self.accepted is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RuleStatus:
    code: str
    name: str
    severity: str
    status: Status
    reason: str | None = None  # why skipped
    findings: int = 0


@dataclass
class TraceResult:
    path: str
    rank: int | None
    device: dict[str, Any]
    metrics: dict[str, Any]  # headline numbers (summary) for reports
    statuses: list[RuleStatus] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    rank_row: dict[str, Any] = field(default_factory=dict)  # facts for run-level (multi-rank) rules
    warnings: list[str] = field(default_factory=list)
    role: str = ""  # perflint.baseline.identity.trace_role
    collectives: dict[str, Any] = field(default_factory=dict)  # perflint.stepmodel.collectives rows, for the run-level join
    panels: dict[str, Any] | None = None  # what the HTML report draws of it (perflint.panels.TracePanels), when asked for

    @property
    def label(self) -> str:
        return self.path if self.rank is None else f"{self.path} [rank {self.rank}]"


@dataclass(frozen=True)
class SkippedFile:
    """A file a directory scan passed over: excluded, not a trace file name, or not a trace."""

    path: str
    reason: str


@dataclass
class RunResult:
    traces: list[TraceResult]
    errors: list[str]  # one line each: "<path>: <problem>"
    run_findings: list[Finding] = field(default_factory=list)  # multi-rank rules
    run_statuses: list[RuleStatus] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # unused / expired suppressions, stale accepted entries, files a baseline scan skipped
    rules: list[dict[str, Any]] = field(default_factory=list)  # metadata of enabled rules, for SARIF/JUnit
    fail_on: FailOn = "error"
    skipped: list[SkippedFile] = field(default_factory=list)

    def all_findings(self) -> list[Finding]:
        out = [f for t in self.traces for f in t.findings]
        out.extend(self.run_findings)
        return out

    def active_findings(self) -> list[Finding]:
        return [f for f in self.all_findings() if f.active]

    def counts(self) -> dict[str, int]:
        c: dict[str, int] = {s: 0 for s in SEVERITIES}
        for f in self.active_findings():
            c[f.severity] += 1
        return c

    def gate_failed(self) -> bool:
        return any(reaches(f.severity, self.fail_on) for f in self.active_findings())

    def exit_code(self) -> int:
        if self.errors:
            return 2
        return 1 if self.gate_failed() else 0
