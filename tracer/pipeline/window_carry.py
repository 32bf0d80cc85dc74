"""What a window of a long capture needs of the windows before it (:mod:`tracer.pipeline.windows`).

The decoder forgets the rows it handed out, but some records set up what later records mean:

- a CPU counter configuration (CPU_COUNTER_CONFIG, sent once at boot) names the values of every
  later CPU_COUNTERS record;
- task names (TASK_INFO, TASK_DELETE) name every later slice, and the last task switch says which
  task holds the CPU when a window begins, until the window's first switch;
- the records after a window's last layer execution (the inference still in progress: its WORK and
  counter records, the task switches inside it) belong to the next window's spans.

:class:`Carry` keeps those (a handful of records, whatever the capture's size) and gives each
window the task lane and per-span facts the decoder gives a whole capture
(:func:`tracer.telemetry.span_facts.attach`), computed with the carried records in front of the
window's own. A window's last task slice ends at its last layer execution's end; the next window
starts the same slice again (same task, same switch) and carries it on, so the analysis counts it
once (:class:`tracer.analysis.tasks.TaskAccumulator`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tracer.base.timeline import InferenceTimeline, TelemetryRecord
from tracer.telemetry.freertos_itm import TIME_LABEL
from tracer.telemetry.isr import HandlerTime
from tracer.telemetry.span_facts import attach
from tracer.telemetry.wire import RecordType

_CONFIG = int(RecordType.CPU_COUNTER_CONFIG)
_NAMES = (int(RecordType.TASK_INFO), int(RecordType.TASK_DELETE))
_SWITCH = int(RecordType.TASK_SWITCH)


class Carry:
    """The records later windows need, carried from window to window (in order)."""

    def __init__(self) -> None:
        self.held: list[TelemetryRecord] = []  # after the last window's end: the next window's own
        self.configs: list[TelemetryRecord] = []  # every configuration change, in order
        self.active: dict[int, tuple[int, ...]] = {}  # source -> the words of its configuration now
        self.named: dict[int, TelemetryRecord] = {}  # task -> the last TASK_INFO that named it
        self.state: dict[int, TelemetryRecord] = {}  # task -> its last TASK_INFO or TASK_DELETE
        self.switch: TelemetryRecord | None = None  # the last task switch

    def own(self, records: Sequence[TelemetryRecord], cut: int | None, final: bool) -> list[TelemetryRecord]:
        """A window's own records: those held from the last window and ``records``, up to the
        window's last layer execution's end ``cut`` (all of them in the final window, or without
        a cut); the rest wait for the next window.
        """
        mine = self.held + list(records)
        if final or cut is None:
            self.held = []
            return mine
        self.held = [r for r in mine if r.cycle > cut]
        return [r for r in mine if r.cycle <= cut]

    def context(self) -> list[TelemetryRecord]:
        """The carried records (all older than the next window's own)."""
        names = {id(r): r for r in [*self.named.values(), *self.state.values()]}
        switch = [self.switch] if self.switch is not None else []
        return [*self.configs, *names.values(), *switch]

    def attach(self, timeline: InferenceTimeline, end_time: int | None) -> None:
        """Put the window's task lane and span facts on ``timeline`` (whose records are its own),
        then carry what the next window needs of them.

        Args:
            timeline: The window.
            end_time: Where its last task slice ends: its last layer execution's end (the
                capture's last record's time in the final window).
        """
        own = timeline.records
        if timeline.labels.get("tasks") != TIME_LABEL:  # a FreeRTOS trace's lane is the decoder's
            both = dataclasses.replace(
                timeline, records=self.context() + list(own), tasks=[], task_names={}, span_facts=None
            )
            attach(both, end_time, HandlerTime.of(timeline.isrs))
            timeline.tasks, timeline.task_names, timeline.span_facts = both.tasks, both.task_names, both.span_facts
        self._keep(own)

    def _keep(self, records: Sequence[TelemetryRecord]) -> None:
        for r in sorted(records, key=lambda r: r.cycle):
            if r.type == _CONFIG and r.words:
                source = r.words[0] & 0xFF
                if self.active.get(source) != r.words:  # a repeat changes nothing
                    self.active[source] = r.words
                    self.configs.append(r)
            elif r.type in _NAMES and r.words:
                if r.type == RecordType.TASK_INFO and len(r.words) >= 2 and (r.words[1] >> 16) & 0xFF:
                    self.named[r.words[0]] = r
                self.state[r.words[0]] = r
            elif r.type == _SWITCH and r.words:
                self.switch = r
