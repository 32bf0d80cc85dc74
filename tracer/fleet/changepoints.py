"""Change points in a series of builds: where a layer's cycles moved to a new level, and by how much.

The series has one value per build (a layer's median cycles over the build's captures), in build
order. Finding the changes takes three steps:

1. **Noise.** The series' noise is estimated robustly from the median absolute deviation of
   successive differences (a step moves one difference, an outlier two: neither moves the median).
   A series with no noise at all (a deterministic target) changes exactly where its values change.
2. **Candidates.** ``ruptures``' PELT with a least-squares cost segments the series optimally for a
   penalty of ``PENALTY * sigma**2 * ln(n)`` per change (minimum segment: one build, so the newest
   build can start a new level). An interior segment of a single build is an outlier build (slow
   once, then back), reported as such, not as two changes.
3. **Tests.** Each remaining boundary is tested: the means of the segments on either side differ
   by ``z`` noise standard errors; a boundary with a two-sided p-value above ``alpha`` or a change
   smaller than ``threshold_pct`` of the level before it is removed (the least significant first,
   then the neighbours are tested again on their merged segments).

The evaluation behind these choices (ruptures against MongoDB's E-Divisive, detection and false
alarm rates on generated series) is in ``docs/trend.md``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

import numpy as np

from tracer.analysis.statistics import MAD_TO_SIGMA

PENALTY = 2.0  # PELT penalty per change, in units of sigma**2 * ln(n)
ALPHA = 0.001  # two-sided p-value a change must beat
MIN_BUILDS = 4  # fewer builds than this: no noise estimate, no change points


@dataclasses.dataclass(frozen=True)
class Change:
    """A new level that begins at one build.

    Attributes:
        index: Position in the series of the first build of the new level.
        before: Median of the level before it.
        after: Median of the new level.
        builds_after: Builds in the new level (1: the newest build alone).
        p_value: Two-sided p-value of the difference of the levels' means (0 for a series
            without noise).
    """

    index: int
    before: float
    after: float
    builds_after: int
    p_value: float

    @property
    def size(self) -> float:
        """After minus before."""
        return self.after - self.before

    @property
    def pct(self) -> float | None:
        """The change in percent of the level before (None for a level of 0)."""
        return 100.0 * self.size / self.before if self.before else None


@dataclasses.dataclass(frozen=True)
class Segmentation:
    """What :func:`segment` found in a series.

    Attributes:
        changes: The changes, in series order.
        outliers: Positions of interior builds that stood alone (away and back).
        sigma: The spread left after the fit (the residual standard deviation the tests use).
        noise: The series' noise estimate (:func:`robust_sigma`, 0 for a deterministic or too
            short series): what the penalty of the candidates is scaled to.
        sigma: The noise estimate.
        judged: False when the series is too short to tell a change from noise (fewer than
            MIN_BUILDS builds; three builds do when their values repeat exactly): no change found
            then means none could be, not that there is none.
    """

    changes: tuple[Change, ...]
    outliers: tuple[int, ...]
    sigma: float
    noise: float = 0.0
    judged: bool = True


def robust_sigma(values: np.ndarray) -> float:
    """The noise of a series from the median absolute deviation of its successive differences."""
    d = np.diff(np.asarray(values, np.float64))
    if len(d) == 0:
        return 0.0
    # successive differences carry sqrt(2) times the noise of the values
    return float(MAD_TO_SIGMA * np.median(np.abs(d - np.median(d))) / math.sqrt(2))


def find_changes(
    values: Sequence[float] | np.ndarray, threshold_pct: float = 5.0, alpha: float = ALPHA
) -> list[Change]:
    """The changes of level in ``values`` (see the module docstring)."""
    return list(segment(values, threshold_pct, alpha).changes)


def segment(values: Sequence[float] | np.ndarray, threshold_pct: float = 5.0, alpha: float = ALPHA) -> Segmentation:
    """Changes and outlier builds of ``values`` (see the module docstring).

    Args:
        values: One value per build, in build order.
        threshold_pct: The smallest change reported, in percent of the level before it.
        alpha: The two-sided p-value a change must beat.
    """
    y = np.asarray(values, np.float64)
    n = len(y)
    if n < 2 or np.all(y == y[0]):
        return Segmentation((), (), 0.0, judged=n >= 3)
    if n >= 3 and robust_sigma(y) == 0.0:
        # Most successive builds are identical: a deterministic target, where every change of value
        # is a change of level (and a build that differs once is two changes, not noise).
        fit = _Fit(y, [int(i) + 1 for i in np.flatnonzero(np.diff(y) != 0)], [], exact=True)
        fit = _drop_small(fit, threshold_pct)
    elif n < MIN_BUILDS:
        return Segmentation((), (), 0.0, judged=False)  # too short to tell noise from change
    else:
        fit = _test(_Fit(y, _candidates(y), []), threshold_pct, alpha)
    edges = [0, *fit.bounds, n]
    changes = tuple(
        Change(
            b,
            fit.level(edges[k], b),
            fit.level(b, edges[k + 2]),
            edges[k + 2] - b,
            fit.p_value(edges[k], b, edges[k + 2]),
        )
        for k, b in enumerate(fit.bounds)
    )
    noise = 0.0 if fit.exact else robust_sigma(y)
    return Segmentation(changes, tuple(fit.outliers), fit.sigma, noise)


class _Fit:
    """A piecewise-constant fit: boundaries, outlier builds, and the noise of what is left."""

    def __init__(self, y: np.ndarray, bounds: list[int], outliers: list[int], exact: bool = False) -> None:
        self.y = y
        self.exact = exact
        self.bounds = sorted(bounds)
        self.outliers = sorted(outliers)
        edges = [0, *self.bounds, len(y)]
        residuals = [self._values(lo, hi) - np.mean(self._values(lo, hi)) for lo, hi in itertools.pairwise(edges)]
        flat = np.concatenate(residuals)
        self.df = len(flat) - len(residuals)
        self.sigma = float(np.sqrt(np.sum(flat**2) / self.df)) if self.df > 0 else 0.0

    def _values(self, lo: int, hi: int) -> np.ndarray:
        keep = [i for i in range(lo, hi) if i not in self.outliers]
        return self.y[keep] if keep else self.y[lo:hi]

    def level(self, lo: int, hi: int) -> float:
        """The median of builds ``lo:hi`` without the outliers."""
        return float(np.median(self._values(lo, hi)))

    def p_value(self, a: int, b: int, c: int) -> float:
        """Two-sided p-value of the difference of the means of builds ``a:b`` and ``b:c``."""
        if self.exact or self.sigma == 0.0 or self.df <= 0:
            return 0.0
        left, right = self._values(a, b), self._values(b, c)
        se = self.sigma * math.sqrt(1 / len(left) + 1 / len(right))
        return _t_two_sided(abs(float(np.mean(right) - np.mean(left))) / se, self.df)

    def outlier_p_value(self, i: int, lo: int, hi: int) -> float:
        """Two-sided p-value of build ``i`` against the level of builds ``lo:hi`` around it."""
        if self.sigma == 0.0 or self.df <= 0:
            return 0.0
        rest = self._values(lo, hi)
        se = self.sigma * math.sqrt(1 + 1 / len(rest))
        return _t_two_sided(abs(float(self.y[i] - np.mean(rest))) / se, self.df)


def _t_two_sided(t: float, df: int) -> float:
    from scipy.stats import t as student  # the [fleet] extra (ruptures needs scipy too)

    return float(2 * student.sf(t, df))


def _candidates(y: np.ndarray) -> list[int]:
    """PELT's boundaries for a penalty scaled to the series' noise."""
    import ruptures  # the [fleet] extra

    sigma = robust_sigma(y)
    penalty = PENALTY * sigma * sigma * math.log(len(y))
    return [int(b) for b in ruptures.Pelt(model="l2", min_size=1, jump=1).fit(y).predict(pen=penalty)[:-1]]


def _small(fit: _Fit, a: int, b: int, c: int, threshold_pct: float) -> bool:
    before, after = fit.level(a, b), fit.level(b, c)
    return abs(after - before) < threshold_pct / 100 * abs(before) if before else after == before


def _drop_small(fit: _Fit, threshold_pct: float) -> _Fit:
    """Without the boundaries whose change is below the threshold (the smallest first)."""
    while fit.bounds:
        edges = [0, *fit.bounds, len(fit.y)]
        small = [k for k, b in enumerate(fit.bounds) if _small(fit, edges[k], b, edges[k + 2], threshold_pct)]
        if not small:
            return fit
        k = min(small, key=lambda k: abs(fit.level(fit.bounds[k], edges[k + 2]) - fit.level(edges[k], fit.bounds[k])))
        fit = _Fit(fit.y, fit.bounds[:k] + fit.bounds[k + 1 :], fit.outliers, exact=fit.exact)
    return fit


def _test(fit: _Fit, threshold_pct: float, alpha: float) -> _Fit:
    """Resolve single-build segments, then remove the weakest failing boundary until none fails."""
    n = len(fit.y)
    while True:
        fit = _resolve_single_builds(fit)
        edges = [0, *fit.bounds, n]
        worst, worst_score = -1, -1.0
        for k, b in enumerate(fit.bounds):
            p = fit.p_value(edges[k], b, edges[k + 2])
            score = 2.0 if _small(fit, edges[k], b, edges[k + 2], threshold_pct) else p  # too small: worst
            if score > alpha and score > worst_score:
                worst, worst_score = k, score
        if worst < 0:
            break
        fit = _Fit(fit.y, fit.bounds[:worst] + fit.bounds[worst + 1 :], fit.outliers)
    # An outlier build that is neither significant nor beyond the threshold is noise: put it back.
    edges = [0, *fit.bounds, n]
    kept = []
    for i in fit.outliers:
        k = int(np.searchsorted(fit.bounds, i, side="right"))
        lo, hi = edges[k], edges[k + 1]
        level = fit.level(lo, hi)
        beyond = abs(fit.y[i] - level) >= threshold_pct / 100 * abs(level)
        if beyond and fit.outlier_p_value(i, lo, hi) <= alpha:
            kept.append(i)
    return _Fit(fit.y, fit.bounds, kept) if kept != fit.outliers else fit


def _resolve_single_builds(fit: _Fit) -> _Fit:
    """An interior segment of one build joins the closer of its neighbours' levels, unless it lies
    beyond both, further from them than they are from each other: then it is an outlier (away and
    back) and the boundary between its neighbours is left for the test to keep or remove.
    """
    n = len(fit.y)
    while True:
        edges = [0, *fit.bounds, n]
        for k in range(1, len(edges) - 2):
            lo, hi = edges[k], edges[k + 1]
            if hi - lo != 1:
                continue
            left, right = fit.level(edges[k - 1], lo), fit.level(hi, edges[k + 2])
            value = float(fit.y[lo])
            bounds = list(fit.bounds)
            nearest = min(abs(value - left), abs(value - right))
            if (value - left) * (value - right) > 0 and nearest > abs(right - left):
                bounds.remove(lo)
                fit = _Fit(fit.y, bounds, [*fit.outliers, lo])
            else:  # part of the level it is closer to
                bounds.remove(lo if abs(value - left) < abs(value - right) else hi)
                fit = _Fit(fit.y, bounds, fit.outliers)
            break
        else:
            return fit
