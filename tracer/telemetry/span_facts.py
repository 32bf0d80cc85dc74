"""What the records say about each layer span besides its time: work count, CPU counters, and the
cycles other RTOS tasks took from it; plus the task lane itself.

:func:`attach` runs when the telemetry decoder builds a timeline: it decodes the task, work and
counter records (:mod:`tracer.telemetry.tasks`, :mod:`tracer.telemetry.work`) from the records the
decoder keeps as they are, and sets ``timeline.tasks``, ``timeline.task_names`` and
``timeline.span_facts``. Captures without such records get an empty lane and ``span_facts=None``.

:class:`SpanFacts` rows are keyed by (inference, layer, start), so any selection of spans
(``LayerSpans.where``) finds its rows with :meth:`SpanFacts.rows_for`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.decode.packets import PacketBatch
from tracer.telemetry.freertos_itm import TIME_LABEL, FreeRtosItmReader
from tracer.telemetry.isr import HandlerTime
from tracer.telemetry.model import InferenceTimeline, LayerSpans
from tracer.telemetry.tasks import cpu_share, mark_loss, preemption, task_slices
from tracer.telemetry.wire import RecordType
from tracer.telemetry.work import span_counters, span_work

_TYPES = frozenset(
    int(t) for t in (RecordType.WORK, RecordType.CPU_COUNTERS, RecordType.CPU_COUNTER_CONFIG, RecordType.TASK_SWITCH,
                     RecordType.TASK_INFO, RecordType.TASK_DELETE)
)  # fmt: skip


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

    def rows_for(self, spans: LayerSpans) -> np.ndarray:
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


class TimelineFacts:
    """The task lane and per-span facts of one stream (kept by the telemetry decoder)."""

    def __init__(self) -> None:
        self.freertos_itm = FreeRtosItmReader()

    def feed(self, batch: PacketBatch) -> None:
        """See a packet batch (in stream order)."""
        self.freertos_itm.feed(batch)

    def attach(self, timeline: InferenceTimeline, end_time: int | None, handlers: HandlerTime | None = None) -> None:
        """Put the task lane and the per-span facts on ``timeline``.

        Args:
            timeline: A timeline whose spans, inferences, loss and records are final.
            end_time: Time of the stream's last record (ends the last task slice).
            handlers: Interrupt time (left out of the time tasks take from spans).
        """
        attach(timeline, end_time, handlers)
        if not timeline.tasks and self.freertos_itm.records:
            timeline.tasks, timeline.task_names = self.freertos_itm.slices()
            if timeline.tasks:
                timeline.labels["tasks"] = TIME_LABEL
                _share_extra(timeline)


def attach(timeline: InferenceTimeline, end_time: int | None, handlers: HandlerTime | None = None) -> None:
    """Decode the task, work and counter records of ``timeline.records`` onto the timeline."""
    records = [r for r in timeline.records if r.type in _TYPES]
    if not records:
        return
    slices, names = task_slices(records, end_time)
    timeline.tasks = mark_loss(slices, timeline)
    timeline.task_names = names
    spans = timeline.spans
    counter_names, counters, malformed = span_counters(spans, records)
    own, ids, took = preemption(spans, timeline.tasks, handlers)
    timeline.span_facts = SpanFacts(
        inference=spans.inference.copy(), layer=spans.layer.astype(np.int64), start=spans.start.copy(),
        work=span_work(spans, records), counter_names=counter_names, counters=counters, task=own, task_ids=ids,
        preempted=took, malformed=malformed,
    )  # fmt: skip
    _share_extra(timeline)


def _share_extra(timeline: InferenceTimeline) -> None:
    """Each task's CPU share, for reports (``extra["tasks"]``)."""
    if timeline.tasks:
        timeline.extra["tasks"] = [
            {"task": s.task, "name": s.name, "cycles": s.cycles, "share": round(s.share, 6)}
            for s in cpu_share(timeline.tasks).values()
        ]
