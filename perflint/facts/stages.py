"""`stages`: run-level rows, one per pipeline stage of a pipeline-parallel run.

In pipeline parallelism every micro-batch passes through every stage, so the slowest stage sets
the pace and the others wait for it (the pipeline's bubbles grow). A stage's load is the compute
(non-communication) kernel time per step of its ranks (their mean); the stages are compared with
the fastest one. Which stage a rank runs comes from the trace (`Trace.meta["pipeline_stage"]`,
set by readers whose format records it, e.g. MindSpore's cluster analysis file name). Where the
ranks record their floating-point operations (MindSpore's flops_summary), each stage's excess over
the stages' mean is given too: the measure MindInsight's parallel proposer flags above 20%.
"""

from __future__ import annotations

from typing import Any

from perflint.facts import Context, Fields, Row, enricher, run_source, typed
from perflint.facts.ranks import rank_sets

FIELDS: Fields = {
    "stage": typed("pipeline stage (0 = first)", "integer"),
    "stages": typed("pipeline stages of the run", "integer"),
    "ranks": typed("ranks running this stage", "integer"),
    "stage_ranks": typed("the ranks running this stage, in words ('2, 3')", "text"),
    "path": typed("the run (the directory or the first rank's trace)", "text"),
    "steps": typed("fewest analysis steps among the stage's ranks", "integer"),
    "compute_us": "compute (non-communication) kernel time per step of the stage: mean over its ranks",
    "fastest_stage": typed("the stage with the least compute per step", "integer"),
    "fastest_compute_us": "compute per step of the fastest stage",
    "mean_compute_us": "mean compute per step over the stages",
    "imbalance_pct": "compute_us over fastest_compute_us, %",
    "slowest": typed("this stage has the most compute per step (it sets the pipeline's pace)", "bool"),
    "excess_us": "compute per step over the stages' mean: what balancing the stages could win per step",
    "flops": typed("floating-point operations of the stage's ranks (their mean), where every rank's trace records them", "number"),
    "flops_excess_pct": "flops over the stages' mean, % (MindInsight's parallel proposer flags a stage above 20%)",
}


@enricher(
    "trace",
    fields={
        "pipeline_stage": typed("pipeline stage of the rank, when the trace records it", "integer"),
        "pipeline_stages": typed("pipeline stages of the run, when the trace records them", "integer"),
        "flops": typed("floating-point operations the rank ran over the profile, when the trace records them (MindSpore's flops_summary)", "number"),
    },
)
def _stage(ctx: Context, row: Row) -> Row:
    meta = ctx.trace.meta
    return {"pipeline_stage": meta.get("pipeline_stage"), "pipeline_stages": meta.get("pipeline_stages"), "flops": _num(meta.get("flops"))}


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


@run_source(
    "stages",
    key=("path", "stage"),
    fields=FIELDS,
    empty="needs a pipeline-parallel run whose traces record each rank's stage (at least two stages)",
)
def stages(rank_rows: list[Row]) -> list[Row]:
    """One row per stage of every run with at least two stages whose ranks all know their stage."""
    out: list[Row] = []
    for members in rank_sets(rank_rows):
        if any(m.get("pipeline_stage") is None or _num(m.get("compute_us")) is None for m in members):
            continue
        by_stage: dict[int, list[Row]] = {}
        for m in members:
            by_stage.setdefault(int(m["pipeline_stage"]), []).append(m)
        if len(by_stage) < 2:
            continue
        load = {s: sum(float(m["compute_us"]) for m in ms) / len(ms) for s, ms in by_stage.items()}
        fastest = min(load, key=lambda s: (load[s], s))
        slowest = max(load, key=lambda s: (load[s], -s))
        mean = sum(load.values()) / len(load)
        flops = _flops(by_stage)
        flops_mean = sum(flops.values()) / len(flops) if flops else 0.0
        run = sorted(str(m.get("path")) for m in members)[0]
        for s in sorted(by_stage):
            ms = by_stage[s]
            fast = load[fastest]
            out.append(
                {
                    "stage": s,
                    "stages": len(by_stage),
                    "ranks": len(ms),
                    "stage_ranks": ", ".join(str(r) for r in sorted(int(m["rank"]) for m in ms)),
                    "path": run,
                    "steps": min(int(m.get("steps") or 0) for m in ms),
                    "compute_us": load[s],
                    "fastest_stage": fastest,
                    "fastest_compute_us": fast,
                    "mean_compute_us": mean,
                    "imbalance_pct": 100.0 * (load[s] / fast - 1.0) if fast > 0 else None,
                    "slowest": s == slowest,
                    "excess_us": load[s] - mean,
                    "flops": flops.get(s),
                    "flops_excess_pct": 100.0 * (flops[s] / flops_mean - 1.0) if flops and flops_mean > 0 else None,
                }
            )
    return out


def _flops(by_stage: dict[int, list[Row]]) -> dict[int, float]:
    """Each stage's FLOPs, the mean over its ranks, where every rank records them (else none)."""
    got = {s: [_num(m.get("flops")) for m in ms] for s, ms in by_stage.items()}
    if any(v is None for vs in got.values() for v in vs):
        return {}
    return {s: sum(v for v in vs if v is not None) / len(vs) for s, vs in got.items()}
