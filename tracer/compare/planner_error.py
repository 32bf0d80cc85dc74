"""Both builds held against the planner (and a calibration of it): per layer, the measured median
beside the planner's prediction and the calibrated one, each side's error, and how it changed.

Each side's pooled layers are matched to the budget once (:func:`tracer.analysis.budget_view.
compare_budget_layers`, the matching ``report`` and ``check`` use), and the calibrated prediction
is the one they show (:func:`tracer.analysis.calibration_file.calibrated_prediction`). The error
is the planner's relative error as ``tracer calibrate`` defines it, ``predicted / measured - 1``
(-0.4: 40 % too few cycles); its change is the change of its size, in points: positive when the
new build lies further from the prediction than the base did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from tracer.analysis.budget_view import BudgetComparison, LayerPlan, compare_budget_layers
from tracer.analysis.calibration_file import CalibratedPrediction, Calibration
from tracer.base.timeline import simulated_npu
from tracer.budget.matching import model_difference
from tracer.budget.model import Budget
from tracer.compare.compare import Change, Comparison
from tracer.errors import UsageError


@dataclasses.dataclass(frozen=True)
class SidePrediction:
    """One layer of one build against the plan.

    Attributes:
        measured: Its median cycles (None: not measured on this side).
        planner: The planner's prediction, this side's clock (None: no estimate, or unmatched).
        calibrated: The calibrated prediction (None: no calibration given or unmatched).
        note: What the matching says of the layer (no estimate because ..., engine differs ...).
    """

    measured: int | None
    planner: float | None
    calibrated: CalibratedPrediction | None = None
    note: str = ""

    @property
    def planner_error(self) -> float | None:
        """``planner / measured - 1`` (None: either missing)."""
        return _error(self.planner, self.measured)

    @property
    def calibrated_error(self) -> float | None:
        """``calibrated / measured - 1`` (None: no calibrated number, or not measured)."""
        c = self.calibrated
        return _error(c.cycles if c is not None and c.usable else None, self.measured)

    @property
    def in_interval(self) -> bool | None:
        """The measured median lies in the calibrated interval (None: no interval)."""
        c = self.calibrated
        if c is None or not c.usable or c.low is None or c.high is None or self.measured is None:
            return None
        return c.low <= self.measured <= c.high

    def to_json(self) -> dict[str, Any]:
        """As a side of a layer of the comparison's ``planner`` section."""
        return {
            "measured": self.measured,
            "planner": _round(self.planner),
            "planner_error": _round(self.planner_error, 4),
            "calibrated": self.calibrated.to_json() if self.calibrated is not None else None,
            "calibrated_error": _round(self.calibrated_error, 4),
            "in_interval": self.in_interval,
            "note": self.note or None,
        }


@dataclasses.dataclass(frozen=True)
class LayerPrediction:
    """One layer pair of the comparison against the plan.

    Attributes:
        change: The layer's change (label, indices, medians).
        base, new: Each build against the plan.
    """

    change: Change
    base: SidePrediction
    new: SidePrediction

    @property
    def planner_error_change(self) -> float | None:
        """``|new error| - |base error|`` of the planner's prediction (None: a side has none)."""
        return _size_change(self.base.planner_error, self.new.planner_error)

    @property
    def calibrated_error_change(self) -> float | None:
        """The same of the calibrated prediction."""
        return _size_change(self.base.calibrated_error, self.new.calibrated_error)

    def to_json(self) -> dict[str, Any]:
        """As a layer of the comparison's ``planner`` section."""
        ch = self.change
        return {
            "label": ch.label,
            "base_index": ch.base_index,
            "new_index": ch.new_index,
            "op": ch.op,
            "base": self.base.to_json(),
            "new": self.new.to_json(),
            "planner_error_change": _round(self.planner_error_change, 4),
            "calibrated_error_change": _round(self.calibrated_error_change, 4),
        }


@dataclasses.dataclass(frozen=True)
class PlannerErrors:
    """The comparison held against a budget (and a calibration).

    Attributes:
        base, new: Each side's budget matched to its layers (with the calibration, if any).
        layers: Per layer pair, in the comparison's order.
    """

    base: BudgetComparison
    new: BudgetComparison
    layers: tuple[LayerPrediction, ...]

    def to_json(self) -> dict[str, Any]:
        """The comparison's ``planner`` section."""
        budget = self.base.budget
        model = budget.model
        out: dict[str, Any] = {
            "budget": {
                "name": model.name,
                "sources": list(budget.sources),
                "compiler": model.compiler.to_json() if model.compiler else None,
            },
            "calibration": None,
            "summary": {
                side: {
                    "planner_median_error": _round(
                        _median_size([getattr(la, side).planner_error for la in self.layers]), 4
                    ),
                    "calibrated_median_error": _round(
                        _median_size([getattr(la, side).calibrated_error for la in self.layers]), 4
                    ),
                    "layers": sum(getattr(la, side).planner_error is not None for la in self.layers),
                }
                for side in ("base", "new")
            },
            "layers": [la.to_json() for la in self.layers],
        }
        if self.base.calibration is not None:  # (the report's, less what is per capture)
            per_capture = ("against", "layers_by_status")
            out["calibration"] = {k: v for k, v in self.base.calibration_json().items() if k not in per_capture}
        return out


def planner_errors(comparison: Comparison, budget: Budget, calibration: Calibration | None = None) -> PlannerErrors:
    """Hold both sides of ``comparison`` against ``budget`` (each side matched once).

    Raises:
        UsageError: The budget describes another model than a side's (exit 2).
    """
    sides = []
    for name, digest in (("base", comparison.base), ("new", comparison.new)):
        simulated = simulated_npu(digest.labels)
        matched = compare_budget_layers(
            digest.layers.values(), digest.clock_hz, budget, calibration=calibration, simulated_npu=simulated
        )
        difference = model_difference(matched.matching, budget, capture_lost_data=bool(digest.warnings))
        if difference is not None:
            files = " ".join(budget.sources) or "the budget"
            raise UsageError(f"{files} does not describe the {name} build's model ({digest.name}): {difference}")
        sides.append(matched)
    base, new = sides
    layers = tuple(
        LayerPrediction(
            ch,
            _side(base, ch.base_index, ch.p50.base if ch.p50 is not None else None),
            _side(new, ch.new_index, ch.p50.new if ch.p50 is not None else None),
        )
        for ch in comparison.layers
    )
    return PlannerErrors(base, new, layers)


def _side(matched: BudgetComparison, index: int | None, p50: int | None) -> SidePrediction:
    plan: LayerPlan | None = matched.plans.get(index) if index is not None else None
    if plan is None:
        return SidePrediction(p50, None, note="a layer this build does not have")
    return SidePrediction(p50, plan.predicted_cycles, plan.calibrated, plan.note)


def _error(predicted: float | None, measured: int | None) -> float | None:
    if predicted is None or not measured:
        return None
    return predicted / measured - 1


def _size_change(base: float | None, new: float | None) -> float | None:
    return None if base is None or new is None else abs(new) - abs(base)


def _median_size(errors: Sequence[float | None]) -> float | None:
    known = [abs(e) for e in errors if e is not None]
    return float(np.median(known)) if known else None


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)
