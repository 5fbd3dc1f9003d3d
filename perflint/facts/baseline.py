"""`baseline`: regression rows, this trace against its baseline snapshot.

The baseline for a trace is put in `trace.cache["baseline"]` by the check command (matched by
rank); rules of this scope are skipped, with the reason, when there is none or when either
side has too few analysis steps for a significance test.
"""

from __future__ import annotations

from typing import Any

from perflint.facts import Context, Row, capability, fact
from perflint.facts._compare import compare
from perflint.facts._snapshot import trace_snapshot
from perflint.model import Trace

MIN_STEPS = 4  # one-sided exact Mann-Whitney with 4 vs 4 samples can reach p = 1/70

FIELDS = {
    "metric": "step_time_us | gpu_busy_pct | category | kernel_group | new_group | removed_group | "
    "kernels_per_step | launches_per_step | memcpy_bytes | peak_memory_bytes",
    "key": "what is compared (category name, kernel-group label, metric name)",
    "base_median": "baseline median over analysis steps",
    "cur_median": "current median over analysis steps",
    "delta": "cur_median - base_median",
    "delta_pct": "delta as % of the baseline median",
    "worse": "change in the bad direction (positive = worse), metric units",
    "worse_pct": "change in the bad direction, % of baseline",
    "p_value": "one-sided Mann-Whitney U p-value that the current run is worse",
    "p_better": "one-sided Mann-Whitney U p-value that the current run is better",
    "base_n": "baseline samples (steps)",
    "cur_n": "current samples (steps)",
    "higher_is_worse": "direction of the metric",
    "time_delta_us": "extra time over the current run's analysis steps",
    "kernel": "kernel name (groups)",
    "op": "bottom-level op (groups)",
    "top_level_op": "top-level op (groups)",
    "input_dims": "input dims (groups)",
    "renamed_from": "baseline kernel name when the op's kernel changed",
    "share_pct": "group share of current kernel time",
    "base_count": "baseline launches per step (groups)",
    "cur_count": "current launches per step (groups)",
}


def _baseline(t: Trace) -> dict[str, Any] | None:
    b = t.cache.get("baseline")
    return b if isinstance(b, dict) else None


@capability("baseline", "a baseline was given (--baseline)")
def _has_baseline(t: Trace) -> str | None:
    return None if _baseline(t) is not None else "no baseline given (use --baseline FILE|TRACE|DIR)"


@capability("baseline_steps", "the baseline and the trace both have analysis steps to compare")
def _enough_steps(t: Trace) -> str | None:
    b = _baseline(t)
    if b is None:
        return "no baseline given (use --baseline FILE|TRACE|DIR)"
    nb = len(b.get("steps", []))
    nc = int(t.cache.get("analysis_steps_n", 0))
    if nb < MIN_STEPS or nc < MIN_STEPS:
        return (
            f"needs at least {MIN_STEPS} analysis steps in both baseline and current trace for a significance "
            f"test (baseline has {nb}, current has {nc})"
        )
    return None


@fact("baseline", key=("metric", "key"), fields=FIELDS)
def baseline_rows(ctx: Context) -> list[Row]:
    """Metric-by-metric comparison with the baseline snapshot."""
    base = _baseline(ctx.trace)
    if base is None:
        return []
    return compare(base, current_snapshot(ctx))


def current_snapshot(ctx: Context) -> dict[str, Any]:
    snap = ctx.cache.get("snapshot")
    if snap is None:
        snap = trace_snapshot(ctx)
        ctx.cache["snapshot"] = snap
    return snap


IDENTITY_FIELDS = ("device", "compute_capability", "cuda_runtime_version", "hip_runtime_version")


def identity_mismatch(base: dict[str, Any], cur: dict[str, Any]) -> str | None:
    """Why two snapshots are not comparable (another device or software stack), or None."""
    diffs = []
    for k in IDENTITY_FIELDS:
        b, c = base.get(k), cur.get(k)
        if b is not None and c is not None and b != c:
            diffs.append(f"{k} {b!r} vs {c!r}")
    return "; ".join(diffs) or None
