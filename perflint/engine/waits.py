"""Findings about communication time, once the ranks of a run are joined at their collectives.

A rank's time in a collective is waiting for the last rank to arrive plus transfer. Checked
alone, a trace cannot tell them apart, so a finding that measures exposed communication counts
both. Where the run's ranks were joined (perflint.stepmodel.join), or the profiler recorded the
wait itself (MindSpore's HCCL wait per step and per peer), each such finding says how much of it
is waiting and for which rank, and its impact keeps only the transfer: overlapping a wait with
compute does not end it sooner (the late rank's arrival does: COMM003, STRAG001 or STAGE001). A
finding whose transfer part saves less than a warning needs becomes info, saying why.
"""

from __future__ import annotations

from collections.abc import Iterable

from perflint.engine.expr import compile_expr
from perflint.engine.impacts import MIN_SAVING_PCT
from perflint.engine.run import ActiveRule
from perflint.findings import Finding, TraceResult, reaches
from perflint.units import fmt_duration


def _exposed_us(f: Finding) -> float | None:
    """Per step, the communication time the finding measures (exposed, else all of it)."""
    for key in ("comm_exposed_us", "comm_us"):
        v = f.evidence.get(key)
        if isinstance(v, (int, float)) and v > 0:
            return float(v)
    return None


def split_waits(traces: list[TraceResult], active: Iterable[ActiveRule] = ()) -> None:
    """Amend, in place, the communication findings of every trace whose wait is known: joined with
    its run (the wait its critical path runs through, and the rank it waited for), else as its
    profiler recorded it (MindSpore's HCCL wait, and the peer that held it). `active`: the run's
    rules, to judge each finding again on its transfer alone."""
    rules = {ar.code: ar for ar in active}
    for t in traces:
        rk = t.metrics.get("step_model", {}).get("ranks") or {}
        wait = float(rk.get("on_path_wait_us") or 0.0)
        late: int | None = int(rk["waited_for"][0]["rank"]) if wait > 0 and rk.get("waited_for") else None
        how = ""
        if wait <= 0 or late is None:
            recorded = t.rank_row.get("comm_recorded_wait_us")
            if not isinstance(recorded, (int, float)) or recorded <= 0:
                continue
            wait, how = float(recorded), " (as the profiler recorded it)"
            rank = t.rank_row.get("comm_recorded_wait_rank")
            late = int(rank) if isinstance(rank, int) else None
        for f in t.findings:
            exposed = _exposed_us(f)
            if exposed is not None:
                _split(f, min(wait, exposed), exposed, late, how)
                _rejudge(f, rules.get(f.code), (exposed - min(wait, exposed)) / exposed)


def _split(f: Finding, wait: float, exposed: float, late: int | None, how: str) -> None:
    transfer = exposed - wait
    f.evidence.update(comm_wait_us=wait, comm_transfer_us=transfer, waited_for_rank=late)
    whom = f"rank {late}" if late is not None else "the other ranks"
    f.message += f"; of it, {fmt_duration(wait)} per step is waiting for {whom} to arrive{how} and {fmt_duration(transfer)} transfer"
    if f.impact_us is None:
        return
    f.impact_us = round(f.impact_us * transfer / exposed, 3)
    step = f.evidence.get("step_us")
    steps = f.evidence.get("steps") or 1
    if not isinstance(step, (int, float)) or step <= 0 or not reaches(f.severity, "warning"):
        return
    per_step = f.impact_us / float(steps)
    if per_step < MIN_SAVING_PCT / 100.0 * float(step):
        f.evidence["severity_before_step_model"] = f.severity
        f.severity = "info"
        f.evidence["step_model_note"] = (
            f"most of it is waiting for {whom}, which overlapping does not shorten: the transfer "
            f"saves {fmt_duration(per_step)} per step, below the {MIN_SAVING_PCT:g}% a warning needs; "
            f"making {whom} arrive on time wins the wait (the run's late-rank, straggler or pipeline-stage finding says why)"
        )


def _rejudge(f: Finding, ar: ActiveRule | None, scale: float) -> None:
    """A warning whose rule, judged on the transfer alone (its exposed communication scaled to
    the transfer), would pass becomes info and says so: the wait is the late rank's finding."""
    if ar is None or not reaches(f.severity, "warning"):
        return
    env = {**f.evidence, **ar.params}
    for k in ("comm_exposed_us", "comm_exposed_pct"):
        if isinstance(env.get(k), (int, float)):
            env[k] = float(env[k]) * scale
    if compile_expr(ar.rule.assert_)(env):
        f.evidence["severity_before_step_model"] = f.severity
        f.severity = "info"
        pct = env.get("comm_exposed_pct")
        share = f" ({pct:.1f}% of the step)" if isinstance(pct, float) else ""
        f.evidence["step_model_note"] = (
            f"the transfer alone{share} is within the rule's bound: the rest is waiting, which the run's late-rank, "
            "straggler or pipeline-stage finding explains"
        )
