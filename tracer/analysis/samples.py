"""The complete executions of each layer in compact columns: what per-layer statistics are made of.

Per layer index, the cycles of every complete execution and the interrupt cycles inside them, as
numpy integers in the smallest type that holds them (no Python object per execution), and per PMU
counter its sum and how many executions measured it. Columns of several parts (the windows of one
long capture, the captures of one side of a comparison) pool by concatenation
(:func:`pool_samples`), so statistics over the whole are exact: :func:`tracer.analysis.layer_stats.
layer_stats` makes a layer's statistics from these columns, whether they came from one timeline or
from many windows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from tracer.analysis.statistics import CycleSummary
from tracer.base.timeline import LayerSpans


@dataclasses.dataclass(frozen=True)
class LayerSamples:
    """The complete executions of one layer.

    Attributes:
        cycles: Cycles of each execution, interrupts included.
        isr_cycles: Interrupt cycles inside each execution (None: none at all).
        pmu: Per PMU counter: (sum over the executions that measured it, how many did).
        summary: The cycles summarized, where that is done already (the jitter sorts every
            layer's cycles once), or None.
    """

    cycles: np.ndarray
    isr_cycles: np.ndarray | None
    pmu: Mapping[str, tuple[int, int]]
    summary: CycleSummary | None = None

    @property
    def own_cycles(self) -> np.ndarray:
        """Cycles without the interrupts."""
        return self.cycles if self.isr_cycles is None else self.cycles - self.isr_cycles

    def pmu_mean(self, name: str) -> float | None:
        """The mean of counter ``name`` per execution that measured it."""
        total, count = self.pmu.get(name, (0, 0))
        return total / count if count else None


def compact(values: np.ndarray) -> np.ndarray:
    """Integer ``values`` as int32 when they fit (cycle counts of a layer do), else int64."""
    small = np.iinfo(np.int32)
    if not len(values) or (small.min <= int(values.min()) and int(values.max()) <= small.max):
        return values.astype(np.int32)
    return values.astype(np.int64)


def layer_rows(layer: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Per layer index present in ``layer`` (non-negative integers), the positions of its rows, in
    order (a stable sort: small indices sort by radix).
    """
    indices, order, starts, ends = layer_order(layer)
    return [(index, order[lo:hi]) for index, lo, hi in zip(indices.tolist(), starts.tolist(), ends.tolist())]


def layer_order(layer: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The layer indices present, the rows sorted by layer (stably), and where each layer's rows
    start and end in that order.
    """
    if not len(layer):
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, empty
    key = layer.astype(np.uint16) if int(layer.max()) < (1 << 16) and int(layer.min()) >= 0 else layer
    order = np.argsort(key, kind="stable")
    counts = np.bincount(layer.astype(np.int64))
    indices = np.flatnonzero(counts)
    ends = np.cumsum(counts)[indices]
    return indices, order, ends - counts[indices], ends


def layer_samples(spans: LayerSpans) -> dict[int, LayerSamples]:
    """The complete executions of each layer of ``spans``, in the order they ended, by layer index."""
    complete, indices, order, starts, ends = _complete_by_layer(spans)
    rows = order if complete is None else complete[order]  # span rows, layer by layer, each layer's in order
    # The cycles of every span, then one gather into layer order (a gather of each of start and
    # end cost twice as much: the rows of one layer are far apart).
    cycles = spans.cycles[rows]
    isr = spans.isr_cycles[rows]
    counters = _pmu_sums(spans, complete, indices)
    samples: dict[int, LayerSamples] = {}
    for index, lo, hi in zip(indices.tolist(), starts.tolist(), ends.tolist()):
        isr_part = isr[lo:hi]
        samples[index] = LayerSamples(
            compact(cycles[lo:hi]), compact(isr_part) if isr_part.any() else None, counters[index]
        )
    return samples


def layer_pmu_sums(spans: LayerSpans) -> dict[int, Mapping[str, tuple[int, int]]]:
    """Per layer index, the ``pmu`` of its :func:`layer_samples` alone (their cycles not gathered)."""
    complete, layer_of = _complete_layers(spans)
    indices = np.flatnonzero(np.bincount(layer_of.astype(np.int64))) if len(layer_of) else np.zeros(0, np.int64)
    return _pmu_sums(spans, complete, indices)


def _complete_layers(spans: LayerSpans) -> tuple[np.ndarray | None, np.ndarray]:
    """The complete spans' rows (None: every span) and their layer indices."""
    # Every span complete (the usual capture): the columns as they are, no gather of the complete rows.
    complete = None if bool(spans.complete.all()) else np.flatnonzero(spans.complete)
    return complete, (spans.layer if complete is None else spans.layer[complete])


def _complete_by_layer(spans: LayerSpans) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The complete spans' rows (None: every span) and their layer order (:func:`layer_order`)."""
    complete, layer_of = _complete_layers(spans)
    return (complete, *layer_order(layer_of))


def _pmu_sums(
    spans: LayerSpans, complete: np.ndarray | None, indices: np.ndarray
) -> dict[int, Mapping[str, tuple[int, int]]]:
    """Per layer index in ``indices``, per PMU counter: the sum over its complete executions that
    measured it and how many did (counters none measured left out).
    """

    def of_complete(column: np.ndarray) -> np.ndarray:
        return column if complete is None else column[complete]

    names = spans.pmu_names if spans.pmu.shape[1] else ()
    sums: list[list[int]] = []  # per counter, per layer index
    counts: list[list[int]] = []
    if names and len(indices):
        # Per counter, summed by layer index in span order (int64, as exact as a sum in layer
        # order): the counters are not gathered into layer order (that gather cost the most here).
        layer_at = of_complete(spans.layer).astype(np.intp)
        bins = int(indices[-1]) + 1
        spans_of = np.bincount(layer_at, minlength=bins)
        # The spans that missed the last counter and how many per layer: a snapshot usually
        # measures every counter or none, so the next counter misses the same spans.
        last: tuple[np.ndarray, np.ndarray] | None = None
        for j in range(len(names)):
            column = of_complete(spans.pmu[:, j])
            total = np.zeros(bins, np.int64)
            np.add.at(total, layer_at, np.maximum(column, 0))  # (a span without the counter adds 0)
            missing = column < 0
            if not missing.any():
                count = spans_of
            else:
                if last is None or not np.array_equal(missing, last[0]):
                    last = (missing, np.bincount(layer_at[missing], minlength=bins))
                count = spans_of - last[1]
            sums.append(total.tolist())
            counts.append(count.tolist())
    return {
        index: {name: (sums[j][index], counts[j][index]) for j, name in enumerate(names) if counts[j][index]}
        for index in indices.tolist()
    }


def excluded_spans(spans: LayerSpans) -> dict[int, int]:
    """Per layer index, its executions left out because their inference is incomplete."""
    left_out = spans.layer[~spans.complete].astype(np.int64)
    if not len(left_out):
        return {}
    counts = np.bincount(left_out)
    return {index: int(counts[index]) for index in np.flatnonzero(counts).tolist()}


def pool_samples(parts: Sequence[LayerSamples]) -> LayerSamples:
    """One layer's executions from several parts, in the parts' order."""
    if len(parts) == 1:
        return parts[0]
    cycles = compact(np.concatenate([p.cycles for p in parts]))
    if all(p.isr_cycles is None for p in parts):
        isr = None
    else:
        isr = compact(
            np.concatenate(
                [p.isr_cycles if p.isr_cycles is not None else np.zeros(len(p.cycles), np.int32) for p in parts]
            )
        )
    counters: dict[str, tuple[int, int]] = {}
    for p in parts:
        for name, (total, count) in p.pmu.items():
            old = counters.get(name, (0, 0))
            counters[name] = (old[0] + total, old[1] + count)
    return LayerSamples(cycles, isr, counters)


def pool_layers(parts: Sequence[Mapping[int, LayerSamples]]) -> dict[int, LayerSamples]:
    """Per layer index, its executions pooled over ``parts`` (layer indices in ascending order)."""
    indices = sorted({i for part in parts for i in part})
    return {index: pool_samples([part[index] for part in parts if index in part]) for index in indices}


def add_counts(parts: Sequence[Mapping[int, int]]) -> dict[int, int]:
    """Per-layer counts added over ``parts``."""
    out: dict[int, int] = {}
    for part in parts:
        for index, count in part.items():
            out[index] = out.get(index, 0) + count
    return out
