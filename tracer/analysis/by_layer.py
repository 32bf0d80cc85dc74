"""The complete executions of some layer spans grouped by layer, each layer's in inference order,
as one array of rows cut where each layer's part starts: a column is gathered once for every
layer (one gather in layer order), not once per layer, and each layer reads its slice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from tracer.analysis.samples import layer_order
from tracer.analysis.statistics import run_starts
from tracer.base.timeline import LayerSpans


def layer_groups(spans: LayerSpans) -> list[tuple[int, np.ndarray]]:
    """Per layer index, the rows of its complete executions in inference order."""
    groups = ByLayer.of(spans)
    return [(index, groups.rows[lo:hi]) for index, lo, hi in groups]


@dataclasses.dataclass(frozen=True)
class ByLayer:
    """The complete executions of some spans, layer by layer (indices ascending), each layer's in
    inference order: one array of rows, cut where each layer's part starts, so that a column is
    gathered once for every layer, not once per layer.

    Attributes:
        rows: The span rows, layer by layer.
        indices: The layer indices, ascending.
        starts: Where each layer's part of :attr:`rows` starts.
        ends: Where it ends.
    """

    rows: np.ndarray
    indices: list[int]
    starts: np.ndarray
    ends: list[int]

    @classmethod
    def of(cls, spans: LayerSpans) -> ByLayer:
        """The complete executions of ``spans`` by layer."""
        complete = np.flatnonzero(spans.complete)
        if not len(complete):
            empty = np.zeros(0, np.int64)
            return cls(empty, [], empty, [])
        layers_of = spans.layer[complete].astype(np.int64)
        numbers = spans.inference[complete]
        if layers_of.min() >= 0 and (len(numbers) < 2 or bool((numbers[1:] >= numbers[:-1]).all())):
            # Spans in inference order (a decoded stream's always are): a stable sort by layer alone
            # keeps that order within each layer (a radix sort of small indices, once).
            indices, order, starts, ends = layer_order(layers_of)
            return cls(complete[order], indices.tolist(), starts, ends.tolist())
        if numbers.min() >= 0 and numbers.max() < (1 << 40) and layers_of.min() >= 0:
            order = complete[np.argsort((layers_of << 40) | numbers, kind="stable")]  # one key: faster than lexsort
        else:
            order = complete[np.lexsort((numbers, layers_of))]
        sorted_layers = spans.layer[order].astype(np.int64)
        firsts = run_starts(sorted_layers)  # sorted: no np.unique
        return cls(order, sorted_layers[firsts].tolist(), firsts, [*firsts[1:].tolist(), len(order)])

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        """(layer index, start, end) of each layer's part."""
        return zip(self.indices, self.starts.tolist(), self.ends)

    def any(self, flags: np.ndarray) -> list[bool]:
        """Per layer, whether any of ``flags`` (aligned with :attr:`rows`) holds in its part."""
        if not len(self.indices):
            return []
        return np.logical_or.reduceat(flags, self.starts).tolist()

    def measured(self, values: np.ndarray) -> MeasuredByLayer:
        """``values`` (aligned with :attr:`rows`) that are measured (>= 0), cut by layer."""
        have = values >= 0
        kept = np.concatenate(([0], np.cumsum(have)))  # measured values before each position
        return MeasuredByLayer(values[have], kept[self.starts].tolist(), kept[self.ends].tolist())


@dataclasses.dataclass(frozen=True)
class MeasuredByLayer:
    """A column's measured values, layer by layer (:meth:`ByLayer.measured`)."""

    values: np.ndarray
    starts: list[int]
    ends: list[int]

    def of(self, k: int) -> np.ndarray:
        """The measured values of the ``k``-th layer's part."""
        return self.values[self.starts[k] : self.ends[k]]
