"""RTOS tasks over a capture: each task's share of the CPU, the slices loss may have cut, and which
tasks took time from which layers.

A task's share is over the *complete* slices only (as :func:`tracer.telemetry.tasks.cpu_share` counts them): a
slice that may hide a lost task switch is counted apart, with its cycles, never in a share. Time
taken from a layer is what other tasks' slices cover inside its spans, interrupt time left out
(``timeline.span_facts.preempted``); every span counts, complete or not (a preemption is a fact
even in a damaged inference), as for interrupts (:mod:`tracer.analysis.isr`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tracer.analysis.samples import layer_rows
from tracer.base.tasks import TaskSlice
from tracer.base.timeline import InferenceTimeline
from tracer.telemetry.tasks import mark_loss

MAX_LISTED = 20  # inference numbers listed per entry


def task_label(names: Mapping[int, str], task: int) -> str:
    """A task's name, or its id in hex when the firmware never named it."""
    return names.get(task) or f"0x{task:08x}"


@dataclasses.dataclass(frozen=True)
class TaskShare:
    """One task over the complete slices.

    Attributes:
        task: The firmware's id (its TCB's address).
        name: Its name (its id in hex when unnamed).
        slices: Its complete slices (times it was switched in).
        cycles: Cycles it held the CPU.
        share: Of the cycles the complete slices cover.
    """

    task: int
    name: str
    slices: int
    cycles: int
    share: float

    def to_json(self) -> dict[str, Any]:
        """As in the report's ``tasks.by_task``."""
        return {
            "task": self.task,
            "name": self.name,
            "slices": self.slices,
            "cycles": self.cycles,
            "share": round(self.share, 6),
        }


@dataclasses.dataclass(frozen=True)
class TaskInLayer:
    """One task's time inside one layer's spans.

    Attributes:
        layer: Layer index.
        task: Task id; name: its name.
        hits: Spans it took time from.
        spans: Spans of the layer (all inferences).
        inferences: Inference numbers of the spans hit (up to :data:`MAX_LISTED`).
        cycles_total: Cycles it took from them; cycles_max: the most from one span.
    """

    layer: int
    task: int
    name: str
    hits: int
    spans: int
    inferences: tuple[int, ...]
    cycles_total: int
    cycles_max: int

    def to_json(self) -> dict[str, Any]:
        """As in the report's ``tasks.by_layer``."""
        return {
            "layer": self.layer,
            "task": self.task,
            "name": self.name,
            "hits": self.hits,
            "spans": self.spans,
            "inferences": list(self.inferences),
            "cycles_total": self.cycles_total,
            "cycles_max": self.cycles_max,
        }


@dataclasses.dataclass(frozen=True)
class TaskAnalysis:
    """The task lane summed up.

    Attributes:
        slices: Task slices in the lane.
        incomplete: Slices that may hide a lost switch (left out of the shares).
        incomplete_cycles: Their cycles.
        time: What the slices' times count (``cycles``, or the label of a trace's own time base).
        by_task: Shares of the CPU over the complete slices, largest first.
        by_layer: Time tasks took from layers, by layer then most cycles first.
    """

    slices: int
    incomplete: int
    incomplete_cycles: int
    time: str
    by_task: list[TaskShare]
    by_layer: list[TaskInLayer]

    def to_json(self) -> dict[str, Any]:
        """The report's ``tasks`` section."""
        return {
            "slices": self.slices,
            "complete": self.slices - self.incomplete,
            "incomplete": self.incomplete,
            "incomplete_cycles": self.incomplete_cycles,
            "time": self.time,
            "by_task": [t.to_json() for t in self.by_task],
            "by_layer": [h.to_json() for h in self.by_layer],
        }


class _SliceTally:
    """Slices counted in time order: per task its complete slices, cycles and name; the incomplete."""

    def __init__(self) -> None:
        self.slices = 0
        self.incomplete = 0
        self.incomplete_cycles = 0
        self.counts: dict[int, int] = {}  # in the order tasks first held the CPU in a complete slice
        self.cycles: dict[int, int] = {}
        self.share_names: dict[int, str] = {}  # the last name a complete slice gave (cpu_share's)
        self.names: dict[int, str] = {}  # the first name any slice gave

    def add(self, slices: Sequence[TaskSlice]) -> None:
        for s in slices:
            self.slices += 1
            if s.complete:
                self.counts[s.task] = self.counts.get(s.task, 0) + 1
                self.cycles[s.task] = self.cycles.get(s.task, 0) + s.cycles
                self.share_names[s.task] = s.name or self.share_names.get(s.task, "")
            else:
                self.incomplete += 1
                self.incomplete_cycles += s.cycles
            if s.name:
                self.names.setdefault(s.task, s.name)

    def result(self, task_names: Mapping[int, str], time: str, by_layer: _LayerTally) -> TaskAnalysis:
        names = {**self.names, **task_names}
        total = sum(self.cycles.values())
        shares = [
            TaskShare(
                task,
                self.share_names[task] or task_label(names, task),
                self.counts[task],
                c,
                c / total if total else 0.0,
            )
            for task, c in sorted(self.cycles.items(), key=lambda kv: -kv[1])
        ]
        return TaskAnalysis(
            slices=self.slices,
            incomplete=self.incomplete,
            incomplete_cycles=self.incomplete_cycles,
            time=time,
            by_task=shares,
            by_layer=by_layer.result(names),
        )


class _LayerTally:
    """Per layer and task: the time the task took from the layer's spans (summed window by window)."""

    def __init__(self) -> None:
        self.spans: dict[int, int] = {}  # per layer, its spans
        self.hits: dict[tuple[int, int], list[Any]] = {}  # [hits, inferences, cycles_total, cycles_max]

    def add(self, timeline: InferenceTimeline) -> None:
        facts = timeline.span_facts
        spans = timeline.spans
        layers, counts = np.unique(spans.layer, return_counts=True)
        for layer, count in zip(layers.tolist(), counts.tolist()):
            self.spans[int(layer)] = self.spans.get(int(layer), 0) + count
        if facts is None or not len(facts) or not facts.preempted.shape[1]:
            return
        rows = facts.rows_for(spans)
        took = np.where((rows >= 0)[:, None], facts.preempted[np.maximum(rows, 0)], 0)
        for layer, mine in layer_rows(spans.layer):  # one pass over the spans, not one per layer
            for column, task in enumerate(facts.task_ids):
                cycles = took[mine, column]
                hit = cycles > 0
                if not hit.any():
                    continue
                entry = self.hits.setdefault((layer, task), [0, [], 0, 0])
                entry[0] += int(hit.sum())
                entry[1] = (entry[1] + spans.inference[mine[hit]][:MAX_LISTED].tolist())[:MAX_LISTED]
                entry[2] += int(cycles.sum())
                entry[3] = max(entry[3], int(cycles.max()))

    def result(self, names: Mapping[int, str]) -> list[TaskInLayer]:
        out = [
            TaskInLayer(layer, task, task_label(names, task), hits, self.spans[layer], tuple(listed), total, most)
            for (layer, task), (hits, listed, total, most) in self.hits.items()
        ]
        # (whole or in windows, ties in the same layer go by task id, as the task columns are sorted)
        return sorted(out, key=lambda h: (h.layer, -h.cycles_total, h.task))


class TaskAccumulator:
    """The task analysis of a capture's windows (a timeline read whole is one); None without a
    task lane.

    Each window's lane ends at the window's end and the next window starts its last slice again
    (:mod:`tracer.pipeline.window_carry`): a slice is counted when the next window does not carry
    it on. Whether a slice may hide a lost switch depends on every inference of the capture
    (:func:`tracer.telemetry.tasks.mark_loss`), so windows are added in the second pass, with
    ``capture`` (every inference and the capture's loss) at hand.
    """

    def __init__(self, capture: InferenceTimeline) -> None:
        self.capture = capture
        self.slices = _SliceTally()
        self.layers = _LayerTally()
        self.names: dict[int, str] = {}
        self.time = "cycles"
        self.pending: TaskSlice | None = None  # the last slice so far: the next window may carry it on

    def add(self, window: InferenceTimeline) -> None:
        """The next window (in order)."""
        self.layers.add(window)
        self.names.update(window.task_names)
        slices = list(window.tasks)
        if not slices:
            return
        self.time = window.labels.get("tasks", "cycles")
        if self.pending is not None:
            first = slices[0]
            if (first.task, first.start) == (self.pending.task, self.pending.start):
                # The same slice, carried on: the name it got when it was switched in.
                slices[0] = dataclasses.replace(first, name=self.pending.name or first.name)
            else:
                slices.insert(0, self.pending)
        self.pending = slices.pop()
        self._count(slices)

    def _count(self, slices: list[TaskSlice]) -> None:
        if slices:
            fresh = [dataclasses.replace(s, complete=True) for s in slices]  # (a window's own marks are partial)
            self.slices.add(mark_loss(fresh, self.capture))

    def result(self) -> TaskAnalysis | None:
        """The capture's task analysis (None: no task lane), after every window."""
        if self.pending is None:
            return None
        self._count([self.pending])
        self.pending = None
        return self.slices.result(self.names, self.time, self.layers)
