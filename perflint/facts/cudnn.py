"""`kernel_groups` fields on cuDNN's heuristic-default convolution kernels (metrics.cudnn_algos):
each group's algorithm, and the share of kernel time all such kernels of the trace take."""

from __future__ import annotations

import numpy as np

from perflint.facts import Context, Fields, Row, enricher, typed
from perflint.facts._common import window_mask
from perflint.facts._group import id_table
from perflint.memo import once
from perflint.metrics.cudnn_algos import fallback_algorithm
from perflint.model import KERNEL

FIELDS: Fields = {
    "cudnn_fallback": typed("the cuDNN algorithm of a legacy convolution kernel its heuristics choose without cudnn.benchmark (e.g. CUDNN_CONVOLUTION_BWD_DATA_ALGO_0), null otherwise", "text"),
    "cudnn_fallback_share_pct": "share of the analysed kernel time in all such kernels of the trace (the same on every row)",
}


@once
def _fallback_share(ctx: Context) -> float | None:
    t = ctx.trace
    g = t.gpu
    kern = window_mask(ctx) & (g.kind == KERNEL)
    total = float(g.dur[kern].sum())
    if total <= 0:
        return None
    fallback = id_table(g.name, lambda i: fallback_algorithm(t.s(i)) is not None, dtype=bool, fill=False)
    hit = kern & fallback[g.name + 1]
    return 100.0 * float(np.sum(g.dur[hit])) / total


@enricher("kernel_groups", fields=FIELDS)
def _enrich(ctx: Context, row: Row) -> Row:
    name = row.get("kernel")
    return {"cudnn_fallback": fallback_algorithm(name) if isinstance(name, str) else None, "cudnn_fallback_share_pct": _fallback_share(ctx)}
