"""The one analysis: each section an accumulator that takes windows of a capture in order and
finishes into its part of the :class:`~tracer.analysis.result.Analysis`.

A window is an :class:`~tracer.base.timeline.InferenceTimeline` of consecutive inferences. An input
read whole is one window (:func:`tracer.analysis.analyze.analyze`); a large capture is read as
many, in bounded memory (:func:`tracer.pipeline.windows.read_windows`), each with what it needs of
the windows before it carried in (:mod:`tracer.pipeline.window_carry`). Either way the same
:class:`AnalysisAccumulator` makes the analysis, in two passes over the windows.

The first pass (:meth:`AnalysisAccumulator.add`) keeps, compact, what each section needs of every
window:

- per-layer statistics: each layer's complete executions in compact columns
  (:mod:`tracer.analysis.samples`), pooled, then :func:`~tracer.analysis.layer_stats.layer_stats`
  (exact nearest-rank percentiles, exact means); latency: every complete inference's latency;
- memory: :func:`~tracer.analysis.memory.merge_memory` (maxima, last sizes, first broken canary);
- interrupts: :class:`~tracer.analysis.isr.IsrAccumulator` (every slice in exactly one window);
- coherency: :class:`~tracer.analysis.coherency.CoherencyAccumulator` checks each window's NPU jobs
  one window late, with the last inference of the window before and the next window's first
  inferences around it (a job's input is checked against the writes since the inference before
  its own, its output against the reads until a job writes it again); determinism over every
  inference;
- sampling: :class:`~tracer.analysis.sampling.SamplingAccumulator` keeps the sampler's NPU and PC
  samples as columns, each PC sample's layer, and the NPU layers the samples saw running;
- jitter, whose outlier rules compare each execution with its layer's median over the capture:
  :class:`~tracer.analysis.jitter.JitterAccumulator` keeps per layer the cycles of each execution
  (4 bytes; 4 more for its own time where interrupts or tasks took some; the per-layer statistics
  are made from the same column) and tallies of its work and PMU counters;
- each inference's PMU counters.

Then :meth:`AnalysisAccumulator.finish` takes the capture's facts (a timeline with every
inference: the window itself when there is one) and reads the windows again, only where it must
(:class:`_SecondPass`): it judges each window's executions against the capture-wide medians, lists
the inferences over the budget's limits, makes each inference's PMU counters again where a
per-inference profile the console text printed fills in what the records lack, counts the RTOS
task slices (:class:`~tracer.analysis.tasks.TaskAccumulator`: whether a slice may hide a lost
switch depends on every inference) and gathers the spans of the sampled NPU layers. A window with
no jitter outlier against the capture's medians and no execution over its budget limit is skipped
(from the cycles the first pass kept, per layer and window), and the pass ends after the last
window it needs. The budget comparison reads only the capture's facts (its layers and clock) and
the findings rules run once, on the finished analysis, so a finding seen in several windows is
one finding.

Where a capture read in many windows can differ from one read whole, the result says so: a job
whose output no job writes again within the next window has the CPU's reads after that window
unchecked (a warning in the capture's facts counts them). What the window reader leaves out or
reads whole instead is its own business (:mod:`tracer.pipeline.analyse`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable, Mapping

import numpy as np

from tracer.analysis.budget_view import BudgetComparison, compare_budget, inferences_over
from tracer.analysis.coherency import SHORT_NOTE, CoherencyAccumulator
from tracer.analysis.energy_model import estimate
from tracer.analysis.findings.rules import find_all
from tracer.analysis.isr import IsrAccumulator
from tracer.analysis.jitter import JitterAccumulator
from tracer.analysis.layer_stats import LayerStats, complete_latencies, layer_stats
from tracer.analysis.memory import MemorySummary, merge_memory, summarize_memory
from tracer.analysis.pmu import InferenceCounterTable, inference_counters, pmu_summary
from tracer.analysis.result import Analysis
from tracer.analysis.samples import LayerSamples, add_counts, compact, excluded_spans, layer_pmu_sums, pool_samples
from tracer.analysis.sampling import SamplingAccumulator
from tracer.analysis.settings import AnalysisSettings
from tracer.analysis.statistics import summarize
from tracer.analysis.tasks import TaskAccumulator
from tracer.base.facts import InputFacts
from tracer.base.timeline import Inferences, InferenceTimeline
from tracer.budget.model import Budget
from tracer.elf.inlines import CodeLocator
from tracer.power.attribute import EnergyAnalysis

Windows = Callable[[], Iterable[tuple[InferenceTimeline, InputFacts]]]
"""Reads an input's windows, in order, each time it is called."""


class AnalysisAccumulator:
    """The analysis of a capture's windows: :meth:`add` each window in order, then :meth:`finish`.

    Args:
        settings: Thresholds (the jitter thresholds the command line leaves unset come from the
            budget's model, else the defaults).
        budget: The normalized budget, or None.
        locator: The firmware ELF's symbols and inlined code (``--elf``), for CPU hot spots.
    """

    def __init__(
        self, settings: AnalysisSettings | None = None, budget: Budget | None = None, locator: CodeLocator | None = None
    ) -> None:
        self.settings = settings = settings or AnalysisSettings()
        self.budget = budget
        self.locator = locator
        model = budget.model if budget is not None else None
        self.pmu_sums: list[dict[int, Mapping[str, tuple[int, int]]]] = []  # per window and layer
        self.excluded: list[dict[int, int]] = []
        self.latency: list[np.ndarray] = []
        self.memory: list[MemorySummary] = []
        self.isrs = IsrAccumulator()
        self.coherency = CoherencyAccumulator(settings.cache_line_bytes)
        self.sampling = SamplingAccumulator()
        self.has_jobs = False
        self.jitter = JitterAccumulator(settings.jitter(model))
        self.inferences: list[Inferences] = []
        self.spans: list[tuple[int | None, int | None]] = []
        self.pmu: list[InferenceCounterTable] = []
        self.has_tasks = False

    def add(self, window: InferenceTimeline) -> None:
        """First pass: keep what the sections need of the next window (not the window)."""
        spans = window.spans
        # Each inference's PMU counters, as the second pass makes them unless the console text
        # has per-inference profiles (then it makes them again, with the capture's).
        self.pmu.append(inference_counters(dataclasses.replace(window, pmu_totals={})))
        self.has_tasks = self.has_tasks or len(window.tasks) > 0
        self.pmu_sums.append(layer_pmu_sums(spans))
        self.excluded.append(excluded_spans(spans))
        self.latency.append(compact(complete_latencies(window.inferences)))
        self.memory.append(memory_of(window, self.budget))
        self.isrs.add(window)
        self.has_jobs = self.has_jobs or len(window.npu_jobs) > 0 or len(window.inferences) > 0
        self.coherency.add(window)
        self.sampling.add(window)
        self.jitter.measure(window)
        self.inferences.append(window.inferences)
        self.spans.append(time_span(window))

    def every_inference(self) -> Inferences:
        """The inferences of every window added, in order."""
        return Inferences.concat(self.inferences)

    def finish(
        self,
        capture: InferenceTimeline,
        facts: InputFacts,
        again: Windows,
        energy: EnergyAnalysis | None = None,
    ) -> Analysis:
        """The analysis, after the second pass.

        Args:
            capture: The capture's facts (clock, labels, layers, loss, console text merged) with
                every inference (:meth:`every_inference`); read whole, the window itself.
            facts: Facts about the input.
            again: Reads the windows again, in the same order (the second pass).
            energy: A power recording held against the timeline (:mod:`tracer.power`), or None.
        """
        settings, budget = self.settings, self.budget
        comparison = (
            compare_budget(capture, budget, settings.tolerance_pct, settings.calibration, settings.against)
            if budget is not None
            else None
        )
        self.jitter.data_dependent = comparison.data_dependent if comparison is not None else frozenset()
        self.jitter.settle()
        over: dict[int, list[int]] = {}
        tasks = TaskAccumulator(capture, marked=len(self.pmu) == 1)
        pmu = list(self.pmu)
        second = _SecondPass(self, capture, comparison)
        if second.last >= 0:
            windows = iter(again())
            for k, (window, _) in enumerate(windows):
                if second.judge[k]:
                    self.jitter.judge(window)
                else:
                    self.jitter.skip(k)
                if second.every:
                    tasks.add(window)
                    self.sampling.add_jobs(window)
                if second.counters:
                    # (the text's per-inference profiles, matched to the capture's inferences, fill in counters)
                    pmu[k] = inference_counters(dataclasses.replace(window, pmu_totals=capture.pmu_totals))
                if second.over[k] and comparison is not None:
                    for index, numbers in inferences_over(window.spans, comparison).items():
                        over.setdefault(index, []).extend(numbers)
                if k == second.last:
                    break  # (the windows after it have nothing the first pass did not keep)
            if isinstance(windows, Generator):
                windows.close()  # (its reader stops now, not when collected)
        coherency = self.coherency.result(capture) if self.has_jobs else None
        if self.coherency.short:  # (the one check a window can cut short: said where the report shows it)
            facts = dataclasses.replace(
                facts,
                warnings=[*facts.warnings, f"{facts.path or facts.source}: " + SHORT_NOTE.format(self.coherency.short)],
            )
        jitter = self.jitter.result()
        layers, executions = self._layers()  # (after the jitter's result: they take its columns)
        estimated = None
        if settings.power_model is not None:  # (no meter: energy from each layer's time and counters)
            complete = sum(len(part) for part in self.latency)  # (each complete inference's latency)
            estimated = estimate(settings.power_model, layers, capture.clock_hz, complete)
        analysis = Analysis(
            timeline=capture,
            facts=facts,
            settings=settings,
            comparison=comparison,
            layers=layers,
            complete_executions=executions,
            latency=summarize(np.concatenate(self.latency).astype(np.int64)) if self.latency else None,
            jitter=jitter,
            interrupts=self.isrs.result(),
            tasks=tasks.result(),
            pmu=pmu_summary(InferenceCounterTable.concat(pmu), capture),
            memory=merge_memory([*self.memory, memory_of(capture, budget)]),
            coherency=coherency,
            sampling=self.sampling.result(capture, budget, self.locator),
            time_span=self._time_span(),
            over_limit={index: tuple(numbers) for index, numbers in sorted(over.items())},
            energy=energy,
            energy_estimate=estimated,
        )
        return dataclasses.replace(analysis, findings=tuple(find_all(analysis)))

    def _layers(self) -> tuple[dict[int, LayerStats], dict[int, LayerSamples]]:
        """Per-layer statistics over every window, and every layer's complete executions, from the
        cycles and interrupt cycles the jitter kept (handed over one layer at a time, once its
        result is made) and the PMU sums.
        """
        excluded = add_counts(self.excluded)
        out: dict[int, LayerStats] = {}
        executions: dict[int, LayerSamples] = {}
        for index in sorted({i for part in self.pmu_sums for i in part} | set(excluded)):
            parts = [LayerSamples(np.zeros(0, np.int32), None, part[index]) for part in self.pmu_sums if index in part]
            samples = {}
            if parts:
                samples[index] = executions[index] = self.jitter.hand_over(index, pool_samples(parts).pmu)
            out.update(layer_stats(samples, {index: excluded.get(index, 0)}))
        return out, executions

    def _time_span(self) -> tuple[int | None, int | None]:
        """The first and last cycle over every window."""
        firsts = [first for first, _ in self.spans if first is not None]
        lasts = [last for _, last in self.spans if last is not None]
        return (min(firsts) if firsts else None), (max(lasts) if lasts else None)


class _SecondPass:
    """Which windows the second pass must read again, and what for; what it does not redo the
    first pass has kept (each inference's PMU counters, each layer's cycles per window).

    Attributes:
        judge: Per window, whether it has a jitter outlier against the capture's medians (the
            others have nothing to judge: :meth:`~tracer.analysis.jitter.JitterAccumulator.skip`).
        over: Per window, whether a complete execution ran over its layer's budget limit.
        every: Every window is needed: the capture has an RTOS task lane (whether a slice may hide
            a lost switch depends on every inference) or NPU samples (the sampled layers' spans).
        counters: Each inference's PMU counters are made again: the console text has per-inference
            profiles, which fill in what the records lack.
        last: The last window to read (-1: none, no second pass).
    """

    def __init__(
        self, sections: AnalysisAccumulator, capture: InferenceTimeline, comparison: BudgetComparison | None
    ) -> None:
        jitter = sections.jitter
        count = len(sections.pmu)
        limits = {}
        if comparison is not None:
            limits = {
                index: plan.limit_cycles
                for index, plan in comparison.plans.items()
                if plan.limit_cycles is not None and plan.predicted_cycles
            }
        self.judge = jitter.windows_with_outliers()
        self.over = jitter.windows_where(lambda index, cycles: cycles > limits[index] if index in limits else None)
        self.every = sections.has_tasks or bool(sections.sampling.layers)
        self.counters = bool(capture.pmu_totals)
        needed = [k for k in range(count) if self.judge[k] or self.over[k]]
        if self.every or self.counters:
            needed.append(count - 1)
        self.last = max(needed, default=-1)


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
