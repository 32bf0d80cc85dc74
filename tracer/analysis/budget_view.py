"""A budget lined up with a capture: per measured layer, its prediction in capture cycles and limit.

``compare_budget(timeline, budget, tolerance_pct)`` matches the capture's layers to the budget
(:func:`tracer.budget.matching.match_layers`: by name, NPU subgraph, index, then operator order,
with Vela's cycles converted to the capture's clock) and decides each layer's tolerance:

1. ``--tolerance`` when given (for every layer: the command line is the CI job's own statement;
   the CLI says which budget tolerances it replaced), else
2. the layer's own ``tolerance_pct`` in the budget file, else
3. the budget's model-level ``tolerance_pct``, else
4. 10 %.

A layer is within budget while its measured p50 is at most ``reference * (1 + tolerance/100)``,
the reference being the planner's prediction, or with a calibration file and ``against =
"calibrated"`` the calibrated one (docs/calibrate.md; the planner's where a layer's operator type
is not calibrated).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from tracer.analysis.calibration_file import CalibratedPrediction, Calibration, calibrated_prediction
from tracer.analysis.samples import layer_rows
from tracer.analysis.settings import DEFAULT_TOLERANCE_PCT
from tracer.base.timeline import Engine, InferenceTimeline, LayerInfo, LayerSpans, simulated_npu
from tracer.budget.matching import LayerMatch, Matching, match_layers
from tracer.budget.model import Budget, json_number

PLANNER, CALIBRATED = "planner", "calibrated"  # what a layer's limit is made from


@dataclasses.dataclass(frozen=True)
class LayerPlan:
    """What the budget says about one measured layer.

    Attributes:
        index: The measured layer.
        predicted_cycles: Predicted cycles in the capture's clock (None: no estimate or no conversion).
        tolerance_pct: The tolerance that applies (see the module docstring).
        tolerance_from: ``layer``/``model`` (the budget file), ``option`` (``--tolerance``) or ``default``.
        planned_engine: ``npu``/``cpu`` when the budget says (NPU if any of its budget layers is).
        matched_by: How it was matched (``name``, ``npu-subgraph``, ``index``, ``op-sequence``, ``unmatched``).
        budget_layers: The labels of the budget layers it is.
        budget_cycles: Their cycles in the budget's own clock.
        note: What a reader should know (engine differs, clock unknown ...).
        data_dependent: The budget marks it (or one of its budget layers) data-dependent.
        calibrated: The calibrated prediction, with a calibration file (None: none given).
        against: What the limit is made from: ``planner`` or ``calibrated``.
        energy_uj: Its energy budget per execution, microjoules (the sum of its budget layers'),
            or None when none of them gives one.
    """

    index: int
    predicted_cycles: float | None
    tolerance_pct: float
    tolerance_from: str
    planned_engine: str | None
    matched_by: str
    budget_layers: tuple[str, ...]
    budget_cycles: float | None
    note: str
    data_dependent: bool = False
    calibrated: CalibratedPrediction | None = None
    against: str = PLANNER
    energy_uj: float | None = None

    @property
    def reference(self) -> str:
        """``calibrated`` when the limit is made from the calibrated prediction, else ``planner``."""
        if self.against == CALIBRATED and self.calibrated is not None and self.calibrated.usable:
            return CALIBRATED
        return PLANNER

    @property
    def reference_cycles(self) -> float | None:
        """The prediction the limit is made from (capture clock)."""
        if self.reference == CALIBRATED:
            assert self.calibrated is not None
            return self.calibrated.cycles
        return self.predicted_cycles

    @property
    def limit_cycles(self) -> float | None:
        """The most cycles still within budget."""
        reference = self.reference_cycles
        if reference is None or self.predicted_cycles is None:
            return None
        return reference * (1 + self.tolerance_pct / 100)

    def to_json(self) -> dict[str, Any]:
        """The per-layer ``budget`` object of the report."""
        out: dict[str, Any] = {
            "matched_by": self.matched_by,
            "budget_layers": list(self.budget_layers),
            "budget_cycles": json_number(_round(self.budget_cycles)),
            "planned_engine": self.planned_engine,
            "tolerance_pct": json_number(self.tolerance_pct),
            "tolerance_from": self.tolerance_from,
            "limit_cycles": json_number(_round(self.limit_cycles)),
            "note": self.note or None,
        }
        if self.data_dependent:
            out["data_dependent"] = True
        if self.calibrated is not None:
            out["calibrated"] = self.calibrated.to_json()
            out["against"] = self.reference
        if self.energy_uj is not None:
            out["energy_uj"] = json_number(self.energy_uj)
        return out


@dataclasses.dataclass
class BudgetComparison:
    """A budget matched to one capture.

    Attributes:
        budget: The normalized budget.
        matching: The raw matching (every measured layer, unmatched budget layers, clock scale).
        plans: Per measured layer index.
        tolerance_pct: The ``--tolerance`` given (None: not given).
        calibration: The calibration file applied (None: none).
        against: ``planner`` or ``calibrated``: what the limits are made from.
    """

    budget: Budget
    matching: Matching
    plans: dict[int, LayerPlan]
    tolerance_pct: float | None = None
    calibration: Calibration | None = None
    against: str = PLANNER

    @property
    def data_dependent(self) -> frozenset[int]:
        """The measured layers the budget marks data-dependent."""
        return frozenset(i for i, p in self.plans.items() if p.data_dependent)

    @property
    def predicted_cycles(self) -> dict[int, float]:
        """Predicted cycles per measured layer index, in the capture's clock (layers with a prediction)."""
        return {i: p.predicted_cycles for i, p in self.plans.items() if p.predicted_cycles is not None}

    @property
    def predicted_total(self) -> float | None:
        """Predicted cycles of one inference in the capture's clock (the model total, else the layers' sum)."""
        total = self.budget.model.cycles_total
        if total is None:
            total = self.budget.layer_cycles_total
        if total is None or self.matching.scale is None:
            return None
        return total * self.matching.scale

    def to_json(self) -> dict[str, Any]:
        """The report's ``budget`` section."""
        model = self.budget.model
        return {
            "name": model.name,
            "sources": list(self.budget.sources),
            "compiler": model.compiler.to_json() if model.compiler else None,
            "clock_hz": model.clock_hz,
            "scale": self.matching.scale,
            "units": self.matching.note,
            "cycles_total": json_number(model.cycles_total),
            "predicted_cycles_per_inference": json_number(_round(self.predicted_total)),
            "tolerance_pct": json_number(self.tolerance_pct),
            "unmatched_budget_layers": [
                {"index": b.index, "name": b.name, "op": b.op, "predicted_cycles": json_number(b.predicted_cycles)}
                for b in self.matching.unmatched_budget
            ],
            "notes": list(self.budget.notes),
            **({"calibration": self.calibration_json()} if self.calibration is not None else {}),
        }

    def calibration_json(self) -> dict[str, Any]:
        """The report's ``budget.calibration``: which file, against what, how well it fits this budget."""
        assert self.calibration is not None
        c = self.calibration
        model = self.budget.model
        planner = model.compiler.to_json() if model.compiler else {}
        statuses: dict[str, int] = {}
        for plan in self.plans.values():
            if plan.calibrated is not None:
                statuses[plan.calibrated.status] = statuses.get(plan.calibrated.status, 0) + 1
        return {
            "source": c.source,
            "against": self.against,
            "level": c.level,
            "operators": list(c.operators),
            "models": len(c.models),
            "planner_difference": c.planner_difference(planner),
            "layers_by_status": statuses,
        }


def compare_budget(
    timeline: InferenceTimeline,
    budget: Budget,
    tolerance_pct: float | None = None,
    calibration: Calibration | None = None,
    against: str = PLANNER,
) -> BudgetComparison:
    """Match ``budget`` to the timeline's layers and settle each layer's tolerance; with a
    ``calibration``, each layer's calibrated prediction too (``against``: which one the limit uses).
    """
    simulated = simulated_npu(timeline.labels)
    return compare_budget_layers(
        timeline.layers.values(), timeline.clock_hz, budget, tolerance_pct, calibration, against, simulated
    )


def compare_budget_layers(
    layers: Iterable[LayerInfo],
    clock_hz: int | None,
    budget: Budget,
    tolerance_pct: float | None = None,
    calibration: Calibration | None = None,
    against: str = PLANNER,
    simulated_npu: bool = False,
) -> BudgetComparison:
    """:func:`compare_budget` of a model given as its layers and clock (``tracer compare``: a
    digest's layers); ``simulated_npu``: the capture's NPU PMU is simulated (the QEMU demo).
    """
    matching = match_layers(layers, budget, clock_hz)
    plans = {}
    for m in matching.matches:
        plan = _plan(_comparable(m, budget, simulated_npu), budget, tolerance_pct)
        if calibration is not None:
            calibrated = calibrated_prediction(calibration, m.budget, matching.scale)
            plan = dataclasses.replace(plan, calibrated=calibrated, against=against)
        plans[m.measured.index] = plan
    return BudgetComparison(budget, matching, plans, tolerance_pct, calibration, against)


def _comparable(match: LayerMatch, budget: Budget, simulated_npu: bool) -> LayerMatch:
    """``match`` without its prediction when the two cannot be compared: a layer on a simulated NPU
    (the QEMU demo: the CPU emulates the NPU's work) against Vela's estimate of a real Ethos-U. Its
    time says how long the emulation took; the NPU operations table compares the simulated PMU
    cycles with Vela's instead.
    """
    compiler = budget.model.compiler
    vela = compiler is not None and compiler.name == "vela"
    if not (simulated_npu and vela and match.measured.engine is Engine.NPU and match.predicted_cycles is not None):
        return match
    return dataclasses.replace(match, predicted_cycles=None, note=SIMULATED_NPU_NOTE)


SIMULATED_NPU_NOTE = (
    "simulated NPU: its time is the emulator's, not comparable with Vela's estimate (the NPU "
    "operations table compares the simulated PMU cycles)"
)


def _plan(match: LayerMatch, budget: Budget, option: float | None) -> LayerPlan:
    own = [b.tolerance_pct for b in match.budget if b.tolerance_pct is not None]
    if option is not None:
        tolerance, source = option, "option"
    elif own:
        tolerance, source = min(own), "layer"
    elif budget.model.tolerance_pct is not None:
        tolerance, source = budget.model.tolerance_pct, "model"
    else:
        tolerance, source = DEFAULT_TOLERANCE_PCT, "default"
    energies = [b.energy_uj for b in match.budget if b.energy_uj is not None]
    energy_uj = float(sum(energies)) if energies else None
    engines = {b.engine for b in match.budget if b.engine is not None}
    planned = None if not engines else (Engine.NPU.value if Engine.NPU in engines else Engine.CPU.value)
    return LayerPlan(
        index=match.measured.index,
        predicted_cycles=match.predicted_cycles,
        tolerance_pct=float(tolerance),
        tolerance_from=source,
        planned_engine=planned,
        matched_by=match.how.value,
        budget_layers=tuple(b.label for b in match.budget),
        budget_cycles=match.budget_cycles,
        note=match.note,
        data_dependent=any(b.data_dependent for b in match.budget),
        energy_uj=energy_uj,
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def inferences_over(spans: LayerSpans, comparison: BudgetComparison) -> dict[int, tuple[int, ...]]:
    """Per layer with a limit, the inferences (in order) in which a complete execution of it ran
    over the limit (layers that never did are left out).
    """
    out: dict[int, tuple[int, ...]] = {}
    if not len(spans):
        return out
    cycles = spans.cycles
    by_layer = dict(layer_rows(spans.layer))  # one pass over the spans, not one per layer
    for index, plan in sorted(comparison.plans.items()):
        limit = plan.limit_cycles
        rows = by_layer.get(index)
        if limit is None or not plan.reference_cycles or rows is None:
            continue
        over = rows[spans.complete[rows] & (cycles[rows] > limit)]
        if len(over):
            out[index] = tuple(sorted(set(spans.inference[over].tolist())))
    return out
