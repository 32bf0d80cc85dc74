"""One analysis per timeline, computed once: every view (report, check, export, screen) reads it.

``analyze(timeline, facts, budget, settings)`` is the one-window case of the one analysis
(:class:`~tracer.analysis.accumulate.AnalysisAccumulator`): the budget lined up with the capture,
per-layer statistics, inference latency, jitter, interrupts, RTOS tasks, NPU PMU counters, memory,
cache coherency and what a sampler's records say (per-operator NPU time, CPU hot spots), with the
energy of a power recording held against it; then every findings rule reads those and the
findings are added. The report JSON and text (:mod:`tracer.export.report_json`), the gate's checks
(:mod:`tracer.analysis.checks`) and the live screen (on its window of the stream) are views of the
:class:`~tracer.analysis.result.Analysis`; none of them computes a statistic again.
"""

from __future__ import annotations

from tracer.analysis.accumulate import AnalysisAccumulator
from tracer.analysis.result import Analysis
from tracer.analysis.settings import AnalysisSettings
from tracer.base.facts import InputFacts
from tracer.base.timeline import InferenceTimeline
from tracer.budget.model import Budget
from tracer.elf.inlines import CodeLocator
from tracer.power.attribute import attribute_energy
from tracer.power.recording import PowerRecording


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
    accumulator = AnalysisAccumulator(settings, budget, locator)
    accumulator.add(timeline)
    energy = attribute_energy(timeline, power, meter_input) if power is not None else None
    return accumulator.finish(timeline, facts, lambda: [(timeline, facts)], energy)
