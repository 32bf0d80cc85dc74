"""The telemetry kernel's column tables: spans, inferences, events and their words, text, DWT rows.

The kernel (:mod:`tracer.telemetry.kernel`) writes these column-major int64 tables in place and
returns early when one is full; :class:`RecordTables` owns them, grows them, reads columns out of
them (as :class:`~tracer.base.timeline.LayerSpans`, :class:`~tracer.base.timeline.Inferences`, or
:class:`~tracer.base.columns.LazyRecords` of the per-layer records kept as columns: arena and
stack reports, cache operations, NPU jobs), and drops rows from their front when a live stream
discards what it has taken.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable

import numpy as np

from tracer.base.columns import LazyRecords
from tracer.base.timeline import CACHE_OPS, ArenaSample, CacheOp, Inferences, LayerSpans, NpuJob, StackSample
from tracer.telemetry import kernel as k
from tracer.telemetry.problems import describe_problems
from tracer.telemetry.wire import RecordType

# Event types kept as columns (as frequent as layers); the rest become objects as they arrive.
COLUMN_TYPES = (
    RecordType.CACHE_OP,
    RecordType.NPU_JOB_BEGIN,
    RecordType.NPU_JOB_END,
    RecordType.ARENA,
    RecordType.STACK,
)


class RecordTables:
    """The kernel's output tables for one stream.

    Args:
        expected_bytes: Size of the stream, if known (a capture file): the tables are sized for
            a busy stream of that size once (zeroed pages cost nothing until written); otherwise
            they double as needed.
    """

    def __init__(self, expected_bytes: int = 0) -> None:
        self.spans = np.zeros((k.SP_COLS, max(4096, expected_bytes // 40)), np.int64)
        self.infs = np.zeros((k.IN_COLS, 2 * k.NEED_INF + expected_bytes // 400), np.int64)
        # Per-layer records (cache operations, NPU jobs) come every ~45 bytes of a busy stream, with
        # ~2.3 payload words each: sized for that, the tables are not copied while they fill.
        self.events = np.zeros((k.EV_COLS, max(1024, expected_bytes // 40)), np.int64)
        self.words = np.zeros(max(8192, expected_bytes // 16), np.int64)
        self.text = np.zeros(4096, np.uint8)
        self.text_time = np.zeros(4096, np.int64)
        self.dwt = k.new_dwt_table()
        self.stack_names: dict[int, str] = {}
        self.gathered = GatheredEvents(self.events.shape[1])

    # -- growth ----------------------------------------------------------------------------------
    def reserve(self, state: np.ndarray, packets: int) -> None:
        """Make room for what ``packets`` packets can produce at most (a span takes >= 6 packets)."""
        spans = int(state[k.S_N_SPANS]) + packets // 6 + 1
        if spans > self.spans.shape[1]:
            self.spans = _wider(self.spans, spans)
        events = int(state[k.S_N_EVENTS]) + packets // 3 + k.NEED_EVENTS
        if events > self.events.shape[1]:
            self.events = _wider(self.events, events)

    def grow(self, state: np.ndarray) -> None:
        """Grow whichever table the kernel stopped on."""
        s = state
        if s[k.S_N_SPANS] + 1 > self.spans.shape[1]:
            self.spans = _wider(self.spans)
        if s[k.S_N_INF] + k.NEED_INF > self.infs.shape[1]:
            self.infs = _wider(self.infs)
        if s[k.S_N_EVENTS] + k.NEED_EVENTS > self.events.shape[1]:
            self.events = _wider(self.events)
        if s[k.S_N_WORDS] + k.NEED_WORDS > self.words.shape[0]:
            self.words = _longer(self.words)
        if s[k.S_N_TEXT] + k.NEED_TEXT > self.text.shape[0]:
            self.text = _longer(self.text)
            self.text_time = _longer(self.text_time)
        if s[k.S_N_DWT] + 1 > self.dwt.shape[1]:
            self.dwt = _wider(self.dwt)

    # -- columns ---------------------------------------------------------------------------------
    def span_columns(
        self,
        first: int,
        end: int,
        pmu_names: tuple[str, ...],
        isr_cycles: Callable[[np.ndarray, np.ndarray], np.ndarray],
        owned: bool = False,
    ) -> LayerSpans:
        """Span rows ``first:end``: views into the table (copy before the table changes), or with
        ``owned`` arrays of their own (safe to keep after the table changes, and across threads).

        Args:
            first: The first row.
            end: The row after the last.
            pmu_names: The PMU counters the rows' columns hold, in order.
            isr_cycles: A new array of the handler time inside each span, from their starts and ends.
            owned: Copy the columns that would be views (those made anew are not copied again).
        """
        t = self.spans

        def column(row: int) -> np.ndarray:
            return t[row, first:end].copy() if owned else t[row, first:end]

        pmu = t[k.SP_PMU : k.SP_PMU + len(pmu_names), first:end]
        return LayerSpans(
            inference=column(k.SP_INFERENCE),
            layer=t[k.SP_LAYER, first:end].astype(np.int32),
            start=column(k.SP_START),
            end=column(k.SP_END),
            complete=t[k.SP_COMPLETE, first:end].astype(bool),
            isr_cycles=isr_cycles(t[k.SP_START, first:end], t[k.SP_END, first:end]),
            # Counter by counter (column-major), as the table holds them: each counter's values
            # contiguous, for the per-counter sums (tracer.analysis.pmu, tracer.analysis.samples).
            pmu=(pmu.copy() if owned else pmu).T,
            pmu_names=pmu_names,
        )

    def inference_columns(self, first: int, end: int) -> Inferences:
        """Inference rows ``first:end``, their problem bits in words."""
        t = self.infs
        bits = t[k.IN_PROBLEMS, first:end]
        problems: list[tuple[str, ...]] = [()] * (end - first)
        for i in np.flatnonzero(bits).tolist():
            row = first + i
            problems[i] = describe_problems(int(bits[i]), int(t[k.IN_LOST, row]), int(t[k.IN_STATUS, row]))
        return Inferences(
            number=t[k.IN_NUMBER, first:end],
            start=t[k.IN_START, first:end],
            end=t[k.IN_END, first:end],
            complete=t[k.IN_COMPLETE, first:end].astype(bool),
            input_crc=t[k.IN_INPUT_CRC, first:end],
            output_crc=t[k.IN_OUTPUT_CRC, first:end],
            problems=problems,
        )

    def used_pmu_columns(self, first: int, end: int, at_least: int = 0) -> int:
        """How many PMU columns spans ``first:end`` use (0: none measured), or ``at_least`` if more
        (only the columns after those are read).
        """
        if end > first:
            pmu = self.spans[k.SP_PMU : k.SP_PMU + k.PMU_COLUMNS, first:end]
            for j in range(k.PMU_COLUMNS - 1, at_least - 1, -1):  # the last column measured: its maximum is not -1
                if int(pmu[j].max()) >= 0:
                    return j + 1
        return at_least

    def event_words(self, row: int) -> np.ndarray:
        """The payload words of event ``row`` (after its time word)."""
        off, count = int(self.events[k.EV_WORDS, row]), int(self.events[k.EV_COUNT, row])
        return self.words[off : off + count]

    def words_of(self, rows: np.ndarray, count: int) -> list[np.ndarray]:
        """Payload words ``0..count-1`` of each event row (where they start looked up once)."""
        at = self.events[k.EV_WORDS, rows]
        return [self.words[at + i] for i in range(count)]

    # -- records kept as columns -----------------------------------------------------------------
    def regather(self) -> None:
        """Event or word rows were dropped (their row numbers changed): the columns are gathered
        again from the first row (views of the old ones stay valid).
        """
        self.gathered = GatheredEvents(self.events.shape[1])

    def gather(self, state: np.ndarray) -> GatheredEvents:
        """The per-layer records of every event row so far gathered into columns (only the rows new
        since the last call are read: called after each batch, the end of a stream finds them ready).
        """
        self.gathered.add(self.events, self.words, int(state[k.S_N_EVENTS]))
        return self.gathered

    def arena(self, state: np.ndarray) -> LazyRecords[ArenaSample]:
        """Arena reports."""
        rows = self.gather(state).arena.column(0)
        ev = self.events
        columns = (ev[k.EV_TIME, rows], *self.words_of(rows, 2), ev[k.EV_INFERENCE, rows])
        return LazyRecords(_arena_sample, columns)

    def stacks(self, state: np.ndarray) -> LazyRecords[StackSample]:
        """Stack reports, named as their first report named them."""
        rows = self.gather(state).stacks.column(0)
        head, size, high_water = self.words_of(rows, 3)
        ids = head & 0xFF
        for stack_id, at in zip(*(a.tolist() for a in np.unique(ids, return_index=True))):
            if stack_id not in self.stack_names:
                words = self.event_words(int(rows[at])).tolist()
                self.stack_names[stack_id] = record_string(words[3:], (words[0] >> 16) & 0xFF) or f"stack{stack_id}"
        names = self.stack_names
        columns = (self.events[k.EV_TIME, rows], ids, high_water, size, (head >> 8) & 1)
        return LazyRecords(lambda t, i, hw, size, ok: StackSample(t, names[i], hw, size, bool(ok)), columns)

    def cache_ops(self, state: np.ndarray) -> LazyRecords[CacheOp]:
        """Cache maintenance operations."""
        return LazyRecords(cache_op_of_row, self.gather(state).cache_ops.columns())

    def npu_jobs(self, state: np.ndarray) -> LazyRecords[NpuJob]:
        """NPU jobs. Jobs do not nest: an end pairs with the begin just before it, if the job ids
        agree (:func:`~tracer.telemetry.kernel.gather_events`).
        """
        return LazyRecords(npu_job_of_row, self.gather(state).npu_jobs.columns()[:4])


class GatheredEvents:
    """The per-layer records among the event rows ``:done``, gathered into columns
    (:func:`~tracer.telemetry.kernel.gather_events`): the rows of arena and stack reports, and the
    columns of cache operations and NPU jobs (the frequent ones).

    Gathered rows are never written again (a view handed out stays valid); the tables start a new
    one (:meth:`RecordTables.regather`) when the decoder drops event rows (row numbers change).

    Args:
        capacity: Rows to make room for at first (the event table's: then it never grows).
    """

    def __init__(self, capacity: int = 1024) -> None:
        self.done = 0  # event rows gathered
        self.last_job = -1  # the last NPU job begin or end row among them (-1: none)
        self.arena = _Growing(1, capacity)
        self.stacks = _Growing(1, capacity)
        self.cache_ops = _Growing(5, capacity)
        self.npu_jobs = _Growing(5, capacity)  # and the row of each job's end

    def jobs_ended_before(self, row: int) -> int:
        """How many of the NPU jobs gathered end (and so begin) before event row ``row``."""
        return int(np.searchsorted(self.npu_jobs.column(4), row))

    def add(self, events: np.ndarray, words: np.ndarray, n_events: int) -> None:
        """Gather event rows ``done:n_events`` of the kernel's tables."""
        if n_events <= self.done:
            return
        more = n_events - self.done
        arena, stacks, cache_ops, npu_jobs = self.arena, self.stacks, self.cache_ops, self.npu_jobs
        arena.used, stacks.used, cache_ops.used, npu_jobs.used, self.last_job = k.gather_events(
            events, words, self.done, n_events, self.last_job,
            arena.room(more), arena.used, stacks.room(more), stacks.used,
            cache_ops.room(more), cache_ops.used, npu_jobs.room(more), npu_jobs.used,
        )  # fmt: skip
        self.done = n_events


class _Growing:
    """Column-major int64 columns that rows are added to (the rows written never change)."""

    def __init__(self, width: int, capacity: int) -> None:
        self._table = np.empty((width, capacity), np.int64)  # (only the columns used are read)
        self.used = 0

    def room(self, more: int) -> np.ndarray:
        """The table, with room for ``more`` columns after those used (a new table when it had not:
        views of the old one stay valid).
        """
        if self.used + more > self._table.shape[1]:
            table = np.empty((self._table.shape[0], max(2 * self._table.shape[1], self.used + more)), np.int64)
            table[:, : self.used] = self._table[:, : self.used]
            self._table = table
        return self._table

    def columns(self) -> list[np.ndarray]:
        """Views of the rows added so far, one per column."""
        return [column[: self.used] for column in self._table]

    def column(self, i: int) -> np.ndarray:
        """A view of column ``i`` so far."""
        return self._table[i, : self.used]


def of_types(column: np.ndarray, types: Iterable[int]) -> np.ndarray:
    """Where ``column`` holds one of ``types`` (a few record types).

    Comparisons, not ``np.isin``: over every event row of a busy stream they cost several times less.
    """
    mask = np.zeros(len(column), bool)
    for t in types:
        mask |= column == int(t)
    return mask


def last_row(column: np.ndarray, wanted: Callable[[np.ndarray], np.ndarray]) -> int:
    """The last row of ``column`` where ``wanted`` (of a stretch of it) holds; -1: none.

    Looked for in ever longer stretches from the end: what is looked for is usually near it, and
    the column is as long as a window.
    """
    end, length = len(column), 256
    while end > 0:
        start = max(end - length, 0)
        found = np.flatnonzero(wanted(column[start:end]))
        if len(found):
            return start + int(found[-1])
        end, length = start, 2 * length
    return -1


def record_string(words: list[int], length: int) -> str:
    """A string a record carries in its words (little-endian bytes, ``length`` of them)."""
    return struct.pack(f"<{len(words)}I", *words)[:length].decode("utf-8", "replace")


def shift_columns(table: np.ndarray, drop: int, used: int) -> None:
    """Move columns ``drop:used`` of a column-major table to the front."""
    keep = used - drop
    if keep > 0:
        table[:, :keep] = table[:, drop:used].copy()


def shift(array: np.ndarray, drop: int, used: int) -> None:
    """Move elements ``drop:used`` of an array to the front."""
    keep = used - drop
    if keep > 0:
        array[:keep] = array[drop:used].copy()


def own_inferences(inf: Inferences) -> Inferences:
    """A copy that owns its arrays (safe to keep after the tables change, and across threads)."""
    return Inferences(
        number=inf.number.copy(),
        start=inf.start.copy(),
        end=inf.end.copy(),
        complete=inf.complete.copy(),
        input_crc=inf.input_crc.copy(),
        output_crc=inf.output_crc.copy(),
        problems=list(inf.problems),
    )


def _wider(table: np.ndarray, at_least: int = 0) -> np.ndarray:
    out = np.zeros((table.shape[0], max(table.shape[1] * 2, at_least)), table.dtype)
    out[:, : table.shape[1]] = table
    return out


def _longer(array: np.ndarray) -> np.ndarray:
    out = np.zeros(array.shape[0] * 2, array.dtype)
    out[: array.shape[0]] = array
    return out


def cache_op_of_row(cycle: int, op: int, address: int, length: int, inference: int) -> CacheOp:
    """A cache operation from the tables' columns (op code as on the wire; inference -1: none)."""
    return CacheOp(cycle, CACHE_OPS.get(op, f"op{op}"), address, length, None if inference < 0 else inference)


def npu_job_of_row(start: int, end: int, inference: int, job: int) -> NpuJob:
    """An NPU job from the tables' columns (inference -1: none)."""
    return NpuJob(start, end, None if inference < 0 else inference, job)


def _arena_sample(cycle: int, used: int, size: int, inference: int) -> ArenaSample:
    return ArenaSample(cycle, used, size, None if inference < 0 else inference)
