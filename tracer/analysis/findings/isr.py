"""Findings about interrupts: which handlers land in which layers, and exits the trace lost."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from tracer.analysis.findings.base import AnalysisContext, Finding, Severity
from tracer.analysis.isr import analyse_isrs
from tracer.analysis.layer_stats import nearest_rank
from tracer.telemetry.model import InferenceTimeline


def layer_label(timeline: InferenceTimeline, index: int) -> str:
    """``layer 4 (pw4)``, or ``layer 4`` when it has no name."""
    name = timeline.layer(index).name
    return f"layer {index} ({name})" if name else f"layer {index}"


def own_median(timeline: InferenceTimeline, index: int) -> int | None:
    """Median own time (handler time taken out) of a layer over complete inferences."""
    spans = timeline.spans
    mine = spans.complete & (spans.layer == index)
    if not mine.any():
        return None
    return nearest_rank(np.sort((spans.cycles - spans.isr_cycles)[mine]), 0.5)


def isrs_in_layers(context: AnalysisContext) -> Iterable[Finding]:
    """Each interrupt that ran inside a layer: how often and at what cost (info)."""
    timeline = context.timeline
    if not len(timeline.isrs) or not len(timeline.spans):
        return
    for hit in analyse_isrs(timeline).by_layer:
        own = own_median(timeline, hit.layer)
        share = f", {hit.cycles_per_hit / own:.0%} of the layer's own time" if own else ""
        inferences = sorted(set(hit.inferences))
        evidence: dict[str, Any] = {**hit.to_json(), "layer_own_cycles_p50": own}
        yield Finding(
            id="isr-in-layer", severity=Severity.INFO, layer=hit.layer,
            message=(f"{hit.name} (exception {hit.exception}) ran inside {layer_label(timeline, hit.layer)} "
                     f"{hit.hits} time(s), in {len(inferences)} of its {hit.spans} runs, {hit.cycles_per_hit:,.0f} "
                     f"cycles each (max {hit.cycles_max:,}){share}"),
            evidence=evidence,
            fix="keep the handler short: acknowledge the interrupt and defer the work to a task; if the layer's "
                "latency matters more, lower the interrupt's priority or mask it during inference",
            inferences=tuple(inferences),
        )  # fmt: skip


def repaired_exits(context: AnalysisContext) -> Iterable[Finding]:
    """Exception exits the trace lost (ITM overflow) and that were inferred (warning)."""
    facts = (context.timeline.extra.get("isr") or {}).get("exception_trace") or {}
    repaired = int(facts.get("repaired", 0))
    if not repaired:
        return
    after_overflow = int(facts.get("repaired_after_overflow", 0))
    cause = (f"{after_overflow} of them right after an ITM overflow" if after_overflow
             else "their exit packets are missing")  # fmt: skip
    yield Finding(
        id="isr-exit-repaired", severity=Severity.WARNING, layer=None,
        message=(f"{repaired} interrupt exit(s) were lost from the exception trace ({cause}); each handler was "
                 f"closed at the next \"returned to\" packet, so its duration is an upper bound"),
        evidence=dict(facts),
        fix="lower the trace load (fewer stimulus ports, no PC sampling, a larger DWT sampling interval), raise "
            "the SWO clock, or on Armv8-M let the ITM stall the core instead of dropping (ITM_TCR.STALLENA)",
    )  # fmt: skip


def unpaired(context: AnalysisContext) -> Iterable[Finding]:
    """Exits without entries and entries without ends, from either source (info)."""
    isr = context.timeline.extra.get("isr") or {}
    for source, label in (("exception_trace", "exception trace"), ("marks", "ISR marks")):
        facts = isr.get(source) or {}
        unmatched, dropped = int(facts.get("unmatched_exits", 0)), int(facts.get("dropped_open", 0))
        if unmatched or dropped:
            yield Finding(
                id="isr-unpaired", severity=Severity.INFO, layer=None,
                message=(f"{label}: {unmatched} exit(s) without an entry and {dropped} entr(y/ies) without a known "
                         "end (lost packets or records, a capture gap, or the capture's end); they are not counted "
                         "as handler time"),
                evidence={"source": source, "unmatched_exits": unmatched, "dropped_open": dropped},
            )  # fmt: skip


RULES = (isrs_in_layers, repaired_exits, unpaired)
