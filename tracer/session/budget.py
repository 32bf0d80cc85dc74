"""The budget a session compares against: matched to the layers as they appear, in capture cycles.

The matching is the CI gate's (:func:`tracer.analysis.budget_view.compare_budget`: names, NPU
subgraphs, indices, operator order; Vela's cycles converted to the capture's clock; each layer's
tolerance from the budget, else 10 %), run again whenever the session learns new layers or its
clock, so the layers table compares with the same predictions as ``tracer check``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracer.analysis.budget_view import BudgetComparison, LayerPlan, compare_budget
from tracer.analysis.calibration_file import Calibration
from tracer.base.timeline import InferenceTimeline, LayerInfo
from tracer.budget.model import Budget


class SessionBudget:
    """A loaded budget, matched again whenever the session learns new layers or its clock.

    Args:
        budget: The normalized budget (``tracer.budget.load_budget``).
        calibration: A calibration of the planner, to show each layer's calibrated prediction.
    """

    def __init__(self, budget: Budget, calibration: Calibration | None = None) -> None:
        self.budget = budget
        self.calibration = calibration
        self._key: tuple[tuple[tuple[int, str, str, str], ...], int | None] | None = None
        self.comparison: BudgetComparison | None = None
        self.plans: dict[int, LayerPlan] = {}

    @property
    def name(self) -> str:
        """The model's name."""
        return self.budget.model.name

    def update(self, layers: Mapping[int, LayerInfo], clock_hz: int | None) -> bool:
        """Match again if the layers or the clock changed; True if it did."""
        key = (tuple((i, la.name, la.op, la.engine.value) for i, la in sorted(layers.items())), clock_hz)
        if key == self._key:
            return False
        self._key = key
        self.comparison = compare_budget(
            InferenceTimeline(clock_hz=clock_hz, layers=dict(layers)), self.budget, calibration=self.calibration
        )
        self.plans = dict(self.comparison.plans)
        return True

    @property
    def inference_cycles(self) -> float | None:
        """Predicted cycles of one inference in the capture's clock (the model total, else the layers' sum)."""
        return self.comparison.predicted_total if self.comparison is not None else None

    @property
    def arena_bytes(self) -> int | None:
        """The planned tensor arena."""
        return self.budget.model.arena_bytes
