"""Findings about time against the budget: which layer is off its plan, by how much, and why.

* ``layer-over-budget`` (error): a layer's measured p50 is above its predicted cycles by more than
  the tolerance (the layer's own in the budget, else the budget's, else ``--tolerance``, else 10 %).
* ``layer-p99-over-budget`` (warning): p50 within budget, but the slow tail (p99) is not.
* ``latency-over-budget`` (error): the budget predicts only a whole inference and the p50 latency is
  above it by more than the tolerance.
* ``budget-layer-not-measured`` (warning; error when none matched): budget layers with a prediction
  that no measured layer is.
* ``layer-without-budget`` (info): measured layers the budget has no prediction for.
* ``budget-clock-unknown`` (error): the budget counts a known clock and the capture does not say
  its own, so no cycle can be compared (give ``--clock``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tracer.analysis.budget_view import LayerPlan
from tracer.analysis.findings.base import Finding, Severity
from tracer.analysis.findings.common import FVP_CPU_NOTE, clock_text, describe, fvp_cpu, n
from tracer.analysis.findings.loss import measured_anything
from tracer.base.timeline import Engine, InferenceTimeline

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis

KINDS = (
    "layer-over-budget",
    "layer-p99-over-budget",
    "latency-over-budget",
    "budget-layer-not-measured",
    "layer-without-budget",
    "budget-clock-unknown",
)
MAX_LISTED = 50  # inference numbers listed in evidence

NPU_FIX = (
    "An NPU layer far over Vela's estimate usually waits on memory: check where its weights and "
    "activations live (weights read from flash or DRAM over AXI1: the PMU's AXI beat counters show it), "
    "that the NPU clock, memory mode and system config match the Vela --system-config/--memory-mode the "
    "estimate was made with, and that no other bus master (DMA, display) competes during the layer."
)
CPU_FIX = (
    "A CPU layer over its estimate: check that the optimized kernels (CMSIS-NN) are linked for this "
    "operator, that the caches are on and its code and data sit in TCM or cached memory, and that no "
    "interrupt lands inside it (compare own time and ISR time per inference)."
)


def layers_over_budget(analysis: Analysis) -> Iterable[Finding]:
    """``layer-over-budget`` and ``layer-p99-over-budget`` per layer with a prediction."""
    budget = analysis.comparison
    if budget is None:
        return
    stats = analysis.layers
    timeline = analysis.timeline
    for index, plan in sorted(budget.plans.items()):
        st = stats.get(index)
        limit = plan.limit_cycles
        if st is None or st.cycles is None or limit is None or not plan.predicted_cycles:
            continue
        cycles = st.cycles
        over = list(analysis.over_limit.get(index, ()))
        evidence = _evidence(timeline, plan, cycles.p50, cycles.p99, cycles.max, cycles.count, over)
        reference = plan.reference_cycles or plan.predicted_cycles
        label = "calibrated" if plan.reference == "calibrated" else "predicted"
        if cycles.p50 > limit:
            ratio = cycles.p50 / reference
            message = (
                f"{describe(timeline, index)} takes {n(cycles.p50)} cycles at p50{clock_text(timeline, cycles.p50)} "
                f"against {n(reference)} {label}: {ratio:.2f}x, {100 * (ratio - 1):.0f}% over "
                f"(limit {n(limit)} with {plan.tolerance_pct:g}% tolerance); over the limit in {len(over)} of "
                f"{cycles.count} inferences"
            )
            yield Finding(
                "layer-over-budget",
                Severity.ERROR,
                index,
                _with_notes(timeline, message, plan),
                evidence,
                _fix(timeline, index),
                tuple(over[:MAX_LISTED]),
            )
        elif cycles.p99 > limit:
            message = (
                f"{describe(timeline, index)} is within budget at p50 ({n(cycles.p50)} cycles) but its p99 is "
                f"{n(cycles.p99)} against a limit of {n(limit)} ({n(reference)} {label} + "
                f"{plan.tolerance_pct:g}%): {len(over)} of {cycles.count} inferences ran over"
            )
            yield Finding(
                "layer-p99-over-budget",
                Severity.WARNING,
                index,
                _with_notes(timeline, message, plan),
                evidence,
                "Look at the inferences that ran over (tracer report --per-inference): an interrupt inside "
                "the layer, bus contention or cache misses on the first inference are the usual causes.",
                tuple(over[:MAX_LISTED]),
            )


def latency_over_budget(analysis: Analysis) -> Iterable[Finding]:
    """``latency-over-budget`` when the budget predicts only whole inferences."""
    budget = analysis.comparison
    # Whole inferences only: the budget itself has no layer prediction (not: none matched, or none
    # comparable, as on a simulated NPU against Vela).
    if budget is None or any(b.predicted_cycles for b in budget.budget.layers):
        return
    predicted = budget.predicted_total
    lat = analysis.latency
    if not predicted or lat is None:
        return
    model = budget.budget.model
    # `is not None`, not `or`: --tolerance 0 means 0
    tolerance = model.tolerance_pct if model.tolerance_pct is not None else analysis.settings.default_tolerance_pct
    limit = predicted * (1 + tolerance / 100)
    if lat.p50 <= limit:
        return
    ratio = lat.p50 / predicted
    timeline = analysis.timeline
    yield Finding(
        "latency-over-budget",
        Severity.ERROR,
        None,
        f"an inference takes {n(lat.p50)} cycles at p50{clock_text(timeline, lat.p50)} against {n(predicted)} "
        f"predicted: {ratio:.2f}x (limit {n(limit)} with {tolerance:g}% tolerance)",
        {
            "p50": lat.p50,
            "p99": lat.p99,
            "max": lat.max,
            "count": lat.count,
            "predicted": round(predicted, 3),
            "limit": round(limit, 3),
            "ratio": round(ratio, 4),
            "tolerance_pct": tolerance,
        },
        "Give per-layer predictions (Vela --verbose-performance writes them) to see which layer is off.",
    )


def unmatched_layers(analysis: Analysis) -> Iterable[Finding]:
    """``budget-layer-not-measured`` and ``layer-without-budget``."""
    budget = analysis.comparison
    if budget is None:
        return
    missing = [b for b in budget.matching.unmatched_budget if b.predicted_cycles]
    # Not when the input measured nothing at all: no-measurements says so once.
    if missing and measured_anything(analysis):
        names = ", ".join(b.label for b in missing[:10]) + (" ..." if len(missing) > 10 else "")
        # None matched at all: the gate compared nothing, which must not pass as "within budget".
        none = len(missing) == sum(1 for b in budget.budget.layers if b.predicted_cycles)
        yield Finding(
            "budget-layer-not-measured",
            Severity.ERROR if none else Severity.WARNING,
            None,
            (
                "no measured layer matches any layer of the budget"
                if none
                else f"{len(missing)} layer(s) of the budget have a prediction but no measured layer matches them"
            )
            + f" ({names}): they are not checked",
            {
                "layers": [
                    {"index": b.index, "name": b.name, "op": b.op, "predicted_cycles": b.predicted_cycles}
                    for b in missing
                ]
            },
            "Mark every layer in the firmware (trc_layer_begin/end or the TFLM profiler adapter) with the "
            "model's names or indices, or give the budget the same layer names.",
        )
    stats = analysis.layers
    bare = [i for i, p in sorted(budget.plans.items()) if p.predicted_cycles is None and i in stats]
    if bare and budget.budget.layers and budget.matching.scale is not None:
        timeline = analysis.timeline
        yield Finding(
            "layer-without-budget",
            Severity.INFO,
            None,
            f"{len(bare)} measured layer(s) have no prediction in the budget: "
            + ", ".join(f"{timeline.layer(i).label} ({budget.plans[i].note or 'no match'})" for i in bare[:10]),
            {"layers": bare, "notes": {str(i): budget.plans[i].note for i in bare}},
        )


def clock_unknown(analysis: Analysis) -> Iterable[Finding]:
    """``budget-clock-unknown``."""
    budget = analysis.comparison
    if budget is None or budget.matching.scale is not None:
        return
    yield Finding(
        "budget-clock-unknown",
        Severity.ERROR,
        None,
        f"the budget counts cycles at {n(budget.budget.model.clock_hz)} Hz but the capture does not say its "
        "own clock: no layer could be compared with its prediction",
        {"budget_clock_hz": budget.budget.model.clock_hz, "capture_clock_hz": None},
        "Give the clock the capture's cycles count: --clock 400M (or have the firmware report it).",
    )


def _evidence(
    timeline: InferenceTimeline, plan: LayerPlan, p50: int, p99: int, maximum: int, count: int, over: list[int]
) -> dict[str, object]:
    predicted = plan.predicted_cycles or 0.0
    limit = plan.limit_cycles or 0.0
    return {
        "p50": p50,
        "p99": p99,
        "max": maximum,
        "count": count,
        "predicted": round(predicted, 3),
        "limit": round(limit, 3),
        "ratio": round(p50 / predicted, 4) if predicted else None,
        "over_by_cycles": round(p50 - predicted, 3),
        "tolerance_pct": plan.tolerance_pct,
        "tolerance_from": plan.tolerance_from,
        **({"against": plan.reference, "calibrated": plan.calibrated.to_json()} if plan.calibrated else {}),
        "matched_by": plan.matched_by,
        "budget_layers": list(plan.budget_layers),
        "clock_hz": timeline.clock_hz,
        "inferences_over": over[:MAX_LISTED],
        "inferences_over_count": len(over),
    }


def _with_notes(timeline: InferenceTimeline, message: str, plan: LayerPlan) -> str:
    notes = [plan.note] if plan.note else []
    if fvp_cpu(timeline):
        notes.append(FVP_CPU_NOTE)
    if "cycles" in timeline.labels:
        notes.append(timeline.labels["cycles"])
    return message + "".join(f" [{note}]" for note in notes)


def _fix(timeline: InferenceTimeline, index: int) -> str:
    return NPU_FIX if timeline.layer(index).engine is Engine.NPU else CPU_FIX


RULES = (layers_over_budget, latency_over_budget, unmatched_layers, clock_unknown)
