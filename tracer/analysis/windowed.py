"""Sections of an :class:`~tracer.analysis.analyze.Analysis` over the windows of a long capture,
merged so that they equal the sections of the capture analysed whole.

A capture larger than :data:`tracer.pipeline.windows.WHOLE_BYTES` is read as a sequence of
windows of consecutive inferences (:func:`tracer.pipeline.windows.read_windows`). Each window is
analysed on its own; :class:`WindowedSections` keeps what each section needs of it, compact, and
makes the capture's section at the end with the same function that makes it from one timeline:

- per-layer statistics: each layer's complete executions in compact columns
  (:mod:`tracer.analysis.samples`), pooled, then :func:`~tracer.analysis.layer_stats.layer_stats`
  (exact nearest-rank percentiles, exact means);
- latency: the complete inferences' latencies, concatenated, then the one summary;
- PMU: the inferences' counters in order, then :func:`~tracer.analysis.pmu.pmu_summary`;
- memory: :func:`~tracer.analysis.memory.merge_memory` (maxima, last sizes, first broken canary).

The other sections (jitter, whose outlier rules compare each execution with the capture's median;
interrupts, tasks, coherency, which look across inferences; and the findings that read them) are
not merged here yet: ``docs/fleet.md`` ("Bounded memory") says what is missing.
"""

from __future__ import annotations

import numpy as np

from tracer.analysis.analyze import Analysis
from tracer.analysis.layer_stats import LayerStats, complete_latencies, layer_stats
from tracer.analysis.memory import MemorySummary, merge_memory
from tracer.analysis.pmu import PmuSummary, pmu_summary
from tracer.analysis.samples import LayerSamples, add_counts, excluded_spans, layer_samples, pool_samples
from tracer.analysis.statistics import CycleSummary, summarize


class WindowedSections:
    """The mergeable sections of one capture, fed its windows' analyses in order."""

    def __init__(self) -> None:
        self._samples: list[dict[int, LayerSamples]] = []
        self._excluded: list[dict[int, int]] = []
        self._latency: list[np.ndarray] = []
        self._pmu: list[PmuSummary] = []
        self._memory: list[MemorySummary] = []
        self._last: Analysis | None = None

    def add(self, window: Analysis) -> None:
        """Keep what the sections need of the next window (its timeline is not kept)."""
        spans = window.timeline.spans
        self._samples.append(layer_samples(spans))
        self._excluded.append(excluded_spans(spans))
        self._latency.append(complete_latencies(window.timeline.inferences))
        self._pmu.append(window.pmu)
        self._memory.append(window.memory)
        self._last = window

    def layers(self) -> dict[int, LayerStats]:
        """Per-layer statistics over every window (pooled one layer at a time)."""
        excluded = add_counts(self._excluded)
        out: dict[int, LayerStats] = {}
        for index in sorted({i for part in self._samples for i in part} | set(excluded)):
            parts = [part[index] for part in self._samples if index in part]
            out.update(layer_stats({index: pool_samples(parts)} if parts else {}, {index: excluded.get(index, 0)}))
        return out

    def latency(self) -> CycleSummary | None:
        """Latency of every complete inference of every window."""
        return summarize(np.concatenate(self._latency)) if self._latency else None

    def pmu(self) -> PmuSummary:
        """The PMU section: every window's inferences, in order."""
        assert self._last is not None, "no window added"
        return pmu_summary([row for part in self._pmu for row in part.per_inference], self._last.timeline)

    def memory(self) -> MemorySummary:
        """The memory section."""
        return merge_memory(self._memory)
