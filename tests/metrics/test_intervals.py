"""Interval unions and clipping, a slice at a time, vs plain full-column references: the same floats
bit for bit, across slice boundaries, on both the in-order and the sorted path."""

from __future__ import annotations

import numpy as np
import pytest

from perflint.facts.gaps import _gaps_by_run
from perflint.facts.steps import window_gaps
from perflint.metrics.intervals import clip_length, merge, merge_spans


def _merge_ref(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stable sort by start, running max of the ends, a block per start past it."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > e[:-1]
    last = np.ones(len(s), dtype=bool)
    last[:-1] = new[1:]
    return s[new], e[last]


def _same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b, strict=True))


def _columns(seed: int, n: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ts = np.floor(rng.random(n) * n) * 2.0  # ties
    dur = np.round(rng.random(n) * 4.0, 1)
    if kind == "sorted":
        ts.sort()
    elif kind == "runs":  # two sorted runs, as kernels then memcpys
        ts[: n // 2].sort()
        ts[n // 2 :].sort()
    elif kind == "odd" and n > 7:  # negative and zero durations, NaN starts and ends
        dur -= 2.0
        dur[::97] = 0.0
        dur[5] = np.nan
        ts[7] = np.nan
    return ts, dur


@pytest.mark.parametrize("kind", ["sorted", "runs", "random", "odd"])
@pytest.mark.parametrize("n", [0, 1, 5, 65536, 200_003])
def test_merge_spans_matches_reference(kind: str, n: int) -> None:
    ts, dur = _columns(n, n, kind)
    mask = np.random.default_rng(1).random(n) < 0.6
    rows: list[np.ndarray | None] = [None, mask, np.flatnonzero(mask).astype(np.int32), np.random.default_rng(2).permutation(n)]
    for r in rows:
        s = ts if r is None else ts[r]
        e = (dur if r is None else dur[r]) + s
        assert _same(merge_spans(ts, dur, r), _merge_ref(s, e))
    assert _same(merge(ts, ts + dur), _merge_ref(ts, ts + dur))


def test_merge_shrinks_output_in_place() -> None:
    ts = np.arange(100_000, dtype=np.float64) % 1000  # every value ten times: 1000 blocks
    ms, me = merge_spans(ts, np.full(len(ts), 0.5))
    assert len(ms) == len(me) == 1000 and ms.flags.owndata and me.flags.owndata


@pytest.mark.parametrize("lo_hi", [(-1.0, 1e9), (1000.0, 5000.0), (0.0, 0.5), (3e5, 1e9)])
def test_clip_length_is_the_full_clipped_sum(lo_hi: tuple[float, float]) -> None:
    ts, dur = _columns(3, 150_000, "random")
    ms, me = merge_spans(ts, dur)
    lo, hi = lo_hi
    full = float(np.clip(np.minimum(me, hi) - np.maximum(ms, lo), 0, None).sum())
    assert np.float64(clip_length(ms, me, lo, hi)).tobytes() == np.float64(full).tobytes()


@pytest.mark.parametrize("kind", ["random", "odd"])
def test_gaps_by_run_lays_out_window_gaps(kind: str) -> None:
    ts, dur = _columns(4, 400_000, kind)
    dur[::5] = 0.0  # zero-length intervals, where a cut must not go
    ms, me = merge_spans(ts, dur)
    m = len(ms)
    for lo, hi in [(-1.0, 1e7), (1e4, 6e5), (float(ms[m // 5]), float(me[m * 4 // 5]))]:
        pieces = list(_gaps_by_run(ms, me, lo, hi))
        assert len(pieces) > 1 or kind == "odd"
        gs, ge = window_gaps(ms, me, lo, hi)
        assert _same((np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces])), (gs, ge))
