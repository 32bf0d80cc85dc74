"""What a change amounts to: its quantiles and their intervals, and the verdict.

The statistics of one change come from :mod:`tracer.compare.intervals` (over captures or over
executions); this module turns them into a verdict with three outcomes where the data cannot
decide (``slower``, ``faster``, ``inconclusive``), says what would decide an inconclusive one,
and what one capture a side leaves unmeasured.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

import numpy as np

from tracer.analysis.distributions import normal_quantile
from tracer.analysis.statistics import rank_index
from tracer.compare.intervals import MIN_PER_CAPTURE_P99, Interval, execution_interval, min_executions
from tracer.compare.plan import to_decide


class Verdict(str, enum.Enum):
    """What a change amounts to."""

    SLOWER = "slower"
    FASTER = "faster"
    CHANGED = "changed"  # real, but within the threshold
    INCONCLUSIVE = "inconclusive"  # the interval straddles the threshold: more runs needed
    UNCHANGED = "unchanged"
    NOT_MEASURED = "not measured"


@dataclasses.dataclass(frozen=True)
class QuantileChange:
    """One quantile (median or p99) of the base and the new build.

    Attributes:
        base, new: The values (nearest rank).
        interval: The interval of the change (None: exact, or too few values; ``note`` says).
        note: Why there is no interval, when there is none and the change is not exact.
    """

    base: int
    new: int
    interval: Interval | None
    note: str | None = None

    @property
    def delta(self) -> int:
        """New minus base, in cycles."""
        return self.new - self.base

    @property
    def pct(self) -> float | None:
        """The change in percent of the base (None for a base of 0)."""
        return 100.0 * self.delta / self.base if self.base else None


@dataclasses.dataclass(frozen=True)
class Decide:
    """What would decide an inconclusive change: more runs of the unit the interval counts.

    Attributes:
        unit: ``captures`` or ``executions`` (per side).
        per_side: How many a side needs (None: the estimate sits on the threshold).
    """

    unit: str
    per_side: int | None


MIN_CAPTURES = 3  # captures a side advised to measure the run-to-run variance


def run_to_run_note() -> str:
    """What one capture a side leaves unmeasured, and what would measure it."""
    return (
        "each side has one capture: the run-to-run variance (a capture or boot shifting as a whole: caches, "
        "clocks, temperature) is not measured, so intervals and p-values count executions and say "
        f"whether these captures differ, not the builds; at least {MIN_CAPTURES} captures a side "
        "(boots apart) measure it (2 at the very least)"
    )


@dataclasses.dataclass(frozen=True)
class Rule:
    """What a change is judged by: the threshold (percent), alpha, and the change the plan detects
    with what power.
    """

    threshold: float
    alpha: float
    plan_pct: float
    power: float


def execution_quantile(
    base: int, new: int, base_sorted: np.ndarray, new_sorted: np.ndarray, q: float
) -> QuantileChange:
    """A quantile's change over executions (one capture a side), or no interval and why."""
    interval = execution_interval(base_sorted, new_sorted, q)
    if interval is not None:
        return QuantileChange(base, new, interval)
    least = min_executions(q)
    fewest = min(len(base_sorted), len(new_sorted))
    name = "median" if q == 0.5 else f"p{round(q * 100)}"
    note = (
        f"no interval: a side has {fewest:,} executions and a two-sided 95 % interval of the {name} "
        f"needs at least {least:,} a side"
    )
    if q > 0.5 and rank_index(fewest, q) == fewest - 1:
        note += f" (the {name} of {fewest:,} executions is their maximum)"
    return QuantileChange(base, new, None, note)


def capture_p99_note(base_parts: Sequence[np.ndarray], new_parts: Sequence[np.ndarray]) -> str | None:
    """Why the p99 gets no interval over captures (a capture's p99 is its maximum), None if it does."""
    fewest = min(len(p) for p in [*base_parts, *new_parts])
    if fewest >= MIN_PER_CAPTURE_P99:
        return None
    return (
        f"no interval: a capture has {fewest:,} executions, so its p99 is its maximum; the p99's interval "
        f"over captures needs at least {MIN_PER_CAPTURE_P99} executions in every capture"
    )


def decide(interval: Interval, threshold: float, alpha: float, units: tuple[int, int], unit: str) -> Decide:
    """The runs a side needs for the median's interval to leave the threshold it straddles (or,
    beyond it already, for the test to beat ``alpha``: the interval at ``1 - alpha`` to leave 0).
    """
    assert interval.low_pct is not None and interval.high_pct is not None
    low, high = interval.low_pct, interval.high_pct
    half, centre = (high - low) / 2, (high + low) / 2
    if low < threshold < high:
        gap = abs(centre - threshold)
    elif low < -threshold < high:
        gap = abs(centre + threshold)
    else:
        gap = abs(centre)
        half *= normal_quantile(1 - alpha / 2) / normal_quantile((1 + interval.confidence) / 2)
    per_side = to_decide(max(units), half, gap)
    return Decide("captures" if unit == "capture" else "executions", per_side)


def exact_verdict(significant: bool, p50: QuantileChange, threshold: float) -> Verdict:
    """Without noise the change is what it is: beyond the threshold or not."""
    if not significant:
        return Verdict.UNCHANGED
    pct = p50.pct
    if pct is None:  # a base of zero cycles: any growth is beyond any threshold
        return Verdict.SLOWER if p50.delta > 0 else Verdict.FASTER
    if pct > threshold:
        return Verdict.SLOWER
    if pct < -threshold:
        return Verdict.FASTER
    return Verdict.CHANGED


def verdict(significant: bool, p50: QuantileChange, threshold: float) -> Verdict:
    """Slower or faster when the interval lies beyond the threshold, inconclusive when it straddles
    it, else changed or unchanged (no interval: the point estimate, as for an exact change).
    """
    interval = p50.interval
    if interval is None or interval.low_pct is None or interval.high_pct is None:
        return exact_verdict(significant, p50, threshold)
    low, high = interval.low_pct, interval.high_pct
    if threshold <= 0:
        if not significant:
            return Verdict.UNCHANGED
        return Verdict.SLOWER if low > 0 else Verdict.FASTER
    # Beyond the threshold at 95 % but the test does not beat alpha: not yet decided either.
    if low > threshold:
        return Verdict.SLOWER if significant else Verdict.INCONCLUSIVE
    if high < -threshold:
        return Verdict.FASTER if significant else Verdict.INCONCLUSIVE
    # Straddling the threshold: undecided when something changed or the estimate lies beyond it.
    # A change neither significant nor beyond the threshold is "unchanged" (no evidence of one);
    # the plan says how many runs would detect a change of the threshold's size.
    beyond = p50.pct is not None and abs(p50.pct) > threshold
    if (low < threshold < high or low < -threshold < high) and (significant or beyond):
        return Verdict.INCONCLUSIVE
    return Verdict.CHANGED if significant else Verdict.UNCHANGED
