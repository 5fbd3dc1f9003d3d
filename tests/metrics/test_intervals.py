"""Interval unions and clipping, a slice at a time, vs plain full-column references: the same floats
bit for bit, across slice boundaries, on both the in-order and the sorted path."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import perflint.metrics.intervals as intervals
from perflint.facts.gaps import _gaps_by_run
from perflint.facts.memcpy import _kernel_spans_meeting, _overlap
from perflint.metrics.intervals import clip_length, merge, merge_spans, merged_pieces, window_lengths
from perflint.stepmodel.usage import window_gaps


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


def _small_columns(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
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


def _taken(ts: np.ndarray, dur: np.ndarray, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(ts[rows], ts[rows] + dur[rows]), whole columns (every row when `rows` is None)."""
    s = ts if rows is None else ts[rows]
    return s, (dur if rows is None else dur[rows]) + s


def _spans_ref(ts: np.ndarray, dur: np.ndarray, rows: np.ndarray | None, rounded: bool = False) -> tuple[np.ndarray, np.ndarray]:
    s, e = _taken(ts, dur, rows)
    return _merge_ref(np.ceil(s), np.floor(e)) if rounded else _merge_ref(s, e)


@pytest.mark.parametrize("slice_rows", [1, 2, 3, 7, 64])
def test_merged_pieces_equal_the_whole_merge(slice_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intervals, "_CHUNK", slice_rows)
    rng = np.random.default_rng(slice_rows)
    for _ in range(300):
        ts, dur = _small_columns(rng)
        before = ts.copy()
        n = len(ts)
        pick = rng.random()
        rows = None if pick < 0.3 else rng.random(n) < 0.7 if pick < 0.7 else np.sort(rng.permutation(n)[: n // 2])
        for rounded in (False, True):
            want = _spans_ref(ts, dur, rows, rounded)
            assert _same(_joined(list(merged_pieces(ts, dur, rows, rounded))), want)
            if not rounded:
                assert _same(merge_spans(ts, dur, rows), want)
                assert _same(merge(*_taken(ts, dur, rows)), want)
        assert np.array_equal(ts, before, equal_nan=True)  # the column itself is never rounded


@pytest.mark.parametrize("slice_rows", [1, 3, 64])
def test_kernel_spans_meeting_copies_keep_every_overlap(slice_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intervals, "_CHUNK", slice_rows)
    rng = np.random.default_rng(10 + slice_rows)
    for _ in range(300):
        ts, dur = _small_columns(rng)
        kernel = rng.random(len(ts)) < 0.6
        copy_rows = np.flatnonzero(~kernel)
        direction = rng.integers(0, 3, len(copy_rows))
        copies = [_spans_ref(ts, dur, copy_rows[direction == d]) for d in range(3)]
        ks, ke = _spans_ref(ts, dur, kernel)
        near_s, near_e = _kernel_spans_meeting(SimpleNamespace(ts=ts, dur=dur), kernel, copies)  # type: ignore[arg-type]
        assert len(near_s) <= len(ks)
        for ms, me in copies:
            want, got = _overlap(ms, me, ks, ke), _overlap(ms, me, near_s, near_e)
            assert want == got or (np.isnan(want) and np.isnan(got))


@pytest.mark.parametrize("slice_rows", [1, 2, 3])
def test_merged_pieces_keep_signed_zeros_and_nans_across_slices(slice_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ties between -0.0 and 0.0 ends (and NaN rows) at slice boundaries come out as the whole-column
    fold gives them, bit for bit."""
    monkeypatch.setattr(intervals, "_CHUNK", slice_rows)
    rng = np.random.default_rng(20 + slice_rows)
    for _ in range(300):
        n = int(rng.integers(1, 12))
        ts = rng.choice(np.array([-0.0, 0.0, -1.0, 1.0, -0.5, np.nan]), n)
        dur = rng.choice(np.array([-0.0, 0.0, 1.0, 0.5, -1.0]), n)
        pick = rng.random()
        rows = None if pick < 0.3 else rng.random(n) < 0.7 if pick < 0.7 else rng.permutation(n)[: n // 2]
        for rounded in (False, True):
            assert _same(_joined(list(merged_pieces(ts, dur, rows, rounded))), _spans_ref(ts, dur, rows, rounded))
        assert _same(merge_spans(ts, dur, rows), _spans_ref(ts, dur, rows))


@pytest.mark.parametrize("kind", ["sorted", "runs", "shuffled"])
@pytest.mark.parametrize("seed", range(4))
def test_merged_length_is_the_merged_spans_length_without_the_spans(monkeypatch: pytest.MonkeyPatch, kind: str, seed: int) -> None:
    ts, dur = _columns(seed, 97, kind)
    rows = np.random.default_rng(seed).random(97) < 0.7
    ms, me = merge_spans(ts, dur, rows)
    top = float(me[-1])
    windows = [(-1.0, top + 1), (top / 4, top / 2), (ms[3], me[10]), (top / 2, top / 2), (top + 5, top + 9)]
    for chunk in (1, 3, 7, 1 << 16):
        monkeypatch.setattr(intervals, "_CHUNK", chunk)
        assert intervals.merged_length(ts, dur, rows) == (float(ms[0]), float(me[-1]), float((me - ms).sum()))
        got = intervals.merged_length(ts, dur, rows)[2]
        assert got.hex() == float((me - ms).sum()).hex()
        for lo, hi in windows:
            assert intervals.merged_length(ts, dur, rows, (lo, hi))[2].hex() == clip_length(ms, me, lo, hi).hex(), (chunk, lo, hi)
        assert intervals.merged_length(ts, dur, np.flatnonzero(rows), (top / 4, top / 2))[2].hex() == clip_length(ms, me, top / 4, top / 2).hex()


@pytest.mark.parametrize("seed", range(4))
def test_extent_is_the_rows_first_start_and_last_end(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    ts, dur = _columns(seed, 97, "shuffled")
    rows = np.random.default_rng(seed).random(97) < 0.6
    nan_ts = ts.copy()
    nan_ts[5] = np.nan
    for chunk in (1, 7, 1 << 16):
        monkeypatch.setattr(intervals, "_CHUNK", chunk)
        for sel in (None, rows, np.flatnonzero(rows)):
            t, d = (ts, dur) if sel is None else (ts[sel], dur[sel])
            assert intervals.extent(ts, dur, sel) == (float(t.min()), float((t + d).max()))
        got = intervals.extent(nan_ts, dur)  # a NaN start: the plain min and max are NaN
        assert got is not None and np.isnan(got[0]) and np.isnan(got[1])
        assert intervals.extent(nan_ts, dur, skip_nan=True) == (float(np.nanmin(nan_ts)), float(np.nanmax(nan_ts + dur)))
        assert intervals.extent(ts, dur, np.zeros(97, dtype=bool)) is None


@pytest.mark.parametrize("chunk", [3, 1 << 16])
def test_overlap_length_of_span_sets(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The part of a merged span set inside a window that the union of other (overlapping) span
    sets covers, a slice at a time, equals the union arithmetic |u| + |b| - |u or b| on random
    sets, u the sets' union."""
    from perflint.metrics import intervals

    monkeypatch.setattr(intervals, "_CHUNK", chunk)
    rng = np.random.default_rng(3)

    def spans() -> tuple[np.ndarray, np.ndarray]:
        n = int(rng.integers(0, 30))
        s = np.round(rng.uniform(0, 100, n))
        return intervals.merge(s, s + np.round(rng.uniform(0, 8, n)))

    for trial in range(200):
        sets, b = [spans() for _ in range(int(rng.integers(1, 4)))], spans()
        lo, hi = sorted(rng.uniform(-5, 105, 2).tolist())
        u = intervals.merge(np.concatenate([x[0] for x in sets]), np.concatenate([x[1] for x in sets]))
        both = intervals.merge(np.concatenate((u[0], b[0])), np.concatenate((u[1], b[1])))
        want = intervals.clip_length(*u, lo, hi) + intervals.clip_length(*b, lo, hi) - intervals.clip_length(*both, lo, hi)
        assert intervals.overlap_length(sets, b, lo, hi) == pytest.approx(want, abs=1e-9), trial


def test_window_lengths_equal_clip_length() -> None:
    rng = np.random.default_rng(5)
    for _ in range(100):
        n = int(rng.integers(0, 40))
        s = np.round(rng.uniform(0, 100, n))
        ms, me = merge(s, s + np.round(rng.uniform(0, 8, n)))
        windows = [tuple(sorted(rng.uniform(-5, 105, 2).tolist())) for _ in range(4)] + [(50.0, 40.0)]
        got = window_lengths(ms, me, windows)
        assert got == pytest.approx([clip_length(ms, me, lo, hi) for lo, hi in windows], abs=1e-9)
