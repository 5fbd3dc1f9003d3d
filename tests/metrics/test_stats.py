from __future__ import annotations

import itertools

import pytest

from perflint.metrics.stats import mann_whitney_greater, median


def _brute_force_p(cur: list[float], base: list[float]) -> float:
    """Permutation test with U as statistic, computed by enumeration (independent of the DP)."""
    allv = cur + base
    m = len(cur)

    def u(xs: list[float], ys: list[float]) -> float:
        return sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in xs for y in ys)

    observed = u(cur, base)
    hits = total = 0
    for idx in itertools.combinations(range(len(allv)), m):
        xs = [allv[i] for i in idx]
        ys = [allv[i] for i in range(len(allv)) if i not in idx]
        total += 1
        hits += u(xs, ys) >= observed - 1e-12
    return hits / total


@pytest.mark.parametrize(
    ("cur", "base"),
    [([5, 6, 7, 8], [1, 2, 3, 4]), ([1, 5, 7, 9], [2, 3, 4, 6]), ([1, 2, 3], [4, 5, 6]), ([3.5, 9, 1.2], [2, 8])],
)
def test_exact_matches_permutation_enumeration(cur: list[float], base: list[float]) -> None:
    assert mann_whitney_greater(cur, base) == pytest.approx(_brute_force_p(cur, base))


def test_fully_separated_four_vs_four_is_one_in_seventy() -> None:
    assert mann_whitney_greater([10, 11, 12, 13], [1, 2, 3, 4]) == pytest.approx(1 / 70)


def test_ties_use_normal_approximation_and_identical_samples_are_not_significant() -> None:
    p = mann_whitney_greater([1.0] * 10, [1.0] * 10)
    assert p is not None and p >= 0.5
    assert mann_whitney_greater([2.0] * 40, [1.0] * 40) < 1e-6  # type: ignore[operator]
    assert mann_whitney_greater([], [1.0]) is None


def test_median() -> None:
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    assert median([]) is None
