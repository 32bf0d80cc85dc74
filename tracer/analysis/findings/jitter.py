"""Findings about jitter: layers that were sometimes much slower, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing import Any, Iterable

from tracer.analysis.findings.base import Finding, Severity
from tracer.analysis.findings.isr import layer_label
from tracer.analysis.jitter import (
    CONTENTION,
    MORE_WORK,
    PREEMPTION,
    UNEXPLAINED,
    WARM_UP,
    LayerJitter,
    Outlier,
)
from tracer.base.timeline import Engine, InferenceTimeline

if TYPE_CHECKING:
    from tracer.analysis.analyze import Analysis

FIX = {
    PREEMPTION: "lower the interrupt's priority below the inference's (or mask it, or hold its timer, around the "
                "invoke), or move the handler's work to a deferred task so the handler only acknowledges the interrupt",
    CONTENTION: "find the bus master active meanwhile (DMA, a camera or display controller, the CPU copying "
                "buffers) and schedule it outside inference, or give the NPU's AXI port priority (QoS); keep the "
                "tensor arena in the NPU's fast SRAM (Vela --memory-mode, linker placement)",
    "cpu-contention": "check DMA and NPU traffic during this layer, place its buffers and code in TCM, and make "
                      "sure the D-cache is enabled for its memory",
    WARM_UP: "run one warm-up inference before measuring (or leave the first ones out of the budget); if the "
             "first inference's latency matters, preload caches and allocate everything at start-up",
    MORE_WORK: "the layer's work depends on its data (the PMU counted more beats): budget for the worst case",
    UNEXPLAINED: "capture NPU PMU stall counters or DWT exception trace to see what delayed it",
}
SEVERITY = {PREEMPTION: Severity.WARNING, CONTENTION: Severity.WARNING, UNEXPLAINED: Severity.WARNING,
            WARM_UP: Severity.INFO, MORE_WORK: Severity.INFO}  # fmt: skip


def _numbers(outliers: list[Outlier], total: int) -> str:
    shown = ", ".join(str(o.inference) for o in outliers[:10])
    return shown + (f" and {total - 10} more" if total > 10 else "")


def _handlers(outliers: list[Outlier]) -> str:
    """``in each, the S32K_TIMER interrupt (exception 18) ran inside it for 23,049 cycles``."""
    by_exc: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for o in outliers:
        for isr in o.detail.get("isrs", []):
            by_exc.setdefault(isr["exception"], []).append(isr["cycles"])
            names[isr["exception"]] = isr["name"]
    parts = []
    for exc, cycles in sorted(by_exc.items(), key=lambda kv: -sum(kv[1])):
        each = "in each" if len(cycles) == len(outliers) else f"in {len(cycles)} of them"
        amount = f"{cycles[0]:,} cycles" if min(cycles) == max(cycles) else f"{min(cycles):,} to {max(cycles):,} cycles"
        parts.append(f"{each}, the {names[exc]} interrupt (exception {exc}) ran inside it for {amount}")
    return "; ".join(parts) if parts else "interrupt handlers ran inside it"


def _message(timeline: InferenceTimeline, layer: LayerJitter, cause: str, outliers: list[Outlier], count: int,
             total: int) -> str:  # fmt: skip
    label = layer_label(timeline, layer.index)
    worst = max(o.ratio for o in outliers)
    head = (f"{label} took up to {worst:.1f}x its median ({layer.p50:,} cycles) in {count} of {total} inferences "
            f"({_numbers(outliers, count)})")  # fmt: skip
    if cause == PREEMPTION:
        return f"{head}; {_handlers(outliers)}"
    if cause == WARM_UP:
        return (f"{label} took up to {worst:.1f}x its steady-state median ({layer.steady_p50:,} cycles) in the first "
                f"{count} inference(s) ({_numbers(outliers, count)}): cold caches, lazy initialisation or first-time "
                f"allocation")  # fmt: skip
    if cause == CONTENTION:
        if timeline.layer(layer.index).engine is Engine.NPU and "pmu_cycles" in outliers[0].detail:
            d = outliers[0].detail
            idle = (f", idle {d['idle_cycles']:,} NPU cycles instead of {d['idle_cycles_median']:,}"
                    if "idle_cycles" in d else "")  # fmt: skip
            return (f"{head} on the NPU with the same work (its PMU work counters within 5% of usual) but "
                    f"{d['pmu_cycles']:,} NPU cycles instead of {d['pmu_cycles_median']:,}{idle}: the NPU waited for "
                    f"memory, another bus master competed for it")  # fmt: skip
        note = outliers[0].detail.get("note", "")
        return f"{head} with no interrupt inside: {note}" if note else head
    if cause == MORE_WORK:
        return f"{head}, doing more work by its PMU counters (data-dependent)"
    return f"{head}, with no interrupt inside and no PMU evidence of contention"


def jitter_outliers(analysis: Analysis) -> Iterable[Finding]:
    """One finding per layer and cause of its outliers."""
    timeline = analysis.timeline
    threshold = analysis.jitter.threshold_pct
    for layer in analysis.jitter.layers:
        for cause, count in layer.causes.items():
            outliers = [o for o in layer.listed if o.cause == cause]
            if not outliers:
                continue
            on_cpu = timeline.layer(layer.index).engine is Engine.CPU
            fix_key = "cpu-contention" if cause == CONTENTION and on_cpu else cause
            evidence: dict[str, Any] = {
                "cause": cause, "outliers": count, "complete_runs": layer.count, "median_cycles": layer.p50,
                "steady_median_cycles": layer.steady_p50, "threshold_pct": threshold, "cv": round(layer.cv, 5),
                "own_median_cycles": layer.own_p50, "listed": [o.to_json() for o in outliers],
            }  # fmt: skip
            yield Finding(
                id=f"jitter-{cause.replace(' ', '-')}", severity=SEVERITY[cause], layer=layer.index,
                message=_message(timeline, layer, cause, outliers, count, layer.count), evidence=evidence,
                fix=FIX[fix_key], inferences=tuple(o.inference for o in outliers),
            )  # fmt: skip


RULES = (jitter_outliers,)
