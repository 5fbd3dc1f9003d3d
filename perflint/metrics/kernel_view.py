"""The TensorBoard profiler plugin's kernel view: one row per kernel name over every kernel of the
trace, most total time first (torch-tb-profiler's KernelParser).

Calls, total / mean / max / min duration as the plugin aggregates them; mean blocks per SM and mean
est. achieved occupancy are weighted by kernel duration, with a kernel that does not record them
counted as 0, as the plugin does. Tensor Core use is perflint's kernel classification (null for
kernels that are not matrix kernels), not the plugin's fixed list of kernel names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.ids import unique_inverse
from perflint.metrics.kernel_classes import classify
from perflint.model import KERNEL, Trace


def kernel_view(trace: Trace) -> list[dict[str, Any]]:
    """One dict per kernel name: name, tensor_cores, calls, total_us, mean_us, max_us, min_us,
    blocks_per_sm, occupancy_pct (the last two None when no kernel of the trace records them)."""
    g = trace.gpu
    kern = np.flatnonzero(g.kind == KERNEL)
    if len(kern) == 0:
        return []
    names, inv = unique_inverse(g.name[kern])
    m = len(names)
    dur = g.dur[kern].astype(np.float64)
    calls = np.bincount(inv, minlength=m)
    total = np.bincount(inv, weights=dur, minlength=m)
    hi = np.full(m, -np.inf)
    lo = np.full(m, np.inf)
    np.maximum.at(hi, inv, dur)
    np.minimum.at(lo, inv, dur)

    def weighted(col: np.ndarray) -> list[float | None]:
        v = col[kern]
        if np.isnan(v).all():
            return [None] * m
        num = np.bincount(inv, weights=np.nan_to_num(v) * dur, minlength=m)
        return [float(x) for x in np.divide(num, total, out=np.zeros(m), where=total > 0).tolist()]

    # A name's first kernel decides its Tensor Core verdict (one name, one verdict in practice).
    first = np.full(m, len(kern), dtype=np.int64)
    np.minimum.at(first, inv, np.arange(len(kern)))
    tc = classify(trace).tensor_core[kern[first]].tolist()
    bps, occ = weighted(g.blocks_per_sm), weighted(g.occupancy)

    def r3(x: float | None) -> float | None:
        return None if x is None else round(x, 3)

    rows: list[dict[str, Any]] = [
        {
            "name": trace.s(int(names[u])),
            "tensor_cores": None if tc[u] < 0 else bool(tc[u]),
            "calls": int(calls[u]),
            "total_us": round(float(total[u]), 3),
            "mean_us": round(float(total[u]) / int(calls[u]), 3),
            "max_us": round(float(hi[u]), 3),
            "min_us": round(float(lo[u]), 3),
            "blocks_per_sm": r3(bps[u]),
            "occupancy_pct": r3(occ[u]),
        }
        for u in range(m)
    ]
    rows.sort(key=lambda r: (-r["total_us"], r["name"]))
    return rows
