"""Data-loader time per step, as the TensorBoard profiler plugin counts it.

The plugin's step breakdown gives each instant of a step to one role, by priority: kernel,
memcpy, memset, (communication), runtime, then DataLoader — the spans of the ops PyTorch names
`enumerate(DataLoader)#<Iter>.__next__` (and `enumerate(DataPipe)#...`). So "DataLoader time"
is the time the main process waits in `__next__` while the device and the launch path are
idle: the exposed loading cost. Its recommendation fires above 5% of the step. Steps are timed
as the plugin times them (extended to the end of the GPU work they launched), over every step
marker (`timed_windows`: the data wait is a step-level number, also where a format's op timeline
covers fewer steps).

Fields are added to the `trace` scope (one row per trace / rank).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.facts import Context, Fields, Row, capability, enricher, typed
from perflint.facts._spans import EMPTY, Spans, length, overlap, spans, timed_windows, union
from perflint.graph.names import dataloader_ops
from perflint.metrics.stats import np_median
from perflint.model import DATA_WAIT_PREFIX, GPU_SYNC, Trace
from perflint.stepmodel.graph import op_spans

FIELDS: Fields = {
    "dataloader_pct": "median over analysis steps of exposed data-loader time (TB plugin DataLoader role) / step time, %",
    "dataloader_us": "median exposed data-loader time per analysis step (us)",
    "dataloader_wall_pct": "median share of the step spent inside DataLoader __next__, overlapped or not, %",
    "dataloader_wall_us": "median time per analysis step inside DataLoader __next__ (us)",
    "dataloader_calls": typed("DataLoader __next__ calls that start in the analysis steps", "integer"),
    "dataloader_steps": typed("steps the data-loader numbers cover: every step marker's (also where a format's op timeline covers fewer)", "integer"),
    "data_queue_min_usage_pct": "lowest output-queue usage of the input pipeline's ops, % (MindSpore minddata; null when not recorded)",
    "dataloader_what": typed("what the data wait is: 'DataLoader __next__', or the wait a profiler recorded itself", "text"),
    "dataloader_in_main_process": typed("the DataLoader loads in the main process (num_workers=0: its iterator is _SingleProcessDataLoaderIter); false with worker processes, null when the trace does not say", "bool"),
    "dataloader_cause": typed("why it waits, where the iterator says it: 'num_workers=0: ...' or 'the worker processes do not keep up'", "text"),
}


@capability("dataloader", "the trace has data-loader ops (or the format's data waits)")
def _has_dataloader(t: Trace) -> str | None:
    if len(dataloader_ops(t)):
        return None
    return "the trace has no 'enumerate(DataLoader)#...__next__' ops (no torch DataLoader, or it ran outside the profiler)"


def _busy(t: Trace) -> Spans:
    """Device activity plus runtime calls: the roles that outrank DataLoader in the TB plugin."""
    g = t.gpu
    work = g.kind != GPU_SYNC
    dev = spans(g.ts[work], g.ts[work] + g.dur[work]) if work.any() else EMPTY
    rt = spans(t.runtime.ts, t.runtime.ts + t.runtime.dur) if len(t.runtime) else EMPTY
    return union(dev, rt)


def dataloader_numbers(ctx: Context) -> dict[str, Any]:
    t = ctx.trace
    empty: dict[str, Any] = {k: None for k in FIELDS}
    usage = [q["queue_usage_pct"] for q in t.meta.get("data_queues") or () if q.get("queue_usage_pct") is not None]
    empty["data_queue_min_usage_pct"] = min(usage) if usage else None
    idx = dataloader_ops(t)
    steps = ctx.steps
    if len(idx) == 0 or not steps:
        return empty
    ts, end = t.ops.ts[idx], t.ops.ts[idx] + t.ops.dur[idx]
    dl = spans(ts, end)
    busy = _busy(t)
    wall, exposed, wall_pct, exposed_pct = [], [], [], []
    calls = 0
    both = union(dl, busy) if len(dl[0]) and len(busy[0]) else None  # once, not once per step
    wins = timed_windows(ctx)
    for lo, hi in wins:
        w = length(dl, lo, hi)
        e = max(0.0, w - overlap(dl, busy, lo, hi, both))
        wall.append(w)
        exposed.append(e)
        wall_pct.append(100.0 * w / (hi - lo) if hi > lo else 0.0)
        exposed_pct.append(100.0 * e / (hi - lo) if hi > lo else 0.0)
        calls += int(((ts >= lo) & (ts < hi)).sum())
    iters = {t.s(int(n)) for n in np.unique(t.ops.name[idx])}
    main = True if any("_SingleProcessDataLoaderIter" in n for n in iters) else False if any("_MultiProcessingDataLoaderIter" in n for n in iters) else None
    waits = {t.s(int(n))[len(DATA_WAIT_PREFIX):] for n in np.unique(t.ops.name[idx]) if t.s(int(n)).startswith(DATA_WAIT_PREFIX)}
    return {
        "data_queue_min_usage_pct": empty["data_queue_min_usage_pct"],
        "dataloader_what": f"the {', '.join(sorted(waits))} (waiting for input data)" if waits else "DataLoader __next__",
        "dataloader_pct": float(np_median(exposed_pct)),
        "dataloader_us": float(np_median(exposed)),
        "dataloader_wall_pct": float(np_median(wall_pct)),
        "dataloader_wall_us": float(np_median(wall)),
        "dataloader_calls": calls,
        "dataloader_steps": len(wins),
        "dataloader_in_main_process": main,
        "dataloader_cause": None if main is None else "num_workers=0: batches are loaded in the main process" if main else "the worker processes do not keep up",
    }


@enricher("trace", fields=FIELDS)
def _enrich(ctx: Context, row: Row) -> Row:
    # The DataLoader's spans, for the step model's what-if of loading in the background.
    return {**dataloader_numbers(ctx), "_dataloader_spans": op_spans(ctx.trace, dataloader_ops(ctx.trace))}
