"""Per-layer and per-inference statistics of a timeline, vectorised over numpy columns.

Only complete rows count: a layer span of an inference that lost data is left out (and counted
as excluded), never averaged in. Summaries and percentiles are :mod:`tracer.analysis.statistics`'.
"""

from __future__ import annotations

import dataclasses

import numpy as np

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
    complete = spans.complete
    layers = spans.layer.astype(np.int64)
    cycles = spans.cycles
    out: dict[int, LayerStats] = {}
    excluded = np.bincount(layers[~complete], minlength=int(layers.max(initial=-1)) + 1) if len(layers) else None
    ok_layers = layers[complete]
    ok_cycles = cycles[complete]
    ok_pmu = spans.pmu[complete] if spans.pmu.shape[1] else spans.pmu[:0]
    if len(ok_cycles) and 0 <= ok_cycles.min() and ok_cycles.max() < (1 << 40):
        order = np.argsort((ok_layers << 40) | ok_cycles, kind="stable")  # one key: faster than lexsort
    else:
        order = np.lexsort((ok_cycles, ok_layers))
    sorted_layers = ok_layers[order]
    sorted_cycles = ok_cycles[order]
    indices, starts, counts = np.unique(sorted_layers, return_index=True, return_counts=True)
    sums = np.add.reduceat(sorted_cycles, starts) if len(starts) else np.zeros(0, np.int64)
    for index, start, count, total in zip(indices.tolist(), starts.tolist(), counts.tolist(), sums.tolist()):
        stats = summarize_sorted(sorted_cycles[start : start + count], total)
        pmu_mean: dict[str, float] = {}
        if ok_pmu.shape[1]:
            rows = ok_pmu[order[start : start + count]]
            for j, name in enumerate(spans.pmu_names):
                have = rows[:, j] >= 0
                if have.any():
                    pmu_mean[name] = float(rows[have, j].mean())
        skipped = int(excluded[index]) if excluded is not None and index < len(excluded) else 0
        out[index] = LayerStats(index, stats, skipped, pmu_mean)
    if excluded is not None:
        for index in np.flatnonzero(excluded).tolist():
            if index not in out:
                out[index] = LayerStats(index, None, int(excluded[index]), {})
    return dict(sorted(out.items()))


def complete_latencies(inferences: Inferences) -> np.ndarray:
    """The latency of every complete inference (with a start and an end), in order."""
    ok = inferences.complete & (inferences.start >= 0) & (inferences.end >= 0)
    return (inferences.end - inferences.start)[ok]


def latency(inferences: Inferences) -> CycleSummary | None:
    """Statistics of the latency of complete inferences."""
    return summarize(complete_latencies(inferences))
