"""factorize / Groups against a plain dict walk over the rows, in every mode: codes in a table or
a sorted array, the whole-code sort past _SMALL distinct codes, and slices smaller than the rows."""

from __future__ import annotations

import numpy as np
import pytest

from perflint.facts import _group
from perflint.facts._group import Groups, factorize


def _reference(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    ids: dict[tuple[int, ...], int] = {}
    first: list[int] = []
    gid = []
    for row, key in enumerate(zip(*(c.tolist() for c in cols))):
        if key not in ids:
            ids[key] = len(ids)
            first.append(row)
        gid.append(ids[key])
    return np.asarray(gid, dtype=np.int64), np.asarray(first, dtype=np.int64)


def _columns(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    makers = [
        lambda: rng.integers(0, 3, n).astype(np.int32),  # few dense values
        lambda: rng.integers(-1, 2**31 - 1, n).astype(np.int32),  # sparse, mostly distinct
        lambda: rng.choice(np.asarray([-1, 5, 3_000_000]), n).astype(np.int32),  # sparse, few
        lambda: rng.integers(0, 2, n).astype(bool),
        lambda: rng.integers(-(2**62), 2**62, n, dtype=np.int64),  # ranges that overflow a product
        lambda: np.sort(rng.integers(0, 50, n)).astype(np.int16),
    ]
    return [makers[int(k)]() for k in rng.integers(0, len(makers), int(rng.integers(1, 5)))]


@pytest.mark.parametrize("small, slice_rows", [(1 << 16, 1 << 16), (4, 7)])
def test_factorize_and_groups_match_a_dict_walk(monkeypatch: pytest.MonkeyPatch, small: int, slice_rows: int) -> None:
    monkeypatch.setattr(_group, "_SMALL", small)
    monkeypatch.setattr(_group, "_SLICE", slice_rows)
    rng = np.random.default_rng(7)
    for _ in range(60):
        n = int(rng.choice([1, 2, 9, 100, 3000]))
        cols = _columns(rng, n)
        gid, first = factorize(cols)
        want_gid, want_first = _reference(cols)
        assert gid.dtype == np.int32
        np.testing.assert_array_equal(gid, want_gid)
        np.testing.assert_array_equal(first, want_first)
        groups = Groups(*cols)
        assert groups.order.dtype == np.int32
        np.testing.assert_array_equal(groups.order, np.argsort(want_gid, kind="stable"))
        np.testing.assert_array_equal(groups.counts, np.bincount(want_gid))
        assert groups.bounds == [0, *np.cumsum(np.bincount(want_gid)).tolist()]


def test_empty() -> None:
    gid, first = factorize([np.zeros(0, dtype=np.int32)])
    assert len(gid) == 0 and len(first) == 0
    assert len(Groups(np.zeros(0, dtype=np.int32))) == 0


def test_group_medians_in_scratch_equal_np_median() -> None:
    from perflint.facts._group import group_medians

    rng = np.random.default_rng(3)
    values = np.round(rng.normal(size=60), 1)
    values[rng.random(60) < 0.1] = np.nan
    values[:4] = [0.0, -0.0, 0.0, -0.0]  # zero sums: np.median's own sign
    counts = np.array([4, 7, 0, 12, 1, 36])
    bounds = np.concatenate(([0], np.cumsum(counts)))
    expected = [None if np.isnan(v).all() else float(np.median(v[~np.isnan(v)])) for v in np.split(values, bounds[1:-1])]
    kept = values.copy()
    assert repr(group_medians(values, counts)) == repr(expected)
    assert np.array_equal(values, kept, equal_nan=True)  # not scratch: left as it was
    assert repr(group_medians(values, counts, scratch=True)) == repr(expected)
