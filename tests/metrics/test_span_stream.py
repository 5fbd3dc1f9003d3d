"""Streamed unions give exactly the spans of the whole-array merge, on any slice boundaries."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import perflint.metrics.span_stream as stream
from perflint.facts.memcpy import _kernel_spans_meeting, _overlap
from perflint.metrics.intervals import merge, merge_spans


def _columns(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Start and duration columns with ties, two sorted runs or none, inverted and NaN rows."""
    n = int(rng.integers(1, 60))
    ts = np.round(rng.uniform(0, 30, n), int(rng.integers(0, 3)))
    order = rng.random()
    if order < 0.3:
        ts = np.sort(ts)
    elif order < 0.6:
        ts = np.concatenate([np.sort(ts[: n // 2]), np.sort(ts[n // 2 :])])
    dur = np.round(rng.uniform(0, 3, n), int(rng.integers(0, 3)))
    if rng.random() < 0.1:
        dur[rng.integers(0, n)] = -1.5
    if rng.random() < 0.05:
        ts[rng.integers(0, n)] = np.nan
    return ts, dur


def _joined(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not pieces:
        return np.zeros(0), np.zeros(0)
    return np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces])


@pytest.mark.parametrize("slice_rows", [1, 2, 3, 7, 64])
def test_merged_slices_equal_the_whole_merge(slice_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "_SLICE", slice_rows)
    rng = np.random.default_rng(slice_rows)
    for _ in range(300):
        ts, dur = _columns(rng)
        before = ts.copy()
        n = len(ts)
        pick = rng.random()
        rows = None if pick < 0.3 else rng.random(n) < 0.7 if pick < 0.7 else np.sort(rng.permutation(n)[: n // 2])
        sub = slice(None) if rows is None else rows
        for rounded in (False, True):
            want = merge(np.ceil(ts[sub]), np.floor(ts[sub] + dur[sub])) if rounded else merge_spans(ts, dur, rows)
            got = _joined(list(stream.merged_slices(ts, dur, rows, rounded)))
            assert np.array_equal(got[0], want[0], equal_nan=True)
            assert np.array_equal(got[1], want[1], equal_nan=True)
        assert np.array_equal(ts, before, equal_nan=True)  # the column itself is never rounded


@pytest.mark.parametrize("slice_rows", [1, 3, 64])
def test_kernel_spans_meeting_copies_keep_every_overlap(slice_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "_SLICE", slice_rows)
    rng = np.random.default_rng(10 + slice_rows)
    for _ in range(300):
        ts, dur = _columns(rng)
        kernel = rng.random(len(ts)) < 0.6
        copy_rows = np.flatnonzero(~kernel)
        direction = rng.integers(0, 3, len(copy_rows))
        copies = [merge_spans(ts, dur, copy_rows[direction == d]) for d in range(3)]
        ks, ke = merge_spans(ts, dur, kernel)
        near_s, near_e = _kernel_spans_meeting(SimpleNamespace(ts=ts, dur=dur), kernel, copies)  # type: ignore[arg-type]
        assert len(near_s) <= len(ks)
        for ms, me in copies:
            want, got = _overlap(ms, me, ks, ke), _overlap(ms, me, near_s, near_e)
            assert want == got or (np.isnan(want) and np.isnan(got))
