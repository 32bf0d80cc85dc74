"""The layers of an analysed capture that a calibration can learn from (:class:`LayerObservation`).

A measured layer counts when it is matched to exactly one budget layer (a TFLite Micro ``ethos-u``
operator runs several model operators at once: no type of its own), planned on the NPU, with a
non-zero estimate the capture's clock can express, and measured in at least one complete
inference. Every other layer is said, with why, so that nothing leaves the data silently.
"""

from __future__ import annotations

from tracer.analysis.analyze import Analysis
from tracer.analysis.calibration import FEATURES, LayerObservation, op_type
from tracer.base.timeline import Engine
from tracer.budget.matching import MatchKind


def observations_of(analysis: Analysis, capture: str, model: str = "") -> tuple[list[LayerObservation], list[str]]:
    """The layers of one capture to learn from, and a sentence per layer left out.

    Args:
        analysis: The capture analysed against its budget.
        capture: How to name the capture in messages.
        model: The model's name (default: the budget's model name, else ``capture``).
    """
    comparison = analysis.comparison
    if comparison is None:
        return [], [f"{capture}: no budget"]
    model = model or comparison.budget.model.name or capture
    found: list[LayerObservation] = []
    left: list[str] = []
    for match in comparison.matching.matches:
        label = f"{capture}: layer {match.measured.index} {match.measured.name or match.measured.op}"
        stats = analysis.layers.get(match.measured.index)
        why = ""
        if match.how is MatchKind.NONE:
            why = "matches no budget layer"
        elif len(match.budget) != 1:
            why = f"is {len(match.budget)} budget layers at once ({match.how.value}): no single operator type"
        elif match.budget[0].engine is not Engine.NPU:
            why = "is not planned for the NPU"
        elif not match.predicted_cycles or not match.budget_cycles:
            why = "has no estimate in the capture's clock"
        elif stats is None or stats.cycles is None or stats.cycles.p50 <= 0:
            why = "was not measured in a complete inference"
        if why:
            left.append(f"{label} {why}")
            continue
        assert stats is not None and stats.cycles is not None
        assert match.predicted_cycles is not None and match.budget_cycles is not None
        layer = match.budget[0]
        features: dict[str, float] = {}
        for part in layer.parts:
            for key in FEATURES:
                if key in part.detail:
                    features[key] = features.get(key, 0.0) + float(part.detail[key])
        found.append(
            LayerObservation(
                model=model,
                capture=capture,
                layer=layer.name or match.measured.name,
                op=op_type(layer.op or match.measured.op),
                measured_cycles=float(stats.cycles.p50),
                predicted_cycles=match.predicted_cycles,
                planner_cycles=match.budget_cycles,
                features=features,
            )
        )
    return found, left
