"""How far the planner is off, over a group of layers: the error table's rows (with bootstrap
intervals of the median error, before and after a calibration left one model out) and whether an
operator type's ratio still depends on a planner feature. numpy only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tracer.analysis.calibration import HeldOut, LayerObservation, by_op
from tracer.analysis.distributions import t_quantile
from tracer.analysis.statistics import rank_index

BOOTSTRAP_REPLICATES = 2000
BOOTSTRAP_SEED = 20241203  # fixed: the same data give the same intervals


@dataclasses.dataclass(frozen=True)
class ErrorSummary:
    """The planner's error (and the calibrated one, left out) over a group of layers.

    Attributes:
        group: The operator type (or ``all``, or a bound).
        layers: Layers.
        models: Models they come from.
        median_ratio: Median measured / predicted.
        median_error, p90_error: Median and nearest-rank p90 of the absolute relative error
            ``|predicted / measured - 1|``.
        median_error_interval: 95 % bootstrap interval of the median error (layers resampled).
        bias: Median of the signed error (negative: the planner predicts too few cycles).
        calibrated_layers: Layers of the group a fit without their model could calibrate.
        median_error_after, p90_error_after: The same errors of the calibrated prediction over
            those layers (None: none).
        median_error_before: The planner's median error over the same layers (to compare like
            with like; None: none).
        median_error_after_interval: 95 % bootstrap interval of ``median_error_after``.
        coverage: Share of those layers whose measured cycles fall in their interval.
    """

    group: str
    layers: int
    models: int
    median_ratio: float
    median_error: float
    p90_error: float
    bias: float
    median_error_interval: tuple[float, float] = (0.0, 0.0)
    calibrated_layers: int = 0
    median_error_before: float | None = None
    median_error_after: float | None = None
    median_error_after_interval: tuple[float, float] | None = None
    p90_error_after: float | None = None
    coverage: float | None = None

    def to_json(self) -> dict[str, Any]:
        """As a row of the error table's JSON."""
        out: dict[str, Any] = {}
        for k, v in dataclasses.asdict(self).items():
            if isinstance(v, float):
                v = _r(v)
            elif isinstance(v, tuple):
                v = [_r(x) for x in v]
            out[k] = v
        return out


def error_summary(group: str, observations: Sequence[LayerObservation], held: Sequence[HeldOut] = ()) -> ErrorSummary:
    """The error of ``observations``; ``held`` are the same layers' left-out predictions."""
    errors = np.array([abs(o.error) for o in observations])
    signed = np.array([o.error for o in observations])
    ratios = np.array([o.measured_cycles / o.predicted_cycles for o in observations])
    done = [h for h in held if h.calibrated_cycles is not None]
    before = [abs(h.observation.error) for h in done]
    after = [abs(h.error_after or 0.0) for h in done]
    return ErrorSummary(
        group=group,
        layers=len(observations),
        models=len({o.model for o in observations}),
        median_ratio=float(np.median(ratios)),
        median_error=float(np.median(errors)),
        p90_error=quantile(errors, 0.9),
        bias=float(np.median(signed)),
        median_error_interval=median_interval(errors),
        calibrated_layers=len(done),
        median_error_before=float(np.median(before)) if done else None,
        median_error_after=float(np.median(after)) if done else None,
        median_error_after_interval=median_interval(np.array(after)) if done else None,
        p90_error_after=quantile(np.array(after), 0.9) if done else None,
        coverage=sum(bool(h.covered) for h in done) / len(done) if done else None,
    )


def median_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The bootstrap percentile interval of the median of ``values`` (values resampled with
    replacement, :data:`BOOTSTRAP_REPLICATES` times, seeded).
    """
    if len(values) == 1:
        return float(values[0]), float(values[0])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, len(values), size=(BOOTSTRAP_REPLICATES, len(values)))
    medians = np.sort(np.median(values[picks], axis=1))
    low = medians[rank_index(BOOTSTRAP_REPLICATES, (1 - confidence) / 2)]
    high = medians[rank_index(BOOTSTRAP_REPLICATES, (1 + confidence) / 2)]
    return float(low), float(high)


def quantile(values: np.ndarray, q: float) -> float:
    """The nearest-rank ``q`` quantile of float values (the one percentile definition)."""
    ordered = np.sort(values)
    return float(ordered[rank_index(len(ordered), q)])


@dataclasses.dataclass(frozen=True)
class FeatureEffect:
    """Whether an operator type's ratio still depends on a planner feature (a factor per type
    cannot correct that; it widens the type's interval instead).

    Attributes:
        op: The operator type.
        feature: ``mac_count`` or ``planner_cycles`` (both on a log scale).
        slope: Change of log(measured / predicted) per unit of log(feature).
        interval: Its 95 % confidence interval.
        layers: Layers it rests on.
    """

    op: str
    feature: str
    slope: float
    interval: tuple[float, float]
    layers: int

    @property
    def matters(self) -> bool:
        """The interval excludes zero."""
        return self.interval[0] > 0 or self.interval[1] < 0

    def to_json(self) -> dict[str, Any]:
        """As JSON."""
        return {
            "op": self.op,
            "feature": self.feature,
            "slope": _r(self.slope),
            "interval": [_r(v) for v in self.interval],
            "layers": self.layers,
            "matters": self.matters,
        }


def feature_effects(observations: Sequence[LayerObservation]) -> list[FeatureEffect]:
    """Per operator type with at least four layers of different sizes: the slope of the log ratio
    against log MACs and against log planner cycles (ordinary least squares, t interval).
    """
    out: list[FeatureEffect] = []
    for op, group in by_op(observations).items():
        y = np.array([o.log_ratio for o in group])
        for feature in ("mac_count", "planner_cycles"):
            values = [o.planner_cycles if feature == "planner_cycles" else o.features.get(feature, 0.0) for o in group]
            if len(group) < 4 or min(values) <= 0:
                continue
            x = np.log(np.array(values))
            sxx = float(((x - x.mean()) ** 2).sum())
            if sxx <= 1e-9:
                continue
            slope = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
            residual = y - y.mean() - slope * (x - x.mean())
            se = math.sqrt(float((residual**2).sum()) / (len(y) - 2) / sxx)
            half = t_quantile(0.975, len(y) - 2) * se
            out.append(FeatureEffect(op, feature, slope, (slope - half, slope + half), len(group)))
    return out


def _r(value: float) -> float:
    return round(value, 6)
