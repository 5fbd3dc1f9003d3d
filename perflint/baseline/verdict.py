"""The regression verdict on one compared metric: same, worse or better, and whether significant.

A row's change is "same" when it is smaller than the minimum effect of its kind of metric, whatever
its p-value: over many steps a test finds a 4-byte or 0.1 µs difference "significant", and nobody
should chase it. Otherwise it is "worse" or "better" (the side of the smaller one-sided p-value), and
significant when that p-value is below alpha with at least two samples on each side.
"""

from __future__ import annotations

from typing import Any

from perflint.baseline.compare import SCALARS

# kind -> (absolute minimum, minimum % of the baseline); a change must reach both to count.
MIN_EFFECT: dict[str, tuple[float, float]] = {
    "time": (1.0, 1.0),  # µs: 1 µs and 1% (step time, category time, a kernel group's time)
    "bytes": (4096.0, 1.0),  # 4 KiB and 1% (memcpy bytes per step, peak memory)
    "count": (1.0, 1.0),  # one kernel or launch per step, and 1%
    "pct": (0.5, 0.0),  # half a percentage point (GPU busy %)
}
_UNIT_KIND = {"us": "time", "B": "bytes", "": "count", "%": "pct"}
# The minimum effects in words, for the reports' footnotes.
MIN_EFFECT_TEXT = "1 µs and 1% of time, 4 KiB and 1% of bytes, 1 and 1% of a count, 0.5 points of a percentage"


def kind_of(metric: str) -> str:
    """time, bytes, count or pct: what a compared metric measures."""
    if metric in SCALARS:
        return _UNIT_KIND[SCALARS[metric][0]]
    return "bytes" if metric.endswith("_bytes") else "time"  # categories and kernel groups are time


def min_effect(r: dict[str, Any]) -> float:
    absolute, relative = MIN_EFFECT[kind_of(r["metric"])]
    base: float = r.get("base_median") or 0.0
    return max(absolute, relative / 100.0 * abs(base))


def assess(r: dict[str, Any], alpha: float) -> tuple[str, bool, float | None]:
    """(change, significant, p): change is same, worse, better or n/a."""
    delta = r.get("delta")
    if delta is None:
        return "n/a", False, None
    if abs(delta) < min_effect(r):
        return "same", False, None
    worse = (delta > 0) == bool(r.get("higher_is_worse", True))
    p: float | None = r.get("p_value") if worse else r.get("p_better")
    if p is None or not (r.get("base_n", 0) >= 2 and r.get("cur_n", 0) >= 2):
        return ("worse" if worse else "better"), False, None
    return ("worse" if worse else "better"), bool(p < alpha), p


def assessed(r: dict[str, Any], alpha: float) -> dict[str, Any]:
    """The row with its minimum effect, change and significance."""
    change, significant, _p = assess(r, alpha)
    return {**r, "min_effect": min_effect(r), "change": change, "significant": significant}


def change_text(r: dict[str, Any], alpha: float) -> str:
    """The verdict in words: same, n/a, worse/better with its p-value (* when significant)."""
    change, significant, p = assess(r, alpha)
    if change in ("same", "n/a"):
        return change
    if p is None:
        return f"{change} (untested: one sample)"
    return f"{change} p={p:.3g}{' *' if significant else ''}"
