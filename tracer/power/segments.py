"""The timeline cut into consecutive segments, each spent in one thing: a layer, the inference's
own time outside its layers, the idle time between inferences, or an incomplete inference.

Energy is attributed to segments; a segment's class says whose it is. Built from the timeline's
columns in one sort: every inference's begin and end and every layer span's begin and end are
points in time, each opening the class of the segment after it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.base.timeline import InferenceTimeline

# Tie order at one cycle: a span ends, the inference ends, the next begins, a span begins.
_SPAN_END, _INF_END, _INF_START, _SPAN_START = 0, 1, 2, 3


@dataclasses.dataclass(frozen=True)
class Segments:
    """Consecutive segments ``[bound[j], bound[j + 1])`` in target cycles.

    Attributes:
        bound: Cycles, non-decreasing, one more than the segments.
        klass: Per segment: a layer's class number (``layers[k]`` is its index), or
            :attr:`other`, :attr:`idle`, :attr:`incomplete`.
        span: Per segment, its row in ``timeline.spans`` (layer segments), else -1.
        inference: Per segment, its inference number (-1 for idle).
        layers: Layer index of each layer class.
    """

    bound: np.ndarray
    klass: np.ndarray
    span: np.ndarray
    inference: np.ndarray
    layers: tuple[int, ...]

    @property
    def other(self) -> int:
        """Class of an inference's time outside its layers."""
        return len(self.layers)

    @property
    def idle(self) -> int:
        """Class of the time between inferences."""
        return len(self.layers) + 1

    @property
    def incomplete(self) -> int:
        """Class of an incomplete inference's time (left out of the numbers)."""
        return len(self.layers) + 2

    @property
    def classes(self) -> int:
        """Number of classes."""
        return len(self.layers) + 3

    def class_name(self, k: int) -> str:
        """A class's name for messages."""
        names = {self.other: "other", self.idle: "idle", self.incomplete: "incomplete"}
        return names.get(k, f"layer {self.layers[k]}" if k < len(self.layers) else "?")


def segments_of(timeline: InferenceTimeline, keep: np.ndarray | None = None) -> Segments:
    """Cut ``timeline`` into segments, over its inferences with a begin and an end.

    Args:
        timeline: The capture.
        keep: Per inference row, False to leave it out (outside the recording); consecutive rows.
    """
    inf, spans = timeline.inferences, timeline.spans
    usable = (inf.start >= 0) & (inf.end >= inf.start)
    if keep is not None:
        usable &= keep
    rows = np.flatnonzero(usable)
    layers = tuple(sorted({int(x) for x in np.unique(spans.layer)} | set(timeline.layers)))
    klass_of = {layer: k for k, layer in enumerate(layers)}
    n_layers = len(layers)
    other, idle, incomplete = n_layers, n_layers + 1, n_layers + 2
    complete = inf.complete[rows]
    numbers = inf.number[rows]
    good = np.isin(spans.inference, numbers[complete]) & (spans.end >= spans.start)
    srows = np.flatnonzero(good)
    lookup = np.full(max(n_layers and max(layers) + 1, 1), -1, np.int64)
    for layer, k in klass_of.items():
        lookup[layer] = k
    time = np.concatenate((inf.start[rows], inf.end[rows], spans.start[srows], spans.end[srows]))
    order_key = np.concatenate(
        (
            np.full(len(rows), _INF_START, np.int8),
            np.full(len(rows), _INF_END, np.int8),
            np.full(len(srows), _SPAN_START, np.int8),
            np.full(len(srows), _SPAN_END, np.int8),
        )
    )
    klass = np.concatenate(
        (
            np.where(complete, other, incomplete),
            np.full(len(rows), idle),
            lookup[spans.layer[srows]],
            np.full(len(srows), other),
        )
    ).astype(np.int32)
    span = np.concatenate((np.full(2 * len(rows), -1), srows, np.full(len(srows), -1)))
    number = np.concatenate((numbers, np.full(len(rows), -1), spans.inference[srows], spans.inference[srows]))
    order = np.lexsort((order_key, time))
    del order_key
    # One column at a time, each original dropped as its sorted copy is made (bounded peak memory).
    time = time[order]
    klass = klass[order]
    span = span[order]
    number = number[order]
    # A span's end reopens its inference's "other" time; the inference number stays with it.
    return Segments(time, klass[:-1], span[:-1], number[:-1], layers)
