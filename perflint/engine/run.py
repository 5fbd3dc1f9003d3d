"""Evaluating rules over a trace's fact rows, producing findings and per-rule status."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perflint.baseline import identity
from perflint.engine.expr import Fn, compile_expr
from perflint.engine.impacts import Pending, apply_step_impacts
from perflint.engine.message import render
from perflint.engine.rule_core import RuleCore
from perflint.facts import REGISTRY, Context, Row, missing, rows
from perflint.facts.builtin import load_all
from perflint.findings import SEVERITIES, Finding, RuleStatus, Severity, TraceResult
from perflint.model import Trace
from perflint.trace_summary import summarize


@dataclass
class ActiveRule:
    """A rule as configured for this run: effective severity and params."""

    rule: RuleCore
    severity: Severity
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def code(self) -> str:
        return self.rule.code


def fingerprint(code: str, key: tuple[str, ...], row: Row, rank: int | None, role: str, roles: Mapping[str, str] | None = None) -> str:
    """Stable across runs of the same code (perflint.baseline.identity): rule, the row's subject (its key
    fields; `roles` maps trace paths in it to roles), the trace's role and rank; never times."""
    return identity.fingerprint(code, identity.subject(key, row, roles or {}), role, rank)


MAX_FINDINGS = 10  # per rule and trace: more is noise, the rest is folded into the status count


@dataclass
class _Hit:
    row: Row
    env: dict[str, Any]
    impact: float | None


def _impact(env: dict[str, Any], impact_fn: Fn | None, floor: str | float, floor_fn: Fn | None) -> tuple[bool, float | None]:
    """(keep, impact): the row's recoverable time, and whether it clears the rule's floor."""
    impact = impact_fn(env) if impact_fn else None
    if not isinstance(impact, (int, float)) or isinstance(impact, bool) or impact != impact:
        return True, None
    impact = max(0.0, float(impact))
    env["impact_us"] = impact
    min_us = floor_fn(env) if floor_fn else floor
    return not (isinstance(min_us, (int, float)) and impact < float(min_us)), impact


def _hits(ar: ActiveRule, facts: list[Row], extra: Mapping[str, Any] | None = None) -> list[_Hit]:
    rule = ar.rule
    where, check = compile_expr(rule.where), compile_expr(rule.assert_)
    impact_fn = compile_expr(rule.impact) if rule.impact else None
    floor = rule.min_impact_us
    floor_fn = compile_expr(floor) if isinstance(floor, str) else None
    out: list[_Hit] = []
    for row in facts:
        env = {**row, **ar.params, **(extra or {})}
        if not where(env) or check(env):
            continue
        keep, impact = _impact(env, impact_fn, floor, floor_fn)
        if keep:
            out.append(_Hit(row, env, impact))
    return out


def _add(values: list[Any]) -> Any:
    nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not nums:
        return None
    total = sum(nums)
    return total if any(isinstance(v, float) for v in nums) else int(total)


def _union(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        for x in v if isinstance(v, (list, tuple)) else [] if v is None else [v]:
            if x not in out:
                out.append(x)
    return out


def _grouped(ar: ActiveRule, hits: list[_Hit], key: tuple[str, ...]) -> list[tuple[dict[str, Any], list[_Hit], tuple[str, ...]]]:
    """(finding env, its rows most impact first, identity fields) per finding."""
    spec = ar.rule.group
    hits = sorted(hits, key=lambda h: -(h.impact or 0.0))
    if spec is None:
        return [({**h.env, "items": 1, "others": 0, "top": h.row}, [h], key) for h in hits]
    buckets: dict[str, list[_Hit]] = {}
    for h in hits:
        buckets.setdefault(repr([h.row.get(f) for f in spec.by]), []).append(h)
    out = []
    for members in buckets.values():
        top = members[0]
        env = dict(top.env)
        for f in spec.sum:
            env[f] = _add([m.row.get(f) for m in members])
        for f in spec.max:
            nums = [v for v in (m.row.get(f) for m in members) if isinstance(v, (int, float)) and not isinstance(v, bool)]
            env[f] = max(nums) if nums else None
        for f in spec.union:
            env[f] = _union([m.row.get(f) for m in members])
        impacts = [m.impact for m in members if m.impact is not None]
        env["impact_us"] = sum(impacts) if impacts else None
        env.update(items=len(members), others=len(members) - 1, top=top.row)
        out.append((env, members, spec.by))
    return out


def _severity(ar: ActiveRule, env: Mapping[str, Any]) -> Severity:
    sev = ar.severity
    for cap in ar.rule.at_most:
        if compile_expr(cap.when)(env) and SEVERITIES.index(cap.severity) > SEVERITIES.index(sev):
            sev = cap.severity
    return sev


def _listed(rule: RuleCore, members: list[_Hit], key: tuple[str, ...], top: int) -> list[dict[str, Any]]:
    """The grouped rows shown in the evidence: identity, impact and measures of the top ones."""
    fields = list(dict.fromkeys([*key, *rule.measure]))
    return [{**{f: h.row.get(f) for f in fields}, "impact_us": h.impact} for h in members[:top]]


def evaluate(
    ar: ActiveRule,
    facts: list[Row],
    key: tuple[str, ...],
    trace: str,
    rank: int | None,
    role: str | None = None,
    roles: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Findings of one rule over one trace's fact rows: failing rows, grouped as the rule says,
    one finding per distinct message, at most MAX_FINDINGS (most impact first). `role` is the
    trace's identity across runs (default: its normalized file name), `roles` the roles of trace
    paths the rows name (default: this trace's)."""
    return [p.finding for p in evaluated(ar, facts, key, trace, rank, role, roles)]


def evaluated(
    ar: ActiveRule,
    facts: list[Row],
    key: tuple[str, ...],
    trace: str,
    rank: int | None,
    role: str | None = None,
    roles: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> list[Pending]:
    """`evaluate`'s findings, each with the fields it was rendered from and its rows; `extra`:
    fields the engine adds to every row (ENGINE_FIELDS)."""
    if role is None:
        role = identity.normalize_name(os.path.basename(trace))
    if roles is None:
        roles = {trace: role}
    rule = ar.rule
    out: list[Pending] = []
    seen: dict[str, Pending] = {}
    for env, members, ident in _grouped(ar, _hits(ar, facts, extra), key):
        top = members[0].row
        ident_row = env if rule.group is not None else top
        impact = env.get("impact_us")
        evidence = {k: env.get(k) for k in rule.measure}
        if rule.group is not None:
            evidence["items"] = env["items"]
            evidence["top_items"] = _listed(rule, members, key, rule.group.top)
        if rule.impact:
            evidence["impact_basis"] = " ".join(rule.impact.split())
        evidence.update({f"param.{k}": v for k, v in ar.params.items()})
        message = render(rule.message, env)
        twin = seen.get(message)
        if twin is not None:  # the same words twice: one finding, its impact the sum
            if impact is not None:
                twin.finding.impact_us = (twin.finding.impact_us or 0.0) + impact
            twin.finding.evidence["repeats"] = twin.finding.evidence.get("repeats", 1) + 1
            twin.members.extend(h.row for h in members)
            continue
        f = Finding(
            code=rule.code,
            name=rule.name,
            severity=_severity(ar, env),
            message=message,
            trace=trace,
            rank=rank,
            fingerprint=fingerprint(rule.code, ident, ident_row, rank, role, roles),
            impact_us=impact,
            evidence=evidence,
            kernel=top.get("kernel"),
            op=top.get("op"),
            op_stack=list(top.get("op_stack") or []),
            input_dims=top.get("input_dims"),
            source=top.get("source"),
            fix=render(rule.fix, env, limit=None),
            role=role,
            subject=dict(zip(ident, identity.subject(ident, ident_row, roles))),
        )
        p = Pending(rule, f, env, [h.row for h in members])
        seen[message] = p
        out.append(p)
    out.sort(key=lambda p: -(p.finding.impact_us or 0.0))
    if len(out) > MAX_FINDINGS:
        out[MAX_FINDINGS - 1].finding.evidence["more_findings"] = len(out) - MAX_FINDINGS
    return out[:MAX_FINDINGS]


def analysed_window_us(ctx: Context) -> float | None:
    """The time a finding's fix can win at most: the analysis window (the step model's), every
    step marker's where step-level numbers cover more steps than the op events (MindSpore)."""
    from perflint.facts._common import model

    return model(ctx).window.timed_us or None


def _cap_impacts(found: list[Finding], window: float | None) -> None:
    """No fix wins more time than the window analysed, and the findings of a trace together win no
    more than it either: an estimate over it is cut to it, and impacts that add up past it (where
    the rules' own estimates stand, which may count one idle time twice) are scaled down together."""
    if window is None:
        return
    for f in found:
        if f.impact_us is not None and f.impact_us > window:
            f.evidence["impact_uncapped_us"] = f.impact_us
            f.impact_us = window
    total = sum(f.impact_us for f in found if f.impact_us is not None)
    if total > window > 0:
        for f in found:
            if f.impact_us is not None:
                f.evidence.setdefault("impact_uncapped_us", f.impact_us)
                f.impact_us *= window / total


def unjudged(ar: ActiveRule, facts: list[Row]) -> str | None:
    """The rule's `unjudged` reason when it declares one and no row meets its `where`: it could
    not judge, which is not a pass."""
    if ar.rule.unjudged is None:
        return None
    where = compile_expr(ar.rule.where)
    if any(where({**row, **ar.params}) for row in facts):
        return None
    return render(ar.rule.unjudged, dict(ar.params), limit=None)


MAX_INFOS = 2  # info findings per rule and trace: the rest are counted in the last one kept


def _few_infos(found: list[Finding]) -> list[Finding]:
    """At most MAX_INFOS info findings of a rule per trace, the largest impacts kept: information
    is for reading, and a list of look-alikes hides the rest of the report."""
    infos: dict[str, list[Finding]] = {}
    for f in found:
        if f.severity == "info":
            infos.setdefault(f.code, []).append(f)
    dropped: set[int] = set()
    for group in infos.values():
        if len(group) <= MAX_INFOS:
            continue
        group.sort(key=lambda f: -(f.impact_us or 0.0))
        last, rest = group[MAX_INFOS - 1], group[MAX_INFOS:]
        last.evidence["more_info_findings"] = len(rest)
        last.message += f" (and {len(rest)} more like it, left out)"
        dropped |= {id(f) for f in rest}
    return [f for f in found if id(f) not in dropped]


def status_of(ar: ActiveRule, findings: list[Finding], skipped: str | None) -> RuleStatus:
    if skipped:
        return RuleStatus(ar.code, ar.rule.name, ar.severity, "skipped", reason=skipped)
    return RuleStatus(ar.code, ar.rule.name, ar.severity, "failed" if findings else "passed", findings=len(findings))


def check_trace(subject: Context | Trace, active: list[ActiveRule], role: str | None = None) -> TraceResult:
    """Every per-trace rule over the context's trace (a bare trace: with the default options and
    no baseline); `role` is its identity across runs (perflint.baseline.identity; default: its
    normalized file name)."""
    load_all()
    ctx = subject if isinstance(subject, Context) else Context(subject)
    trace = ctx.trace
    if role is None:
        role = identity.normalize_name(os.path.basename(trace.path))
    window = analysed_window_us(ctx)
    summary = summarize(trace, include_edge_steps=ctx.include_edge_steps)
    result = TraceResult(
        path=trace.path,
        rank=trace.rank,
        device=summary["device"],
        metrics={k: summary[k] for k in ("steps", "gpu", "temporal", "tensor_cores", "kernels", "communication")},
        warnings=list(trace.warnings),
        role=role,
        collectives=summary["_collectives"],
    )
    capabilities: dict[str, str | None] = {}
    reasons = {ar.code: missing(ctx, ar.rule.requires, capabilities) for ar in active if ar.rule.scope in REGISTRY.sources}
    # Per missing capability, the rules it skips (the first unmet requirement is the reason given).
    skipped_by: dict[str, list[str]] = {}
    for ar in active:
        first = next((r for r in ar.rule.requires if capabilities.get(r)), None) if reasons.get(ar.code) else None
        if first is not None:
            skipped_by.setdefault(first, []).append(ar.code)
    extra = {"skipped_by": skipped_by}
    pending: list[Pending] = []
    for ar in active:
        if ar.rule.scope not in REGISTRY.sources:
            continue  # run-level rule: evaluated over all traces afterwards
        reason = reasons[ar.code]
        if not reason:
            reason = unjudged(ar, rows(ctx, ar.rule.scope))
        done = [] if reason else evaluated(ar, rows(ctx, ar.rule.scope), REGISTRY.sources[ar.rule.scope].key, trace.path, trace.rank, role, extra=extra)
        pending += [p for p in done if ar.rule.what_if is not None]
        found = [p.finding for p in done]
        result.statuses.append(status_of(ar, found, reason))
        result.findings.extend(found)
    result.metrics["step_model"] = {**summary["step_model"], "what_if_all": apply_step_impacts(ctx, pending)}
    _cap_impacts(result.findings, window)
    result.findings = _few_infos(result.findings)
    if "trace" in REGISTRY.sources:
        (row,) = rows(ctx, "trace") or [{}]
        result.rank_row = {k: v for k, v in row.items() if isinstance(v, (int, float, str, bool, type(None)))}
        result.rank_row.update(path=trace.path, rank=trace.rank)
    result.findings.sort(key=lambda f: -(f.impact_us or 0.0))
    return result


def check_run(traces: list[TraceResult], active: list[ActiveRule]) -> tuple[list[Finding], list[RuleStatus]]:
    """Run-level rules (a run-level scope) over every trace's rank row."""
    findings: list[Finding] = []
    statuses: list[RuleStatus] = []
    rank_rows = [t.rank_row for t in traces if t.rank_row]
    roles = {t.path: t.role for t in traces if t.role}
    for ar in active:
        src = REGISTRY.run_sources.get(ar.rule.scope)
        if src is None:
            continue
        facts = src.fn(rank_rows)
        if not facts:
            statuses.append(status_of(ar, [], src.empty))
            continue
        why = unjudged(ar, facts)
        if why:
            statuses.append(status_of(ar, [], why))
            continue
        found = evaluate(ar, facts, src.key, "(all ranks)", None, identity.RUN_ROLE, roles)
        statuses.append(status_of(ar, found, None))
        findings.extend(found)
    return findings, statuses
