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


def basis(base: Snapshot, cur: Snapshot) -> dict[str, Any]:
    """What two snapshots are compared per: `kind` steps (both have step markers), iterations (no
    steps, but an annotation range repeats in both: the outermost such, `range`), seconds (of
    window) or whole (one side has steps and the other not, or a snapshot too old to say: totals
    as recorded); `base_n` and `cur_n` are the divisors (steps, iterations, seconds), and `text`
    says it in words. Two windows of one job rarely hold as many iterations, so their totals are
    not comparable."""
    bw, cw = base.get("whole"), cur.get("whole")
    if bw is None or cw is None:
        if base.get("steps") and cur.get("steps"):
            bn, cn = len(base["steps"]), len(cur["steps"])
            return {"kind": "steps", "range": None, "base_n": bn, "cur_n": cn,
                    "text": f"per step ({bn} vs {cn} analysis steps)"}
        why = "one has steps, the other has not" if base.get("steps") or cur.get("steps") else "no steps"
        return {"kind": "whole", "range": None, "base_n": 1, "cur_n": 1, "text": f"whole traces as recorded ({why})"}
    counts = {name: n for name, n in cw.get("ranges", [])}
    for name, b_iters in bw.get("ranges", []):
        c_iters = counts.get(name)
        if c_iters:
            return {"kind": "iterations", "range": name, "base_n": b_iters, "cur_n": c_iters,
                    "text": f"per iteration (range {name!r}, {b_iters} vs {c_iters})"}
    bs, cs = bw["window_us"] / 1e6, cw["window_us"] / 1e6
    return {"kind": "seconds", "range": None, "base_n": bs, "cur_n": cs,
            "text": f"per second of window ({bs:.3g} s vs {cs:.3g} s; no steps or repeating ranges)"}


def per_unit(snap: Snapshot, kind: str, n: float) -> Snapshot:
    """A snapshot without steps as one sample per iteration or second: its totals and kernel
    groups divided by `n`; step time is the window per iteration (none per second)."""
    whole = snap["whole"]
    d = n if n > 0 else 1.0
    samples = {k: [v / d] for k, v in whole["totals"].items()}
    if whole.get("gpu_busy_pct") is not None:
        samples["gpu_busy_pct"] = [float(whole["gpu_busy_pct"])]
    if kind == "iterations":
        samples["step_time_us"] = [whole["window_us"] / d]

    def scaled(groups: dict[str, Any]) -> dict[str, Any]:
        return {k: {**g, "time_us": [sum(g["time_us"]) / d], "count": [sum(g["count"]) / d]} for k, g in groups.items()}

    return {**snap, "samples": samples, "groups": scaled(snap.get("groups", {})),
            "folded": scaled(snap.get("folded") or {}), "bound_by": {}}


def compare(base: Snapshot, cur: Snapshot) -> list[dict[str, Any]]:
    b = basis(base, cur)
    if b["kind"] in ("iterations", "seconds"):
        base, cur = per_unit(base, b["kind"], b["base_n"]), per_unit(cur, b["kind"], b["cur_n"])
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
    # A group left unpaired whose kernel the other side runs too (in another op) is not NEW or GONE.
    names = {side: {g["kernel"] for g in snap.get("groups", {}).values()} for side, snap in (("b", base), ("c", cur))}
    rows = []
    for b, c, renamed_from in pairs:
        ref = c or b
        assert ref is not None
        zeros_b = [0.0] * (len(c["time_us"]) if c else 0)
        zeros_c = [0.0] * (len(b["time_us"]) if b else 0)
        base_t = b["time_us"] if b else [0.0] * max(1, len(zeros_b))
        cur_t = c["time_us"] if c else [0.0] * max(1, len(zeros_c))
        if (b and c) or (c and c["kernel"] in names["b"]) or (b and b["kernel"] in names["c"]):
            metric = "kernel_group"
        else:
            metric = "new_group" if c else "removed_group"
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
