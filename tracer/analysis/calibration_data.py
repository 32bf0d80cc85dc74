"""The layers of an analysed capture that a calibration can learn from (:class:`LayerObservation`).

A measured layer counts when it is matched to exactly one budget layer, planned on the NPU, with a
non-zero estimate the capture's clock can express, and measured in at least one complete
inference. A TFLite Micro ``ethos-u`` operator runs several model operators at once; when its jobs
were sampled (QREAD, docs/sampling.md) and split into operations, each model operator's operations
count instead: their sampled time against Vela's estimate of them, in NPU cycles when the PMU
counted the jobs (as the report's ``npu_operators`` ratio), else in capture cycles. Every other
layer is said, with why, so that nothing leaves the data silently.
"""

from __future__ import annotations

from typing import Any

from tracer.analysis.calibration import FEATURES, LayerObservation, op_type
from tracer.analysis.result import Analysis
from tracer.base.timeline import Engine
from tracer.budget.matching import MatchKind
from tracer.budget.model import BudgetLayer


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
    sampled = _sampled(analysis, capture, model)
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
        if match.measured.index in sampled:
            found += sampled[match.measured.index]
            continue
        if why:
            left.append(f"{label} {why}")
            continue
        assert stats is not None and stats.cycles is not None
        assert match.predicted_cycles is not None and match.budget_cycles is not None
        layer = match.budget[0]
        features = _features(layer)
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
                index=match.measured.index,
            )
        )
    return found, left


def _sampled(analysis: Analysis, capture: str, model: str) -> dict[int, list[LayerObservation]]:
    """Per sampled NPU layer split into operations, one observation per model operator in it."""
    sampling = analysis.sampling
    comparison = analysis.comparison
    if sampling is None or sampling.npu is None or comparison is None:
        return {}
    by_index = {b.index: b for b in comparison.budget.layers if b.index is not None}
    out: dict[int, list[LayerObservation]] = {}
    for job in sampling.npu.jobs:
        groups: dict[int, list[Any]] = {}
        for op in job.operators:
            if op.model_index is not None and op.model_index in by_index:
                groups.setdefault(op.model_index, []).append(op)
        found = []
        for index, ops in sorted(groups.items()):
            pmu = all(o.npu_cycles is not None and o.predicted_npu_cycles for o in ops)
            measured = sum((o.npu_cycles if pmu else o.cycles) or 0.0 for o in ops)
            predicted = sum((o.predicted_npu_cycles if pmu else o.predicted_cycles) or 0.0 for o in ops)
            planner = sum(o.predicted_npu_cycles or 0.0 for o in ops)
            if measured <= 0 or predicted <= 0 or planner <= 0:
                continue
            layer = by_index[index]
            found.append(
                LayerObservation(
                    model=model,
                    capture=capture,
                    layer=layer.name,
                    op=op_type(layer.op),
                    measured_cycles=measured,
                    predicted_cycles=predicted,
                    planner_cycles=planner,
                    features=_features(layer),
                    index=job.layer,
                )
            )
        if found:
            out[job.layer] = found
    return out


def _features(layer: BudgetLayer) -> dict[str, float]:
    features: dict[str, float] = {}
    for part in layer.parts:
        for key in FEATURES:
            if key in part.detail:
                features[key] = features.get(key, 0.0) + float(part.detail[key])
    return features
