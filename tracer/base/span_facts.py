"""What the records say about each layer span besides its time: work count, CPU counters, and the
cycles other RTOS tasks took from it (:mod:`tracer.telemetry.span_facts` fills it in).

Rows are keyed by (inference, layer, start), so any selection of spans (``LayerSpans.where``)
finds its rows with :meth:`SpanFacts.rows_for`.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np


class SpanKeys(Protocol):
    """The key columns of layer spans (a :class:`~tracer.base.timeline.LayerSpans` has them): named
    here by their shape, so this module needs nothing of the timeline's.
    """

    inference: np.ndarray
    layer: np.ndarray
    start: np.ndarray

    def __len__(self) -> int:
        """How many spans."""


@dataclasses.dataclass
class SpanFacts:
    """Per layer span: work, CPU counters, own task and the cycles each other task took from it.

    Attributes:
        inference, layer, start: The span's key (as in :class:`LayerSpans`).
        work: Work count the firmware reported (``trc_layer_work``), -1 if none.
        counter_names: CPU counter columns (``INST_RETIRED`` ...; DWT ones end in ``_MOD256``).
        counters: Their values, shape (rows, counters); -1 where not measured.
        task: The task the span ran in (the one switched in at its start), -1 if unknown.
        task_ids: The task columns of ``preempted``.
        preempted: Cycles each task took from the span (its slices inside the span, interrupt
            time left out: that is in the span's ``isr_cycles``), shape (rows, tasks).
        malformed: Counter records that could not be read (no configuration, wrong length).
    """

    inference: np.ndarray
    layer: np.ndarray
    start: np.ndarray
    work: np.ndarray
    counter_names: tuple[str, ...]
    counters: np.ndarray
    task: np.ndarray
    task_ids: tuple[int, ...]
    preempted: np.ndarray
    malformed: int = 0

    def __len__(self) -> int:
        return int(self.start.shape[0])

    def rows_for(self, spans: SpanKeys) -> np.ndarray:
        """Row of each of ``spans`` in these facts, -1 if it has none."""
        out = np.full(len(spans), -1, np.int64)
        if not len(self) or not len(spans):
            return out
        order = np.argsort(self.start, kind="stable")
        starts = self.start[order]
        lo = np.searchsorted(starts, spans.start, side="left")
        hi = np.searchsorted(starts, spans.start, side="right")
        row = order[np.minimum(lo, len(order) - 1)]
        one = (hi - lo == 1) & (self.inference[row] == spans.inference) & (self.layer[row] == spans.layer)
        out[one] = row[one]
        for i in np.flatnonzero(hi - lo > 1).tolist():  # spans starting at the same cycle: rare
            for r in order[lo[i] : hi[i]].tolist():
                if self.inference[r] == spans.inference[i] and self.layer[r] == spans.layer[i]:
                    out[i] = r
        return out

    def preempted_cycles(self) -> np.ndarray:
        """Cycles all other tasks took from each row."""
        return self.preempted.sum(axis=1) if self.preempted.shape[1] else np.zeros(len(self), np.int64)

    def counter(self, name: str) -> np.ndarray:
        """One counter's column (-1 where not measured)."""
        return self.counters[:, self.counter_names.index(name)]
