"""How many captures and inferences a side needs: variance components and sample sizes.

A capture's median (log scale) varies for two reasons: the capture as a whole shifts (run-to-run
variance, ``between``) and its median is an estimate from its executions (``within``: the variance
of one execution's worth, so that a median of ``m`` executions carries ``within / m``). With ``k``
captures a side of ``m`` executions each, the change of the sides' mean capture medians has the
variance ``2 (between + within / m) / k``; a change ``delta`` (log scale) is detected with a
two-sided test at ``alpha`` and power ``1 - beta`` once ``delta`` exceeds
``(t(1 - alpha / 2) + t(1 - beta)) * sqrt(...)`` with the t quantiles of Welch's degrees of freedom
(``2 k - 2`` for equal sides). One capture a side measures no ``between``: the plan then counts
executions, and says that it assumes no run-to-run variance.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from tracer.analysis.distributions import normal_quantile, t_quantile
from tracer.compare.intervals import capture_summaries, log_quantile_se, min_executions

MAX_CAPTURES = 10_000


@dataclasses.dataclass(frozen=True)
class Variance:
    """The variance components of one layer (or the latency), both sides pooled, log scale.

    Attributes:
        within: Variance of a capture's log median times its executions (one execution's worth).
        between: Run-to-run variance of the captures' log medians (None: not measured).
        executions: Median executions per capture.
        captures: (base captures, new captures).
    """

    within: float
    between: float | None
    executions: int
    captures: tuple[int, int]

    @property
    def within_pct(self) -> float:
        """The within-capture spread of one execution, in percent (a standard deviation)."""
        return 100.0 * math.sqrt(self.within)

    @property
    def between_pct(self) -> float | None:
        """The run-to-run spread of a capture, in percent (a standard deviation)."""
        return None if self.between is None else 100.0 * math.sqrt(self.between)


@dataclasses.dataclass(frozen=True)
class Plan:
    """Captures (and executions per capture) a side needs to detect a change.

    Attributes:
        change_pct: The change to detect.
        alpha, power: The error rates.
        captures: Captures per side (None: one capture a side was measured, see ``executions``).
        executions: Executions per capture the plan assumes (with ``captures``), or the executions
            one capture a side needs (without).
        assumes_no_run_to_run: The run-to-run variance was not measured and the plan leaves it out.
    """

    change_pct: float
    alpha: float
    power: float
    captures: int | None
    executions: int | None
    assumes_no_run_to_run: bool


def variance(base: Sequence[np.ndarray], new: Sequence[np.ndarray]) -> Variance | None:
    """The variance components from the executions of each capture of both sides (None: no capture
    has enough executions for the noise of its median to be estimated).
    """
    within, residual, df = [], 0.0, 0
    for side in (base, new):
        parts = [p for p in side if len(p)]
        ses = [log_quantile_se(np.sort(p), 0.5) for p in parts]
        within += [se * se * len(p) for se, p in zip(ses, parts) if se is not None]
        if len(parts) >= 2:
            logs = capture_summaries(parts, 0.5)
            known = [se * se for se in ses if se is not None]
            noise = float(np.mean(known)) if known else 0.0
            residual += max(0.0, float(np.var(logs, ddof=1)) - noise) * (len(parts) - 1)
            df += len(parts) - 1
    if not within:
        return None
    counts = [len(p) for side in (base, new) for p in side if len(p)]
    return Variance(
        float(np.mean(within)),
        residual / df if df else None,
        int(np.median(counts)),
        (sum(1 for p in base if len(p)), sum(1 for p in new if len(p))),
    )


def plan(v: Variance, change_pct: float, alpha: float, power: float, executions: int | None = None) -> Plan | None:
    """The captures a side needs (each of ``executions``, default: as measured) to detect
    ``change_pct`` at ``alpha`` with ``power``; None for a change of 0.
    """
    if change_pct <= 0:
        return None
    delta = math.log1p(change_pct / 100.0)
    m = executions or v.executions
    if v.between is None:
        z = normal_quantile(1 - alpha / 2) + normal_quantile(power)
        n = math.ceil(2 * v.within * (z / delta) ** 2)
        return Plan(change_pct, alpha, power, None, max(n, min_executions(0.5)), True)
    per_capture = v.between + v.within / m
    # The normal quantiles give a lower bound (t quantiles are larger); step up from there.
    z = normal_quantile(1 - alpha / 2) + normal_quantile(power)
    start = max(2, min(MAX_CAPTURES, math.ceil(2 * per_capture * (z / delta) ** 2)))
    for k in range(start, MAX_CAPTURES):
        df = 2 * k - 2
        needed = (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * math.sqrt(2 * per_capture / k)
        if needed <= delta:
            return Plan(change_pct, alpha, power, k, m, False)
    return Plan(change_pct, alpha, power, MAX_CAPTURES, m, False)


def to_decide(units: int, half_width: float, gap: float) -> int | None:
    """How many units (captures or executions) a side needs for an interval of ``half_width`` with
    ``units`` to leave the threshold, ``gap`` away from the estimate, on one side (None: the
    estimate sits on the threshold, no number of runs is enough to promise it).
    """
    if gap <= 0:
        return None
    return max(units + 1, math.ceil(units * (half_width / gap) ** 2))
