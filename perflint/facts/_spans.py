"""Interval helpers for the time-share facts (data loader, communication): lengths of merged
spans, clipped to a window, and of the intersection of two span sets."""

from __future__ import annotations

import numpy as np

from perflint.facts import Context
from perflint.facts._common import model
from perflint.metrics.intervals import clip_length, merge

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


def step_windows(ctx: Context) -> list[tuple[float, float]]:
    """The analysis window's steps as (start, end) pairs (the step model's: perflint.stepmodel;
    the whole trace is one window without steps)."""
    return [(s.lo, s.hi) for s in model(ctx).steps]


def timed_windows(ctx: Context) -> list[tuple[float, float]]:
    """Every step marker's window (less the edges): the steps step-level numbers (time, data wait)
    cover, also where the op and kernel events cover fewer than `step_windows`."""
    return [(s.lo, s.hi) for s in model(ctx).window.timed_steps]
