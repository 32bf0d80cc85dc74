"""The telemetry decoder: ITM packet batches in, an :class:`InferenceTimeline` out, incrementally.

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
import struct
from typing import Any

import numpy as np

from tracer.decode.packets import PacketBatch
from tracer.telemetry import kernel as k
from tracer.base.columns import LazyRecords
from tracer.base.facts import ExceptionTraceFacts, IsrMarkFacts, IsrSources, StreamFacts, TargetFacts
from tracer.telemetry.isr import (
    BASIS_CYCLES_ORDER,
    BASIS_CYCLES_TS,
    HandlerTime,
    HardwareEvents,
    IsrMarks,
    cycles_per_tick,
    merge_slices,
)
from tracer.base.timeline import (
    ArenaSample,
    BufferCrc,
    CacheOp,
    ConsoleLine,
    Engine,
    Inference,
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
from tracer.telemetry.pmu_events import CYCLE_COUNTER, event_name, event_unit
from tracer.telemetry.span_facts import TimelineFacts
from tracer.telemetry.wire import (
    CACHE_OPS,
    INFO_EMULATED,
    INFO_NPU_PMU_SIMULATED,
    MARK_RESERVED,
    MARKER_COST_UNKNOWN,
    PMU_CONFIG_SIMULATED,
    RecordType,
    TimeSource,
)

EMULATED_LABEL = "emulated: QEMU -icount counts instructions, not real CPU cycles"


def describe_problems(bits: int, lost: int = 0, status: int = 0) -> tuple[str, ...]:
    """Turn an inference's problem bits into the reasons shown to the user."""
    reasons = []
    if bits & k.P_LOST_ENTIRELY:
        reasons.append("every record of this inference was lost")
    if bits & k.P_LOST_RECORDS:
        reasons.append(f"{lost} record(s) lost (sequence gap)")
    if bits & k.P_OVERFLOW:
        reasons.append("ITM overflow: the target dropped trace data")
    if bits & k.P_GAP:
        reasons.append("capture gap: bytes were lost in the capture")
    if bits & k.P_DESYNC:
        reasons.append("damaged ITM stream: bytes lost or corrupted on the way")
    if bits & k.P_DAMAGED:
        reasons.append("damaged record (wrong length, check byte or shape)")
    if bits & k.P_BEGIN_MISSING:
        reasons.append("its begin record is missing")
    if bits & k.P_END_MISSING:
        reasons.append("its end record is missing")
    if bits & k.P_LAYER_MISMATCH:
        reasons.append("layer begin/end records do not pair up")
    if bits & k.P_STATUS:
        reasons.append(f"the firmware reported status {status}")
    if bits & k.P_CAPTURE_ENDED:
        reasons.append("the capture ended during this inference")
    return tuple(reasons)


def _string(words: list[int], length: int) -> str:
    return struct.pack(f"<{len(words)}I", *words)[:length].decode("utf-8", "replace")


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


@dataclasses.dataclass
class TargetInfo:
    """What the firmware said about itself (TARGET_INFO record)."""

    clock_hz: int
    time_source: TimeSource
    npu_pmu_simulated: bool
    emulated: bool
    marker_cost_cycles: float | None
    wire_version: int
    scenario: int
    cpuid: int


class TelemetryDecoder:
    """Decodes telemetry records incrementally.

    Not thread-safe: feed it and read from it on one thread (a live front end's worker), and hand
    the timelines or inference views it returns to other threads; those never change afterwards.
    Per-layer records (cache operations, NPU jobs, arena and stack samples) come back as
    :class:`~tracer.base.columns.LazyRecords`: read-only sequences built on access.

    Args:
        clock_hz: The clock of the timestamps, used until the firmware's target-info record says.
        source: Where the bytes come from (shown in reports).
        expected_bytes: Size of the stream, if known (a capture file): the tables are sized once.
    """

    def __init__(self, clock_hz: int | None = None, source: str = "", expected_bytes: int = 0) -> None:
        self.clock_hz = clock_hz
        self.source = source
        self._state, self._pend, self._pmu = k.new_state()
        # Sized for the whole stream when its size is known, so the tables never grow (zeroed
        # pages cost nothing until written); otherwise they double as needed.
        self._spans = np.zeros((k.SP_COLS, max(4096, expected_bytes // 40)), np.int64)
        self._infs = np.zeros((k.IN_COLS, 2 * k.NEED_INF + expected_bytes // 400), np.int64)
        # Per-layer records (cache operations, NPU jobs) come every ~45 bytes of a busy stream, with
        # ~2.3 payload words each: sized for that, the tables are not copied while they fill.
        self._events = np.zeros((k.EV_COLS, max(1024, expected_bytes // 40)), np.int64)
        self._words = np.zeros(max(8192, expected_bytes // 16), np.int64)
        self._text = np.zeros(4096, np.uint8)
        self._text_time = np.zeros(4096, np.int64)
        self._dwt = k.new_dwt_table()
        self.finished = False
        # Rare records, converted to objects as they arrive.
        self._events_done = 0
        self._text_done = 0
        self._line = bytearray()
        self._line_time: int | None = None
        self.target: TargetInfo | None = None
        self.firmware_dropped = 0
        self.layers: dict[int, LayerInfo] = {}
        self.pmu_npu = 0
        self.pmu_event_ids: tuple[int, ...] = ()
        self.pmu_simulated = False
        self._stack_names: dict[int, str] = {}
        self.marks: list[Mark] = []
        self.crcs: list[BufferCrc] = []
        self.records: list[TelemetryRecord] = []
        self.console: list[ConsoleLine] = []
        self.warnings: list[str] = []
        self._taken = 0  # inference rows handed out (take, take_completed)
        # What take() handed out: span rows, event rows, and rows of each event list / list.
        self._spans_taken = 0
        self._events_taken = 0
        self._seen = {"arena": 0, "stacks": 0, "cache_ops": 0, "npu_jobs": 0}
        self._lists_taken = {"console": 0, "marks": 0, "crcs": 0, "records": 0}
        # Interrupts: names the firmware gave, its marks, the DWT's exception and data trace.
        self.isr_names: dict[int, str] = {}
        self._isr_marks = IsrMarks()
        self._hardware = HardwareEvents()
        self._isr_cache: tuple[tuple[int, int, float], LazyRecords[IsrSlice], HandlerTime] | None = None
        self._facts = TimelineFacts()  # task lane, work counts, CPU counters

    # -- feeding ---------------------------------------------------------------------------------
    def feed(self, batch: PacketBatch) -> None:
        """Decode the records in ``batch`` (packets in stream order)."""
        n = len(batch)
        self._facts.feed(batch)
        self._reserve(n)
        i = 0
        while i < n:
            i = k.decode_records(
                batch.kind, batch.a, batch.b, batch.c, batch.flags, batch.ts, batch.offset, i, self._state,
                self._pend, self._pmu, self._spans, self._infs, self._events, self._words, self._text,
                self._text_time, self._dwt,
            )  # fmt: skip
            if i < n:
                self._grow()

    def finish(self) -> None:
        """End of stream: a cut record is damaged, an inference in progress is incomplete, an
        interrupt still open has no known end (counted, dropped)."""
        if not self.finished:
            k.finish_stream(self._state, self._infs, self._spans)
            self.finished = True
            self._convert()
            self._isr_marks.pairing.drop_open()
            self._hardware.pairing.drop_open()

    # -- reading ---------------------------------------------------------------------------------
    @property
    def loss(self) -> LossCounters:
        """What was lost or damaged so far."""
        s = self._state
        return LossCounters(
            overflows=int(s[k.S_OVERFLOWS]), gaps=int(s[k.S_GAPS]), lost_records=int(s[k.S_LOST_RECORDS]),
            damaged_records=int(s[k.S_DAMAGED]), orphan_packets=int(s[k.S_ORPHANS]), desyncs=int(s[k.S_DESYNCS]),
        )  # fmt: skip

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

    def timeline(self) -> InferenceTimeline:
        """Everything decoded so far, as a timeline (closed inferences only until :meth:`finish`)."""
        self._convert()
        n_inf = self.published_inferences
        n_spans = self._published_spans()
        info = self.target
        isrs, _ = self._isr_slices()
        timeline = InferenceTimeline(
            clock_hz=info.clock_hz if info and info.clock_hz else self.clock_hz,
            clock_source=info.time_source.label if info else "unknown",
            labels=self._labels(),
            layers=self._layer_infos(n_spans),
            inferences=self._inference_columns(0, n_inf),
            spans=self._span_columns(0, n_spans),
            arena=self._arena(),
            stacks=self._stacks(),
            cache_ops=self._cache_ops(),
            npu_jobs=self._npu_jobs(),
            isrs=isrs,  # type: ignore[arg-type]  # a read-only sequence, built on access
            console=list(self.console),
            marks=list(self.marks),
            pmu_events=self._pmu_event_names(),
            loss=self.loss,
            source=self.source,
            target=self._target_facts(),
            stream=self._stream_facts(),
            npu=f"Ethos-U{self.pmu_npu}" if self.pmu_event_ids else None,
            isr_sources=self._isr_sources(),
            data_trace=self._hardware.accesses(cycles_per_tick(self._state)),
            pmu_units={name: event_unit(name) for name in self._pmu_names()},
            crcs=list(self.crcs),
            records=list(self.records),
        )
        end_time = int(self._state[k.S_TIME]) if self._state[k.S_HAVE_TIME] else None
        self._facts.attach(timeline, end_time, self._isr_slices()[1])
        return timeline

    def take_completed(self) -> list[Inference]:
        """The inferences closed since the last call, with their layer spans."""
        self._convert()
        end = self.published_inferences
        out = [self._inference_view(row) for row in range(self._taken, end)]
        self._taken = end
        return out

    # -- taking and discarding (streams that never end) ------------------------------------------
    def take(self) -> NewRows:
        """The inferences closed and the events decoded since the last take, as owned copies.

        Rows stay in the tables (and in :meth:`timeline`) until :meth:`discard_taken`.
        """
        self._convert()
        rows = NewRows()
        first, end = self._taken, self.published_inferences
        if end > first:
            span_lo = int(self._infs[k.IN_SPAN_FIRST, first])
            span_hi = int(self._infs[k.IN_SPAN_END, end - 1])
            rows.inferences = _own_inferences(self._inference_columns(first, end))
            rows.spans = _own_spans(self._span_columns(span_lo, span_hi))
            rows.span_engines = self._spans[k.SP_ENGINE, span_lo:span_hi].copy()
            rows.span_first = np.clip(self._infs[k.IN_SPAN_FIRST, first:end] - span_lo, 0, span_hi - span_lo)
            rows.span_end = np.clip(self._infs[k.IN_SPAN_END, first:end] - span_lo, 0, span_hi - span_lo)
            self._taken = end
            self._spans_taken = span_hi
        for name, records in (("arena", self._arena()), ("stacks", self._stacks()),
                              ("cache_ops", self._cache_ops()), ("npu_jobs", self._npu_jobs())):  # fmt: skip
            setattr(rows, name, records[self._seen[name] :])
            self._seen[name] = len(records)
        self._events_taken = int(self._state[k.S_N_EVENTS])
        for name in self._lists_taken:
            items = getattr(self, name)
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
        if is_open and event_drop:
            number = self._infs[k.IN_NUMBER, int(s[k.S_INF_ROW])]
            others = np.flatnonzero(self._events[k.EV_INFERENCE, :event_drop] != number)
            event_drop = int(others[-1]) + 1 if len(others) else 0
        # An NPU job begin whose end has not come yet stays too (its end may come after damage
        # has closed its inference).
        types = self._events[k.EV_TYPE, :event_drop]
        jobs = np.flatnonzero((types == RecordType.NPU_JOB_BEGIN) | (types == RecordType.NPU_JOB_END))
        if len(jobs) and types[jobs[-1]] == RecordType.NPU_JOB_BEGIN:
            event_drop = int(jobs[-1])
        n_words = int(s[k.S_N_WORDS])
        word_drop = int(self._events[k.EV_WORDS, event_drop]) if event_drop < n_events else n_words
        self._forget_seen(event_drop)
        if span_drop:
            _shift_columns(self._spans, span_drop, int(s[k.S_N_SPANS]))
            s[k.S_N_SPANS] -= span_drop
            s[k.S_INF_FIRST_SPAN] = max(int(s[k.S_INF_FIRST_SPAN]) - span_drop, 0)
            self._spans_taken -= span_drop
        n_inf = int(s[k.S_N_INF])
        if inf_drop:
            _shift_columns(self._infs, inf_drop, n_inf)
            n_inf -= inf_drop
            s[k.S_N_INF] = n_inf
            s[k.S_INF_ROW] = max(int(s[k.S_INF_ROW]) - inf_drop, 0)
            self._taken -= inf_drop
        if span_drop and n_inf:
            for row in (k.IN_SPAN_FIRST, k.IN_SPAN_END):
                self._infs[row, :n_inf] = np.maximum(self._infs[row, :n_inf] - span_drop, 0)
        if event_drop:
            _shift_columns(self._events, event_drop, n_events)
            s[k.S_N_EVENTS] = n_events - event_drop
            self._events_done = max(self._events_done - event_drop, 0)
            self._events_taken -= event_drop
        if word_drop:
            _shift(self._words, word_drop, n_words)
            s[k.S_N_WORDS] = n_words - word_drop
            self._events[k.EV_WORDS, : int(s[k.S_N_EVENTS])] -= word_drop
        if self._text_done:  # text already turned into console lines
            n_text = int(s[k.S_N_TEXT])
            _shift(self._text, self._text_done, n_text)
            _shift(self._text_time, self._text_done, n_text)
            s[k.S_N_TEXT] = n_text - self._text_done
            self._text_done = 0
        for name, count in self._lists_taken.items():
            del getattr(self, name)[:count]
            self._lists_taken[name] = 0

    def _forget_seen(self, event_drop: int) -> None:
        """Event rows ``:event_drop`` are going: count them out of what take() has seen."""
        if not event_drop:
            return
        types = self._events[k.EV_TYPE, :event_drop]
        self._seen["arena"] -= int(np.count_nonzero(types == RecordType.ARENA))
        self._seen["stacks"] -= int(np.count_nonzero(types == RecordType.STACK))
        self._seen["cache_ops"] -= int(np.count_nonzero(types == RecordType.CACHE_OP))
        self._seen["npu_jobs"] -= len(self._npu_jobs(event_drop))

    @property
    def held_rows(self) -> dict[str, int]:
        """Rows held in the tables now (a caller of :meth:`discard_taken` checks they stay bounded)."""
        s = self._state
        return {"spans": int(s[k.S_N_SPANS]), "inferences": int(s[k.S_N_INF]), "events": int(s[k.S_N_EVENTS]),
                "words": int(s[k.S_N_WORDS]), "text": int(s[k.S_N_TEXT])}  # fmt: skip

    # -- interrupts ------------------------------------------------------------------------------
    def _isr_slices(self) -> tuple[LazyRecords[IsrSlice], HandlerTime]:
        """Every interrupt slice so far and their union (cached until new slices close)."""
        ratio = cycles_per_tick(self._state)
        key = (len(self._isr_marks.pairing), len(self._hardware.pairing), ratio)
        if self._isr_cache is None or self._isr_cache[0] != key:
            slices = merge_slices(self._isr_marks.pairing, self._hardware.pairing, ratio, self.isr_names)
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
        dropped = self._isr_marks.pairing.discard_ended_before(before)
        self._hardware.discard_accesses_before(before)
        if self._hardware.basis in (BASIS_CYCLES_TS, BASIS_CYCLES_ORDER):
            dropped += self._hardware.pairing.discard_ended_before(before)
        if dropped:
            self._isr_cache = None
        return dropped

    def _isr_sources(self) -> IsrSources:
        """Where interrupt slices came from and what pairing could not do."""
        hw, marks = self._hardware, self._isr_marks
        mark_facts = None
        if len(marks.pairing) or any(marks.pairing.counters.to_json().values()):
            mark_facts = IsrMarkFacts(len(marks.pairing), dataclasses.replace(marks.pairing.counters))
        trace = None
        if hw.exception_packets:
            trace = ExceptionTraceFacts(
                hw.exception_packets, len(hw.pairing), hw.basis, cycles_per_tick(self._state),
                dataclasses.replace(hw.pairing.counters), hw.before_first_record,
            )  # fmt: skip
        return IsrSources(mark_facts, trace, dict(sorted(self.isr_names.items())))

    # -- tables -> model -------------------------------------------------------------------------
    def _pmu_names(self) -> tuple[str, ...]:
        if self.pmu_event_ids:
            return (CYCLE_COUNTER, *self._pmu_event_names())
        pmu = self._spans[k.SP_PMU : k.SP_PMU + k.PMU_COLUMNS, : self._published_spans()]
        used = int(np.max(np.flatnonzero((pmu >= 0).any(axis=1)), initial=-1)) + 1
        return tuple([CYCLE_COUNTER] + [f"EVENT{i}" for i in range(max(used - 1, 0))]) if used else ()

    def _pmu_event_names(self) -> tuple[str, ...]:
        return tuple(event_name(self.pmu_npu, e) for e in self.pmu_event_ids)

    def _span_columns(self, first: int, end: int) -> LayerSpans:
        t = self._spans
        names = self._pmu_names()
        _, handlers = self._isr_slices()
        return LayerSpans(
            inference=t[k.SP_INFERENCE, first:end],
            layer=t[k.SP_LAYER, first:end].astype(np.int32),
            start=t[k.SP_START, first:end],
            end=t[k.SP_END, first:end],
            complete=t[k.SP_COMPLETE, first:end].astype(bool),
            isr_cycles=handlers.inside(t[k.SP_START, first:end], t[k.SP_END, first:end]),
            pmu=t[k.SP_PMU : k.SP_PMU + len(names), first:end].T,
            pmu_names=names,
        )

    def _inference_columns(self, first: int, end: int) -> Inferences:
        t = self._infs
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

    def _inference_view(self, row: int) -> Inference:
        t = self._infs

        def opt(value: np.int64) -> int | None:
            return None if value < 0 else int(value)

        first, end = int(t[k.IN_SPAN_FIRST, row]), int(t[k.IN_SPAN_END, row])
        spans = self._span_columns(first, end)
        return Inference(
            number=int(t[k.IN_NUMBER, row]),
            start=opt(t[k.IN_START, row]),
            end=opt(t[k.IN_END, row]),
            complete=bool(t[k.IN_COMPLETE, row]),
            problems=describe_problems(int(t[k.IN_PROBLEMS, row]), int(t[k.IN_LOST, row]), int(t[k.IN_STATUS, row])),
            layers=tuple(spans.row(i) for i in range(len(spans))),
            input_crc=opt(t[k.IN_INPUT_CRC, row]),
            output_crc=opt(t[k.IN_OUTPUT_CRC, row]),
        )

    def _layer_infos(self, n_spans: int) -> dict[int, LayerInfo]:
        layers = dict(self.layers)
        seen = self._spans[k.SP_LAYER, :n_spans]
        if len(seen):
            indices, first = np.unique(seen, return_index=True)
            for index, at in zip(indices.tolist(), first.tolist()):
                if index not in layers:
                    engine = Engine.NPU if self._spans[k.SP_ENGINE, at] == 1 else Engine.CPU
                    layers[index] = LayerInfo(index, "", "", engine)
        return dict(sorted(layers.items()))

    def _labels(self) -> dict[str, str]:
        labels: dict[str, str] = {}
        if self.pmu_simulated or (self.target and self.target.npu_pmu_simulated):
            labels["npu_pmu"] = "simulated"
        if self.target and self.target.emulated:
            labels["cycles"] = EMULATED_LABEL
        basis = self._hardware.basis
        if basis is not None and basis != BASIS_CYCLES_TS and len(self._hardware.pairing):
            labels["isr_time"] = f"exception-trace slices in {basis}"
        return labels

    def _target_facts(self) -> TargetFacts | None:
        info = self.target
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
            firmware_dropped_records=self.firmware_dropped,
        )

    # -- rare records ----------------------------------------------------------------------------
    def _convert(self) -> None:
        """Turn new event rows and console bytes into objects."""
        n_events = int(self._state[k.S_N_EVENTS])
        ev = self._events
        types = ev[k.EV_TYPE, self._events_done : n_events]
        rare = np.flatnonzero(~np.isin(types, _COLUMN_TYPES)) + self._events_done
        for e in rare.tolist():
            off, count = int(ev[k.EV_WORDS, e]), int(ev[k.EV_COUNT, e])
            inference = int(ev[k.EV_INFERENCE, e])
            self._event(int(ev[k.EV_TYPE, e]), int(ev[k.EV_TIME, e]), None if inference < 0 else inference,
                        self._words[off : off + count])  # fmt: skip
        self._events_done = n_events
        self._convert_hardware()
        n_text = int(self._state[k.S_N_TEXT])
        if n_text > self._text_done:
            self._console(self._text[self._text_done : n_text], self._text_time[self._text_done : n_text])
            self._text_done = n_text
        if self.finished and self._line:
            self.console.append(ConsoleLine(self._line_time, self._line.decode("utf-8", "replace")))
            self._line = bytearray()

    def _convert_hardware(self) -> None:
        """Feed the DWT rows whose stamps are final to the interrupt and data-trace pairing."""
        s = self._state
        n = int(s[k.S_N_DWT])
        ready = n if self.finished or not s[k.S_TS_SEEN] else int(s[k.S_DWT_STAMP_FROM])
        if ready == 0:
            return
        self._hardware.feed(self._dwt[:, :ready])
        # Drop the rows handed over (only the few waiting for a stamp stay).
        if ready < n:
            self._dwt[:, : n - ready] = self._dwt[:, ready:n].copy()
        s[k.S_N_DWT] = n - ready
        s[k.S_DWT_STAMP_FROM] = max(int(s[k.S_DWT_STAMP_FROM]) - ready, 0)

    def _console(self, data: np.ndarray, times: np.ndarray) -> None:
        raw = data.tobytes()
        start = 0
        while True:
            nl = raw.find(b"\n", start)
            piece = raw[start:] if nl < 0 else raw[start:nl]
            if piece and not self._line:
                t = int(times[start])
                self._line_time = None if t < 0 else t
            self._line += piece
            if nl < 0:
                return
            text = self._line.decode("utf-8", "replace").rstrip("\r")
            self.console.append(ConsoleLine(self._line_time, text))
            self._line = bytearray()
            self._line_time = None
            start = nl + 1

    def _event(self, rtype: int, t: int, inference: int | None, w: np.ndarray) -> None:  # noqa: C901, PLR0912
        words = w.tolist()
        if rtype == RecordType.TARGET_INFO:
            cost = words[3]
            self.target = TargetInfo(
                clock_hz=words[1],
                time_source=TimeSource(words[2] & 0xFF) if (words[2] & 0xFF) in TimeSource._value2member_map_
                else TimeSource.UNKNOWN,
                npu_pmu_simulated=bool(words[2] & INFO_NPU_PMU_SIMULATED),
                emulated=bool(words[2] & INFO_EMULATED),
                marker_cost_cycles=None if cost == MARKER_COST_UNKNOWN else cost / 16,
                wire_version=words[4] & 0xFF,
                scenario=(words[4] >> 8) & 0xFF,
                cpuid=words[5],
            )  # fmt: skip
        elif rtype == RecordType.DROPPED:
            self.firmware_dropped = max(self.firmware_dropped, words[0])
        elif rtype == RecordType.LAYER_INFO:
            index, engine = words[0] & 0xFFFF, (words[0] >> 16) & 0xF
            op_len, name_len = words[1] & 0xFF, (words[1] >> 8) & 0xFF
            op_words = (op_len + 3) // 4
            op = _string(words[2 : 2 + op_words], op_len)
            name = _string(words[2 + op_words :], name_len)
            self.layers[index] = LayerInfo(index, name, op, Engine.NPU if engine == 1 else Engine.CPU)
        elif rtype == RecordType.PMU_CONFIG:
            count = (words[0] >> 8) & 0xFF
            self.pmu_npu = words[0] & 0xFF
            self.pmu_simulated = bool((words[0] >> 16) & PMU_CONFIG_SIMULATED)
            self.pmu_event_ids = tuple((words[1 + i // 2] >> (16 * (i & 1))) & 0xFFFF for i in range(count))
        elif rtype == RecordType.BUFFER_CRC:
            self.crcs.append(BufferCrc(t, words[0], words[1], words[2], inference))
        elif rtype == RecordType.MARK:
            if words[0] < MARK_RESERVED:
                self.marks.append(Mark(t, words[0]))
        elif rtype == RecordType.VALUE:
            self.marks.append(Mark(t, words[0], words[1]))
        else:
            if rtype == RecordType.ISR_ENTER:
                self._isr_marks.enter(words[0], t)
            elif rtype == RecordType.ISR_EXIT:
                self._isr_marks.exit(words[0], t)
            elif rtype == RecordType.ISR_INFO:
                number = words[0] & 0x1FF
                self.isr_names[number] = _string(words[1:], (words[0] >> 16) & 0xFF) or f"exception {number}"
            self.records.append(TelemetryRecord(rtype, t, inference, tuple(words)))

    # -- per-layer records, kept as columns ------------------------------------------------------
    def _events_of(self, *types: int, limit: int | None = None) -> np.ndarray:
        n = int(self._state[k.S_N_EVENTS]) if limit is None else limit
        return np.flatnonzero(np.isin(self._events[k.EV_TYPE, :n], types))

    def _word(self, rows: np.ndarray, i: int) -> np.ndarray:
        return self._words[self._events[k.EV_WORDS, rows] + i]

    def _arena(self) -> LazyRecords[ArenaSample]:
        rows = self._events_of(RecordType.ARENA)
        ev = self._events
        columns = (ev[k.EV_TIME, rows], self._word(rows, 0), self._word(rows, 1), ev[k.EV_INFERENCE, rows])
        return LazyRecords(_arena_sample, columns)

    def _stacks(self) -> LazyRecords[StackSample]:
        rows = self._events_of(RecordType.STACK)
        head = self._word(rows, 0)
        ids = head & 0xFF
        for stack_id, at in zip(*(a.tolist() for a in np.unique(ids, return_index=True))):
            if stack_id not in self._stack_names:
                row = int(rows[at])
                off, count = int(self._events[k.EV_WORDS, row]), int(self._events[k.EV_COUNT, row])
                words = self._words[off : off + count].tolist()
                self._stack_names[stack_id] = _string(words[3:], (words[0] >> 16) & 0xFF) or f"stack{stack_id}"
        names = self._stack_names
        columns = (self._events[k.EV_TIME, rows], ids, self._word(rows, 2), self._word(rows, 1), (head >> 8) & 1)
        return LazyRecords(lambda t, i, hw, size, ok: StackSample(t, names[i], hw, size, bool(ok)), columns)

    def _cache_ops(self) -> LazyRecords[CacheOp]:
        rows = self._events_of(RecordType.CACHE_OP)
        ev = self._events
        columns = (ev[k.EV_TIME, rows], self._word(rows, 0), self._word(rows, 1), self._word(rows, 2),
                   ev[k.EV_INFERENCE, rows])  # fmt: skip
        return LazyRecords(_cache_op, columns)

    def _npu_jobs(self, limit: int | None = None) -> LazyRecords[NpuJob]:
        """Jobs do not nest: an end pairs with the begin just before it, if the job ids agree
        (``limit``: among the first ``limit`` event rows only)."""
        rows = self._events_of(RecordType.NPU_JOB_BEGIN, RecordType.NPU_JOB_END, limit=limit)
        ev = self._events
        is_end = ev[k.EV_TYPE, rows] == RecordType.NPU_JOB_END
        job = self._word(rows, 0)
        pair = np.flatnonzero(is_end[1:] & ~is_end[:-1] & (job[1:] == job[:-1]))
        begins, ends = rows[pair], rows[pair + 1]
        columns = (ev[k.EV_TIME, begins], ev[k.EV_TIME, ends], ev[k.EV_INFERENCE, begins], job[pair])
        return LazyRecords(_npu_job, columns)

    # -- table growth ----------------------------------------------------------------------------
    def _reserve(self, packets: int) -> None:
        """Make room for what ``packets`` packets can produce at most (a span takes >= 6 packets)."""
        s = self._state
        spans = int(s[k.S_N_SPANS]) + packets // 6 + 1
        if spans > self._spans.shape[1]:
            self._spans = _wider(self._spans, spans)
        events = int(s[k.S_N_EVENTS]) + packets // 3 + 1
        if events > self._events.shape[1]:
            self._events = _wider(self._events, events)

    def _grow(self) -> None:
        s = self._state
        if s[k.S_N_SPANS] + 1 > self._spans.shape[1]:
            self._spans = _wider(self._spans)
        if s[k.S_N_INF] + k.NEED_INF > self._infs.shape[1]:
            self._infs = _wider(self._infs)
        if s[k.S_N_EVENTS] + 1 > self._events.shape[1]:
            self._events = _wider(self._events)
        if s[k.S_N_WORDS] + k.NEED_WORDS > self._words.shape[0]:
            self._words = _longer(self._words)
        if s[k.S_N_TEXT] + k.NEED_TEXT > self._text.shape[0]:
            self._text = _longer(self._text)
            self._text_time = _longer(self._text_time)
        if s[k.S_N_DWT] + 1 > self._dwt.shape[1]:
            self._dwt = _wider(self._dwt)


def _wider(table: np.ndarray, at_least: int = 0) -> np.ndarray:
    out = np.zeros((table.shape[0], max(table.shape[1] * 2, at_least)), table.dtype)
    out[:, : table.shape[1]] = table
    return out


def _longer(array: np.ndarray) -> np.ndarray:
    out = np.zeros(array.shape[0] * 2, array.dtype)
    out[: array.shape[0]] = array
    return out


_COLUMN_TYPES = np.array(
    [RecordType.CACHE_OP, RecordType.NPU_JOB_BEGIN, RecordType.NPU_JOB_END, RecordType.ARENA, RecordType.STACK], np.int64
)


def _cache_op(cycle: int, op: int, address: int, length: int, inference: int) -> CacheOp:
    return CacheOp(cycle, CACHE_OPS.get(op, f"op{op}"), address, length, None if inference < 0 else inference)


def _npu_job(start: int, end: int, inference: int, job: int) -> NpuJob:
    return NpuJob(start, end, None if inference < 0 else inference, job)


def _arena_sample(cycle: int, used: int, size: int, inference: int) -> ArenaSample:
    return ArenaSample(cycle, used, size, None if inference < 0 else inference)


def _shift_columns(table: np.ndarray, drop: int, used: int) -> None:
    """Move columns ``drop:used`` of a column-major table to the front."""
    keep = used - drop
    if keep > 0:
        table[:, :keep] = table[:, drop:used].copy()


def _shift(array: np.ndarray, drop: int, used: int) -> None:
    keep = used - drop
    if keep > 0:
        array[:keep] = array[drop:used].copy()


def _own_inferences(inf: Inferences) -> Inferences:
    return Inferences(
        number=inf.number.copy(), start=inf.start.copy(), end=inf.end.copy(), complete=inf.complete.copy(),
        input_crc=inf.input_crc.copy(), output_crc=inf.output_crc.copy(), problems=list(inf.problems),
    )  # fmt: skip


def _own_spans(spans: LayerSpans) -> LayerSpans:
    return LayerSpans(
        inference=spans.inference.copy(), layer=spans.layer.copy(), start=spans.start.copy(),
        end=spans.end.copy(), complete=spans.complete.copy(), isr_cycles=spans.isr_cycles.copy(),
        pmu=np.ascontiguousarray(spans.pmu), pmu_names=spans.pmu_names,
    )  # fmt: skip
