"""The calibration file ``tracer calibrate`` writes and ``report``/``check`` apply (JSON, versioned;
docs/calibrate.md), and the calibrated prediction of a layer.

::

    {"format": "tracer-calibration", "version": 1,
     "planner": {"name": "vela", "version": null, "config": {...}},
     "level": 0.9, "models": ["kws", ...],
     "operators": [{"op": "CONV_2D", "layers": 9, "models": 4, "factor": 1.61,
                    "factor_interval": [1.52, 1.70], "layer_interval": [1.39, 1.86],
                    "spread": 0.08, "planner_cycles_range": [2784, 21157],
                    "mac_range": [110592, 2654208]}, ...],
     "uncalibrated": {"FULLY_CONNECTED": "why"},
     "validation": {...}}
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tracer.analysis.calibration import LEVEL, OperatorFit, op_type
from tracer.budget.model import BudgetLayer, json_number
from tracer.errors import UsageError

FORMAT = "tracer-calibration"
VERSION = 1
# Statuses of a calibrated prediction.
CALIBRATED = "calibrated"  # every operator type calibrated, within what the calibration saw
OUTSIDE = "outside"  # calibrated, but beyond the estimates (or MACs) the calibration saw
PARTIAL = "partial"  # some of its operator types calibrated, not all
NOT_CALIBRATED = "not-calibrated"  # its operator type is not in the calibration
NO_ESTIMATE = "no-estimate"  # the planner made no estimate to calibrate


@dataclasses.dataclass(frozen=True)
class Calibration:
    """A calibration file.

    Attributes:
        operators: Corrections by operator type.
        planner: The planner it was learnt against (``name``, ``version``, ``config``).
        models: The models it rests on.
        level: The level of the per-layer intervals.
        uncalibrated: Operator types seen with too few data, and why.
        validation: The leave-one-model-out result, as written (information only).
        source: The file.
    """

    operators: Mapping[str, OperatorFit]
    planner: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    models: tuple[str, ...] = ()
    level: float = LEVEL
    uncalibrated: Mapping[str, str] = dataclasses.field(default_factory=dict)
    validation: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        """The file's content."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "planner": dict(self.planner),
            "level": self.level,
            "models": list(self.models),
            "operators": [f.to_json() for f in self.operators.values()],
            "uncalibrated": dict(self.uncalibrated),
            "validation": dict(self.validation),
        }

    def planner_difference(self, planner: Mapping[str, Any]) -> str | None:
        """What differs between the planner it was learnt against and ``planner`` (None: nothing)."""
        mine, theirs = self.planner, planner
        differences = []
        if mine.get("name") and theirs.get("name") and mine["name"] != theirs["name"]:
            differences.append(f"planner {mine['name']} here, {theirs['name']} in the budget")
        a, b = mine.get("config") or {}, theirs.get("config") or {}
        for key in sorted(set(a) & set(b)):
            if a[key] != b[key]:
                differences.append(f"{key} {a[key]} here, {b[key]} in the budget")
        return "; ".join(differences) or None


def read_calibration(path: str | Path) -> Calibration:
    """Read and check a calibration file.

    Raises:
        UsageError: Unreadable, not JSON, not a calibration file, or a value of the wrong kind
            (naming the file and the key).
    """
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{name}: cannot read the calibration file ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name}:{exc.lineno}: not JSON ({exc.msg}); expected a file of 'tracer calibrate'") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(
            f'{name}: not a calibration file (expected "format": "{FORMAT}", written by \'tracer calibrate\')'
        )
    if data.get("version") != VERSION:
        raise UsageError(
            f"{name}: calibration file version {data.get('version')!r}; this tracer reads version {VERSION}"
        )
    entries = data.get("operators")
    if not isinstance(entries, list):
        raise UsageError(f"{name}: 'operators': expected a list")
    operators: dict[str, OperatorFit] = {}
    for k, entry in enumerate(entries):
        fit = _operator(name, k, entry)
        operators[fit.op] = fit
    level = data.get("level", LEVEL)
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        raise UsageError(f"{name}: 'level': expected a number between 0 and 1, got {level!r}")
    planner = data.get("planner") or {}
    models = data.get("models") or []
    uncalibrated = data.get("uncalibrated") or {}
    validation = data.get("validation") or {}
    if not isinstance(planner, dict) or not isinstance(models, list) or not isinstance(uncalibrated, dict):
        raise UsageError(f"{name}: 'planner' and 'uncalibrated' must be objects, 'models' a list")
    return Calibration(
        operators,
        planner,
        tuple(str(m) for m in models),
        float(level),
        {str(k): str(v) for k, v in uncalibrated.items()},
        validation if isinstance(validation, dict) else {},
        name,
    )


def _operator(name: str, k: int, entry: Any) -> OperatorFit:
    where = f"{name}: operators[{k}]"
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: expected an object")

    def number(key: str, positive: bool = True) -> float:
        value = entry.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise UsageError(f"{where}: '{key}': expected a number, got {value!r}")
        if positive and value <= 0:
            raise UsageError(f"{where}: '{key}': expected a number above 0, got {value!r}")
        return float(value)

    def pair(key: str, optional: bool = False) -> tuple[float, float] | None:
        value = entry.get(key)
        if value is None and optional:
            return None
        if not (isinstance(value, list) and len(value) == 2 and all(_finite(v) for v in value)) or value[0] > value[1]:
            raise UsageError(f"{where}: '{key}': expected [low, high], got {value!r}")
        return float(value[0]), float(value[1])

    op = entry.get("op")
    if not isinstance(op, str) or not op:
        raise UsageError(f"{where}: 'op': expected an operator name")
    layers, models = number("layers"), number("models")
    factor_interval, layer_interval = pair("factor_interval"), pair("layer_interval")
    planner_range = pair("planner_cycles_range")
    assert factor_interval is not None and layer_interval is not None and planner_range is not None
    return OperatorFit(
        op=op_type(op),
        layers=int(layers),
        models=int(models),
        factor=number("factor"),
        factor_interval=factor_interval,
        layer_interval=layer_interval,
        spread=number("spread", positive=False),
        planner_cycles_range=planner_range,
        mac_range=pair("mac_range", optional=True),
    )


@dataclasses.dataclass(frozen=True)
class CalibratedPrediction:
    """The calibrated prediction of one measured layer, beside the planner's.

    Attributes:
        cycles: Calibrated cycles, capture clock (None: nothing to calibrate).
        low, high: The interval of the layer's cycles at the calibration's level (None as above).
        status: ``calibrated``, ``outside``, ``partial``, ``not-calibrated`` or ``no-estimate``.
        note: Why, for any status but ``calibrated``.
    """

    cycles: float | None
    low: float | None
    high: float | None
    status: str
    note: str = ""

    @property
    def usable(self) -> bool:
        """A calibrated number exists (every status but ``not-calibrated`` and ``no-estimate``)."""
        return self.cycles is not None and self.status not in (NOT_CALIBRATED, NO_ESTIMATE)

    def to_json(self) -> dict[str, Any]:
        """The per-layer ``calibrated`` object of the report."""
        return {
            "cycles": _round(self.cycles),
            "low": _round(self.low),
            "high": _round(self.high),
            "status": self.status,
            "note": self.note or None,
        }


def calibrated_prediction(
    calibration: Calibration, layers: Sequence[BudgetLayer], scale: float | None
) -> CalibratedPrediction:
    """The calibrated prediction of a measured layer that is ``layers`` of the budget (several for
    an ``ethos-u`` operator: their sum), ``scale`` capture cycles per budget cycle.
    """
    estimated = [b for b in layers if b.predicted_cycles]
    if not estimated or scale is None:
        return CalibratedPrediction(None, None, None, NO_ESTIMATE, "the planner made no estimate to calibrate")
    cycles = low = high = 0.0
    missing: list[str] = []
    outside: list[str] = []
    for b in estimated:
        assert b.predicted_cycles is not None
        op = op_type(b.op)
        predicted = b.predicted_cycles * scale
        f = calibration.operators.get(op)
        if f is None:
            missing.append(op or b.label)
            cycles, low, high = cycles + predicted, low + predicted, high + predicted
            continue
        cycles += predicted * f.factor
        low += predicted * f.layer_interval[0]
        high += predicted * f.layer_interval[1]
        seen_low, seen_high = f.planner_cycles_range
        if not seen_low <= b.predicted_cycles <= seen_high:
            outside.append(
                f"{b.label}: estimate {b.predicted_cycles:g} cycles, the calibration saw {op} from "
                f"{seen_low:g} to {seen_high:g}"
            )
        macs = sum(float(p.detail.get("mac_count", 0.0)) for p in b.parts)
        if f.mac_range is not None and b.parts and not f.mac_range[0] <= macs <= f.mac_range[1]:
            outside.append(
                f"{b.label}: {macs:g} MACs, the calibration saw {op} from {f.mac_range[0]:g} to {f.mac_range[1]:g}"
            )
    if len(missing) == len(estimated):
        names = ", ".join(dict.fromkeys(missing))
        return CalibratedPrediction(None, None, None, NOT_CALIBRATED, f"not in the calibration: {names}")
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        note = f"planner's estimate kept for {names} (not in the calibration)"
        return CalibratedPrediction(cycles, low, high, PARTIAL, "; ".join([note, *outside]))
    if outside:
        return CalibratedPrediction(cycles, low, high, OUTSIDE, "; ".join(outside))
    return CalibratedPrediction(cycles, low, high, CALIBRATED)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _round(value: float | None) -> float | int | None:
    return None if value is None else json_number(round(value, 3))
