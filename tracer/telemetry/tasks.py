"""RTOS tasks: which task held the CPU when, each task's share of it, and the time other tasks took
from each layer span.

The firmware's task hooks (``firmware_snippets/include/trc_rtos.h``) send a TASK_SWITCH record
each time a task is switched in, a TASK_INFO record naming a task, a TASK_DELETE record when one
goes (its id may come back for a new task). A task holds the CPU from its switch-in to the next
one: :class:`TaskSlice`. Interrupts run inside slices (they are not tasks); the time a layer was
*preempted by a task* is the time other tasks' slices cover inside the layer's span, without the
interrupt time in it, which the span's ``isr_cycles`` already counts.

Loss: a slice that may hide a lost switch is ``complete=False`` and left out of CPU shares
(:func:`tracer.base.task_loss.mark_loss`).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from tracer.base.tasks import TaskSlice
from tracer.base.timeline import LayerSpans, TelemetryRecord
from tracer.telemetry.wire import RecordType

if TYPE_CHECKING:
    from tracer.telemetry.isr import HandlerTime


@dataclasses.dataclass(frozen=True, slots=True)
class CpuShare:
    """One task's share of the CPU over the complete slices."""

    task: int
    name: str
    cycles: int
    share: float  # of the time the complete slices cover


def _name(words: Sequence[int], length: int) -> str:
    return struct.pack(f"<{len(words)}I", *words)[:length].decode("utf-8", "replace")


def task_slices(records: Iterable[TelemetryRecord], end_time: int | None) -> tuple[list[TaskSlice], dict[int, str]]:
    """Task slices and task names from the task records, in time order.

    Args:
        records: Checked records (any types; the task records are picked out).
        end_time: Time of the last record of the capture: the end of the last slice (None: the
            last slice is dropped, its end is unknown).

    Returns:
        (slices, the last name each task id had). A slice's name is the one its task had when it
        was switched in, else the last one it got.
    """
    names: dict[int, str] = {}  # the names tasks have now
    known: dict[int, str] = {}  # the last name each id ever had
    slices: list[TaskSlice] = []
    current: tuple[int, int, str] | None = None  # (task, start, its name then)
    for rec in sorted(records, key=lambda r: r.cycle):
        if rec.type == RecordType.TASK_INFO and len(rec.words) >= 2:
            name = _name(rec.words[2:], (rec.words[1] >> 16) & 0xFF)
            names[rec.words[0]] = name
            if name:
                known[rec.words[0]] = name
        elif rec.type == RecordType.TASK_DELETE and rec.words:
            names.pop(rec.words[0], None)
        elif rec.type == RecordType.TASK_SWITCH and rec.words:
            if current is not None:
                slices.append(TaskSlice(current[0], current[1], rec.cycle, current[2]))
            current = (rec.words[0], rec.cycle, names.get(rec.words[0], ""))
    if current is not None and end_time is not None and end_time >= current[1]:
        slices.append(TaskSlice(current[0], current[1], end_time, current[2]))
    # A task switched in before it was named takes the name it got later.
    slices = [s if s.name else dataclasses.replace(s, name=known.get(s.task, "")) for s in slices]
    return slices, known


def cpu_share(slices: Sequence[TaskSlice]) -> dict[int, CpuShare]:
    """Each task's CPU time and share over the complete slices."""
    total = sum(s.cycles for s in slices if s.complete)
    cycles: dict[int, int] = {}
    names: dict[int, str] = {}
    for s in slices:
        if s.complete:
            cycles[s.task] = cycles.get(s.task, 0) + s.cycles
            names[s.task] = s.name or names.get(s.task, "")
    return {
        task: CpuShare(task, names[task], c, c / total if total else 0.0)
        for task, c in sorted(cycles.items(), key=lambda kv: -kv[1])
    }


def preemption(
    spans: LayerSpans, slices: Sequence[TaskSlice], isr_inside: HandlerTime | None = None
) -> tuple[np.ndarray, tuple[int, ...], np.ndarray]:
    """Per span: the task it ran in, and the cycles each other task took from it.

    Args:
        spans: The layer spans.
        slices: Task slices in time order (they do not overlap).
        isr_inside: A :class:`~tracer.telemetry.isr.HandlerTime` (its ``inside(starts, ends)``),
            to leave interrupt time out of task time; None counts it in.

    Returns:
        (task of each span, -1 where no slice covers its start; the task ids of the columns;
        cycles per span and task, shape (spans, tasks), 0 where none).
    """
    n = len(spans)
    if not slices or n == 0:
        return np.full(n, -1, np.int64), (), np.zeros((n, 0), np.int64)
    s_start = np.array([s.start for s in slices], np.int64)
    s_end = np.array([s.end for s in slices], np.int64)
    s_task = np.array([s.task for s in slices], np.int64)
    ids = tuple(sorted(set(s_task.tolist())))
    column = {t: i for i, t in enumerate(ids)}
    first = np.searchsorted(s_start, spans.start, side="right") - 1  # slice holding the span's start
    last = np.searchsorted(s_start, spans.end, side="left") - 1  # last slice starting before its end
    own = np.where(first >= 0, s_task[np.maximum(first, 0)], -1)
    own = np.where((first >= 0) & (s_end[np.maximum(first, 0)] >= spans.start), own, -1)
    out = np.zeros((n, len(ids)), np.int64)
    for row in np.flatnonzero(last > first).tolist():  # spans that meet a switch: few
        lo, hi = int(spans.start[row]), int(spans.end[row])
        for k in range(max(int(first[row]), 0), int(last[row]) + 1):
            if s_task[k] == own[row]:
                continue
            a, b = max(lo, int(s_start[k])), min(hi, int(s_end[k]))
            if b <= a:
                continue
            took = b - a
            if isr_inside is not None:
                took -= int(isr_inside.inside(np.array([a]), np.array([b]))[0])
            out[row, column[int(s_task[k])]] += took
    return own, ids, out
