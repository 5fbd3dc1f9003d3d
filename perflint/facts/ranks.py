"""`ranks`: run-level rows, one per rank of a multi-rank set, compared with the other ranks.

A straggler shows in two ways. Its step time is longer when ranks do not wait for each other
every step (pipeline stages, a rank stuck in data loading). In synchronous data parallelism the
step times match — the fast ranks wait for the slow one inside the collectives — so the
straggler shows as more compute (non-communication) kernel time per step. Each rank is compared
with the median of the OTHER ranks of its set (leave-one-out: with two ranks, with the other
one), on both measures; `excess_pct` is the larger excess.

A set is the traces that share a world size and a directory (one run's rank files) and, where the
traces record it, a pipeline stage; traces without a rank are never compared, so unrelated traces
checked together stay apart.
"""

from __future__ import annotations

import os
from typing import Any

from perflint.facts import Context, Fields, Row, enricher, run_source, typed
from perflint.metrics.stats import np_median
from perflint.stepmodel.join import LATE_FIELDS

FIELDS: Fields = {
    "rank": typed("rank", "integer"),
    "path": typed("trace file of the rank", "text"),
    "ranks": typed("ranks in the set", "integer"),
    "peers": typed("other ranks the rank is compared with", "integer"),
    "world_size": typed("world size (distributedInfo)", "integer"),
    "steps": typed("analysis steps of the rank", "integer"),
    "peer_min_steps": typed("fewest analysis steps among the other ranks", "integer"),
    "step_median_us": "median analysis-step time of the rank",
    "peer_step_median_us": "median over the other ranks of their median step time",
    "step_excess_pct": "step_median_us over peer_step_median_us, %",
    "compute_us": "non-communication kernel time per analysis step of the rank",
    "peer_compute_us": "median over the other ranks of their compute_us",
    "compute_excess_pct": "compute_us over peer_compute_us, %",
    "excess_pct": "the larger of step_excess_pct and compute_excess_pct",
    "metric": typed("which measure gives excess_pct: 'step time' or 'compute time'", "text"),
    "excess_us": "time per step over the peers on that measure",
    "late_cost_us": "the most critical-path time per step another rank of the run waited for this rank to arrive at collectives "
    "(ranks joined at their collectives; absent where no other rank's critical path waited for it, or the ranks could not be joined)",
    "late_collectives": typed("collectives (in the analysed steps) the rank arrived at last, with the others waiting for it (ranks joined at their collectives)", "integer"),
    "joined_collectives": typed("the rank's collectives joined with the other ranks' (their ends agree)", "integer"),
    "late_us": "per step, how far the rank arrived after the next-latest rank, summed over the collectives it arrived at last",
    "late_max_us": "the most the rank arrived after the next-latest rank at one collective",
    "late_collective": typed("the collective of late_max_us", "text"),
    "late_step": typed("the step of late_max_us (null without steps)", "integer"),
    "late_before": typed("what the rank's critical path ran before the collective it arrived latest at in its median step: '<name> (<category>)'", "text"),
    "late_waited_us": "per step, the other ranks' total wait in the collectives the rank arrived at last",
}


@enricher("trace", fields={"world_size": typed("world size (distributedInfo), when recorded", "integer")})
def _world_size(ctx: Context, row: Row) -> Row:
    return {"world_size": ctx.trace.world_size}


def _excess(value: Any, peers: list[float]) -> tuple[float | None, float | None]:
    """(peer median, % over it) — None when either side is unknown or the peers are at 0."""
    if value is None or not peers:
        return None, None
    med = float(np_median(peers))
    if med <= 0:
        return med, None
    return med, 100.0 * (float(value) / med - 1.0)


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def rank_sets(rank_rows: list[Row]) -> list[list[Row]]:
    """The rank rows grouped into runs: same world size and directory (a profiler output
    directory read whole is one run); rows without a rank stay out."""
    sets: dict[tuple[Any, str], list[Row]] = {}
    for r in rank_rows:
        if r.get("rank") is None:
            continue
        path = os.path.abspath(str(r.get("path", "")))
        key = (r.get("world_size"), path if os.path.isdir(path) else os.path.dirname(path))
        sets.setdefault(key, []).append(r)
    return list(sets.values())


def _same_work(sets: list[list[Row]]) -> list[list[Row]]:
    """Each set split by pipeline stage where the traces record it: ranks of different stages run
    different layers, so only ranks of one stage are peers (the stages' balance is `stages`)."""
    out: list[list[Row]] = []
    for members in sets:
        by_stage: dict[Any, list[Row]] = {}
        for m in members:
            by_stage.setdefault(m.get("pipeline_stage"), []).append(m)
        out.extend(by_stage.values())
    return out


@run_source("ranks", key=("path", "rank"), fields=FIELDS)
def ranks(rank_rows: list[Row]) -> list[Row]:
    """One row per rank of every set with at least two ranks (empty: nothing to compare)."""
    out: list[Row] = []
    for members in _same_work(rank_sets(rank_rows)):
        if len({m["rank"] for m in members}) < 2:
            continue
        for i, r in enumerate(members):
            others = [m for j, m in enumerate(members) if j != i]
            step = _num(r.get("step_median_us"))
            comp = _num(r.get("compute_us"))
            peer_step, step_x = _excess(step, [v for m in others if (v := _num(m.get("step_median_us"))) is not None])
            peer_comp, comp_x = _excess(comp, [v for m in others if (v := _num(m.get("compute_us"))) is not None])
            use_step = comp_x is None or (step_x is not None and step_x >= comp_x)
            excess_pct = step_x if use_step else comp_x
            if use_step:
                excess_us = step - peer_step if step is not None and peer_step is not None else None
            else:
                excess_us = comp - peer_comp if comp is not None and peer_comp is not None else None
            out.append(
                {
                    "rank": r["rank"],
                    "path": r.get("path"),
                    "ranks": len(members),
                    "peers": len(others),
                    "world_size": r.get("world_size"),
                    "steps": r.get("steps"),
                    "peer_min_steps": min((int(m.get("steps") or 0) for m in others), default=0),
                    "step_median_us": step,
                    "peer_step_median_us": peer_step,
                    "step_excess_pct": step_x,
                    "compute_us": comp,
                    "peer_compute_us": peer_comp,
                    "compute_excess_pct": comp_x,
                    "excess_pct": excess_pct,
                    "metric": "step time" if use_step else "compute time",
                    "excess_us": excess_us,
                    "late_cost_us": _num(r.get("late_cost_us")),
                    **{f: r.get(f) for f in LATE_FIELDS.values()},
                }
            )
    out.sort(key=lambda r: (str(r["path"]), r["rank"]))
    return out
