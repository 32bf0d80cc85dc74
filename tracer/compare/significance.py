"""Is a change real or noise over executions: the Mann-Whitney U rank test.

It works on plain numpy arrays of cycle counts and needs nothing beyond numpy, so ``tracer
compare`` runs on the core install. It treats executions as independent: it says whether two
captures differ; whether two builds differ is a question for their captures
(:mod:`tracer.compare.intervals`).

**Mann-Whitney U** (two-sided): do the two samples come from the same distribution, or does one
tend to be larger? Ranks are averaged over ties. Small samples without ties get the exact
p-value (the distribution of U counted over all arrangements); otherwise the normal approximation
with the tie correction and a continuity correction, as in the literature and in SciPy's
``mannwhitneyu`` (``tests/test_compare_significance.py`` holds the two to the same values).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from tracer.analysis.statistics import run_starts

EXACT_LIMIT = 8  # both samples at most this large and no ties: exact U distribution


@dataclasses.dataclass(frozen=True)
class RankTest:
    """The result of a Mann-Whitney U test.

    Attributes:
        u: U of the first sample (the number of pairs in which it is the larger, ties half).
        p_value: Two-sided p-value.
        method: ``exact`` or ``normal``.
    """

    u: float
    p_value: float
    method: str


def mann_whitney_u(x: np.ndarray, y: np.ndarray) -> RankTest:
    """The two-sided Mann-Whitney U test of ``x`` against ``y`` (both non-empty)."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    pooled = np.concatenate((x, y))
    ranks, tie_sizes = _average_ranks(pooled)
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    ties = bool(np.any(tie_sizes > 1))
    if n1 <= EXACT_LIMIT and n2 <= EXACT_LIMIT and not ties:
        return RankTest(u1, _exact_p(int(round(max(u1, u2))), n1, n2), "exact")
    n = n1 + n2
    tie_term = float(np.sum(tie_sizes**3 - tie_sizes)) / (n * (n - 1))
    variance = n1 * n2 / 12 * ((n + 1) - tie_term)
    if variance <= 0:  # every value equal: nothing tells the samples apart
        return RankTest(u1, 1.0, "normal")
    z = (max(u1, u2) - n1 * n2 / 2 - 0.5) / math.sqrt(variance)
    return RankTest(u1, min(1.0, math.erfc(z / math.sqrt(2))), "normal")


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks from 1, averaged over ties, and the size of every group of equal values."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = run_starts(ordered)
    sizes = np.diff(np.r_[starts, len(values)])
    average = starts + (sizes + 1) / 2  # mean of ranks start+1 .. start+size
    ranks = np.empty(len(values), np.float64)
    ranks[order] = np.repeat(average, sizes)
    return ranks, sizes.astype(np.float64)


def _exact_p(u: int, n1: int, n2: int) -> float:
    """Two-sided exact p-value: twice the chance of a U at least ``u`` (the larger U), at most 1."""
    # counts[k] = arrangements of n1 + n2 values with U = k, built up one value at a time.
    table = {(0, j): [1] for j in range(n2 + 1)}
    for i in range(1, n1 + 1):
        table[(i, 0)] = [1]
        for j in range(1, n2 + 1):
            # The largest value belongs to the first sample (it beats all j) or to the second.
            a, b = table[(i - 1, j)], table[(i, j - 1)]
            size = i * j + 1
            counts = [0] * size
            for k, c in enumerate(a):
                counts[k + j] += c
            for k, c in enumerate(b):
                counts[k] += c
            table[(i, j)] = counts
    counts = table[(n1, n2)]
    total = math.comb(n1 + n2, n1)
    return min(1.0, 2 * sum(counts[u:]) / total)
