"""HTA's temporal breakdown (idle / compute / non-compute), per device of a trace.

Window (HTA's): the last ProfilerStep is dropped when there are at least two, and only GPU
work launched inside the kept steps counts; without steps, all GPU work counts.
Unlike HTA, timestamps are kept exact (HTA rounds fractional ts up and ends down).
"""

from __future__ import annotations

import numpy as np

from perflint.metrics.intervals import merge
from perflint.metrics.kernels import CAT_INDEX, classify
from perflint.metrics.steps import launch_ts, step_of
from perflint.model import GPU_SYNC, Trace

NON_COMPUTE = (CAT_INDEX["communication"], CAT_INDEX["memcpy"], CAT_INDEX["memset"])


def hta_window_mask(trace: Trace) -> np.ndarray:
    """GPU rows HTA would analyse."""
    g = trace.gpu
    mask = g.kind != GPU_SYNC
    steps = trace.steps
    if steps:
        kept = steps[:-1] if len(steps) >= 2 else steps
        mask &= step_of(trace, kept, launch_ts(trace)) >= 0
    return mask


def temporal_breakdown(trace: Trace) -> dict[str, float | None]:
    g = trace.gpu
    mask = hta_window_mask(trace)
    if not mask.any():
        return {"idle_pct": None, "compute_pct": None, "non_compute_pct": None}
    cats = classify(trace).category
    ts, end = g.ts[mask], g.ts[mask] + g.dur[mask]
    span = float(end.max() - ts.min())
    ms, me = merge(ts, end)
    busy = float((me - ms).sum())
    idle = span - busy
    compute_mask = ~np.isin(cats[mask], NON_COMPUTE)
    compute = float(g.dur[mask][compute_mask].sum())
    non_compute = span - compute - idle
    if span <= 0:
        return {"idle_pct": None, "compute_pct": None, "non_compute_pct": None}
    return {
        "idle_pct": 100.0 * idle / span,
        "compute_pct": 100.0 * compute / span,
        "non_compute_pct": 100.0 * non_compute / span,
    }
