"""The budget a session compares against: matched to the layers as they appear, in capture cycles."""

from __future__ import annotations

import dataclasses
from typing import Mapping

from tracer.analysis.report import BudgetView
from tracer.budget.matching import LayerMatch, Matching, match_layers
from tracer.budget.model import Budget
from tracer.telemetry.model import LayerInfo

DEFAULT_TOLERANCE_PCT = 10.0


@dataclasses.dataclass(frozen=True)
class LayerPlan:
    """What the budget says about one measured layer.

    Attributes:
        predicted_cycles: In the capture's clock (None: no estimate, or no conversion possible).
        tolerance_pct: How far over the prediction is still within budget.
        planned_engine: ``npu``/``cpu`` when the budget says.
        how: How it was matched (``name``, ``index``, ... or ``unmatched``).
        note: What a reader should know (engine differs, clock unknown).
    """

    predicted_cycles: float | None
    tolerance_pct: float
    planned_engine: str | None
    how: str
    note: str


class SessionBudget:
    """A loaded budget, re-matched whenever the session learns new layers or its clock.

    Args:
        budget: The normalized budget (``tracer.budget.load_budget``).
    """

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._key: tuple[tuple[tuple[int, str, str, str], ...], int | None] | None = None
        self.matching: Matching | None = None
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
        self.matching = match_layers(layers.values(), self.budget, clock_hz)
        self.plans = {m.measured.index: _plan(m, self.budget.model.tolerance_pct) for m in self.matching.matches}
        return True

    @property
    def inference_cycles(self) -> float | None:
        """Predicted cycles of one inference in the capture's clock (the model total, else the layers' sum)."""
        if self.matching is None or self.matching.scale is None:
            return None
        total = self.budget.model.cycles_total
        if total is None:
            total = self.budget.layer_cycles_total
        return None if total is None else total * self.matching.scale

    @property
    def arena_bytes(self) -> int | None:
        """The planned tensor arena."""
        return self.budget.model.arena_bytes

    def view(self) -> BudgetView:
        """What the report needs."""
        cycles = {i: p.predicted_cycles for i, p in self.plans.items() if p.predicted_cycles is not None}
        return BudgetView(cycles, self.arena_bytes, self.name)


def _plan(match: LayerMatch, default_tolerance: float | None) -> LayerPlan:
    engines = {b.engine.value for b in match.budget if b.engine is not None}
    tolerance = match.tolerance_pct if match.tolerance_pct is not None else default_tolerance
    return LayerPlan(
        predicted_cycles=match.predicted_cycles,
        tolerance_pct=DEFAULT_TOLERANCE_PCT if tolerance is None else float(tolerance),
        planned_engine=engines.pop() if len(engines) == 1 else None,
        how=match.how.value,
        note=match.note,
    )
