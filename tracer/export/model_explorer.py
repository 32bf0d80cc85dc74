"""Per-node data for Google's Model Explorer (``tracer export --format model-explorer``).

Model Explorer overlays "node data" on a model's graph: a JSON object per metric, ``{"name": ...,
"results": {KEY: {"value": NUMBER}}, "thresholds" or "gradient": [...]}`` (its
``GraphNodeData``). A key is a node id or one of the node's output tensor names; tracer keys each
measured layer by the output tensor name of its model operator, which is Vela's layer name (the
output tensor of the operator's last operation; the debug database maps it to the operator), else
the layer's own name as the firmware reports it.

Metrics (one file each): ``measured_cycles`` (p50 over complete inferences), ``inference_share``
(percent of the layers' summed p50), with a budget ``planner_ratio`` (measured / predicted), with
a calibration ``calibrated_ratio``, with NPU PMU counters ``npu_active`` (NPU_ACTIVE over the PMU
cycle counter, percent). A layer matched to several budget layers at once (a TFLite Micro
``ethos-u`` operator) has no single node and is left out, said in :attr:`NodeData.left_out`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tracer.analysis.analyze import Analysis

# Ratio colours: faster than planned, about right, slower, much slower (Model Explorer thresholds:
# a value at or below a threshold's value takes its colour).
_RATIO_THRESHOLDS = [
    {"value": 0.9, "bgColor": "#9ecae1"},
    {"value": 1.1, "bgColor": "#a1d99b"},
    {"value": 1.5, "bgColor": "#fdae6b"},
    {"value": 1e12, "bgColor": "#fb6a4a"},
]
_GRADIENT = [{"stop": 0, "bgColor": "#f7fbff"}, {"stop": 1, "bgColor": "#cb181d"}]


@dataclasses.dataclass(frozen=True)
class NodeData:
    """The node data of one capture.

    Attributes:
        metrics: File stem -> the GraphNodeData JSON object.
        left_out: Layers with no node of their own, with why.
    """

    metrics: dict[str, dict[str, Any]]
    left_out: list[str]


def node_data(analysis: Analysis) -> NodeData:
    """Every metric the analysis has, keyed to the model's operators."""
    timeline = analysis.timeline
    plans = analysis.comparison.plans if analysis.comparison is not None else {}
    keys: dict[int, str] = {}
    left_out: list[str] = []
    for index, st in sorted(analysis.layers.items()):
        info = timeline.layer(index)
        plan = plans.get(index)
        if st.cycles is None:
            continue
        if plan is not None and len(plan.budget_layers) > 1:
            left_out.append(f"layer {index} {info.label}: runs {len(plan.budget_layers)} model operators at once")
            continue
        key = plan.budget_layers[0] if plan is not None and plan.budget_layers else info.name
        if not key:
            left_out.append(f"layer {index} ({info.op}): no name to key it by")
            continue
        keys[index] = key
    p50 = {i: float(analysis.layers[i].cycles.p50) for i in keys}  # type: ignore[union-attr]
    total = sum(p50.values())
    metrics: dict[str, dict[str, Any]] = {
        "measured_cycles": _graph("tracer: measured cycles (p50)", {keys[i]: v for i, v in p50.items()}, _GRADIENT),
    }
    if total:
        shares = {keys[i]: round(100 * v / total, 3) for i, v in p50.items()}
        metrics["inference_share"] = _graph("tracer: share of the inference (%)", shares, _GRADIENT)
    ratios = {
        keys[i]: round(p50[i] / plans[i].predicted_cycles, 4)  # type: ignore[operator]
        for i in keys
        if i in plans and plans[i].predicted_cycles
    }
    if ratios:
        metrics["planner_ratio"] = _graph("tracer: measured / planner", ratios, _RATIO_THRESHOLDS)
    calibrated = {}
    for i in keys:
        c = plans[i].calibrated if i in plans else None
        if c is not None and c.usable and c.cycles:
            calibrated[keys[i]] = round(p50[i] / c.cycles, 4)
    if calibrated:
        metrics["calibrated_ratio"] = _graph("tracer: measured / calibrated", calibrated, _RATIO_THRESHOLDS)
    active = {}
    for i in keys:
        pmu = analysis.layers[i].pmu_mean
        if pmu.get("PMU_CYCLES") and "NPU_ACTIVE" in pmu:
            active[keys[i]] = round(100 * pmu["NPU_ACTIVE"] / pmu["PMU_CYCLES"], 2)
    if active:
        metrics["npu_active"] = _graph("tracer: NPU active (% of the layer's NPU cycles)", active, _GRADIENT)
    return NodeData(metrics, left_out)


def _graph(name: str, values: dict[str, float], colours: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "results": {k: {"value": v} for k, v in values.items()}}
    out["gradient" if "stop" in colours[0] else "thresholds"] = [dict(c) for c in colours]
    return out
