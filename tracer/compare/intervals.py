"""Intervals of a quantile's change whose stated confidence holds, and a test between builds.

Two units, chosen by what the captures can tell:

* **Captures** (at least three captures, two on one side; a side of one capture borrows the
  spread of the other's): a build is judged by its captures, not by
  its pooled executions, because on a board every capture (boot) shifts as a whole (caches, DRAM
  state, temperature, clocks). Each capture is summarised by its quantile (median, p99) on a log
  scale; the change is the difference of the sides' mean log summaries, tested with Welch's t
  test (``p_value``) and given Welch's t interval. Its variance holds both the run-to-run
  variance and the noise of each capture's summary, so "significant" means the build differs, not
  the files. A bootstrap over the captures was not used: with the 2 to 10 captures a side that
  CI runs take, it has few distinct resamples and shrinks the variance by (k - 1) / k, so its 95 %
  is not 95 %.
* **Executions** (a side has one capture): the interval of each side's quantile comes from its
  order statistics (distribution-free: the ranks between which the quantile lies with a known
  binomial probability), turned into a standard error (Price and Bonett's construction), and the
  change's interval from the two standard errors on a log scale. A quantile whose ranks do not fit
  in the sample has no interval: the p99 of 30 executions is the maximum, and no interval from 30
  values holds the p99 with 95 % confidence (:func:`min_executions` says how many would). The
  run-to-run variance is not measured then, and the report says so.

Changes are computed on the log of the cycles, so that they are percentages of the base: the
interval of ``new / base - 1``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from tracer.analysis.distributions import binomial_range, normal_quantile, t_quantile, t_sf
from tracer.analysis.statistics import rank_index

CONFIDENCE = 0.95
MIN_PER_CAPTURE_P99 = 101  # fewer executions and a capture's nearest-rank p99 is its maximum
# The standard error is read from the order statistics around the quantile with this probability
# between them: closer ones than those of the 95 % interval follow the density at the quantile
# rather than its tail (benchmarks/eval_compare.py: 95 % ranks made the p99's interval hold 98 %).
SE_RANKS = 0.80


@dataclasses.dataclass(frozen=True)
class Interval:
    """A confidence interval of a change.

    Attributes:
        low, high: Bounds of the change in cycles (the percent bounds applied to the base value).
        low_pct, high_pct: Bounds of the change in percent of the base value (None for a base of 0).
        confidence: Its level (0.95).
        method: ``order statistics`` (executions) or ``welch-t over captures``.
    """

    low: float
    high: float
    low_pct: float | None
    high_pct: float | None
    confidence: float
    method: str = "order statistics"

    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of no change."""
        return self.low > 0 or self.high < 0


@dataclasses.dataclass(frozen=True)
class CaptureTest:
    """Welch's t test of the sides' per-capture summaries (log scale).

    Attributes:
        t: The t statistic (new minus base).
        df: Welch-Satterthwaite degrees of freedom.
        p_value: Two-sided p-value.
        captures: (base captures, new captures).
    """

    t: float
    df: float
    p_value: float
    captures: tuple[int, int]
    method: str = "welch"


def _log(values: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(np.asarray(values, np.float64), 1.0))  # cycles are positive; 0 is kept finite


def quantile_ranks(n: int, q: float, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """1-based ranks (l, u) of ``n`` sorted values between which the ``q`` quantile lies with about
    ``confidence`` (normal approximation of the binomial), None when they do not fit in the sample.
    """
    z = normal_quantile((1 + confidence) / 2)
    spread = z * math.sqrt(n * q * (1 - q))
    low, high = math.floor(n * q - spread), math.ceil(n * q + spread)
    if low < 1 or high > n or high <= low:
        return None
    return low, high


def min_executions(q: float, confidence: float = CONFIDENCE) -> int:
    """The fewest executions of a side for which the ``q`` quantile has an interval."""
    n = 2
    while quantile_ranks(n, q, confidence) is None:
        n += 1 if n < 64 else max(1, n // 16)
    while n > 2 and quantile_ranks(n - 1, q, confidence) is not None:
        n -= 1
    return n


def log_quantile_se(ordered: np.ndarray, q: float, confidence: float = CONFIDENCE) -> float | None:
    """The standard error of the log of the ``q`` quantile of sorted ``ordered`` (order statistics),
    None when the sample is too small to place the order statistics of a ``confidence`` interval.
    """
    n = int(ordered.shape[0])
    ranks = quantile_ranks(n, q, SE_RANKS)
    if ranks is None or quantile_ranks(n, q, confidence) is None:
        return None  # the sample cannot place the order statistics of an interval at this level
    low, high = ranks
    # The exact binomial probability that the quantile lies between the two order statistics
    # gives the normal quantile their distance spans (Price and Bonett 2002).
    covered = binomial_range(n, q, low, high - 1)
    z = normal_quantile((1 + min(covered, 0.999999)) / 2)
    logs = _log(ordered[[low - 1, high - 1]])
    return float(logs[1] - logs[0]) / (2 * z)


def execution_interval(
    base_sorted: np.ndarray, new_sorted: np.ndarray, q: float, confidence: float = CONFIDENCE
) -> Interval | None:
    """The interval of the change of the nearest-rank ``q`` quantile from the executions of each
    side (one capture a side), None when a side has too few executions for it.
    """
    se_b = log_quantile_se(base_sorted, q, confidence)
    se_n = log_quantile_se(new_sorted, q, confidence)
    if se_b is None or se_n is None:
        return None
    base = float(base_sorted[rank_index(len(base_sorted), q)])
    new = float(new_sorted[rank_index(len(new_sorted), q)])
    d = math.log(max(new, 1.0)) - math.log(max(base, 1.0))
    half = normal_quantile((1 + confidence) / 2) * math.hypot(se_b, se_n)
    return _interval(base, d - half, d + half, confidence, "order statistics")


def capture_summaries(parts: Sequence[np.ndarray], q: float) -> np.ndarray:
    """The log of each capture's nearest-rank ``q`` quantile (captures without executions left out)."""
    out = [
        float(np.log(max(np.partition(p, rank_index(len(p), q))[rank_index(len(p), q)], 1))) for p in parts if len(p)
    ]
    return np.array(out, np.float64)


def welch(base: np.ndarray, new: np.ndarray) -> tuple[float, float, float]:
    """(difference of means, its standard error, Welch's degrees of freedom) of two samples, one of
    which may have a single value: then the other's variance stands for both (one capture of a
    build against several of another: the captures' spread is measured on one side only).
    """
    if min(len(base), len(new)) < 2:
        many = base if len(base) >= 2 else new
        spread = float(np.var(many, ddof=1))
        se = math.sqrt(spread / len(base) + spread / len(new))
        return float(np.mean(new) - np.mean(base)), se, float(len(many) - 1)
    vb, vn = float(np.var(base, ddof=1)) / len(base), float(np.var(new, ddof=1)) / len(new)
    se = math.sqrt(vb + vn)
    if se == 0.0:
        df = float(len(base) + len(new) - 2)
    else:
        df = (vb + vn) ** 2 / (vb**2 / (len(base) - 1) + vn**2 / (len(new) - 1))
    return float(np.mean(new) - np.mean(base)), se, df


def capture_test(base: np.ndarray, new: np.ndarray) -> CaptureTest:
    """Welch's two-sided t test of per-capture log summaries (:func:`capture_summaries`)."""
    d, se, df = welch(base, new)
    t = (0.0 if d == 0 else math.copysign(math.inf, d)) if se == 0.0 else d / se
    return CaptureTest(t, df, min(1.0, 2 * t_sf(abs(t), df)), (len(base), len(new)))


def capture_interval(base: np.ndarray, new: np.ndarray, base_value: float, confidence: float = CONFIDENCE) -> Interval:
    """Welch's t interval of the change of per-capture log summaries, in percent of ``base_value``."""
    d, se, df = welch(base, new)
    half = t_quantile((1 + confidence) / 2, df) * se
    return _interval(base_value, d - half, d + half, confidence, "welch-t over captures")


def _interval(base: float, low_log: float, high_log: float, confidence: float, method: str) -> Interval:
    low_pct, high_pct = 100.0 * math.expm1(low_log), 100.0 * math.expm1(high_log)
    return Interval(
        base * low_pct / 100.0,
        base * high_pct / 100.0,
        low_pct if base else None,
        high_pct if base else None,
        confidence,
        method,
    )


def capture_spread_pct(groups: Sequence[Sequence[float]]) -> float | None:
    """The spread of one capture's value around its build's (a standard deviation, in percent):
    the log values' variance pooled over the groups (builds) of at least two captures; None when no
    group has two. It holds the run-to-run variance and each capture's own noise: what the test over
    captures (:func:`capture_test`) measures.
    """
    squares, df = 0.0, 0
    for group in groups:
        values = [v for v in group if v > 0]
        if len(values) >= 2:
            logs = np.log(np.asarray(values, np.float64))
            squares += float(np.sum((logs - logs.mean()) ** 2))
            df += len(values) - 1
    return 100.0 * math.sqrt(squares / df) if df else None
