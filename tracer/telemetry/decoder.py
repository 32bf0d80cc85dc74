"""The telemetry decoder: ITM packet batches in, an :class:`InferenceTimeline` out, incrementally.

It drives the compiled kernel and puts the timeline together; the tables the kernel writes
(:mod:`tracer.telemetry.tables`), the rare records as objects (:mod:`tracer.telemetry.firmware_records`)
and interrupts (:mod:`tracer.telemetry.isr`) live in their own modules. This one is long because
handing rows out of the tables and forgetting them again (:meth:`TelemetryDecoder.take`,
:meth:`TelemetryDecoder.discard_taken`) must keep every table, offset and counter consistent, and
that is easiest to check in one place.

Feed it :class:`~tracer.decode.packets.PacketBatch` after batch (from a capture, or live from a
worker thread) and ask at any time for the whole timeline or for the inferences completed since
the last call. Records are assembled by a compiled kernel (:mod:`tracer.telemetry.kernel`) into
column tables; only rare records (memory, marks, layer descriptions, console text) become Python
objects. The wire format and the loss rules are described in :mod:`tracer.telemetry.wire` and in
the kernel module.

Only closed inferences are published: the one in progress appears once its end record arrives,
or, incomplete, at :meth:`TelemetryDecoder.finish`.

Interrupts come from the DWT exception trace and from the firmware's ISR marks
(:mod:`tracer.telemetry.isr`); each layer span's ``isr_cycles`` is the handler time inside it.

A stream that never ends (a live session) takes what is new with :meth:`TelemetryDecoder.take`
and then calls :meth:`TelemetryDecoder.discard_taken` (and :meth:`TelemetryDecoder.discard_isrs`):
the tables keep only what is still open, so memory stays flat however long the stream runs, and
the decoder carries on exactly as if nothing had been discarded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container
from typing import Any

import numpy as np

from tracer.base.columns import LazyRecords
from tracer.base.counters import CYCLE_COUNTER
from tracer.base.facts import ExceptionTraceFacts, IsrMarkFacts, IsrSources, StreamFacts, TargetFacts, TargetRestart
from tracer.base.timeline import (
    NPU_PMU_LABEL,
    SIMULATED,
    ArenaSample,
    BufferCrc,
    CacheOp,
    ConsoleLine,
    Engine,
    Inferences,
    InferenceTimeline,
    IsrSlice,
    LayerInfo,
    LayerSpans,
    LossCounters,
    Mark,
    NpuJob,
    StackSample,
    TelemetryRecord,
)
from tracer.decode.packets import PacketBatch
from tracer.telemetry import kernel as k
from tracer.telemetry.firmware_records import FirmwareRecords, TargetInfo
from tracer.telemetry.freertos_itm import Picked, pick
from tracer.telemetry.isr import (
    BASIS_CYCLES_ORDER,
    BASIS_CYCLES_TS,
    HandlerTime,
    HardwareEvents,
    cycles_per_tick,
    merge_slices,
)
from tracer.telemetry.pmu_events import event_name, event_unit
from tracer.telemetry.record_facts import attach_record_facts
from tracer.telemetry.span_facts import TimelineFacts
from tracer.telemetry.tables import (
    COLUMN_TYPES,
    RecordTables,
    last_row,
    of_types,
    own_inferences,
    shift,
    shift_columns,
)
from tracer.telemetry.wire import RecordType

EMULATED_LABEL = "emulated: QEMU -icount counts instructions, not real CPU cycles"
RESTART_REASONS = {
    k.RESTART_TARGET_INFO: "target_info",
    k.RESTART_TIME_BACK: "time_went_back",
    k.RESTART_SEQUENCE: "sequence_restarted",
}


def _no_records() -> LazyRecords[Any]:
    return LazyRecords(lambda: None, [])


@dataclasses.dataclass
class NewRows:
    """What :meth:`TelemetryDecoder.take` hands out: rows new since the last take (owned copies,
    safe to keep and to read from another thread).

    Attributes:
        inferences: The inferences closed since the last take.
        spans: Their layer spans, in order.
        span_engines: Engine code of each span (0 CPU, 1 NPU), as its begin record said.
        span_first, span_end: Per inference, its spans are rows ``span_first:span_end`` of ``spans``.
        arena, stacks, cache_ops, npu_jobs: Memory samples and per-layer events new since the last take.
        console: Console lines completed since the last take.
        marks, crcs, records: Marks, buffer CRCs and other checked records new since the last take.
    """

    inferences: Inferences = dataclasses.field(default_factory=lambda: Inferences.from_rows([]))
    spans: LayerSpans = dataclasses.field(default_factory=LayerSpans.empty)
    span_engines: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    span_first: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    span_end: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    arena: LazyRecords[ArenaSample] = dataclasses.field(default_factory=_no_records)
    stacks: LazyRecords[StackSample] = dataclasses.field(default_factory=_no_records)
    cache_ops: LazyRecords[CacheOp] = dataclasses.field(default_factory=_no_records)
    npu_jobs: LazyRecords[NpuJob] = dataclasses.field(default_factory=_no_records)
    console: list[ConsoleLine] = dataclasses.field(default_factory=list)
    marks: list[Mark] = dataclasses.field(default_factory=list)
    crcs: list[BufferCrc] = dataclasses.field(default_factory=list)
    records: list[TelemetryRecord] = dataclasses.field(default_factory=list)


class TelemetryDecoder:
    """Decodes telemetry records incrementally.

    Not thread-safe: feed it and read from it on one thread (a live front end's worker), and hand
    the timelines it returns to other threads; those never change afterwards. Per-layer records
    (cache operations, NPU jobs, arena and stack samples) come back as
    :class:`~tracer.base.columns.LazyRecords`: read-only sequences built on access.

    The work is shared out: :class:`~tracer.telemetry.tables.RecordTables` holds what the kernel
    writes, :class:`~tracer.telemetry.firmware_records.FirmwareRecords` the rare records as
    objects, :class:`~tracer.telemetry.isr.HardwareEvents` the DWT exception and data trace, and
    :class:`~tracer.telemetry.span_facts.TimelineFacts` tasks, work counts and CPU counters; this
    class drives the kernel and puts the timeline together.

    Args:
        clock_hz: The clock of the timestamps, used until the firmware's target-info record says.
        source: Where the bytes come from (shown in reports).
        expected_bytes: Size of the stream, if known (a capture file): the tables are sized once.
    """

    def __init__(self, clock_hz: int | None = None, source: str = "", expected_bytes: int = 0) -> None:
        self.clock_hz = clock_hz
        self.source = source
        self._state, self._pend, self._pmu = k.new_state()
        self._tables = RecordTables(expected_bytes)
        self.firmware = FirmwareRecords()
        self.finished = False
        self.warnings: list[str] = []
        self._events_done = 0  # event rows turned into objects (or left as columns)
        self._text_done = 0  # text bytes turned into console lines
        self._taken = 0  # inference rows handed out by take()
        # Facts learned from span rows, kept when the rows are discarded (a stream read in windows),
        # each read from the rows published since it was last asked for: a row is read once, not
        # with every timeline or take while it is held.
        self._engines: dict[int, Engine] = {}  # undescribed layers' engine, from their first span
        self._engines_from = 0  # span rows read for it
        self._pmu_used = 0  # PMU columns any span used
        self._pmu_from = 0  # span rows read for it
        # What take() handed out: span rows, event rows, and rows of each event list / list.
        self._spans_taken = 0
        self._events_taken = 0
        self._seen = {"arena": 0, "stacks": 0, "cache_ops": 0, "npu_jobs": 0}
        self._lists_taken = {"console": 0, "marks": 0, "crcs": 0, "records": 0}
        self._hardware = HardwareEvents()
        self._isr_cache: tuple[tuple[int, int, float], LazyRecords[IsrSlice], HandlerTime] | None = None
        self._facts = TimelineFacts()  # task lane, work counts, CPU counters
        self.restarts: list[TargetRestart] = []  # where the target started again (new sessions)

    # -- what the firmware said (see FirmwareRecords) -------------------------------------------
    @property
    def target(self) -> TargetInfo | None:
        """The target-info record, once it arrived."""
        return self.firmware.target

    @property
    def layers(self) -> dict[int, LayerInfo]:
        """Layer descriptions by index."""
        return self.firmware.layers

    @property
    def pmu_npu(self) -> int:
        """The Ethos-U the PMU configuration names (0 before it arrived)."""
        return self.firmware.pmu_npu

    @property
    def pmu_event_ids(self) -> tuple[int, ...]:
        """The configured PMU event numbers."""
        return self.firmware.pmu_event_ids

    @property
    def pmu_simulated(self) -> bool:
        """The PMU configuration says its values are simulated."""
        return self.firmware.pmu_simulated

    @property
    def firmware_dropped(self) -> int:
        """Records the firmware said it could not send."""
        return self.firmware.firmware_dropped

    @property
    def isr_names(self) -> dict[int, str]:
        """Exception numbers the firmware named."""
        return self.firmware.isr_names

    # -- feeding ---------------------------------------------------------------------------------
    def feed(self, batch: PacketBatch) -> None:
        """Decode the records in ``batch`` (packets in stream order): :meth:`read_beside`, then
        :meth:`assemble`.
        """
        self.read_beside(batch)
        self.assemble(batch)

    def read_beside(self, batch: PacketBatch) -> None:
        """Read what the stream carries beside the records (a FreeRTOS ITM trace's task switches).

        It needs the batches in stream order but nothing of the records, so it may run on another
        thread, ahead of :meth:`assemble` (:func:`tracer.pipeline.capture.decode_capture` does),
        provided nothing reads the decoder before both have seen the whole stream.
        """
        self.read_picked(self.pick_beside(batch))

    @staticmethod
    def pick_beside(batch: PacketBatch) -> Picked | None:
        """The packets of ``batch`` that :meth:`read_beside` reads (None: none). It reads only the
        batch, so it may run on another thread, ahead, even where :meth:`read_picked` must keep
        step with :meth:`assemble` (a stream cut into windows).
        """
        return pick(batch)

    def read_picked(self, picked: Picked | None) -> None:
        """:meth:`read_beside` of the batch ``picked`` was picked from."""
        self._facts.read(picked)

    def assemble(self, batch: PacketBatch) -> None:
        """Decode the records in ``batch`` into inferences, spans and events (without
        :meth:`read_beside`).
        """
        n = len(batch)
        t = self._tables
        t.reserve(self._state, n)
        i = 0
        while i < n:
            i = k.decode_records(
                batch.kind,
                batch.a,
                batch.b,
                batch.c,
                batch.flags,
                batch.ts,
                batch.offset,
                i,
                self._state,
                self._pend,
                self._pmu,
                t.spans,
                t.infs,
                t.events,
                t.words,
                t.text,
                t.text_time,
                t.dwt,
            )
            if i < n:
                t.grow(self._state)
        # The per-layer records' columns, gathered while the rows are fresh in the cache, and
        # while the thread reading ahead still decodes (docs/decoder.md, "Threads"): the timeline
        # at the stream's end finds them ready.
        t.gather(self._state)

    def finish(self) -> None:
        """End of stream: a cut record is damaged, an inference in progress is incomplete, an
        interrupt still open has no known end (counted, dropped).
        """
        if not self.finished:
            k.finish_stream(self._state, self._tables.infs, self._tables.spans)
            self.finished = True
            self._convert()
            self.firmware.end_text()
            self.firmware.isr_marks.pairing.drop_open()
            self._hardware.pairing.drop_open()

    # -- reading ---------------------------------------------------------------------------------
    @property
    def loss(self) -> LossCounters:
        """What was lost or damaged so far."""
        s = self._state
        return LossCounters(
            overflows=int(s[k.S_OVERFLOWS]),
            gaps=int(s[k.S_GAPS]),
            lost_records=int(s[k.S_LOST_RECORDS]),
            damaged_records=int(s[k.S_DAMAGED]),
            orphan_packets=int(s[k.S_ORPHANS]),
            desyncs=int(s[k.S_DESYNCS]),
        )

    @property
    def records_accepted(self) -> int:
        """Records that passed every check."""
        return int(self._state[k.S_RECORDS])

    @property
    def published_inferences(self) -> int:
        """Inference rows that are closed (final)."""
        n = int(self._state[k.S_N_INF])
        return n - 1 if self._state[k.S_INF_OPEN] else n

    def _published_spans(self) -> int:
        if self._state[k.S_INF_OPEN]:
            return int(self._state[k.S_INF_FIRST_SPAN])
        return int(self._state[k.S_N_SPANS])

    def timeline(self, rows: bool = True) -> InferenceTimeline:
        """Everything decoded so far, as a timeline (closed inferences only until :meth:`finish`).

        Args:
            rows: False: without the inference and span rows, memory reports, cache operations and
                NPU jobs, for a caller that puts the rows :meth:`take` gave on it (a window); its
                task lane, span facts and record facts (samples, buffers, CPU accesses, sync pins:
                :mod:`tracer.telemetry.record_facts`) are then the caller's to make too, unless the
                stream has a FreeRTOS trace (whose lane is the decoder's: then everything is made).
        """
        self._convert()
        n_inf = self.published_inferences
        n_spans = self._published_spans()
        info = self.firmware.target
        isrs, handlers = self._isr_slices()
        fw = self.firmware
        rows = rows or bool(self._facts.freertos_itm.records)
        t, s = self._tables, self._state
        timeline = InferenceTimeline(
            clock_hz=info.clock_hz if info and info.clock_hz else self.clock_hz,
            clock_source=info.time_source.label if info else "unknown",
            labels=self._labels(),
            layers=self._layer_infos(n_spans),
            inferences=t.inference_columns(0, n_inf if rows else 0),
            spans=self._span_columns(0, n_spans if rows else 0),
            arena=t.arena(s) if rows else [],
            stacks=t.stacks(s) if rows else [],
            cache_ops=t.cache_ops(s) if rows else [],
            npu_jobs=t.npu_jobs(s) if rows else [],
            isrs=isrs,
            console=list(fw.console),
            marks=list(fw.marks),
            pmu_events=self._pmu_event_names(),
            loss=self.loss,
            source=self.source,
            target=self._target_facts(),
            stream=self._stream_facts(),
            npu=f"Ethos-U{fw.pmu_npu}" if fw.pmu_event_ids else None,
            isr_sources=self._isr_sources(),
            data_trace=self._hardware.accesses(cycles_per_tick(self._state)),
            pmu_units={name: event_unit(name) for name in self._pmu_names()},
            crcs=list(fw.crcs),
            records=list(fw.records),
        )
        if rows:
            self._facts.attach(timeline, self.end_time, handlers)
            attach_record_facts(timeline)
        return timeline

    @property
    def end_time(self) -> int | None:
        """Time of the last record so far on the time line (None: no time yet); the last task
        slice of a timeline ends there.
        """
        s = self._state
        return k.on_time_line(s) if s[k.S_HAVE_TIME] else None

    # -- taking and discarding (streams that never end) ------------------------------------------
    def take(self) -> NewRows:
        """The inferences closed and the events decoded since the last take, as owned copies.

        Rows stay in the tables (and in :meth:`timeline`) until :meth:`discard_taken`.
        """
        self._convert()
        rows = NewRows()
        first, end = self._taken, self.published_inferences
        if end > first:
            span_lo = int(self._tables.infs[k.IN_SPAN_FIRST, first])
            span_hi = int(self._tables.infs[k.IN_SPAN_END, end - 1])
            rows.inferences = own_inferences(self._tables.inference_columns(first, end))
            rows.spans = self._span_columns(span_lo, span_hi, owned=True)
            rows.span_engines = self._tables.spans[k.SP_ENGINE, span_lo:span_hi].copy()
            rows.span_first = np.clip(self._tables.infs[k.IN_SPAN_FIRST, first:end] - span_lo, 0, span_hi - span_lo)
            rows.span_end = np.clip(self._tables.infs[k.IN_SPAN_END, first:end] - span_lo, 0, span_hi - span_lo)
            self._taken = end
            self._spans_taken = span_hi
        t, s = self._tables, self._state
        for name, records in (
            ("arena", t.arena(s)),
            ("stacks", t.stacks(s)),
            ("cache_ops", t.cache_ops(s)),
            ("npu_jobs", t.npu_jobs(s)),
        ):
            setattr(rows, name, records[self._seen[name] :])
            self._seen[name] = len(records)
        self._events_taken = int(self._state[k.S_N_EVENTS])
        for name in self._lists_taken:
            items = getattr(self.firmware, name)
            setattr(rows, name, items[self._lists_taken[name] :])
            self._lists_taken[name] = len(items)
        return rows

    def discard_taken(self) -> None:
        """Forget the rows :meth:`take` handed out; keep what is still open (the inference in
        progress, an NPU job waiting for its end). Decoding carries on exactly as before: sequence
        numbers, time unwrapping and the open inference are state, not rows.
        """
        s = self._state
        is_open = bool(s[k.S_INF_OPEN])
        # Spans: only the inference in progress owns rows that were not handed out.
        span_drop = min(int(s[k.S_INF_FIRST_SPAN]) if is_open else int(s[k.S_N_SPANS]), self._spans_taken)
        # Inference rows: keep the one before the first untaken row (the kernel reads it when an
        # inference whose begin was lost learns its number).
        inf_drop = max(self._taken - 1, 0)
        # Events: those handed out, except the open inference's own (an NPU job begin awaits its end).
        n_events = int(s[k.S_N_EVENTS])
        event_drop = min(n_events, self._events_taken)
        # (Both looked for from the end, where they are: not a pass over every event handed out.)
        if is_open and event_drop:
            number = self._tables.infs[k.IN_NUMBER, int(s[k.S_INF_ROW])]
            event_drop = last_row(self._tables.events[k.EV_INFERENCE, :event_drop], lambda v: v != number) + 1
        # An NPU job begin whose end has not come yet stays too (its end may come after damage
        # has closed its inference).
        types = self._tables.events[k.EV_TYPE, :event_drop]
        job = last_row(types, lambda v: of_types(v, (RecordType.NPU_JOB_BEGIN, RecordType.NPU_JOB_END)))
        if job >= 0 and types[job] == RecordType.NPU_JOB_BEGIN:
            event_drop = job
        n_words = int(s[k.S_N_WORDS])
        word_drop = int(self._tables.events[k.EV_WORDS, event_drop]) if event_drop < n_events else n_words
        self._forget_seen(event_drop)
        if span_drop:
            shift_columns(self._tables.spans, span_drop, int(s[k.S_N_SPANS]))
            s[k.S_N_SPANS] -= span_drop
            s[k.S_INF_FIRST_SPAN] = max(int(s[k.S_INF_FIRST_SPAN]) - span_drop, 0)
            self._spans_taken -= span_drop
            self._engines_from = max(self._engines_from - span_drop, 0)
            self._pmu_from = max(self._pmu_from - span_drop, 0)
        n_inf = int(s[k.S_N_INF])
        if inf_drop:
            shift_columns(self._tables.infs, inf_drop, n_inf)
            n_inf -= inf_drop
            s[k.S_N_INF] = n_inf
            s[k.S_INF_ROW] = max(int(s[k.S_INF_ROW]) - inf_drop, 0)
            self._taken -= inf_drop
        if span_drop and n_inf:
            for row in (k.IN_SPAN_FIRST, k.IN_SPAN_END):
                self._tables.infs[row, :n_inf] = np.maximum(self._tables.infs[row, :n_inf] - span_drop, 0)
        if event_drop:
            shift_columns(self._tables.events, event_drop, n_events)
            s[k.S_N_EVENTS] = n_events - event_drop
            self._events_done = max(self._events_done - event_drop, 0)
            self._events_taken -= event_drop
        if word_drop:
            shift(self._tables.words, word_drop, n_words)
            s[k.S_N_WORDS] = n_words - word_drop
            self._tables.events[k.EV_WORDS, : int(s[k.S_N_EVENTS])] -= word_drop
        if event_drop or word_drop:
            self._tables.regather()
        if self._text_done:  # text already turned into console lines
            n_text = int(s[k.S_N_TEXT])
            shift(self._tables.text, self._text_done, n_text)
            shift(self._tables.text_time, self._text_done, n_text)
            s[k.S_N_TEXT] = n_text - self._text_done
            self._text_done = 0
        for name, count in self._lists_taken.items():
            del getattr(self.firmware, name)[:count]
            self._lists_taken[name] = 0

    def _forget_seen(self, event_drop: int) -> None:
        """Event rows ``:event_drop`` are going: count them out of what take() has seen."""
        if not event_drop:
            return
        types = self._tables.events[k.EV_TYPE, :event_drop]
        self._seen["arena"] -= int(np.count_nonzero(types == int(RecordType.ARENA)))  # (ints: IntEnums compare slower)
        self._seen["stacks"] -= int(np.count_nonzero(types == int(RecordType.STACK)))
        self._seen["cache_ops"] -= int(np.count_nonzero(types == int(RecordType.CACHE_OP)))
        self._seen["npu_jobs"] -= self._tables.gather(self._state).jobs_ended_before(event_drop)

    @property
    def untaken_inferences(self) -> int:
        """Inferences closed since the last :meth:`take` (a window cut now would hold them)."""
        return self.published_inferences - self._taken

    @property
    def held_rows(self) -> dict[str, int]:
        """Rows held in the tables now (a caller of :meth:`discard_taken` checks they stay bounded)."""
        s = self._state
        return {
            "spans": int(s[k.S_N_SPANS]),
            "inferences": int(s[k.S_N_INF]),
            "events": int(s[k.S_N_EVENTS]),
            "words": int(s[k.S_N_WORDS]),
            "text": int(s[k.S_N_TEXT]),
        }

    # -- interrupts ------------------------------------------------------------------------------
    def _isr_slices(self) -> tuple[LazyRecords[IsrSlice], HandlerTime]:
        """Every interrupt slice so far and their union (cached until new slices close)."""
        ratio = cycles_per_tick(self._state)
        key = (len(self.firmware.isr_marks.pairing), len(self._hardware.pairing), ratio)
        if self._isr_cache is None or self._isr_cache[0] != key:
            slices = merge_slices(
                self.firmware.isr_marks.pairing, self._hardware.pairing, ratio, self.firmware.isr_names
            )
            self._isr_cache = (key, slices, HandlerTime.of(slices))
        return self._isr_cache[1], self._isr_cache[2]

    def isr_slices(self) -> LazyRecords[IsrSlice]:
        """The interrupt slices held now (all of them, unless :meth:`discard_isrs` dropped some), in
        start order, named as the firmware named them (``ISR_INFO``), else by the architecture.

        The sequence is built anew whenever a slice closes, never changed afterwards: another
        thread may keep it.
        """
        return self._isr_slices()[0]

    def discard_isrs(self, before: int) -> int:
        """Forget interrupt slices that ended before cycle ``before`` (a live session that keeps only
        recent data calls this, so that memory stays flat); returns how many were dropped.

        DWT data-trace accesses from before ``before`` go too (they are not counted in the result).
        Exception-trace slices timed in timestamp ticks or byte offsets (no records) are kept.
        """
        dropped = self.firmware.isr_marks.pairing.discard_ended_before(before)
        self._hardware.discard_accesses_before(before)
        if self._hardware.basis in (BASIS_CYCLES_TS, BASIS_CYCLES_ORDER):
            dropped += self._hardware.pairing.discard_ended_before(before)
        if dropped:
            self._isr_cache = None
        return dropped

    def discard_accesses(self, before: int) -> int:
        """Forget the DWT data-trace accesses :meth:`discard_isrs` would forget, and say how many:
        the first ones of :meth:`timeline`'s ``data_trace`` (a stream read in windows hands them
        to the window they belong to).
        """
        return self._hardware.discard_accesses_before(before)

    def _isr_sources(self) -> IsrSources:
        """Where interrupt slices came from and what pairing could not do."""
        hw, marks = self._hardware, self.firmware.isr_marks
        mark_facts = None
        if marks.pairing.paired or any(marks.pairing.counters.to_json().values()):
            mark_facts = IsrMarkFacts(marks.pairing.paired, dataclasses.replace(marks.pairing.counters))
        trace = None
        if hw.exception_packets:
            trace = ExceptionTraceFacts(
                hw.exception_packets,
                hw.pairing.paired,
                hw.basis,
                cycles_per_tick(self._state),
                dataclasses.replace(hw.pairing.counters),
                hw.before_first_record,
            )
        return IsrSources(mark_facts, trace, dict(sorted(self.firmware.isr_names.items())))

    # -- tables -> model -------------------------------------------------------------------------
    def _pmu_names(self) -> tuple[str, ...]:
        if self.firmware.pmu_event_ids:
            return (CYCLE_COUNTER, *self._pmu_event_names())
        end = self._published_spans()
        used = self._pmu_used = self._tables.used_pmu_columns(self._pmu_from, end, self._pmu_used)
        self._pmu_from = max(self._pmu_from, end)
        return tuple([CYCLE_COUNTER] + [f"EVENT{i}" for i in range(max(used - 1, 0))]) if used else ()

    def _pmu_event_names(self) -> tuple[str, ...]:
        return tuple(event_name(self.firmware.pmu_npu, e) for e in self.firmware.pmu_event_ids)

    def _span_columns(self, first: int, end: int, owned: bool = False) -> LayerSpans:
        _, handlers = self._isr_slices()
        return self._tables.span_columns(first, end, self._pmu_names(), handlers.inside, owned)

    def _layer_infos(self, n_spans: int) -> dict[int, LayerInfo]:
        layers = dict(self.firmware.layers)
        spans = self._tables.spans
        lo = self._engines_from
        seen = spans[k.SP_LAYER, lo:n_spans]
        if len(seen):
            for index, at in _first_rows(seen, self._engines):
                self._engines[index] = Engine.NPU if spans[k.SP_ENGINE, lo + at] == 1 else Engine.CPU
        self._engines_from = max(lo, n_spans)
        for index, engine in self._engines.items():
            if index not in layers:
                layers[index] = LayerInfo(index, "", "", engine)
        return dict(sorted(layers.items()))

    def _labels(self) -> dict[str, str]:
        labels: dict[str, str] = {}
        target = self.firmware.target
        if self.firmware.pmu_simulated or (target and target.npu_pmu_simulated):
            labels[NPU_PMU_LABEL] = SIMULATED
        if target and target.emulated:
            labels["cycles"] = EMULATED_LABEL
        basis = self._hardware.basis
        if basis is not None and basis != BASIS_CYCLES_TS and len(self._hardware.pairing):
            labels["isr_time"] = f"exception-trace slices in {basis}"
        return labels

    def _target_facts(self) -> TargetFacts | None:
        info = self.firmware.target
        if info is None:
            return None
        return TargetFacts(info.marker_cost_cycles, info.wire_version, info.scenario, info.cpuid)

    def _stream_facts(self) -> StreamFacts:
        s = self._state
        return StreamFacts(
            records=int(s[k.S_RECORDS]),
            calibration_pairs=int(s[k.S_CALIBRATION]),
            inferences_lost_without_row=int(s[k.S_LOST_UNROWED]),
            time_reanchored=int(s[k.S_TIME_JUMPS]),
            firmware_dropped_records=self.firmware.firmware_dropped,
            restarts=tuple(self.restarts),
        )

    # -- rare records ----------------------------------------------------------------------------
    def _convert(self) -> None:
        """Turn new event rows and console bytes into objects."""
        t, fw = self._tables, self.firmware
        n_events = int(self._state[k.S_N_EVENTS])
        ev = t.events
        types = ev[k.EV_TYPE, self._events_done : n_events]
        rare = np.flatnonzero(~of_types(types, COLUMN_TYPES)) + self._events_done
        for e in rare.tolist():
            if ev[k.EV_TYPE, e] == k.EV_RESTART:
                self._restarted(int(ev[k.EV_TIME, e]), t.event_words(e))
                continue
            inference = int(ev[k.EV_INFERENCE, e])
            fw.add(int(ev[k.EV_TYPE, e]), int(ev[k.EV_TIME, e]), None if inference < 0 else inference, t.event_words(e))
        self._events_done = n_events
        self._convert_hardware()
        n_text = int(self._state[k.S_N_TEXT])
        if n_text > self._text_done:
            fw.add_text(t.text[self._text_done : n_text], t.text_time[self._text_done : n_text])
            self._text_done = n_text

    def _restarted(self, cycle: int, words: np.ndarray) -> None:
        """A restart row from the kernel: a new session; interrupts left open end with the old one."""
        reason, target_cycle, offset, session, record = (int(w) for w in words[: k.RESTART_WORDS])
        self.restarts.append(TargetRestart(session, cycle, target_cycle, offset, record, RESTART_REASONS[reason]))
        self.firmware.isr_marks.pairing.drop_open()

    def _convert_hardware(self) -> None:
        """Feed the DWT rows whose stamps are final to the interrupt and data-trace pairing."""
        s = self._state
        dwt = self._tables.dwt
        n = int(s[k.S_N_DWT])
        ready = n if self.finished or not s[k.S_TS_SEEN] else int(s[k.S_DWT_STAMP_FROM])
        if ready == 0:
            return
        self._hardware.feed(dwt[:, :ready])
        # Drop the rows handed over (only the few waiting for a stamp stay).
        if ready < n:
            dwt[:, : n - ready] = dwt[:, ready:n].copy()
        s[k.S_N_DWT] = n - ready
        s[k.S_DWT_STAMP_FROM] = max(int(s[k.S_DWT_STAMP_FROM]) - ready, 0)


def _first_rows(values: np.ndarray, known: Container[int]) -> list[tuple[int, int]]:
    """The values in ``values`` not in ``known``, each with the row it first occurs in.

    A timeline is made again and again from a live stream: the layers already known cost one
    counting pass, not a sort of every span.
    """
    if int(values.min()) >= 0 and int(values.max()) < (1 << 16):
        new = [v for v in np.flatnonzero(np.bincount(values)).tolist() if v not in known]
        if len(new) <= 64:
            return _first_rows_of(values, new)
    indices, first = np.unique(values, return_index=True)
    return [(v, at) for v, at in zip(indices.tolist(), first.tolist()) if v not in known]


def _first_rows_of(values: np.ndarray, wanted: list[int]) -> list[tuple[int, int]]:
    """Each of ``wanted`` (values that occur in ``values``) with the row it first occurs in.

    Looked for in ever longer stretches from the start: a layer first runs in the first
    inference, so the whole column is rarely read.
    """
    first = dict.fromkeys(wanted, -1)
    missing = len(wanted)
    lo, length = 0, 4096
    while missing and lo < len(values):
        part_values, part_first = np.unique(values[lo : lo + length], return_index=True)
        for v, at in zip(part_values.tolist(), part_first.tolist()):
            if first.get(v) == -1:
                first[v] = lo + at
                missing -= 1
        lo, length = lo + length, 2 * length
    return [(v, first[v]) for v in wanted]
