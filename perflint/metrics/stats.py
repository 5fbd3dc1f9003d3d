"""Significance tests for regression rules: one-sided Mann-Whitney U (exact when small and
tie-free, else the normal approximation with tie and continuity corrections).

Mann-Whitney compares per-step samples without assuming normality (step times are skewed
and often bimodal); it needs no scipy for our sample sizes (tens of steps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np


def _ranks(values: list[float]) -> tuple[list[float], float]:
    """Average ranks (1-based) and the tie-correction term sum(t^3 - t)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    tie_term = 0.0
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        t = j - i + 1
        tie_term += t**3 - t
        i = j + 1
    return ranks, tie_term


@lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """Number of arrangements giving each U = 0..m*n (no ties)."""
    if m == 0 or n == 0:
        return (1,)
    a = _u_counts(m - 1, n)
    b = _u_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(a):
        out[u + n] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def mann_whitney_greater(current: list[float], base: list[float]) -> float | None:
    """P-value for H1: `current` tends to be larger than `base`. None when a side is empty."""
    m, n = len(current), len(base)
    if m == 0 or n == 0:
        return None
    ranks, tie_term = _ranks(list(current) + list(base))
    r1 = sum(ranks[:m])
    u = r1 - m * (m + 1) / 2  # pairs where current > base (ties count 1/2)
    if tie_term == 0 and m <= 30 and n <= 30:
        counts = _u_counts(m, n)
        total = math.comb(m + n, m)
        k = int(round(u))
        return sum(counts[k:]) / total
    mu = m * n / 2
    sigma2 = m * n / 12 * ((m + n + 1) - tie_term / ((m + n) * (m + n - 1)))
    if sigma2 <= 0:
        return 1.0 if u <= mu else 0.0
    z = (u - mu - 0.5) / math.sqrt(sigma2)
    return 0.5 * math.erfc(z / math.sqrt(2))


def median(xs: list[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    k = len(s) // 2
    return s[k] if len(s) % 2 else (s[k - 1] + s[k]) / 2


def np_median(values: Sequence[float] | np.ndarray) -> float:
    """float(np.median(values)) for a 1-D sequence of numbers, bit for bit, without np.median:
    its first call imports numpy.ma (~20 ms, more than a whole fact source). np.median is the
    mean (np.add.reduce / count) of the middle one or two values, NaN when any value is NaN."""
    a = np.asarray(values)
    if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "fiub" or (a.dtype.kind == "f" and a.dtype != np.float64):
        return float(np.median(a))
    if a.dtype.kind != "f":
        a = a.astype(np.float64)  # np.mean of integers adds in float64
    s = np.sort(a)
    if np.isnan(s[-1]):  # sorted last
        return float("nan")
    mid = len(s) // 2
    part = s[mid : mid + 1] if len(s) % 2 else s[mid - 1 : mid + 1]
    return float(np.add.reduce(part) / len(part))
