"""`baseline`: regression rows, this trace against its baseline snapshot.

The check gives a trace's context its baseline (`Context.baseline`, matched by rank); rules of
this scope are skipped, with the reason, when there is none or when either side has too few
analysis steps for a significance test.
"""

from __future__ import annotations

from perflint.facts import Context, Fields, Row, context_capability, fact, typed

MIN_STEPS = 4  # one-sided exact Mann-Whitney with 4 vs 4 samples can reach p = 1/70

FIELDS: Fields = {
    "metric": typed("step_time_us | gpu_busy_pct | category | bound_by | kernel_group | new_group | removed_group | "
    "kernels_per_step | launches_per_step | memcpy_bytes | peak_memory_bytes", "text"),
    "key": typed("what is compared (category name, critical-path category, kernel-group label, metric name)", "text"),
    "base_median": typed("baseline median over analysis steps", "number"),
    "cur_median": typed("current median over analysis steps", "number"),
    "delta": typed("cur_median - base_median", "number"),
    "delta_pct": "delta as % of the baseline median",
    "worse": typed("change in the bad direction (positive = worse), metric units", "number"),
    "worse_pct": "change in the bad direction, % of baseline",
    "p_value": typed("one-sided Mann-Whitney U p-value that the current run is worse", "number"),
    "p_better": typed("one-sided Mann-Whitney U p-value that the current run is better", "number"),
    "base_n": typed("baseline samples (steps)", "integer"),
    "cur_n": typed("current samples (steps)", "integer"),
    "higher_is_worse": typed("direction of the metric", "bool"),
    "time_delta_us": "extra time over the current run's analysis steps",
    "label": typed("the critical-path category in words (bound_by rows: the median step's time along its critical path in that category; their deltas add up to the median step's)", "text"),
    "grew": typed("step_time_us row: '; on the critical path <category> +<time>, ... per step' naming the critical-path categories that grew most ('' when none did)", "text"),
    "kernel": typed("kernel name (groups)", "text"),
    "op": typed("bottom-level op (groups)", "text"),
    "top_level_op": typed("top-level op (groups)", "text"),
    "input_dims": typed("input dims (groups)", "list"),
    "renamed_from": typed("baseline kernel name when the op's kernel changed", "text"),
    "share_pct": "group share of current kernel time",
    "base_count": typed("baseline launches per step (groups)", "integer"),
    "cur_count": typed("current launches per step (groups)", "integer"),
}


NO_BASELINE = "no baseline given (use --baseline FILE|TRACE|DIR)"


@context_capability("baseline", "a baseline was given (--baseline)")
def _has_baseline(ctx: Context) -> str | None:
    return None if ctx.baseline is not None else NO_BASELINE


@context_capability("baseline_steps", "the baseline and the trace both have analysis steps to compare")
def _enough_steps(ctx: Context) -> str | None:
    if ctx.baseline is None:
        return NO_BASELINE
    nb = ctx.baseline.steps
    nc = len(ctx.steps)
    if nb < MIN_STEPS or nc < MIN_STEPS:
        return (
            f"needs at least {MIN_STEPS} analysis steps in both baseline and current trace for a significance "
            f"test (baseline has {nb}, current has {nc})"
        )
    return None


@fact("baseline", key=("metric", "key"), fields=FIELDS)
def baseline_rows(ctx: Context) -> list[Row]:
    """Metric-by-metric comparison with the baseline snapshot."""
    return [] if ctx.baseline is None else ctx.baseline.compare(ctx)
