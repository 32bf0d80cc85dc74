"""What happened around the recent inferences, kept beside the ring, and the timeline of it all.

:class:`EventWindow` keeps, in arrival (time) order, the events the decoder handed out: cache
operations, NPU jobs, marks, buffer CRCs and other checked records (CPU write/read marks, NPU
buffer declarations, ISR marks). It forgets what happened before the ring's horizon (the start of
the newest inference that left the ring), and never holds more than :data:`MAX_ROWS` events, so
memory stays flat. A front end reads it through an immutable :class:`EventView`: the interrupts,
jobs, cache operations and marks of one inference for the timeline.

:func:`window_timeline` builds an :class:`~tracer.base.timeline.InferenceTimeline` of the
recent window (the ring's inferences and spans, these events, the decoder's interrupt slices,
the memory reports that decide every memory figure, the console, the loss counters, labels and
clock), which the CI gate's rules (:func:`tracer.analysis.analyze.analyze`) run on unchanged.
While nothing has left the window, it is the timeline ``tracer check`` builds from the whole
capture.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from tracer.base.columns import LazyRecords
from tracer.base.timeline import (
    ArenaSample,
    BufferCrc,
    CacheOp,
    ConsoleLine,
    Inferences,
    InferenceTimeline,
    IsrSlice,
    LayerInfo,
    LayerSpans,
    Mark,
    NpuJob,
    StackSample,
    TelemetryRecord,
)
from tracer.session.ring import InferenceBlock, InferenceRecord
from tracer.telemetry.isr import HandlerTime
from tracer.telemetry.tables import cache_op_of_row, npu_job_of_row

_Event = TypeVar("_Event")

MAX_ROWS = 1 << 18  # events kept at most, whatever the ring holds (a stream with no inference in it)


@dataclasses.dataclass(frozen=True)
class EventChunk:
    """The events one feed brought.

    Attributes:
        first, last: The earliest and latest cycle in it.
        cache_ops, npu_jobs: Per-layer events (read-only sequences).
        marks, crcs, records: Rare events.
    """

    first: int
    last: int
    cache_ops: Sequence[CacheOp]
    npu_jobs: Sequence[NpuJob]
    marks: tuple[Mark, ...]
    crcs: tuple[BufferCrc, ...]
    records: tuple[TelemetryRecord, ...]

    @property
    def rows(self) -> int:
        """Events in it."""
        return len(self.cache_ops) + len(self.npu_jobs) + len(self.marks) + len(self.crcs) + len(self.records)


@dataclasses.dataclass(frozen=True)
class InferenceEvents:
    """What happened during one inference, or a stretch of time (the timeline's lanes)."""

    isrs: tuple[IsrSlice, ...] = ()
    npu_jobs: tuple[NpuJob, ...] = ()
    cache_ops: tuple[CacheOp, ...] = ()
    marks: tuple[Mark, ...] = ()
    tasks: tuple[Any, ...] = ()


def _chunk(
    cache_ops: Sequence[CacheOp],
    npu_jobs: Sequence[NpuJob],
    marks: Sequence[Mark],
    crcs: Sequence[BufferCrc],
    records: Sequence[TelemetryRecord],
) -> EventChunk | None:
    times: list[int] = []
    for cycles in (column(cache_ops, 0), column(npu_jobs, 0)):
        if len(cycles):
            times += [int(cycles.min()), int(cycles.max())]
    for items in (marks, crcs, records):
        if items:
            stamps = [item.cycle for item in items]
            times += [min(stamps), max(stamps)]
    if not times:
        return None
    return EventChunk(min(times), max(times), cache_ops, npu_jobs, tuple(marks), tuple(crcs), tuple(records))


def _owned_by(items: Sequence[_Event], owner: int, number: int) -> list[_Event]:
    """The ``items`` whose field ``owner`` is inference ``number``."""
    rows = np.flatnonzero(column(items, owner) == number)
    return [items[int(r)] for r in rows.tolist()]


def column(items: Sequence[Any], i: int) -> np.ndarray:
    """Column ``i`` of the decoder's :class:`LazyRecords` (empty for an empty sequence)."""
    if not len(items):
        return np.zeros(0, np.int64)
    if isinstance(items, LazyRecords):
        return items.column(i)
    raise TypeError(f"expected the decoder's columns, not {type(items).__name__}")


class EventWindow:
    """Events in arrival order, forgotten before a horizon (see the module docstring).

    Args:
        max_rows: Events kept at most.
    """

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self._chunks: collections.deque[EventChunk] = collections.deque()
        self._rows = 0
        self._max_rows = max_rows
        self.forgot = False  # True once anything was forgotten

    def add(
        self,
        cache_ops: Sequence[CacheOp],
        npu_jobs: Sequence[NpuJob],
        marks: Sequence[Mark],
        crcs: Sequence[BufferCrc],
        records: Sequence[TelemetryRecord],
    ) -> None:
        """Events a feed brought (read-only sequences the window may keep)."""
        chunk = _chunk(cache_ops, npu_jobs, marks, crcs, records)
        if chunk is None:
            return
        self._chunks.append(chunk)
        self._rows += chunk.rows
        while self._rows > self._max_rows and len(self._chunks) > 1:
            self._drop()

    def forget_before(self, horizon: int) -> None:
        """Forget the feeds whose every event is older than ``horizon`` (a cycle)."""
        while self._chunks and self._chunks[0].last < horizon:
            self._drop()

    def _drop(self) -> None:
        self._rows -= self._chunks.popleft().rows
        self.forgot = True

    @property
    def rows(self) -> int:
        """Events held."""
        return self._rows

    def view(self, isrs: Sequence[IsrSlice], tasks: Sequence[Any] = ()) -> EventView:
        """An immutable view of what is held, with the interrupt (and task) slices held by the decoder."""
        return EventView(tuple(self._chunks), isrs, tasks)


@dataclasses.dataclass(frozen=True)
class EventView:
    """The events held at one moment (safe to read from any thread; never changes).

    Attributes:
        chunks: The feeds' events, oldest first.
        isrs: Interrupt slices in start order (the decoder's, named as the firmware named them).
        tasks: RTOS task slices in start order, when the firmware sends them (objects with
            ``start``, ``end``, ``name`` and ``complete``, as ``tracer.telemetry.tasks.TaskSlice``).
    """

    chunks: tuple[EventChunk, ...] = ()
    isrs: Sequence[IsrSlice] = ()
    tasks: Sequence[Any] = ()
    _memo: dict[int, InferenceEvents] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def of(self, record: InferenceRecord) -> InferenceEvents:
        """The interrupts, NPU jobs, cache operations and marks of one inference.

        Jobs and cache operations are the ones the firmware reported while it ran (by number);
        interrupts are those overlapping it, marks those stamped inside it (by time).
        """
        found = self._memo.get(record.number)
        if found is None:
            found = self._memo[record.number] = self._events_of(record)
        return found

    def _events_of(self, record: InferenceRecord) -> InferenceEvents:
        number = record.number
        lo, hi = extent(record)
        chunks = [c for c in self.chunks if lo is None or hi is None or (c.last >= lo and c.first <= hi)]
        jobs: list[NpuJob] = []
        cache: list[CacheOp] = []
        marks: list[Mark] = []
        for chunk in chunks:
            jobs.extend(_owned_by(chunk.npu_jobs, 2, number))
            cache.extend(_owned_by(chunk.cache_ops, 4, number))
            if lo is not None and hi is not None:
                marks.extend(m for m in chunk.marks if lo <= m.cycle <= hi)
        return InferenceEvents(self._isrs_between(lo, hi), tuple(jobs), tuple(cache), tuple(marks))

    def _isrs_between(self, lo: int | None, hi: int | None) -> tuple[IsrSlice, ...]:
        if lo is None or hi is None or not len(self.isrs):
            return ()
        starts, ends = column(self.isrs, 0), column(self.isrs, 1)
        upto = int(np.searchsorted(starts, hi, side="right"))
        rows = np.flatnonzero(ends[:upto] >= lo)
        return tuple(self.isrs[int(r)] for r in rows.tolist())

    def between(self, lo: int, hi: int) -> InferenceEvents:
        """Everything held that happened (or ran) between cycles ``lo`` and ``hi``, inside
        inferences or not: the continuous timeline's lanes.
        """
        jobs: list[NpuJob] = []
        cache: list[CacheOp] = []
        marks: list[Mark] = []
        for chunk in self.chunks:
            if chunk.last < lo or chunk.first > hi:
                continue
            if len(chunk.npu_jobs):
                starts, ends = column(chunk.npu_jobs, 0), column(chunk.npu_jobs, 1)
                rows = np.flatnonzero((starts <= hi) & (np.where(ends >= 0, ends, starts) >= lo))
                jobs.extend(chunk.npu_jobs[int(r)] for r in rows.tolist())
            if len(chunk.cache_ops):
                cycles = column(chunk.cache_ops, 0)
                rows = np.flatnonzero((cycles >= lo) & (cycles <= hi))
                cache.extend(chunk.cache_ops[int(r)] for r in rows.tolist())
            marks.extend(m for m in chunk.marks if lo <= m.cycle <= hi)
        tasks = tuple(t for t in self.tasks if t.end >= lo and t.start <= hi)
        return InferenceEvents(self._isrs_between(lo, hi), tuple(jobs), tuple(cache), tuple(marks), tasks)

    # -- for the analysis ------------------------------------------------------------------------
    def since(self, horizon: int | None) -> dict[str, Sequence[Any]]:
        """Every held event at or after ``horizon`` (None: all), by kind, in arrival order.

        Cache operations and NPU jobs come as columns (:class:`LazyRecords`, objects built only
        for the rules that read them one by one), the rest as lists.
        """
        chunks = [c for c in self.chunks if horizon is None or c.last >= horizon]
        low = -(1 << 62) if horizon is None else horizon
        cache = _joined([c.cache_ops for c in chunks], 5, cache_op_of_row, low)
        jobs = _joined([c.npu_jobs for c in chunks], 4, npu_job_of_row, low)
        out: dict[str, Sequence[Any]] = {"cache_ops": cache, "npu_jobs": jobs}
        for kind in ("marks", "crcs", "records"):
            out[kind] = [x for c in chunks for x in getattr(c, kind) if x.cycle >= low]
        return out


def _joined(parts: list[Sequence[Any]], width: int, factory: Any, low: int) -> LazyRecords[Any]:
    """The parts' rows whose first column (their time) is at least ``low``, as one column set."""
    columns = [np.concatenate([column(p, i) for p in parts]) if parts else np.zeros(0, np.int64) for i in range(width)]
    keep = columns[0] >= low
    return LazyRecords(factory, [c[keep] for c in columns] if not keep.all() else columns)


def extent(record: InferenceRecord) -> tuple[int | None, int | None]:
    """An inference's start and end; for one that lost its begin or end, its layers' extent."""
    lo, hi = record.start, record.end
    if lo is None or hi is None:
        layers = record.inference.layers
        if layers:
            lo = min(s.start for s in layers) if lo is None else lo
            hi = max(s.end for s in layers) if hi is None else hi
    return lo, hi


# -- the window as a timeline --------------------------------------------------------------------


def ring_columns(records: Sequence[InferenceRecord]) -> tuple[Inferences, LayerSpans]:
    """The inference rows and layer spans of ``records`` (consecutive rows of a block are read at once)."""
    groups: list[tuple[InferenceBlock, int, int]] = []
    for record in records:
        if groups and groups[-1][0] is record.block and groups[-1][2] == record.row - 1:
            groups[-1] = (record.block, groups[-1][1], record.row)
        else:
            groups.append((record.block, record.row, record.row))
    parts = []
    span_parts = []
    for block, r0, r1 in groups:
        inf = block.inferences
        lo, hi = int(block.span_first[r0]), int(block.span_end[r1])
        span_parts.append((block.spans, lo, hi))
        parts.append(
            Inferences(
                inf.number[r0 : r1 + 1],
                inf.start[r0 : r1 + 1],
                inf.end[r0 : r1 + 1],
                inf.complete[r0 : r1 + 1],
                inf.input_crc[r0 : r1 + 1],
                inf.output_crc[r0 : r1 + 1],
                list(inf.problems[r0 : r1 + 1]),
            )
        )
    if not parts:
        return Inferences.from_rows([]), LayerSpans.empty()
    return Inferences.concat(parts), _join_spans(span_parts)


def _join_spans(parts: list[tuple[LayerSpans, int, int]]) -> LayerSpans:
    """Rows ``lo:hi`` of each part, joined; PMU columns lined up by name (-1 where a part lacks one)."""
    names = max((spans.pmu_names for spans, _, _ in parts), key=len)
    columns: dict[str, list[np.ndarray]] = {f: [] for f in ("inference", "layer", "start", "end", "complete")}
    pmu = []
    for spans, lo, hi in parts:
        for field, out in columns.items():
            out.append(getattr(spans, field)[lo:hi])
        if spans.pmu_names == names:
            pmu.append(spans.pmu[lo:hi])
        else:
            lined = np.full((hi - lo, len(names)), -1, np.int64)
            for j, name in enumerate(spans.pmu_names):
                if name in names:
                    lined[:, names.index(name)] = spans.pmu[lo:hi, j]
            pmu.append(lined)
    joined = {f: np.concatenate(v) for f, v in columns.items()}
    return LayerSpans(
        inference=joined["inference"],
        layer=joined["layer"],
        start=joined["start"],
        end=joined["end"],
        complete=joined["complete"],
        isr_cycles=np.zeros(len(joined["layer"]), np.int64),
        pmu=np.concatenate(pmu) if pmu else np.zeros((0, len(names)), np.int64),
        pmu_names=names,
    )


def window_timeline(
    base: InferenceTimeline,
    layers: dict[int, LayerInfo],
    records: Sequence[InferenceRecord],
    events: EventView,
    horizon: int | None,
    memory: tuple[list[ArenaSample], list[StackSample]],
    console: list[ConsoleLine],
) -> InferenceTimeline:
    """The recent window as a timeline (see the module docstring).

    Args:
        base: The decoder's own timeline: clock, labels, loss, PMU names, facts (its rows are
            replaced by the window's).
        layers: Every layer seen.
        records: The ring's inferences, oldest first.
        events: The events and interrupt slices held.
        horizon: Events before this cycle belong to inferences no longer kept (None: none left).
        memory: The deciding arena and stack reports (:meth:`MemoryTracker.deciding_samples`).
        console: The console lines held.
    """
    inferences, spans = ring_columns(records)
    isrs = events.isrs
    if horizon is not None and len(isrs):
        isrs = isrs[int(np.searchsorted(column(isrs, 0), horizon)) :]
    spans.isr_cycles = HandlerTime.of(isrs).inside(spans.start, spans.end)  # with every slice held now
    held = events.since(horizon)
    arena, stacks = memory
    return dataclasses.replace(
        base,
        layers=dict(sorted(layers.items())),
        inferences=inferences,
        spans=spans,
        arena=list(arena),
        stacks=list(stacks),
        cache_ops=held["cache_ops"],
        npu_jobs=held["npu_jobs"],
        isrs=isrs,
        console=list(console),
        marks=held["marks"],
        crcs=held["crcs"],
        records=held["records"],
    )
