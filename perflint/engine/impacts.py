"""Every finding's impact is the step time its fix saves, from the step model.

A rule that declares what its fix changes (`what_if`) has its findings' fixes replayed on the
analysed steps' dependency graphs: each fix alone (the finding's impact), and all of them
together (the trace's `what_if_all`: no double counting). The rule's own estimate of the work its
fix removes stays in the evidence (`gpu_time_saved_us` for GPU work): where the step does not wait
on that work the saving is ~0, and a warning or error falls to info, saying so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from perflint.engine.expr import compile_expr
from perflint.engine.rule_core import RuleCore
from perflint.facts import Context, Row
from perflint.findings import Finding, reaches
from perflint.stepmodel import Fix, step_model
from perflint.stepmodel.whatif import RESIDUAL
from perflint.units import fmt_duration, plural

# A warning or error saves at least this share of the analysed time; less is info.
MIN_SAVING_PCT = 1.0
DEFAULT_TO_US = {"fast_launches": 2.0, "pin_copies": 10.0}  # a launch call's host cost without per-op overhead
WHAT = {
    "shorten_gpu": "its GPU work made faster",
    "overlap_gpu": "its GPU work overlapped with the stream's other work",
    "unblock_calls": "its host waits removed",
    "remove_calls": "its calls removed",
    "cap_calls": "its calls shortened",
    "pin_copies": "its copies from pinned memory",
    "remove_cpu": "its CPU time removed",
    "fast_launches": "per-launch host overhead removed (CUDA graphs)",
    "host_keeps_up": "every host delay removed (the GPU alone sets the pace)",
}


@dataclass
class Pending:
    """A finding whose fix the step model replays."""

    rule: RuleCore
    finding: Finding
    env: dict[str, Any]
    members: list[Row]


def _rows(members: list[Row], name: str) -> np.ndarray:
    parts = [np.asarray(m[name], dtype=np.int64) for m in members if m.get(name) is not None]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _number(text: str | None, env: dict[str, Any]) -> float | None:
    if text is None:
        return None
    got = compile_expr(text)(env)
    return float(got) if isinstance(got, (int, float)) and not isinstance(got, bool) and got == got else None


def fix_of(ctx: Context, p: Pending) -> Fix | None:
    w = p.rule.what_if
    if w is None:
        return None
    gpu = _rows(p.members, w.gpu)
    calls = _rows(p.members, w.calls)
    spans = tuple(s for m in p.members for s in (m.get(w.spans) or ()))
    factor = _number(w.factor, p.env)
    if factor is None and w.change in ("shorten_gpu", "pin_copies"):
        total = float(ctx.trace.gpu.dur[gpu].sum()) if len(gpu) else 0.0
        saved = p.finding.impact_us or 0.0
        factor = saved / total if total > 0 else 0.0
    to_us = _number(w.to_us, p.env)
    return Fix(
        w.change, gpu, calls, spans, min(max(factor or 0.0, 0.0), 1.0), DEFAULT_TO_US.get(w.change, 0.0) if to_us is None else to_us
    )


def apply_step_impacts(ctx: Context, pending: list[Pending]) -> dict[str, Any] | None:
    """Set each pending finding's impact to its fix's step-time saving; the trace's what-ifs: each
    fix's and all of them together (None where no step can be replayed: the rules' own estimates
    stay)."""
    m = step_model(ctx.trace, ctx.include_edge_steps)
    fixes = [fix_of(ctx, p) for p in pending]
    todo = [(p, f) for p, f in zip(pending, fixes) if f is not None and not f.empty]
    got = m.what_if([f for _, f in todo])
    if got is None or got.replayed_us <= 0:
        return None
    floor = MIN_SAVING_PCT / 100.0 * got.replayed_us
    # The step a saving is told against: the median analysed step (the whole trace without steps).
    step_us = m.median_step_us or m.window_us
    per = "step" if m.window.has_steps else "trace"
    what_ifs: list[dict[str, Any]] = []
    for (p, fix), saving in zip(todo, got.alone):
        f = p.finding
        estimate = f.impact_us
        left = " on top of every other finding's fix" if fix.change in RESIDUAL else ""
        f.evidence["impact_basis"] = f"step model: {plural(got.steps, 'analysed step')} replayed with {WHAT[fix.change]}{left}"
        if estimate is not None and fix.change in ("shorten_gpu", "pin_copies"):
            f.evidence["gpu_time_saved_us"] = estimate
        elif estimate is not None:
            f.evidence["work_saved_us"] = estimate
        f.evidence["step_saving_per_step_us"] = saving / got.steps
        f.evidence["step_us"] = step_us
        f.evidence["saving_per"] = per
        f.impact_us = saving
        if saving < floor and reaches(f.severity, "warning"):
            f.evidence["severity_before_step_model"] = f.severity
            f.severity = "info"
            pct = 100.0 * saving / got.replayed_us
            note = f"fixing it saves {fmt_duration(saving / got.steps)} per {per} ({pct:.1f}% of it, below the {MIN_SAVING_PCT:g}% a warning needs)"
            if estimate and saving < 0.9 * estimate:
                what = "GPU time" if fix.change in ("shorten_gpu", "pin_copies") else "time"
                note += f": the {what} it saves is {fmt_duration(estimate)}, but the step waits on {fmt_duration(saving)} of it"
            f.evidence["step_model_note"] = note
        what_ifs.append({
            "code": f.code, "fingerprint": f.fingerprint, "message": f.message, "change": fix.change,
            "saving_us": saving, "saving_per_step_us": saving / got.steps,
            "predicted_step_us": max(0.0, step_us - saving / got.steps),
        })  # fmt: skip
    what_ifs.sort(key=lambda w: -float(w["saving_us"]))
    return {
        "step_us": step_us,
        "per": per,
        "predicted_step_us": max(0.0, step_us * (1.0 - got.together / got.replayed_us)),
        "saving_us": got.together,
        "saving_pct": 100.0 * got.together / got.replayed_us,
        "steps": got.steps,
        "replayed_steps": got.replayed_steps,
        "what_ifs": what_ifs,
    }
