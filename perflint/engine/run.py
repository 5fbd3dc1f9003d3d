"""Evaluating rules over a trace's fact rows, producing findings and per-rule status."""

from __future__ import annotations

import os
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perflint import identity
from perflint.engine.expr import compile_expr
from perflint.engine.rule_core import RuleCore
from perflint.errors import InputError
from perflint.facts import RUN_SOURCES, SOURCES, Context, Row, load_all, missing, rows
from perflint.findings import Finding, RuleStatus, TraceResult
from perflint.metrics.summary import summarize
from perflint.model import Trace


@dataclass
class ActiveRule:
    """A rule as configured for this run: effective severity and params."""

    rule: RuleCore
    severity: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def code(self) -> str:
        return self.rule.code


class _Fmt(string.Formatter):
    def format_field(self, value: Any, format_spec: str) -> str:
        if value is None:
            return "n/a"
        if isinstance(value, float) and not format_spec:
            return f"{value:.4g}"
        try:
            return super().format_field(value, format_spec)
        except (ValueError, TypeError):
            return str(value)

    def get_value(self, key: Any, args: Any, kwargs: Mapping[str, Any]) -> Any:
        return kwargs.get(key) if isinstance(key, str) else super().get_value(key, args, kwargs)


_FMT = _Fmt()


def render(template: str, env: Mapping[str, Any]) -> str:
    try:
        return _FMT.vformat(template, (), env)
    except (ValueError, IndexError, KeyError, AttributeError) as exc:
        return f"{template} [template error: {exc}]"


def fingerprint(code: str, key: tuple[str, ...], row: Row, rank: int | None, role: str, roles: Mapping[str, str] | None = None) -> str:
    """Stable across runs of the same code (perflint.identity): rule, the row's subject (its key
    fields; `roles` maps trace paths in it to roles), the trace's role and rank; never times."""
    return identity.fingerprint(code, identity.subject(key, row, roles or {}), role, rank)


def evaluate(
    ar: ActiveRule,
    facts: list[Row],
    key: tuple[str, ...],
    trace: str,
    rank: int | None,
    role: str | None = None,
    roles: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Findings of `ar` over `facts`; `role` is the trace's (default: its normalized file name),
    `roles` the roles of trace paths the rows name (default: this trace's)."""
    if role is None:
        role = identity.normalize_name(os.path.basename(trace))
    if roles is None:
        roles = {trace: role}
    rule = ar.rule
    where, check = compile_expr(rule.where), compile_expr(rule.assert_)
    impact_fn = compile_expr(rule.impact) if rule.impact else None
    floor = rule.min_impact_us
    floor_fn = compile_expr(floor) if isinstance(floor, str) else None
    out: list[Finding] = []
    for row in facts:
        env = {**row, **ar.params}
        if not where(env) or check(env):
            continue
        impact = impact_fn(env) if impact_fn else None
        if isinstance(impact, (int, float)):
            impact = max(0.0, float(impact))
            env["impact_us"] = impact
            min_us = floor_fn(env) if floor_fn else floor
            if isinstance(min_us, (int, float)) and impact < float(min_us):
                continue
        else:
            impact = None
        evidence = {k: row.get(k) for k in rule.measure}
        evidence.update({f"param.{k}": v for k, v in ar.params.items()})
        out.append(
            Finding(
                code=rule.code,
                name=rule.name,
                severity=ar.severity,
                message=render(rule.message, env),
                trace=trace,
                rank=rank,
                fingerprint=fingerprint(rule.code, key, row, rank, role, roles),
                impact_us=impact,
                evidence=evidence,
                kernel=row.get("kernel"),
                op=row.get("op"),
                op_stack=list(row.get("op_stack") or []),
                input_dims=row.get("input_dims"),
                source=row.get("source"),
                fix=render(rule.fix, env),
                role=role,
                subject=dict(zip(key, identity.subject(key, row, roles))),
            )
        )
    out.sort(key=lambda f: -(f.impact_us or 0.0))
    return out


def status_of(ar: ActiveRule, findings: list[Finding], skipped: str | None) -> RuleStatus:
    if skipped:
        return RuleStatus(ar.code, ar.rule.name, ar.severity, "skipped", reason=skipped)
    return RuleStatus(ar.code, ar.rule.name, ar.severity, "failed" if findings else "passed", findings=len(findings))


def match_baseline(baseline: dict[str, Any], trace: Trace) -> dict[str, Any]:
    """The baseline snapshot entry for this trace: same rank, else the only one, else same file name."""
    entries = baseline.get("traces", [])
    same_rank = [e for e in entries if e.get("rank") == trace.rank and trace.rank is not None]
    if same_rank:
        return same_rank[0]  # type: ignore[no-any-return]
    if len(entries) == 1:
        return entries[0]  # type: ignore[no-any-return]
    import os

    same_name = [e for e in entries if os.path.basename(str(e.get("path"))) == os.path.basename(trace.path)]
    if same_name:
        return same_name[0]  # type: ignore[no-any-return]
    raise InputError(trace.path, f"the baseline has no trace for rank {trace.rank} (ranks: {[e.get('rank') for e in entries]})")


def check_trace(
    trace: Trace,
    active: list[ActiveRule],
    include_edge_steps: bool = False,
    baseline: dict[str, Any] | None = None,
    allow_device_mismatch: bool = False,
    role: str | None = None,
) -> TraceResult:
    """Every per-trace rule over `trace`; `role` is its identity across runs (perflint.identity;
    default: its normalized file name)."""
    load_all()
    if role is None:
        role = identity.normalize_name(os.path.basename(trace.path))
    ctx = Context(trace, include_edge_steps=include_edge_steps)
    trace.cache["analysis_steps_n"] = len(ctx.steps)
    if baseline is not None:
        from perflint.facts._snapshot import identity as device_identity
        from perflint.facts.baseline import identity_mismatch

        entry = match_baseline(baseline, trace)
        why = identity_mismatch(entry.get("identity", {}), device_identity(trace))
        if why and not allow_device_mismatch:
            raise InputError(
                trace.path, f"baseline is from another device or software stack ({why}); use --allow-device-mismatch"
            )
        trace.cache["baseline"] = entry
    summary = summarize(trace, include_edge_steps=include_edge_steps)
    result = TraceResult(
        path=trace.path,
        rank=trace.rank,
        device=summary["device"],
        metrics={k: summary[k] for k in ("steps", "gpu", "temporal", "tensor_cores", "kernels")},
        warnings=list(trace.warnings),
        role=role,
    )
    capabilities: dict[str, str | None] = {}
    for ar in active:
        if ar.rule.scope not in SOURCES:
            continue  # run-level rule: evaluated over all traces afterwards
        reason = missing(trace, ar.rule.requires, capabilities)
        found = [] if reason else evaluate(ar, rows(ctx, ar.rule.scope), SOURCES[ar.rule.scope].key, trace.path, trace.rank, role)
        result.statuses.append(status_of(ar, found, reason))
        result.findings.extend(found)
    if "trace" in SOURCES:
        (row,) = rows(ctx, "trace") or [{}]
        result.rank_row = {k: v for k, v in row.items() if isinstance(v, (int, float, str, bool, type(None)))}
        result.rank_row.update(path=trace.path, rank=trace.rank)
    result.findings.sort(key=lambda f: -(f.impact_us or 0.0))
    return result


def check_run(traces: list[TraceResult], active: list[ActiveRule]) -> tuple[list[Finding], list[RuleStatus]]:
    """Run-level rules (scope in RUN_SOURCES) over every trace's rank row."""
    findings: list[Finding] = []
    statuses: list[RuleStatus] = []
    rank_rows = [t.rank_row for t in traces if t.rank_row]
    roles = {t.path: t.role for t in traces if t.role}
    for ar in active:
        if ar.rule.scope not in RUN_SOURCES:
            continue
        fn, key, _fields = RUN_SOURCES[ar.rule.scope]
        facts = fn(rank_rows)
        if not facts:
            statuses.append(status_of(ar, [], "needs at least two ranks (traces) in one run"))
            continue
        found = evaluate(ar, facts, key, "(all ranks)", None, identity.RUN_ROLE, roles)
        statuses.append(status_of(ar, found, None))
        findings.extend(found)
    return findings, statuses
