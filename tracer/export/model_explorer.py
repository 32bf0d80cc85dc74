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
cycle counter, percent), with a power recording ``energy_uj`` (mean energy per execution,
microjoules) and ``energy_share`` (percent of the inference's energy). A layer matched to several budget layers at once (a TFLite Micro
``ethos-u`` operator) has no single node: when its jobs were sampled and split into operations
(docs/sampling.md), each model operator in it gets its sampled time (capture cycles) and its
ratio to Vela (in NPU cycles when the PMU counted the jobs, as the report's ``npu_operators``);
otherwise it is left out, said in :attr:`NodeData.left_out`. Energy is measured per layer, not
per model operator: the model operators of a split job get no energy.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tracer.analysis.result import Analysis

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
    sampled_cycles, sampled_ratios, split = _sampled_operators(analysis)
    keys: dict[int, str] = {}
    left_out: list[str] = []
    for index, st in sorted(analysis.layers.items()):
        info = timeline.layer(index)
        plan = plans.get(index)
        if st.cycles is None:
            continue
        if index in split:  # its model operators have nodes of their own
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
    cycles = {keys[i]: v for i, v in p50.items()}
    ratios = {
        keys[i]: round(p50[i] / plans[i].predicted_cycles, 4)  # type: ignore[operator]
        for i in keys
        if i in plans and plans[i].predicted_cycles
    }
    cycles.update(sampled_cycles)
    ratios.update(sampled_ratios)
    total = sum(cycles.values())
    metrics: dict[str, dict[str, Any]] = {
        "measured_cycles": _graph(
            "tracer: measured cycles (p50)", {k: round(v, 2) for k, v in cycles.items()}, _GRADIENT
        ),
    }
    if total:
        shares = {k: round(100 * v / total, 3) for k, v in cycles.items()}
        metrics["inference_share"] = _graph("tracer: share of the inference (%)", shares, _GRADIENT)
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
    energy = analysis.energy
    if energy is not None:
        measured = {keys[i]: energy.layers[i] for i in keys if i in energy.layers}
        if measured:
            uj = {k: round(e.energy_uj, 4) for k, e in measured.items()}
            share = {k: round(100 * e.energy_share, 3) for k, e in measured.items()}
            metrics["energy_uj"] = _graph("tracer: energy per execution (uJ)", uj, _GRADIENT)
            metrics["energy_share"] = _graph("tracer: share of the inference's energy (%)", share, _GRADIENT)
        left_out += [
            f"layer {i} {timeline.layer(i).label}: energy is measured per layer, not per model operator in it"
            for i in sorted(split)
            if i in energy.layers
        ]
    return NodeData(metrics, left_out)


def _sampled_operators(analysis: Analysis) -> tuple[dict[str, float], dict[str, float], set[int]]:
    """Per model operator inside a sampled, split NPU job: its time and its ratio to Vela; and the
    layers so split.
    """
    sampling, comparison = analysis.sampling, analysis.comparison
    cycles: dict[str, float] = {}
    ratios: dict[str, float] = {}
    split: set[int] = set()
    if sampling is None or sampling.npu is None:
        return cycles, ratios, split
    names = {b.index: b.name for b in comparison.budget.layers if b.index is not None} if comparison else {}
    for job in sampling.npu.jobs:
        groups: dict[str, list[Any]] = {}
        for op in job.operators:
            key = names.get(op.model_index, "") if op.model_index is not None else ""
            groups.setdefault(key or op.name, []).append(op)
        for key, ops in groups.items():
            cycles[key] = sum(o.cycles for o in ops)
            pmu = all(o.npu_cycles is not None and o.predicted_npu_cycles for o in ops)
            measured = sum((o.npu_cycles if pmu else o.cycles) or 0.0 for o in ops)
            predicted = sum((o.predicted_npu_cycles if pmu else o.predicted_cycles) or 0.0 for o in ops)
            if predicted > 0:
                ratios[key] = round(measured / predicted, 4)
        if groups:
            split.add(job.layer)
    return cycles, ratios, split


def _graph(name: str, values: dict[str, float], colours: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "results": {k: {"value": v} for k, v in values.items()}}
    out["gradient" if "stop" in colours[0] else "thresholds"] = [dict(c) for c in colours]
    return out
