"""The :class:`~tracer.analysis.analyze.Analysis` of a capture read in windows, equal to the
capture's analysed whole, in bounded memory.

A capture larger than :data:`tracer.pipeline.windows.WHOLE_BYTES` is read as a sequence of
windows of consecutive inferences (:func:`tracer.pipeline.windows.read_windows`), each an
:class:`~tracer.base.timeline.InferenceTimeline` of its own rows, with what it needs of the windows
before it carried in (the CPU counter configuration, the task names and the task holding the CPU,
the records of the inference still in progress: :mod:`tracer.pipeline.window_carry`).
:func:`analyze_windows` reads them in two passes. The first pass keeps, compact, what each section
needs of every window and makes the section with the function that makes it from one timeline:

- per-layer statistics: each layer's complete executions in compact columns
  (:mod:`tracer.analysis.samples`), pooled, then :func:`~tracer.analysis.layer_stats.layer_stats`
  (exact nearest-rank percentiles, exact means); latency: every complete inference's latency;
- memory: :func:`~tracer.analysis.memory.merge_memory` (maxima, last sizes, first broken canary);
- interrupts: :class:`~tracer.analysis.isr.WindowedIsrs` (every slice in exactly one window);
- coherency: :class:`~tracer.analysis.coherency.WindowedCoherency` checks each window's NPU jobs
  one window late, with the last inference of the window before and the next window's first
  inferences around it (a job's input is checked against the writes since the inference before
  its own, its output against the reads until a job writes it again); determinism over every
  inference;
- sampling: :class:`~tracer.analysis.sampling.WindowedSampling` keeps the sampler's NPU and PC
  samples as columns, each PC sample's layer, and the NPU layers the samples saw running;
- console text: its lines, merged once into the capture's facts
  (:func:`~tracer.telemetry.console_text.merge_console` on every line, as read whole);
- jitter, whose outlier rules compare each execution with its layer's median over the capture:
  :class:`~tracer.analysis.jitter.WindowedJitter` keeps per layer the cycles of each execution
  (4 bytes; 4 more for its own time where interrupts or tasks took some; the per-layer statistics
  are made from the same column) and tallies of its work and PMU counters.

The first pass also makes each inference's PMU counters. The second pass judges each window's
executions against those capture-wide values, lists the inferences over the budget's limits, makes
each inference's PMU counters again where a per-inference profile the console text printed fills
in what the records lack, counts the RTOS task slices (:class:`~tracer.analysis.tasks.
WindowedTasks`: whether a slice may hide a lost switch depends on every inference) and gathers the
spans of the sampled NPU layers. It reads a window again only when it must (:class:`_SecondPass`):
a window with no jitter outlier against the capture's medians and no execution over its budget
limit is skipped (from the cycles the first pass kept, per layer and window), and the pass ends
after the last window it needs; it needs every window only for a task lane, NPU samples or the
text's per-inference profiles. A capture without any of these is read once.

The budget comparison reads only the capture's facts (its layers and clock: the last window has
them all) and the findings rules run once, on the merged analysis, as for a capture read whole, so
a finding seen in several windows is one finding. The analysis's ``timeline`` then holds the
capture's facts, its console lines and every inference, but no layer execution, event or
interrupt slice.

Where the result can differ from the capture read whole, it says so:

- a job whose output no job writes again within the next window has the CPU's reads after that
  window unchecked (a warning in the capture's facts counts them);
- DWT PC samples over SWO and a probe's polled NPU samples are left out by the window reader
  (a warning in the capture's facts);
- a task that ran before the firmware named it (its TASK_INFO after its first switch-in) is, in
  the windows before its name came, shown by its id where an outlier lists the tasks that took
  time from it (read whole, the later name applies throughout).

Inputs read whole instead raise :class:`NotWindowable`: a FreeRTOS trace's task lane (its slices
come from the decoder's own reader, not from records a window holds), and console text without any
telemetry record (the text is the timeline, and it is one window anyway).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable, Mapping

import numpy as np

from tracer.analysis.analyze import memory_of, time_span
from tracer.analysis.budget_view import BudgetComparison, compare_budget, inferences_over
from tracer.analysis.coherency import SHORT_NOTE, WindowedCoherency
from tracer.analysis.findings.rules import find_all
from tracer.analysis.isr import WindowedIsrs
from tracer.analysis.jitter import WindowedJitter
from tracer.analysis.layer_stats import LayerStats, complete_latencies, layer_stats
from tracer.analysis.memory import MemorySummary, merge_memory
from tracer.analysis.pmu import InferenceCounterTable, inference_counters, pmu_summary
from tracer.analysis.result import Analysis
from tracer.analysis.samples import LayerSamples, add_counts, compact, excluded_spans, layer_pmu_sums, pool_samples
from tracer.analysis.sampling import WindowedSampling
from tracer.analysis.settings import AnalysisSettings
from tracer.analysis.statistics import summarize
from tracer.analysis.tasks import WindowedTasks
from tracer.base.facts import InputFacts
from tracer.base.timeline import ConsoleLine, Inferences, InferenceTimeline, LayerSpans
from tracer.budget.model import Budget
from tracer.elf.inlines import CodeLocator
from tracer.limits import CLOCK_RANGE, GIVEN_CLOCK, valid_clock_hz
from tracer.telemetry.console_text import merge_console
from tracer.telemetry.freertos_itm import TIME_LABEL as FREERTOS_TIME

Windows = Callable[[], Iterable[tuple[InferenceTimeline, InputFacts]]]
"""Reads an input's windows, in order, each time it is called."""


class NotWindowable(Exception):
    """The input has something whose analysis is not merged across windows yet (the message says
    what): read it whole.
    """


def analyze_windows(
    windows: Windows,
    budget: Budget | None = None,
    settings: AnalysisSettings | None = None,
    on_window: Callable[[InferenceTimeline], None] | None = None,
    locator: CodeLocator | None = None,
) -> Analysis:
    """The analysis of an input read in windows (in two passes, the second only where needed),
    equal to :func:`~tracer.analysis.analyze.analyze` of the whole input.

    Args:
        windows: Reads the input's windows (each window with the input's facts so far).
        budget: The normalized budget, or None.
        settings: Thresholds (as for :func:`~tracer.analysis.analyze.analyze`).
        on_window: Called with each window of the first pass.
        locator: The firmware ELF's symbols and inlined code (``--elf``), for CPU hot spots.

    Raises:
        NotWindowable: The input must be read whole (see the module docstring).
    """
    settings = settings or AnalysisSettings()
    sections = _Sections(settings, budget)
    last: tuple[InferenceTimeline, InputFacts] | None = None
    for timeline, facts in windows():
        _refuse(timeline)
        sections.add(timeline)
        if on_window is not None:
            on_window(timeline)
        last = (_facts_only(timeline), facts)  # the window's rows are not kept
    if last is None:
        raise NotWindowable("no window")
    if sections.console and not sections.has_records:
        raise NotWindowable("console text and no telemetry record (the text is the timeline)")
    summary, facts = _with_text(
        dataclasses.replace(last[0], inferences=Inferences.concat(sections.inferences)), last[1], sections
    )
    comparison = (
        compare_budget(summary, budget, settings.tolerance_pct, settings.calibration, settings.against)
        if budget is not None
        else None
    )
    sections.jitter.data_dependent = comparison.data_dependent if comparison is not None else frozenset()
    sections.jitter.settle()
    over: dict[int, list[int]] = {}
    tasks = WindowedTasks(summary)
    pmu = list(sections.pmu)
    second = _SecondPass(sections, summary, comparison)
    if second.last >= 0:
        again = iter(windows())
        for k, (timeline, _) in enumerate(again):
            if second.judge[k]:
                sections.jitter.judge(timeline)
            else:
                sections.jitter.skip(k)
            if second.every:
                tasks.add(timeline)
                sections.sampling.add_jobs(timeline)
            if second.counters:
                # (the text's per-inference profiles, matched to the capture's inferences, fill in counters)
                pmu[k] = inference_counters(dataclasses.replace(timeline, pmu_totals=summary.pmu_totals))
            if second.over[k] and comparison is not None:
                for index, numbers in inferences_over(timeline.spans, comparison).items():
                    over.setdefault(index, []).extend(numbers)
            if k == second.last:
                break  # (the windows after it have nothing the first pass did not keep)
        if isinstance(again, Generator):
            again.close()  # (its reader stops now, not when collected)
    coherency = sections.coherency.result(summary) if sections.has_jobs else None
    if sections.coherency.short:  # (the one check a window can cut short: said where the report shows it)
        facts = dataclasses.replace(
            facts,
            warnings=[*facts.warnings, f"{facts.path or facts.source}: " + SHORT_NOTE.format(sections.coherency.short)],
        )
    jitter = sections.jitter.result()
    layers, executions = sections.layers()  # (after the jitter's result: they take its columns)
    analysis = Analysis(
        timeline=summary,
        facts=facts,
        settings=settings,
        comparison=comparison,
        layers=layers,
        complete_executions=executions,
        latency=summarize(np.concatenate(sections.latency).astype(np.int64)) if sections.latency else None,
        jitter=jitter,
        interrupts=sections.isrs.result(),
        tasks=tasks.result(),
        pmu=pmu_summary(InferenceCounterTable.concat(pmu), summary),
        memory=merge_memory([*sections.memory, memory_of(summary, budget)]),
        coherency=coherency,
        sampling=sections.sampling.result(summary, budget, locator),
        time_span=sections.time_span(),
        over_limit={index: tuple(numbers) for index, numbers in sorted(over.items())},
    )
    return dataclasses.replace(analysis, findings=tuple(find_all(analysis)))


def _facts_only(timeline: InferenceTimeline) -> InferenceTimeline:
    """``timeline``'s facts (clock, labels, layers, loss ...) without its rows."""
    return dataclasses.replace(
        timeline,
        inferences=Inferences.concat([]),
        spans=LayerSpans.empty(timeline.spans.pmu_names),
        arena=[],
        stacks=[],
        cache_ops=[],
        npu_jobs=[],
        isrs=[],
        console=[],
        marks=[],
        crcs=[],
        records=[],
        data_trace=[],
        span_facts=None,
    )


def _refuse(timeline: InferenceTimeline) -> None:
    """Raise :class:`NotWindowable` when a window has what the merge does not handle yet."""
    if timeline.labels.get("tasks") == FREERTOS_TIME:
        raise NotWindowable("a FreeRTOS trace's task lane")


def _with_text(
    summary: InferenceTimeline, facts: InputFacts, sections: _Sections
) -> tuple[InferenceTimeline, InputFacts]:
    """The capture's facts with the numbers of its console text merged in, as for the capture read
    whole (:func:`~tracer.telemetry.console_text.merge_console` on every line, then the clock
    settled); ``summary`` has every inference of the capture.
    """
    if not sections.console:
        return summary, facts
    facts = dataclasses.replace(facts, warnings=list(facts.warnings))
    given = summary.clock_hz if summary.clock_source == GIVEN_CLOCK else None
    if given is not None:  # read whole, the text's clock comes before --clock
        summary.clock_hz, summary.clock_source = None, "unknown"
    from_text = summary.clock_hz is None
    summary = merge_console(dataclasses.replace(summary, console=list(sections.console)), facts.warnings)
    if sections.has_arena:  # the records' arena reports win over the text's
        summary.arena = []
    # The clock settled as for the capture read whole (the records' clock was, window by window).
    if from_text and summary.clock_hz is not None and not valid_clock_hz(summary.clock_hz):
        facts.warnings.append(
            f"{facts.path or facts.source}: the {summary.clock_source} gives a clock of {summary.clock_hz} Hz, "
            f"not {CLOCK_RANGE}; clock unknown (give --clock)"
        )
        summary.clock_hz, summary.clock_source = None, "unknown"
    if summary.clock_hz is None and given is not None:
        summary.clock_hz, summary.clock_source = given, GIVEN_CLOCK
    return summary, facts


class _Sections:
    """What the first pass keeps of every window, compact."""

    def __init__(self, settings: AnalysisSettings, budget: Budget | None) -> None:
        self.settings = settings
        self.budget = budget
        model = budget.model if budget is not None else None
        self.pmu_sums: list[dict[int, Mapping[str, tuple[int, int]]]] = []  # per window and layer
        self.excluded: list[dict[int, int]] = []
        self.latency: list[np.ndarray] = []
        self.console: list[ConsoleLine] = []
        self.has_records = False
        self.has_arena = False
        self.memory: list[MemorySummary] = []
        self.isrs = WindowedIsrs()
        self.coherency = WindowedCoherency(settings.cache_line_bytes)
        self.sampling = WindowedSampling()
        self.has_jobs = False
        self.jitter = WindowedJitter(settings.jitter(model))
        self.inferences: list[Inferences] = []
        self.spans: list[tuple[int | None, int | None]] = []
        self.pmu: list[InferenceCounterTable] = []
        self.has_tasks = False

    def add(self, timeline: InferenceTimeline) -> None:
        """Keep what the sections need of the next window (not the window)."""
        spans = timeline.spans
        # Each inference's PMU counters, as the second pass makes them unless the console text
        # has per-inference profiles (then it makes them again, with the capture's).
        self.pmu.append(inference_counters(dataclasses.replace(timeline, pmu_totals={})))
        self.has_tasks = self.has_tasks or len(timeline.tasks) > 0
        self.pmu_sums.append(layer_pmu_sums(spans))
        self.excluded.append(excluded_spans(spans))
        self.latency.append(compact(complete_latencies(timeline.inferences)))
        self.console += timeline.console
        self.has_records = self.has_records or len(timeline.inferences) > 0 or len(timeline.spans) > 0
        self.has_arena = self.has_arena or len(timeline.arena) > 0
        self.memory.append(memory_of(timeline, self.budget))
        self.isrs.add(timeline)
        self.has_jobs = self.has_jobs or len(timeline.npu_jobs) > 0 or len(timeline.inferences) > 0
        self.coherency.add(timeline)
        self.sampling.add(timeline)
        self.jitter.measure(timeline)
        self.inferences.append(timeline.inferences)
        self.spans.append(time_span(timeline))

    def layers(self) -> tuple[dict[int, LayerStats], dict[int, LayerSamples]]:
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
                cycles, isr = self.jitter.hand_over(index)
                samples[index] = LayerSamples(cycles, isr, pool_samples(parts).pmu)
                executions[index] = samples[index]
            out.update(layer_stats(samples, {index: excluded.get(index, 0)}))
        return out, executions

    def time_span(self) -> tuple[int | None, int | None]:
        """The first and last cycle over every window."""
        firsts = [first for first, _ in self.spans if first is not None]
        lasts = [last for _, last in self.spans if last is not None]
        return (min(firsts) if firsts else None), (max(lasts) if lasts else None)


class _SecondPass:
    """Which windows the second pass must read again, and what for; what it does not redo the
    first pass has kept (each inference's PMU counters, each layer's cycles per window).

    Attributes:
        judge: Per window, whether it has a jitter outlier against the capture's medians (the
            others have nothing to judge: :meth:`~tracer.analysis.jitter.WindowedJitter.skip`).
        over: Per window, whether a complete execution ran over its layer's budget limit.
        every: Every window is needed: the capture has an RTOS task lane (whether a slice may hide
            a lost switch depends on every inference) or NPU samples (the sampled layers' spans).
        counters: Each inference's PMU counters are made again: the console text has per-inference
            profiles, which fill in what the records lack.
        last: The last window to read (-1: none, no second pass).
    """

    def __init__(self, sections: _Sections, summary: InferenceTimeline, comparison: BudgetComparison | None) -> None:
        jitter = sections.jitter
        count = len(sections.pmu)
        limits = {}
        if comparison is not None:
            limits = {
                index: plan.limit_cycles
                for index, plan in comparison.plans.items()
                if plan.limit_cycles is not None and plan.predicted_cycles
            }
        self.judge = [jitter.has_outliers(k) for k in range(count)]
        self.over = [
            any(
                index in limits and bool((cycles.astype(np.int64) > limits[index]).any())
                for index, cycles in jitter.window_cycles(k).items()
            )
            for k in range(count)
        ]
        self.every = sections.has_tasks or bool(sections.sampling.layers)
        self.counters = bool(summary.pmu_totals)
        needed = [k for k in range(count) if self.judge[k] or self.over[k]]
        if self.every or self.counters:
            needed.append(count - 1)
        self.last = max(needed, default=-1)
