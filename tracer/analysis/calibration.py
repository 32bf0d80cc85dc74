"""How far a planner's per-layer estimates are off on one board, and a correction learnt from it.

The data are :class:`LayerObservation` s: one per measured layer the planner predicted on its
own (one budget layer, on the NPU, with a non-zero estimate), or per model operator of a sampled
NPU job (:mod:`tracer.analysis.calibration_data`), holding the measured cycles and the prediction
in one unit, and the numbers the planner wrote for the layer (MACs, its compute and
memory-access cycles). The error table's rows are in :mod:`tracer.analysis.calibration_errors`.

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

from tracer.analysis.distributions import t_quantile
from tracer.budget.ops import normalize_op

MIN_LAYERS = 3
MIN_MODELS = 2
MIN_VALIDATION_MODELS = 3  # leaving one out must leave two to fit on
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
        measured_cycles: Median cycles over the complete inferences, capture clock (a sampled
            NPU operation: its sampled time, in NPU cycles when the PMU counted its jobs).
        predicted_cycles: The planner's estimate, in the same unit.
        planner_cycles: The planner's estimate in its own clock (what the calibration's ranges use).
        features: The planner's per-layer numbers (:data:`FEATURES`, summed over its operations).
        index: The measured layer's index in the capture (None: not known).
    """

    model: str
    capture: str
    layer: str
    op: str
    measured_cycles: float
    predicted_cycles: float
    planner_cycles: float
    features: Mapping[str, float] = dataclasses.field(default_factory=dict)
    index: int | None = None

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
    t_factor = t_quantile(0.5 + FACTOR_LEVEL / 2, n - 1)
    t_layer = t_quantile(0.5 + LEVEL / 2, n - 1)
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


def _r(value: float) -> float:
    return round(value, 6)
