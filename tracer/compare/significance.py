"""Is a change real or noise: the Mann-Whitney U rank test and bootstrap intervals of quantile changes.

Both work on plain numpy arrays of cycle counts and need nothing beyond numpy, so ``tracer
compare`` runs on the core install.

**Mann-Whitney U** (two-sided): do the two samples come from the same distribution, or does one
tend to be larger? Ranks are averaged over ties. Small samples without ties get the exact
p-value (the distribution of U counted over all arrangements); otherwise the normal approximation
with the tie correction and a continuity correction, as in the literature and in SciPy's
``mannwhitneyu`` (``tests/test_compare_significance.py`` holds the two to the same values).

**Bootstrap interval** of the change of a quantile (median, p99) from base to new: the quantile is
the nearest-rank one of :mod:`tracer.analysis.statistics`. Resampling ``n`` values with
replacement and taking the ``k``-th smallest is the same as taking the value at position
``floor(n * U)`` of the sorted sample, where ``U`` is the ``k``-th smallest of ``n`` uniform
numbers, which is Beta(k, n - k + 1) distributed. So each replicate costs one Beta draw per side,
however large the samples (a 1 GB capture has millions of executions per layer), and the interval
is the bootstrap's exactly. Replicates come from a seeded generator: the same inputs give the
same interval on every run (a CI gate must not flip on a rerun).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from tracer.analysis.statistics import rank_index, run_starts

EXACT_LIMIT = 8  # both samples at most this large and no ties: exact U distribution
REPLICATES = 2000
CONFIDENCE = 0.95
SEED = 20240613


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


@dataclasses.dataclass(frozen=True)
class Interval:
    """A bootstrap confidence interval of a change.

    Attributes:
        low, high: Bounds of the change in cycles.
        low_pct, high_pct: Bounds of the change in percent of the base value (None for a base of 0).
        confidence: Its level (0.95).
    """

    low: float
    high: float
    low_pct: float | None
    high_pct: float | None
    confidence: float

    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of no change."""
        return self.low > 0 or self.high < 0


def bootstrap_change(
    base_sorted: np.ndarray,
    new_sorted: np.ndarray,
    q: float,
    replicates: int = REPLICATES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> Interval:
    """The bootstrap interval of ``quantile(new) - quantile(base)`` (see the module docstring).

    Args:
        base_sorted: The base samples, sorted ascending, not empty.
        new_sorted: The new samples, sorted ascending, not empty.
        q: The quantile (0.5 median, 0.99 p99), nearest rank.
        replicates: Bootstrap replicates.
        confidence: Coverage of the interval.
        seed: Seed of the replicates.
    """
    rng = np.random.default_rng(seed)
    base = _replicates(base_sorted, q, replicates, rng)
    new = _replicates(new_sorted, q, replicates, rng)
    change = np.sort(new - base)
    lo_q, hi_q = (1 - confidence) / 2, (1 + confidence) / 2
    low = float(change[rank_index(replicates, lo_q)])
    high = float(change[rank_index(replicates, hi_q)])
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.sort(np.where(base != 0, 100.0 * (new - base) / base, np.nan))
    if np.isnan(pct).any():
        low_pct = high_pct = None
    else:
        low_pct = float(pct[rank_index(replicates, lo_q)])
        high_pct = float(pct[rank_index(replicates, hi_q)])
    return Interval(low, high, low_pct, high_pct, confidence)


def _replicates(ordered: np.ndarray, q: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` bootstrap replicates of the nearest-rank ``q`` quantile of sorted ``ordered``."""
    n = int(ordered.shape[0])
    k = rank_index(n, q) + 1  # 1-based rank of the quantile
    u = rng.beta(k, n - k + 1, count)
    positions = np.minimum((u * n).astype(np.int64), n - 1)
    return ordered[positions].astype(np.float64)
