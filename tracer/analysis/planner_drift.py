"""Which of two plans of one model a capture agrees with, layer by layer (``tracer budget OLD NEW
--capture C``).

Each plan is matched to the capture as ``report`` matches a budget
(:func:`tracer.analysis.budget_view.compare_budget`); a measured layer that is one budget layer in
both gets its median cycles held against both estimates (in the capture's clock). The closer
estimate is the one whose ``|log(measured / predicted)|`` is smaller; a layer whose two estimates
are equal agrees with ``both``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tracer.analysis.budget_view import compare_budget
from tracer.analysis.layer_stats import per_layer
from tracer.base.timeline import InferenceTimeline
from tracer.budget.drift import PlanDrift, log_distance
from tracer.budget.model import BudgetLayer

OLD, NEW, BOTH = "old", "new", "both"


@dataclasses.dataclass(frozen=True)
class LayerAgreement:
    """One measured layer against both plans.

    Attributes:
        layer: The budget layer (as the new plan names it).
        measured_cycles: Its median cycles, capture clock.
        old_cycles, new_cycles: The two estimates, capture clock.
    """

    layer: str
    measured_cycles: float
    old_cycles: float
    new_cycles: float

    @property
    def closer(self) -> str:
        """``old``, ``new`` or ``both`` (equal estimates)."""
        old = log_distance(self.measured_cycles, self.old_cycles)
        new = log_distance(self.measured_cycles, self.new_cycles)
        assert old is not None and new is not None
        if abs(old - new) < 1e-12:
            return BOTH
        return OLD if old < new else NEW

    def to_json(self) -> dict[str, Any]:
        """As JSON."""
        return {
            "layer": self.layer,
            "measured_cycles": self.measured_cycles,
            "old_cycles": round(self.old_cycles, 3),
            "new_cycles": round(self.new_cycles, 3),
            "old_error_pct": round(100 * (self.old_cycles / self.measured_cycles - 1), 2),
            "new_error_pct": round(100 * (self.new_cycles / self.measured_cycles - 1), 2),
            "closer": self.closer,
        }


def agreement(timeline: InferenceTimeline, drift: PlanDrift) -> list[LayerAgreement]:
    """The measured layers of ``timeline`` that are one layer of both plans, against both."""
    stats = per_layer(timeline.spans)
    estimates: list[dict[int, tuple[BudgetLayer, float]]] = []
    for budget in (drift.old, drift.new):
        matched: dict[int, tuple[BudgetLayer, float]] = {}
        for m in compare_budget(timeline, budget).matching.matches:
            if len(m.budget) == 1 and m.predicted_cycles:
                matched[m.measured.index] = (m.budget[0], m.predicted_cycles)
        estimates.append(matched)
    old, new = estimates
    out = []
    for index in sorted(set(old) & set(new)):
        st = stats.get(index)
        if st is None or st.cycles is None or st.cycles.p50 <= 0:
            continue
        out.append(LayerAgreement(new[index][0].label, float(st.cycles.p50), old[index][1], new[index][1]))
    return out


def agreement_summary(rows: list[LayerAgreement]) -> dict[str, Any]:
    """How many layers each plan is closer for, and each plan's median absolute error."""
    if not rows:
        return {"layers": 0, "closer_old": 0, "closer_new": 0, "same": 0, "verdict": None}
    closer = [r.closer for r in rows]
    old_error = float(np.median([abs(r.old_cycles / r.measured_cycles - 1) for r in rows]))
    new_error = float(np.median([abs(r.new_cycles / r.measured_cycles - 1) for r in rows]))
    verdict = BOTH if abs(old_error - new_error) < 1e-12 else (OLD if old_error < new_error else NEW)
    return {
        "layers": len(rows),
        "closer_old": closer.count(OLD),
        "closer_new": closer.count(NEW),
        "same": closer.count(BOTH),
        "old_median_error_pct": round(100 * old_error, 2),
        "new_median_error_pct": round(100 * new_error, 2),
        "verdict": verdict,
    }
