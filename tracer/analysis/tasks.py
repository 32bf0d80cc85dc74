"""RTOS tasks over a capture: each task's share of the CPU, the slices loss may have cut, and which
tasks took time from which layers.

A task's share is over the *complete* slices only (:func:`tracer.telemetry.tasks.cpu_share`): a
slice that may hide a lost task switch is counted apart, with its cycles, never in a share. Time
taken from a layer is what other tasks' slices cover inside its spans, interrupt time left out
(``timeline.span_facts.preempted``); every span counts, complete or not (a preemption is a fact
even in a damaged inference), as for interrupts (:mod:`tracer.analysis.isr`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tracer.base.timeline import InferenceTimeline
from tracer.telemetry.tasks import cpu_share

MAX_LISTED = 20  # inference numbers listed per entry


def task_label(names: dict[int, str], task: int) -> str:
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


def analyse_tasks(timeline: InferenceTimeline) -> TaskAnalysis | None:
    """Shares, loss and time taken from layers; None when the input has no task lane."""
    slices = timeline.tasks
    if not slices:
        return None
    names = dict(timeline.task_names)
    counts: dict[int, int] = {}
    for s in slices:
        if s.complete:
            counts[s.task] = counts.get(s.task, 0) + 1
        if s.name:
            names.setdefault(s.task, s.name)
    shares = [
        TaskShare(task, share.name or task_label(names, task), counts[task], share.cycles, share.share)
        for task, share in cpu_share(slices).items()
    ]
    lost = [s for s in slices if not s.complete]
    return TaskAnalysis(
        slices=len(slices),
        incomplete=len(lost),
        incomplete_cycles=sum(s.cycles for s in lost),
        time=timeline.labels.get("tasks", "cycles"),
        by_task=shares,
        by_layer=_by_layer(timeline, names),
    )


def _by_layer(timeline: InferenceTimeline, names: dict[int, str]) -> list[TaskInLayer]:
    facts = timeline.span_facts
    spans = timeline.spans
    if facts is None or not len(facts) or not facts.preempted.shape[1]:
        return []
    rows = facts.rows_for(spans)
    took = np.where((rows >= 0)[:, None], facts.preempted[np.maximum(rows, 0)], 0)
    out = []
    for layer in np.unique(spans.layer).tolist():
        mine = spans.layer == layer
        for column, task in enumerate(facts.task_ids):
            cycles = took[mine, column]
            hit = cycles > 0
            if not hit.any():
                continue
            inferences = tuple(spans.inference[mine][hit][:MAX_LISTED].tolist())
            out.append(
                TaskInLayer(
                    int(layer),
                    task,
                    task_label(names, task),
                    int(hit.sum()),
                    int(mine.sum()),
                    inferences,
                    int(cycles.sum()),
                    int(cycles.max()),
                )
            )
    return sorted(out, key=lambda h: (h.layer, -h.cycles_total))
