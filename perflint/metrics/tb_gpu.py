"""The TensorBoard profiler plugin's GPU Summary metrics (GPU Utilization, Est. SM Efficiency,
Est. Achieved Occupancy) and its bucketed counter series."""

from __future__ import annotations

import numpy as np

from perflint.metrics.intervals import clip_length, merge
from perflint.model import KERNEL, Trace


def tb_window(trace: Trace) -> tuple[float, float] | None:
    """First step start to last step end, extended to the device work those steps launched."""
    g = trace.gpu
    kern = g.kind == KERNEL
    if not kern.any():
        return None
    if not trace.steps:
        return float(g.ts[kern].min()), float((g.ts + g.dur)[kern].max())
    lo = trace.steps[0].ts
    hi = max(s.end for s in trace.steps)
    return lo, hi


def gpu_summary(trace: Trace) -> dict[str, float | None]:
    g = trace.gpu
    win = tb_window(trace)
    out: dict[str, float | None] = {"utilization_pct": None, "sm_efficiency_pct": None, "achieved_occupancy_pct": None}
    if win is None:
        return out
    lo, hi = win
    kern = g.kind == KERNEL
    ts, end = g.ts[kern], (g.ts + g.dur)[kern]
    ms, me = merge(ts, end)
    if hi > lo:
        out["utilization_pct"] = 100.0 * clip_length(ms, me, lo, hi) / (hi - lo)
    bps = g.blocks_per_sm[kern]
    has = ~np.isnan(bps)
    if has.any() and hi > lo:
        out["sm_efficiency_pct"] = 100.0 * float((np.minimum(bps[has], 1.0) * g.dur[kern][has]).sum()) / (hi - lo)
    occ = g.occupancy[kern]
    has = ~np.isnan(occ)
    if has.any():
        w = g.dur[kern][has]
        if w.sum() > 0:
            out["achieved_occupancy_pct"] = float((occ[has] * w).sum() / w.sum())
    return out
