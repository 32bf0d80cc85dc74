"""Findings about interrupts: which handlers land in which layers, and exits the trace lost."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tracer.analysis.findings.base import Finding, Severity
from tracer.base.timeline import InferenceTimeline

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis


def layer_label(timeline: InferenceTimeline, index: int) -> str:
    """``layer 4 (pw4)``, or ``layer 4`` when it has no name."""
    name = timeline.layer(index).name
    return f"layer {index} ({name})" if name else f"layer {index}"


def isrs_in_layers(analysis: Analysis) -> Iterable[Finding]:
    """Each interrupt that ran inside a layer: how often and at what cost (info)."""
    timeline = analysis.timeline
    if not analysis.interrupts.slices or not analysis.executions:
        return
    for hit in analysis.interrupts.by_layer:
        jitter = analysis.jitter.layer(hit.layer)
        own = jitter.own_p50 if jitter is not None else None
        share = f", {hit.cycles_per_hit / own:.0%} of the layer's own time" if own else ""
        inferences = sorted(set(hit.inferences))
        evidence: dict[str, Any] = {**hit.to_json(), "layer_own_cycles_p50": own}
        yield Finding(
            id="isr-in-layer",
            severity=Severity.INFO,
            layer=hit.layer,
            message=(
                f"{hit.name} (exception {hit.exception}) ran inside {layer_label(timeline, hit.layer)} "
                f"{hit.hits} time(s), in {len(inferences)} of its {hit.spans} runs, {hit.cycles_per_hit:,.0f} "
                f"cycles each (max {hit.cycles_max:,}){share}"
            ),
            evidence=evidence,
            fix="keep the handler short: acknowledge the interrupt and defer the work to a task; if the layer's "
            "latency matters more, lower the interrupt's priority or mask it during inference",
            inferences=tuple(inferences),
        )


def repaired_exits(analysis: Analysis) -> Iterable[Finding]:
    """Exception exits the trace lost (ITM overflow) and that were inferred (warning)."""
    trace = analysis.timeline.isr_sources.exception_trace
    repaired = trace.counters.repaired if trace is not None else 0
    if trace is None or not repaired:
        return
    after_overflow = trace.counters.repaired_after_overflow
    cause = (
        f"{after_overflow} of them right after an ITM overflow" if after_overflow else "their exit packets are missing"
    )
    yield Finding(
        id="isr-exit-repaired",
        severity=Severity.WARNING,
        layer=None,
        message=(
            f"{repaired} interrupt exit(s) were lost from the exception trace ({cause}); each handler was "
            f'closed at the next "returned to" packet, so its duration is an upper bound'
        ),
        evidence=trace.to_json(),
        fix="lower the trace load (fewer stimulus ports, no PC sampling, a larger DWT sampling interval), raise "
        "the SWO clock, or on Armv8-M let the ITM stall the core instead of dropping (ITM_TCR.STALLENA)",
    )


def unpaired(analysis: Analysis) -> Iterable[Finding]:
    """Exits without entries and entries without ends, from either source (info)."""
    sources = analysis.timeline.isr_sources
    trace, marks = sources.exception_trace, sources.marks
    for source, label, counters in (
        ("exception_trace", "exception trace", trace.counters if trace else None),
        ("marks", "ISR marks", marks.counters if marks else None),
    ):
        if counters is None:
            continue
        unmatched, dropped = counters.unmatched_exits, counters.dropped_open
        if unmatched or dropped:
            yield Finding(
                id="isr-unpaired",
                severity=Severity.INFO,
                layer=None,
                message=(
                    f"{label}: {unmatched} exit(s) without an entry and {dropped} entr(y/ies) without a known "
                    "end (lost packets or records, a capture gap, or the capture's end); they are not counted "
                    "as handler time"
                ),
                evidence={"source": source, "unmatched_exits": unmatched, "dropped_open": dropped},
            )


RULES = (isrs_in_layers, repaired_exits, unpaired)
