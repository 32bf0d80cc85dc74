"""Per-layer and per-inference statistics of a timeline, vectorised over numpy columns.

Only complete rows count: a layer span of an inference that lost data is left out (and counted
as excluded), never averaged in. A layer's statistics are made from its compact columns
(:mod:`tracer.analysis.samples`), so the windows of a long capture, pooled, give the numbers of the
capture read whole. Summaries and percentiles are :mod:`tracer.analysis.statistics`'.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from tracer.analysis.samples import LayerSamples, excluded_spans, layer_samples
from tracer.analysis.statistics import CycleSummary, summarize, summarize_sorted
from tracer.base.timeline import Inferences, LayerSpans


@dataclasses.dataclass(frozen=True)
class LayerStats:
    """One layer over all complete inferences.

    Attributes:
        index: The layer.
        cycles: Statistics of its complete spans (None if it has none).
        excluded: Spans left out because their inference is incomplete.
        pmu_mean: Mean of each PMU counter over the complete spans that have it.
    """

    index: int
    cycles: CycleSummary | None
    excluded: int
    pmu_mean: dict[str, float]


def per_layer(spans: LayerSpans) -> dict[int, LayerStats]:
    """Statistics per layer index, from the complete spans."""
    return layer_stats(layer_samples(spans), excluded_spans(spans))


def layer_stats(samples: Mapping[int, LayerSamples], excluded: Mapping[int, int]) -> dict[int, LayerStats]:
    """Statistics per layer index from its complete executions' columns (of one timeline, or pooled
    over the windows of one: the same numbers) and the executions left out per layer.
    """
    out: dict[int, LayerStats] = {}
    for index in sorted(set(samples) | {i for i, count in excluded.items() if count}):
        sample = samples.get(index)
        cycles = None
        pmu_mean: dict[str, float] = {}
        if sample is not None and len(sample.cycles):
            cycles = sample.summary
            if cycles is None:
                ordered = np.sort(sample.cycles.astype(np.int64))
                cycles = summarize_sorted(ordered, int(ordered.sum()))
            pmu_mean = {name: total / count for name, (total, count) in sample.pmu.items() if count}
        out[index] = LayerStats(index, cycles, excluded.get(index, 0), pmu_mean)
    return out


def latency_columns(inferences: Inferences) -> tuple[np.ndarray, np.ndarray]:
    """The latency of every complete inference (with a start and an end) and its number, in order."""
    ok = inferences.complete & (inferences.start >= 0) & (inferences.end >= 0)
    return (inferences.end - inferences.start)[ok], inferences.number[ok]


def complete_latencies(inferences: Inferences) -> np.ndarray:
    """The latency of every complete inference (with a start and an end), in order."""
    return latency_columns(inferences)[0]


def latency(inferences: Inferences) -> CycleSummary | None:
    """Statistics of the latency of complete inferences."""
    return summarize(complete_latencies(inferences))
