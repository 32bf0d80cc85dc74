"""Interrupts per layer: which handlers land in which layer, how often, at what cost.

A slice *lands* in the layer execution (span) during which it starts; its cost there is the part
of it inside that span (nested handlers included). Statistics per exception are over every slice;
per layer over every span, complete or not (an interrupt is a fact even in a damaged inference).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tracer.analysis.samples import compact
from tracer.analysis.statistics import CycleSummary, summarize
from tracer.base.columns import LazyRecords
from tracer.base.timeline import InferenceTimeline, IsrSlice

MAX_LISTED = 20  # inference numbers listed per entry


@dataclasses.dataclass(frozen=True)
class ExceptionStats:
    """One exception number over the capture.

    Attributes:
        exception: Its number (16 + IRQn).
        name: The firmware's name or the architecture's.
        count: Slices.
        repaired: Slices whose exit was lost and inferred.
        cycles: Statistics of their durations (nested handlers included).
        in_layers: Slices that started inside a layer.
    """

    exception: int
    name: str
    count: int
    repaired: int
    cycles: CycleSummary | None
    in_layers: int

    def to_json(self) -> dict[str, Any]:
        """As in the report's ``interrupts.by_exception``."""
        return {
            "exception": self.exception,
            "name": self.name,
            "count": self.count,
            "repaired": self.repaired,
            "cycles": self.cycles.to_json() if self.cycles else None,
            "in_layers": self.in_layers,
        }


@dataclasses.dataclass(frozen=True)
class LayerHits:
    """Handlers of one exception that landed in one layer.

    Attributes:
        layer: Layer index.
        exception: Exception number.
        name: Its name.
        hits: Slices that started inside the layer.
        inferences: Inference numbers of the spans hit, in order.
        spans: Layer executions (spans) of the layer, all inferences.
        cycles_total: Handler cycles inside the layer.
        cycles_max: The largest cost of one slice.
        cycles_per_hit: Mean cost of a slice.
    """

    layer: int
    exception: int
    name: str
    hits: int
    inferences: tuple[int, ...]
    spans: int
    cycles_total: int
    cycles_max: int

    @property
    def cycles_per_hit(self) -> float:
        """Mean cost of one slice in the layer."""
        return self.cycles_total / self.hits if self.hits else 0.0

    def to_json(self) -> dict[str, Any]:
        """As in the report's ``interrupts.by_layer``."""
        return {
            "layer": self.layer,
            "exception": self.exception,
            "name": self.name,
            "hits": self.hits,
            "spans": self.spans,
            "inferences_hit": len(set(self.inferences)),
            "inferences": sorted(set(self.inferences))[:MAX_LISTED],
            "cycles_total": self.cycles_total,
            "cycles_per_hit": round(self.cycles_per_hit, 1),
            "cycles_max": self.cycles_max,
        }


@dataclasses.dataclass(frozen=True)
class IsrAnalysis:
    """Interrupts of a capture, per exception and per layer."""

    by_exception: list[ExceptionStats]
    by_layer: list[LayerHits]
    slices: int


def slice_columns(slices: Any) -> tuple[np.ndarray, ...]:
    """(start, end, exception, depth, repaired) of slices, as arrays."""
    if isinstance(slices, LazyRecords):
        return tuple(slices.column(i) for i in range(5))
    rows: list[IsrSlice] = list(slices)
    return (
        np.array([s.start for s in rows], np.int64),
        np.array([s.end for s in rows], np.int64),
        np.array([s.exception for s in rows], np.int64),
        np.array([s.depth for s in rows], np.int64),
        np.array([s.repaired for s in rows], bool),
    )


def slice_names(timeline: InferenceTimeline) -> dict[int, str]:
    """Exception number to name, as the slices carry them."""
    names: dict[int, str] = {}
    for s in timeline.isrs:
        names.setdefault(s.exception, s.name)
    return names


def span_of(timeline: InferenceTimeline, moments: np.ndarray) -> np.ndarray:
    """Row of the layer span each moment falls in (``start <= t < end``), or -1."""
    spans = timeline.spans
    if not len(spans) or not len(moments):
        return np.full(len(moments), -1, np.int64)
    order = np.argsort(spans.start, kind="stable")
    starts = spans.start[order]
    j = np.searchsorted(starts, moments, side="right") - 1
    row = order[np.maximum(j, 0)]
    inside = (j >= 0) & (moments < spans.end[row]) & (moments >= spans.start[row])
    return np.where(inside, row, -1)


class IsrAccumulator:
    """Interrupt statistics of a capture's windows, added in order (each slice in
    exactly one window, :mod:`tracer.pipeline.windows`): what they need is kept per exception (the
    slices' durations, compact) and per layer and exception (sums, maxima, the inferences hit).
    """

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._durations: dict[int, list[np.ndarray]] = {}
        self._repaired: dict[int, int] = {}
        self._in_layers: dict[int, int] = {}
        self._hits: dict[tuple[int, int], list[Any]] = {}  # hits, inferences, cycles_total, cycles_max
        self._spans: dict[int, int] = {}
        self._slices = 0

    def add(self, timeline: InferenceTimeline) -> None:
        """Count the slices of the next timeline in."""
        start, end, number, _, repaired = slice_columns(timeline.isrs)
        for exc, name in slice_names(timeline).items():
            self._names.setdefault(exc, name)
        spans = timeline.spans
        row = span_of(timeline, start)
        landed = row >= 0
        self._slices += len(start)
        for exc in np.unique(number).tolist():
            mine = number == exc
            self._durations.setdefault(exc, []).append(compact(end[mine] - start[mine]))
            self._repaired[exc] = self._repaired.get(exc, 0) + int(repaired[mine].sum())
            self._in_layers[exc] = self._in_layers.get(exc, 0) + int((mine & landed).sum())
        if len(spans):
            counts = np.bincount(spans.layer.astype(np.int64))
            for lay in np.flatnonzero(counts).tolist():
                self._spans[lay] = self._spans.get(lay, 0) + int(counts[lay])
        if not landed.any():
            return
        rows = row[landed]
        cost = np.minimum(end[landed], spans.end[rows]) - start[landed]
        layer = spans.layer[rows].astype(np.int64)
        exc_of = number[landed]
        for lay, exc in sorted(set(zip(layer.tolist(), exc_of.tolist()))):
            pick = (layer == lay) & (exc_of == exc)
            hit = self._hits.setdefault((lay, exc), [0, [], 0, 0])
            hit[0] += int(pick.sum())
            hit[1].extend(spans.inference[rows[pick]].tolist())
            hit[2] += int(cost[pick].sum())
            hit[3] = max(hit[3], int(cost[pick].max()))

    def result(self) -> IsrAnalysis:
        """The interrupts of everything added."""
        names = self._names
        by_exception = [
            ExceptionStats(
                exc,
                names.get(exc, str(exc)),
                sum(len(d) for d in parts),
                self._repaired[exc],
                summarize(np.concatenate(parts).astype(np.int64)),
                self._in_layers[exc],
            )
            for exc, parts in sorted(self._durations.items())
        ]
        by_layer = [
            LayerHits(lay, exc, names.get(exc, str(exc)), hits, tuple(inferences), self._spans.get(lay, 0), total, most)
            for (lay, exc), (hits, inferences, total, most) in sorted(self._hits.items())
        ]
        return IsrAnalysis(by_exception, by_layer, self._slices)
