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

import numpy as np

from tracer.base.span_facts import SpanFacts
from tracer.base.task_loss import mark_loss
from tracer.base.timeline import InferenceTimeline
from tracer.telemetry.freertos_itm import TIME_LABEL, FreeRtosItmReader, Picked
from tracer.telemetry.isr import HandlerTime
from tracer.telemetry.tasks import preemption, task_slices
from tracer.telemetry.wire import RecordType
from tracer.telemetry.work import span_counters, span_work

_TYPES = frozenset(
    int(t)
    for t in (
        RecordType.WORK,
        RecordType.CPU_COUNTERS,
        RecordType.CPU_COUNTER_CONFIG,
        RecordType.TASK_SWITCH,
        RecordType.TASK_INFO,
        RecordType.TASK_DELETE,
    )
)


class TimelineFacts:
    """The task lane and per-span facts of one stream (kept by the telemetry decoder)."""

    def __init__(self) -> None:
        self.freertos_itm = FreeRtosItmReader()

    def read(self, picked: Picked | None) -> None:
        """See what :func:`~tracer.telemetry.freertos_itm.pick` picked from a packet batch (in stream order)."""
        self.freertos_itm.read(picked)

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
        inference=spans.inference.copy(),
        layer=spans.layer.astype(np.int64),
        start=spans.start.copy(),
        work=span_work(spans, records),
        counter_names=counter_names,
        counters=counters,
        task=own,
        task_ids=ids,
        preempted=took,
        malformed=malformed,
    )
