"""Compare two trace snapshots metric by metric: medians, change in the bad direction,
and a one-sided Mann-Whitney p-value over the per-step samples. Kernel groups are paired as
`matching.pair_groups` pairs them.
"""

from __future__ import annotations

from typing import Any

from perflint.baseline.matching import pair_groups
from perflint.baseline.snapshot import Snapshot
from perflint.metrics.stats import mann_whitney_greater, median
from perflint.stepmodel.critical import BOUND, LABELS
from perflint.units import fmt_duration

GREW_MIN_US = 1.0  # a critical-path category must grow by at least this much to be named
GREW_MAX = 3  # categories named in the step-time row's `grew`

# metric -> (unit, True when higher is worse)
SCALARS = {
    "step_time_us": ("us", True),
    "gpu_busy_pct": ("%", False),
    "kernels_per_step": ("", True),
    "launches_per_step": ("", True),
    "memcpy_bytes": ("B", True),
}


def _row(metric: str, key: str, base: list[float], cur: list[float], higher_is_worse: bool, **extra: Any) -> dict[str, Any]:
    bm, cm = median(base), median(cur)
    delta = None if bm is None or cm is None else cm - bm
    worse = None if delta is None else (delta if higher_is_worse else -delta)
    pct = None
    if delta is not None and bm:
        pct = 100.0 * delta / abs(bm)
    worse_pct = None if pct is None else (pct if higher_is_worse else -pct)
    p = mann_whitney_greater(cur, base) if higher_is_worse else mann_whitney_greater(base, cur)
    p_better = mann_whitney_greater(base, cur) if higher_is_worse else mann_whitney_greater(cur, base)
    return {
        "metric": metric,
        "key": key,
        "base_median": bm,
        "cur_median": cm,
        "delta": delta,
        "delta_pct": pct,
        "worse": worse,
        "worse_pct": worse_pct,
        "p_value": p,
        "p_better": p_better,
        "base_n": len(base),
        "cur_n": len(cur),
        "higher_is_worse": higher_is_worse,
        "time_delta_us": (delta * len(cur)) if delta is not None and metric != "gpu_busy_pct" and higher_is_worse else None,
        **extra,
    }


def compare(base: Snapshot, cur: Snapshot) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    bs, cs = base["samples"], cur["samples"]
    for m, (_unit, hw) in SCALARS.items():
        if m in bs and m in cs:
            rows.append(_row(m, m, bs[m], cs[m], hw))
    bound = _bound_rows(base, cur)
    for r in rows:
        if r["metric"] == "step_time_us":
            r["grew"] = _grew(bound)
    rows.extend(bound)
    for m in cs:
        if m.startswith("category.") and m in bs and (any(cs[m]) or any(bs[m])):
            rows.append(_row("category", m.split(".", 1)[1], bs[m], cs[m], True))
    rows.extend(_group_rows(base, cur))
    bp, cp = base.get("peak_memory_bytes"), cur.get("peak_memory_bytes")
    if bp is not None and cp is not None:
        rows.append(_row("peak_memory_bytes", "peak_memory_bytes", [float(bp)], [float(cp)], True))
    return rows


def _bound_rows(base: Snapshot, cur: Snapshot) -> list[dict[str, Any]]:
    """The median step's change split over what bounds it: one row per critical-path category,
    each side's median step shared out as its critical path is, so the deltas add up to the change
    of the median step time."""
    bb, cb = base.get("bound_by") or {}, cur.get("bound_by") or {}
    if not bb or not cb:
        return []
    cats = [c for c in BOUND if c in bb or c in cb]
    return [_row("bound_by", c, [float(bb.get(c, 0.0))], [float(cb.get(c, 0.0))], True, label=LABELS[c]) for c in cats]


def _grew(bound: list[dict[str, Any]]) -> str:
    """The critical-path categories that grew most, for the step-time row's message ("" when
    none did or the snapshots do not say)."""
    up = sorted((r for r in bound if (r["delta"] or 0.0) >= GREW_MIN_US), key=lambda r: -r["delta"])[:GREW_MAX]
    if not up:
        return ""
    return "; on the critical path " + ", ".join(f"{r['label']} +{fmt_duration(r['delta'])}" for r in up) + " per step"


def _group_rows(base: Snapshot, cur: Snapshot) -> list[dict[str, Any]]:
    cur_total = sum(sum(g["time_us"]) for g in cur.get("groups", {}).values()) or 1.0
    pairs = pair_groups(base, cur)
    rows = []
    for b, c, renamed_from in pairs:
        ref = c or b
        assert ref is not None
        zeros_b = [0.0] * (len(c["time_us"]) if c else 0)
        zeros_c = [0.0] * (len(b["time_us"]) if b else 0)
        base_t = b["time_us"] if b else [0.0] * max(1, len(zeros_b))
        cur_t = c["time_us"] if c else [0.0] * max(1, len(zeros_c))
        metric = "kernel_group" if b and c else ("new_group" if c else "removed_group")
        label = f"{ref.get('top_level_op') or '-'} > {ref.get('op') or '-'} {ref.get('input_dims') or ''} : {ref['kernel']}"
        rows.append(
            _row(
                metric,
                label,
                base_t,
                cur_t,
                True,
                kernel=ref["kernel"],
                op=ref.get("op"),
                top_level_op=ref.get("top_level_op"),
                input_dims=ref.get("input_dims"),
                renamed_from=renamed_from,
                share_pct=100.0 * sum(cur_t) / cur_total if c else 0.0,
                base_count=median([float(x) for x in b["count"]]) if b else 0.0,
                cur_count=median([float(x) for x in c["count"]]) if c else 0.0,
            )
        )
    return rows
