"""The few distribution functions tracer needs (``compare``'s tests and intervals, the planner's
calibration), on the core install (no SciPy).

Student's t (tail probability and quantile) through the regularized incomplete beta function,
evaluated by its continued fraction (modified Lentz), and the binomial probability of a range of
counts, exactly for small samples and by the normal approximation for large ones.
``tests/test_compare_intervals.py`` holds them to SciPy's values.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

_TINY = 1e-300
_EPS = 1e-15
EXACT_BINOMIAL_LIMIT = 20_000  # larger samples: the normal approximation (with continuity correction)


def normal_quantile(p: float) -> float:
    """The standard normal ``p`` quantile."""
    return NormalDist().inv_cdf(p)


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (Numerical Recipes' ``betacf``)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (``df`` need not be whole)."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_pdf(t: float, df: float) -> float:
    """The density of Student's t with ``df`` degrees of freedom."""
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (Newton's method on
    :func:`t_sf` from the normal quantile, bisection where a step would leave the bracket).
    """
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    target = 1.0 - p
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > target:
        lo, hi = hi, hi * 2.0
    t = min(max(normal_quantile(p), lo), hi)
    for _ in range(100):
        gap = t_sf(t, df) - target  # positive: t is too small
        if gap > 0:
            lo = t
        else:
            hi = t
        if abs(gap) < 1e-14 * max(target, 1e-300) or hi - lo < 1e-13 * max(1.0, hi):
            break
        step = t + gap / t_pdf(t, df)
        t = step if lo < step < hi else (lo + hi) / 2.0
    return t


def binomial_range(n: int, p: float, low: int, high: int) -> float:
    """P(low <= B <= high) for B ~ Binomial(n, p)."""
    low, high = max(low, 0), min(high, n)
    if high < low:
        return 0.0
    if n <= EXACT_BINOMIAL_LIMIT:
        k = np.arange(low, high + 1, dtype=np.float64)
        log_pmf = (
            math.lgamma(n + 1)
            - np.array([math.lgamma(v + 1) for v in k])
            - np.array([math.lgamma(n - v + 1) for v in k])
            + k * math.log(p)
            + (n - k) * math.log1p(-p)
        )
        return float(min(1.0, np.exp(log_pmf).sum()))
    sd = math.sqrt(n * p * (1 - p))
    dist = NormalDist(n * p, sd)
    return dist.cdf(high + 0.5) - dist.cdf(low - 0.5)
