"""One analysis per timeline, computed once: every view (report, check, export, screen) reads it.

``analyze(timeline, facts, budget, settings)`` computes, in this order and once each: the budget
lined up with the capture, per-layer statistics, inference latency, jitter, interrupts, RTOS
tasks, NPU PMU counters, memory, cache coherency and what a sampler's records say (per-operator NPU time, CPU hot
spots); then every findings rule reads those and the findings are
added. The report JSON and text (:mod:`tracer.export.report_json`), the gate's checks
(:mod:`tracer.analysis.checks`) and the live screen (on its window of the stream) are views of the
:class:`Analysis`; none of them computes a statistic again.
"""

from __future__ import annotations

import dataclasses

from tracer.analysis.budget_view import compare_budget, inferences_over
from tracer.analysis.coherency import analyse_coherency
from tracer.analysis.findings.rules import find_all
from tracer.analysis.isr import analyse_isrs
from tracer.analysis.jitter import analyse_jitter
from tracer.analysis.layer_stats import latency, layer_stats
from tracer.analysis.memory import MemorySummary, summarize_memory
from tracer.analysis.pmu import summarize_pmu
from tracer.analysis.result import Analysis
from tracer.analysis.samples import excluded_spans, layer_samples
from tracer.analysis.sampling import sampling_analysis
from tracer.analysis.settings import AnalysisSettings
from tracer.analysis.tasks import analyse_tasks
from tracer.base.beside import Beside, usable_cores
from tracer.base.facts import InputFacts
from tracer.base.timeline import InferenceTimeline
from tracer.budget.model import Budget
from tracer.elf.inlines import CodeLocator
from tracer.power.attribute import attribute_energy
from tracer.power.recording import PowerRecording

BESIDE_SPANS = 50_000  # layer executions from which the jitter is analysed on a thread of its own


def analyze(
    timeline: InferenceTimeline,
    facts: InputFacts,
    budget: Budget | None = None,
    settings: AnalysisSettings | None = None,
    locator: CodeLocator | None = None,
    power: PowerRecording | None = None,
    meter_input: int | None = None,
) -> Analysis:
    """Analyse a timeline against its budget and run every findings rule.

    Args:
        timeline: The capture, log or window.
        facts: Facts about the input.
        budget: The normalized budget, or None.
        settings: Thresholds (defaults: :class:`AnalysisSettings`; the jitter thresholds the
            command line leaves unset come from the budget's model, else the defaults).
        locator: The firmware ELF's symbols and inlined code (``--elf``), for CPU hot spots.
        power: A power recording (``--power``): energy per layer (:mod:`tracer.power`).
        meter_input: The meter's digital input the sync pin is on (default: what the firmware says).
    """
    settings = settings or AnalysisSettings()
    comparison = (
        compare_budget(timeline, budget, settings.tolerance_pct, settings.calibration, settings.against)
        if budget is not None
        else None
    )
    model = budget.model if budget is not None else None
    has_jobs = len(timeline.npu_jobs) > 0 or len(timeline.inferences) > 0
    jitter_settings = settings.jitter(model)
    data_dependent = comparison.data_dependent if comparison is not None else frozenset()
    energy = attribute_energy(timeline, power, meter_input) if power is not None else None
    # The jitter (about half of the analysis of a long capture) runs beside the rest on two cores.
    threaded = len(timeline.spans) >= BESIDE_SPANS and usable_cores() > 1
    with Beside(lambda: analyse_jitter(timeline, jitter_settings, data_dependent), threaded, "tracer-jitter") as jitter:
        executions = layer_samples(timeline.spans)
        layers = layer_stats(executions, excluded_spans(timeline.spans))
        inference_latency = latency(timeline.inferences)
        interrupts = analyse_isrs(timeline)
        tasks = analyse_tasks(timeline)
        pmu = summarize_pmu(timeline)
        memory = memory_of(timeline, budget)
        coherency = analyse_coherency(timeline, settings.cache_line_bytes) if has_jobs else None
        sampling = sampling_analysis(timeline, budget, locator)
        over_limit = inferences_over(timeline.spans, comparison) if comparison is not None else {}
        analysis = Analysis(
            timeline=timeline,
            facts=facts,
            settings=settings,
            comparison=comparison,
            layers=layers,
            latency=inference_latency,
            jitter=jitter.result(),
            interrupts=interrupts,
            tasks=tasks,
            pmu=pmu,
            memory=memory,
            coherency=coherency,
            sampling=sampling,
            time_span=time_span(timeline),
            over_limit=over_limit,
            energy=energy,
            complete_executions=executions,
        )
    return dataclasses.replace(analysis, findings=tuple(find_all(analysis)))


def time_span(timeline: InferenceTimeline) -> tuple[int | None, int | None]:
    """The first and last cycle of any layer execution or inference of ``timeline`` (None: none)."""
    starts = [timeline.spans.start, timeline.inferences.start]
    ends = [timeline.spans.end, timeline.inferences.end]
    lo = [int(a[a >= 0].min()) for a in starts if (a >= 0).any()]
    hi = [int(a[a >= 0].max()) for a in ends if (a >= 0).any()]
    return (min(lo) if lo else None), (max(hi) if hi else None)


def memory_of(timeline: InferenceTimeline, budget: Budget | None) -> MemorySummary:
    """The memory section of ``timeline``, with the budget's plan."""
    model = budget.model if budget is not None else None
    return summarize_memory(
        timeline,
        model.arena_bytes if model is not None else None,
        (model.sram_bytes, model.sram_available_bytes) if model is not None else None,
    )
