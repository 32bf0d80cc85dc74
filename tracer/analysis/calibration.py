"""How far a planner's per-layer estimates are off on one board, and a correction learnt from it.

The data are :class:`LayerObservation` s: one per measured layer the planner predicted on its
own (one budget layer, on the NPU, with a non-zero estimate), holding the measured median (p50)
cycles and the prediction, both in the capture's clock, and the numbers the planner wrote for the
layer (MACs, its compute and memory-access cycles).

The model (docs/calibrate.md): for a layer of operator type ``op``,
``log(measured / predicted) = mu_op + e`` with ``e`` independent, normal, of spread ``sigma_op``.
The calibrated prediction is ``predicted * exp(mu_op)``; the interval of a new layer's cycles is the
t prediction interval ``mu_op +- t(n-1) * s * sqrt(1 + 1/n)``. An operator type is calibrated only
with at least :data:`MIN_LAYERS` layers from at least :data:`MIN_MODELS` models: a factor learnt
from one model could be that model's, not the board's.

Validation leaves one model out: fit on the others, predict the left-out model's layers, and
compare the error of the planner with the error of the calibrated prediction on those layers only.
numpy only (the core install).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tracer.analysis.statistics import rank_index, student_t_quantile
from tracer.budget.ops import normalize_op

MIN_LAYERS = 3
MIN_MODELS = 2
MIN_VALIDATION_MODELS = 3  # leaving one out must leave two to fit on
BOOTSTRAP_REPLICATES = 2000
BOOTSTRAP_SEED = 20241203  # fixed: the same data give the same intervals
LEVEL = 0.90  # of the per-layer prediction interval
FACTOR_LEVEL = 0.95  # of the factor's confidence interval
# Vela's per-layer numbers used as features (BudgetPart.detail keys).
FEATURES = (
    "mac_count",
    "npu_cycles",
    "sram_access_cycles",
    "dram_access_cycles",
    "on_chip_flash_access_cycles",
    "off_chip_flash_access_cycles",
)
_BOUNDS = {
    "npu_cycles": "compute",
    "sram_access_cycles": "sram",
    "dram_access_cycles": "dram",
    "on_chip_flash_access_cycles": "on-chip flash",
    "off_chip_flash_access_cycles": "off-chip flash",
}
# TFLite builtin names, to show every spelling of an operator the one way.
_TFLITE_NAMES = (
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "TRANSPOSE_CONV",
    "FULLY_CONNECTED",
    "ADD",
    "SUB",
    "MUL",
    "AVERAGE_POOL_2D",
    "MAX_POOL_2D",
    "SOFTMAX",
    "MEAN",
    "CONCATENATION",
    "RESHAPE",
    "RESIZE_BILINEAR",
    "RESIZE_NEAREST_NEIGHBOR",
    "PAD",
    "QUANTIZE",
    "LOGISTIC",
    "TANH",
    "HARD_SWISH",
    "LEAKY_RELU",
    "RELU",
    "RELU6",
    "MAXIMUM",
    "MINIMUM",
    "SQUARED_DIFFERENCE",
    "STRIDED_SLICE",
    "SLICE",
    "SPLIT",
    "PACK",
    "UNPACK",
    "TRANSPOSE",
)
_BY_KEY = {normalize_op(n): n for n in _TFLITE_NAMES}


def op_type(op: str) -> str:
    """The one name of an operator type: its TFLite builtin name when known (``Conv2D`` ->
    ``CONV_2D``), else the name as written.
    """
    return _BY_KEY.get(normalize_op(op), op)


def bound_of(features: Mapping[str, float]) -> str:
    """What bounds the planner's estimate of a layer: the largest of its compute and memory-access
    cycles (``compute``, ``sram``, ``dram``, ``on-chip flash``, ``off-chip flash``; empty: unknown).
    """
    known = [(features[k], name) for k, name in _BOUNDS.items() if features.get(k)]
    return max(known)[1] if known else ""


@dataclasses.dataclass(frozen=True)
class LayerObservation:
    """One measured layer with the planner's estimate.

    Attributes:
        model: The model it belongs to (the budget's model name, else the capture).
        capture: The capture it was measured in.
        layer: Its name.
        op: Its operator type (:func:`op_type`).
        measured_cycles: Median cycles over the complete inferences, capture clock.
        predicted_cycles: The planner's estimate, capture clock.
        planner_cycles: The planner's estimate in its own clock (what the calibration's ranges use).
        features: The planner's per-layer numbers (:data:`FEATURES`, summed over its operations).
    """

    model: str
    capture: str
    layer: str
    op: str
    measured_cycles: float
    predicted_cycles: float
    planner_cycles: float
    features: Mapping[str, float] = dataclasses.field(default_factory=dict)

    @property
    def log_ratio(self) -> float:
        """log(measured / predicted)."""
        return math.log(self.measured_cycles / self.predicted_cycles)

    @property
    def error(self) -> float:
        """The planner's relative error, ``predicted / measured - 1`` (-0.4: 40 % too few cycles)."""
        return self.predicted_cycles / self.measured_cycles - 1

    @property
    def bound(self) -> str:
        """What bounds the planner's estimate (:func:`bound_of`)."""
        return bound_of(self.features)


@dataclasses.dataclass(frozen=True)
class OperatorFit:
    """The correction of one operator type.

    Attributes:
        op: The operator type.
        layers: Layers it rests on.
        models: Models they come from.
        factor: Measured over predicted, the calibration's multiplier (``exp`` of the mean log ratio).
        factor_interval: The factor's confidence interval (:data:`FACTOR_LEVEL`).
        layer_interval: Where a new layer's measured/predicted falls (:data:`LEVEL` prediction interval).
        spread: Standard deviation of the log ratio over its layers.
        planner_cycles_range: The smallest and largest planner estimate seen (the planner's clock).
        mac_range: The smallest and largest MAC count seen (None: the planner wrote none).
    """

    op: str
    layers: int
    models: int
    factor: float
    factor_interval: tuple[float, float]
    layer_interval: tuple[float, float]
    spread: float
    planner_cycles_range: tuple[float, float]
    mac_range: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        """As an entry of the calibration file's ``operators``."""
        return {
            "op": self.op,
            "layers": self.layers,
            "models": self.models,
            "factor": _r(self.factor),
            "factor_interval": [_r(v) for v in self.factor_interval],
            "layer_interval": [_r(v) for v in self.layer_interval],
            "spread": _r(self.spread),
            "planner_cycles_range": list(self.planner_cycles_range),
            "mac_range": list(self.mac_range) if self.mac_range is not None else None,
        }


def fit_operator(op: str, observations: Sequence[LayerObservation]) -> OperatorFit | str:
    """The correction of one operator type from its layers, or why there is none (too few data)."""
    models = {o.model for o in observations}
    if len(observations) < MIN_LAYERS or len(models) < MIN_MODELS:
        return (
            f"{op}: {len(observations)} layer(s) from {len(models)} model(s); calibrating needs at least "
            f"{MIN_LAYERS} layers from {MIN_MODELS} models"
        )
    logs = np.array([o.log_ratio for o in observations])
    n = len(logs)
    mean = float(logs.mean())
    sd = float(logs.std(ddof=1))
    t_factor = student_t_quantile(0.5 + FACTOR_LEVEL / 2, n - 1)
    t_layer = student_t_quantile(0.5 + LEVEL / 2, n - 1)
    half_factor = t_factor * sd / math.sqrt(n)
    half_layer = t_layer * sd * math.sqrt(1 + 1 / n)
    planner = [o.planner_cycles for o in observations]
    macs = [o.features["mac_count"] for o in observations if "mac_count" in o.features]
    return OperatorFit(
        op=op,
        layers=n,
        models=len(models),
        factor=math.exp(mean),
        factor_interval=(math.exp(mean - half_factor), math.exp(mean + half_factor)),
        layer_interval=(math.exp(mean - half_layer), math.exp(mean + half_layer)),
        spread=sd,
        planner_cycles_range=(min(planner), max(planner)),
        mac_range=(min(macs), max(macs)) if len(macs) == n else None,
    )


@dataclasses.dataclass(frozen=True)
class Fit:
    """Corrections per operator type, and the types left uncalibrated with why.

    Attributes:
        operators: By operator type.
        too_few: Per operator type without a correction, why.
    """

    operators: Mapping[str, OperatorFit]
    too_few: Mapping[str, str]


def fit(observations: Iterable[LayerObservation]) -> Fit:
    """Fit every operator type."""
    groups = by_op(observations)
    operators: dict[str, OperatorFit] = {}
    too_few: dict[str, str] = {}
    for op, group in groups.items():
        result = fit_operator(op, group)
        if isinstance(result, str):
            too_few[op] = result
        else:
            operators[op] = result
    return Fit(operators, too_few)


def by_op(observations: Iterable[LayerObservation]) -> dict[str, list[LayerObservation]]:
    """Observations grouped by operator type, types in name order."""
    groups: dict[str, list[LayerObservation]] = {}
    for o in observations:
        groups.setdefault(o.op, []).append(o)
    return dict(sorted(groups.items()))


@dataclasses.dataclass(frozen=True)
class HeldOut:
    """One layer of a left-out model, predicted by a fit on the other models.

    Attributes:
        observation: The layer.
        calibrated_cycles: The calibrated prediction (None: its type was not calibrated without it).
        interval: The calibrated prediction interval of its cycles (None as above).
    """

    observation: LayerObservation
    calibrated_cycles: float | None
    interval: tuple[float, float] | None

    @property
    def error_after(self) -> float | None:
        """The calibrated prediction's relative error (None: not calibrated)."""
        if self.calibrated_cycles is None:
            return None
        return self.calibrated_cycles / self.observation.measured_cycles - 1

    @property
    def covered(self) -> bool | None:
        """The measured cycles fall in the interval (None: not calibrated)."""
        if self.interval is None:
            return None
        return self.interval[0] <= self.observation.measured_cycles <= self.interval[1]


def leave_one_model_out(observations: Sequence[LayerObservation]) -> list[HeldOut] | str:
    """Every layer predicted by a fit on the other models, or why it cannot be done."""
    models = sorted({o.model for o in observations})
    if len(models) < MIN_VALIDATION_MODELS:
        return (
            f"leaving one model out needs at least {MIN_VALIDATION_MODELS} models, there are {len(models)}: "
            "the calibration is not validated"
        )
    out: list[HeldOut] = []
    for model in models:
        trained = fit(o for o in observations if o.model != model)
        for o in observations:
            if o.model != model:
                continue
            f = trained.operators.get(o.op)
            if f is None:
                out.append(HeldOut(o, None, None))
            else:
                low, high = f.layer_interval
                out.append(
                    HeldOut(o, o.predicted_cycles * f.factor, (o.predicted_cycles * low, o.predicted_cycles * high))
                )
    return out


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
            half = student_t_quantile(0.975, len(y) - 2) * se
            out.append(FeatureEffect(op, feature, slope, (slope - half, slope + half), len(group)))
    return out


def _r(value: float) -> float:
    return round(value, 6)
