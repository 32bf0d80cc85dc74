"""The RTOS task lane of a session: the task records it holds and the slices they make.

The firmware's task hooks send TASK_SWITCH, TASK_INFO and TASK_DELETE records
(:mod:`tracer.telemetry.tasks`). A session keeps those of its window, plus what the window needs
from before its horizon: the last switch (the task running when the window starts) and the last
naming record of each task. From them it makes the task slices the Gantt draws, and the window's
timeline gets them for the findings rules (task preemption, work counts: :func:`with_facts`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from tracer.base.tasks import TaskSlice
from tracer.base.timeline import InferenceTimeline, TelemetryRecord
from tracer.telemetry.wire import RecordType

TASK_TYPES = frozenset(int(t) for t in (RecordType.TASK_SWITCH, RecordType.TASK_INFO, RecordType.TASK_DELETE))
# The records the per-span facts are made of (tracer.telemetry.span_facts): tasks, work, CPU counters.
FACT_TYPES = TASK_TYPES | {int(RecordType.WORK), int(RecordType.CPU_COUNTERS), int(RecordType.CPU_COUNTER_CONFIG)}


class TaskLane:
    """The task records of a window and their slices (recomputed only when either changes)."""

    def __init__(self) -> None:
        self._records: list[TelemetryRecord] = []  # in time order
        self._names: dict[int, TelemetryRecord] = {}  # task id -> its last naming record before the horizon
        self._switch: TelemetryRecord | None = None  # the last switch before the horizon
        self.end = -1  # the newest cycle seen: the end of the running task's slice
        self.slices: Sequence[TaskSlice] = ()

    def add(self, records: Iterable[TelemetryRecord], newest: int, horizon: int | None) -> None:
        """Take the task records among ``records``; ``newest``: the newest cycle the stream reached."""
        new = [r for r in records if r.type in TASK_TYPES]
        moved = newest > self.end
        self.end = max(self.end, newest, *(r.cycle for r in new)) if new else max(self.end, newest)
        if new:
            self._records.extend(new)
            self._records.sort(key=lambda r: r.cycle)
        dropped = self._forget_before(horizon)
        if new or dropped or (moved and self._records):
            self.slices = self._slices(horizon)

    def _forget_before(self, horizon: int | None) -> bool:
        if horizon is None or not self._records or self._records[0].cycle >= horizon:
            return False
        keep = 0
        while keep < len(self._records) and self._records[keep].cycle < horizon:
            rec = self._records[keep]
            if rec.type == RecordType.TASK_SWITCH:
                self._switch = rec
            elif rec.words:
                self._names[rec.words[0]] = rec
            keep += 1
        del self._records[:keep]
        return True

    def records(self) -> list[TelemetryRecord]:
        """The task records the window needs, in time order (context from before the horizon first)."""
        before = sorted(self._names.values(), key=lambda r: r.cycle)
        if self._switch is not None:
            before = sorted([*before, self._switch], key=lambda r: r.cycle)
        return before + self._records

    def _slices(self, horizon: int | None) -> list[TaskSlice]:
        from tracer.telemetry.tasks import task_slices

        slices, _ = task_slices(self.records(), self.end if self.end >= 0 else None)
        return slices if horizon is None else [s for s in slices if s.end >= horizon]


def with_facts(timeline: InferenceTimeline, task_records: list[TelemetryRecord], end: int) -> InferenceTimeline:
    """The window's timeline with its task lane and per-span facts made from what the window holds.

    The decoder's own timeline has them only for the records it has not handed over yet; the
    window's are remade from the window's records and ``task_records`` (:meth:`TaskLane.records`).
    A stream without such records keeps what the decoder found (FreeRTOS trace events, say).
    """
    from tracer.telemetry.isr import HandlerTime
    from tracer.telemetry.span_facts import attach

    others = [r for r in timeline.records if r.type not in TASK_TYPES]
    if not task_records and not any(r.type in FACT_TYPES for r in others):
        return timeline
    records = sorted([*others, *task_records], key=lambda r: r.cycle)
    out = dataclasses.replace(timeline, records=records, tasks=[], task_names={}, span_facts=None)
    attach(out, end if end >= 0 else None, HandlerTime.of(out.isrs))
    return out
