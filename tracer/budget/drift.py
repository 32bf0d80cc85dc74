"""Planner drift: two plans of one model (two Vela versions or configurations) layer by layer.

Layers of the two budgets are paired by model index when both budgets give every layer one (Vela's
debug database does), else by name, else by position when both have as many layers. Each pair's
estimates are compared in the budgets' own clocks and, when the clocks differ, in seconds too.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from tracer.budget.model import Budget, BudgetLayer, json_number

DEFAULT_THRESHOLD_PCT = 10.0


@dataclasses.dataclass(frozen=True)
class LayerDrift:
    """One layer in both plans.

    Attributes:
        old, new: The layer in each (None: absent from that plan).
        old_seconds, new_seconds: The estimates in seconds (None: no estimate or no clock).
    """

    old: BudgetLayer | None
    new: BudgetLayer | None
    old_seconds: float | None = None
    new_seconds: float | None = None

    @property
    def label(self) -> str:
        """The layer's name in the new plan, else the old."""
        layer = self.new or self.old
        assert layer is not None
        return layer.label

    @property
    def change(self) -> float | None:
        """New / old - 1 of the estimates (in seconds when both clocks are known; None: not both)."""
        if self.old_seconds and self.new_seconds is not None:
            return self.new_seconds / self.old_seconds - 1
        old = self.old.predicted_cycles if self.old else None
        new = self.new.predicted_cycles if self.new else None
        if not old or new is None:
            return None
        return new / old - 1

    def moved(self, threshold_pct: float) -> bool:
        """The estimate changed by more than ``threshold_pct``, or the layer is in one plan only."""
        if self.old is None or self.new is None:
            return True
        change = self.change
        return change is not None and abs(change) * 100 > threshold_pct

    def to_json(self, threshold_pct: float) -> dict[str, Any]:
        """As a row of ``tracer budget OLD NEW --format json``."""
        layer = self.new or self.old
        assert layer is not None
        change = self.change
        return {
            "index": layer.index,
            "name": layer.name,
            "op": layer.op,
            "old_cycles": json_number(self.old.predicted_cycles) if self.old else None,
            "new_cycles": json_number(self.new.predicted_cycles) if self.new else None,
            "change_pct": None if change is None else round(100 * change, 2),
            "moved": self.moved(threshold_pct),
        }


@dataclasses.dataclass(frozen=True)
class PlanDrift:
    """Two plans of one model compared.

    Attributes:
        old, new: The budgets.
        layers: Every layer of either, in the new plan's order (old-only layers at the end).
        paired_by: ``index``, ``name`` or ``position``.
    """

    old: Budget
    new: Budget
    layers: tuple[LayerDrift, ...]
    paired_by: str

    @property
    def total_change(self) -> float | None:
        """New / old - 1 of the model totals (seconds when both clocks are known)."""
        old, new = self.old.model.cycles_total, self.new.model.cycles_total
        if not old or new is None:
            return None
        old_hz, new_hz = self.old.model.clock_hz, self.new.model.clock_hz
        if old_hz and new_hz:
            return (new / new_hz) / (old / old_hz) - 1
        return new / old - 1


def plan_drift(old: Budget, new: Budget) -> PlanDrift:
    """Pair the layers of two plans of one model and compare their estimates."""
    old_layers, new_layers = list(old.layers), list(new.layers)
    if old_layers and all(la.index is not None for la in old_layers + new_layers):
        paired_by, key = "index", lambda la: la.index
    elif all(la.name for la in old_layers + new_layers):
        paired_by, key = "name", lambda la: la.name
    else:
        paired_by, key = "position", lambda la: la.position
    old_by = {key(la): la for la in old_layers}
    seen: set[Any] = set()
    rows: list[LayerDrift] = []
    for layer in new_layers:
        k = key(layer)
        seen.add(k)
        rows.append(_drift(old_by.get(k), layer, old, new))
    rows += [_drift(la, None, old, new) for la in old_layers if key(la) not in seen]
    return PlanDrift(old, new, tuple(rows), paired_by)


def _drift(a: BudgetLayer | None, b: BudgetLayer | None, old: Budget, new: Budget) -> LayerDrift:
    return LayerDrift(a, b, _seconds(a, old), _seconds(b, new))


def _seconds(layer: BudgetLayer | None, budget: Budget) -> float | None:
    hz = budget.model.clock_hz
    if layer is None or layer.predicted_cycles is None or not hz:
        return None
    return layer.predicted_cycles / hz


def log_distance(measured: float, predicted: float | None) -> float | None:
    """|log(measured / predicted)|: how far a prediction is from a measurement, either way."""
    if not predicted or measured <= 0:
        return None
    return abs(math.log(measured / predicted))
