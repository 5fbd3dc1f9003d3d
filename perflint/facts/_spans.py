"""Interval helpers for the time-share facts (data loader, communication): lengths of merged
spans, clipped to a window, and of the intersection of two span sets."""

from __future__ import annotations

import numpy as np

from perflint.facts import Context
from perflint.memo import once
from perflint.metrics.intervals import clip_length, merge, reduce_at
from perflint.metrics.steps import clipped, launch_ts, step_of
from perflint.model import GPU_SYNC

Spans = tuple[np.ndarray, np.ndarray]  # merged, sorted, disjoint (starts, ends)

EMPTY: Spans = (np.zeros(0), np.zeros(0))


def spans(starts: np.ndarray, ends: np.ndarray) -> Spans:
    return merge(np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64))


def union(a: Spans, b: Spans) -> Spans:
    return merge(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def length(a: Spans, lo: float = -np.inf, hi: float = np.inf) -> float:
    if not np.isfinite(lo) and not np.isfinite(hi):
        return float((a[1] - a[0]).sum())
    return clip_length(a[0], a[1], lo, hi)


def overlap(a: Spans, b: Spans, lo: float = -np.inf, hi: float = np.inf, ab: Spans | None = None) -> float:
    """|a ∩ b| inside [lo, hi]: |a| + |b| - |a ∪ b| (all three are unions of disjoint spans).
    `ab` is union(a, b) when the caller already has it (many windows over the same spans)."""
    if len(a[0]) == 0 or len(b[0]) == 0:
        return 0.0
    if ab is None:
        ab = union(a, b)
    return max(0.0, length(a, lo, hi) + length(b, lo, hi) - length(ab, lo, hi))


@once
def step_windows(ctx: Context) -> list[tuple[float, float]]:
    """The analysis steps as the TensorBoard plugin times them (`update_steps_consider_device_side`):
    a step ends when the host step ends or when the last GPU work it launched ends, whichever is
    later, and starts no earlier than the previous step's end. Time shares then stay <= 100% even
    when the GPU runs far behind the CPU."""
    t = ctx.trace
    g = t.gpu
    every = t.steps
    work = g.kind != GPU_SYNC
    owner = step_of(t, every, launch_ts(t))
    ends = g.ts + g.dur
    dev_end = np.full(len(every), -np.inf)
    sel = work & (owner >= 0)
    if sel.any():
        reduce_at(np.maximum, dev_end, owner[sel], ends[sel])
    wanted = {id(s) for s in ctx.steps}
    out: list[tuple[float, float]] = []
    prev = every[0].ts if every else 0.0
    for i, s in enumerate(every):
        lo = max(prev, s.ts)
        hi = max(s.end, float(dev_end[i]), lo)
        prev = hi
        if id(s) in wanted:
            out.append(clipped(t, lo, hi))
    return out
