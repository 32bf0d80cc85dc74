"""Decoding a stream that never ends: bytes in, what is new out, memory bounded.

:class:`~tracer.telemetry.decoder.TelemetryDecoder` keeps every row it ever decoded (a report needs
the whole capture). A live session runs for days, so :class:`RollingDecoder` takes what is new
after each feed (closed inferences with their spans, memory samples, cache operations, NPU jobs,
console lines, marks) and then *compacts* the decoder's tables: rows already handed out are
dropped and the rest moved to the front. The decoder's state carries on exactly as if nothing had
happened (sequence numbers, time unwrapping, the inference in progress), which the tests check by
comparing against an uncompacted decoder on the same stream.

This adapter reaches into the decoder's tables (their layout is :mod:`tracer.telemetry.kernel`'s
public constants). It is the one place in ``tracer.session`` that does; if the decoder grows a
public way to discard what was taken, this module should use it instead.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.decode.stream import TraceDecoder
from tracer.decode.tpiu import TpiuMode
from tracer.telemetry import kernel as k
from tracer.telemetry.columns import LazyRecords
from tracer.telemetry.decoder import TelemetryDecoder, TargetInfo
from tracer.telemetry.model import (
    ArenaSample,
    BufferCrc,
    CacheOp,
    ConsoleLine,
    Engine,
    Inferences,
    LayerInfo,
    LayerSpans,
    LossCounters,
    Mark,
    NpuJob,
    StackSample,
    TelemetryRecord,
)
from tracer.telemetry.wire import RecordType


def _empty_records() -> LazyRecords:
    return LazyRecords(lambda: None, [])


@dataclasses.dataclass
class DecodedDelta:
    """What one feed added.

    Attributes:
        bytes: Stream bytes fed.
        packets: ITM packets decoded.
        inferences: Inferences closed by this feed (columns, owned).
        spans: Their layer spans, in order (columns, owned).
        span_engines: Engine code of each span (0 CPU, 1 NPU), as the begin record said.
        span_first, span_end: Per inference, its spans are rows ``span_first:span_end`` of ``spans``.
        arena, stacks, cache_ops, npu_jobs: New memory samples and per-layer events.
        console: Console lines completed by this feed.
        marks, crcs, records: New marks, buffer CRCs and other checked records (ISR marks).
    """

    bytes: int = 0
    packets: int = 0
    inferences: Inferences = dataclasses.field(default_factory=lambda: Inferences.from_rows([]))
    spans: LayerSpans = dataclasses.field(default_factory=LayerSpans.empty)
    span_engines: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    span_first: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    span_end: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    arena: LazyRecords[ArenaSample] = dataclasses.field(default_factory=_empty_records)
    stacks: LazyRecords[StackSample] = dataclasses.field(default_factory=_empty_records)
    cache_ops: LazyRecords[CacheOp] = dataclasses.field(default_factory=_empty_records)
    npu_jobs: LazyRecords[NpuJob] = dataclasses.field(default_factory=_empty_records)
    console: list[ConsoleLine] = dataclasses.field(default_factory=list)
    marks: list[Mark] = dataclasses.field(default_factory=list)
    crcs: list[BufferCrc] = dataclasses.field(default_factory=list)
    records: list[TelemetryRecord] = dataclasses.field(default_factory=list)


class RollingDecoder:
    """Trace bytes to telemetry deltas, with the decoder's tables kept small.

    Args:
        clock_hz: The clock of the timestamps until the firmware says (capture metadata).
        source: Where the bytes come from (for the decoder's messages).
        tpiu: TPIU deframing: ON, OFF or AUTO (detect from the first 64 KiB).
        tpiu_id: The TPIU source ID carrying ITM.
        compact: Drop rows already handed out after each feed (False only in tests).
    """

    def __init__(
        self,
        clock_hz: int | None = None,
        source: str = "",
        tpiu: TpiuMode = TpiuMode.AUTO,
        tpiu_id: int = 1,
        *,
        compact: bool = True,
    ) -> None:
        self.trace = TraceDecoder(tpiu, tpiu_id, hold_timestamps=False)
        self.telemetry = TelemetryDecoder(clock_hz=clock_hz, source=source)
        self.compacting = compact
        self.layers: dict[int, LayerInfo] = {}
        self.bytes = 0
        self.packets = 0
        self._seen = {"arena": 0, "stacks": 0, "cache_ops": 0, "npu_jobs": 0}

    # -- facts -----------------------------------------------------------------------------------
    @property
    def loss(self) -> LossCounters:
        """Everything lost or damaged so far."""
        return self.telemetry.loss

    @property
    def records(self) -> int:
        """Telemetry records accepted so far."""
        return self.telemetry.records_accepted

    @property
    def target(self) -> TargetInfo | None:
        """What the firmware said about itself, once it has."""
        return self.telemetry.target

    @property
    def clock_hz(self) -> int | None:
        """The clock of the cycle counts: the firmware's, else the capture's."""
        info = self.telemetry.target
        return info.clock_hz if info is not None and info.clock_hz else self.telemetry.clock_hz

    @property
    def pmu_simulated(self) -> bool:
        """True when the firmware labels its NPU PMU values simulated."""
        info = self.telemetry.target
        return self.telemetry.pmu_simulated or bool(info and info.npu_pmu_simulated)

    @property
    def emulated(self) -> bool:
        """True when the firmware runs on an emulator whose cycles are instructions (QEMU)."""
        info = self.telemetry.target
        return bool(info and info.emulated)

    @property
    def warnings(self) -> list[str]:
        """Stream-level problems the ITM decoder reported."""
        return list(self.trace.warnings)

    # -- feeding ---------------------------------------------------------------------------------
    def feed(self, data: bytes, lost_before: int = 0) -> DecodedDelta:
        """Decode ``data`` (``lost_before``: bytes known lost just before it) and return what is new."""
        batch = self.trace.feed(data, lost_before)
        self.bytes += len(data)
        if len(batch):
            self.telemetry.feed(batch)
        return self._take(len(data), len(batch))

    def finish(self) -> DecodedDelta:
        """End of stream: flush held bytes, close the inference in progress (incomplete)."""
        batch = self.trace.finish()
        if len(batch):
            self.telemetry.feed(batch)
        self.telemetry.finish()
        return self._take(0, len(batch))

    # -- taking ----------------------------------------------------------------------------------
    def _take(self, nbytes: int, npackets: int) -> DecodedDelta:
        self.packets += npackets
        dec = self.telemetry
        dec._convert()  # rare records and console bytes -> objects
        delta = DecodedDelta(bytes=nbytes, packets=npackets)
        first, end = dec._taken, dec.published_inferences
        if end > first:
            delta.inferences = _own_inferences(dec._inference_columns(first, end))
            span_lo = int(dec._infs[k.IN_SPAN_FIRST, first])
            span_hi = int(dec._infs[k.IN_SPAN_END, end - 1])
            delta.spans = _own_spans(dec._span_columns(span_lo, span_hi))
            delta.span_engines = dec._spans[k.SP_ENGINE, span_lo:span_hi].copy()
            delta.span_first = np.clip(dec._infs[k.IN_SPAN_FIRST, first:end] - span_lo, 0, span_hi - span_lo)
            delta.span_end = np.clip(dec._infs[k.IN_SPAN_END, first:end] - span_lo, 0, span_hi - span_lo)
            dec._taken = end
        self._learn_layers(delta)
        for name, records in (("arena", dec._arena()), ("stacks", dec._stacks()),
                              ("cache_ops", dec._cache_ops()), ("npu_jobs", dec._npu_jobs())):  # fmt: skip
            setattr(delta, name, records[self._seen[name] :])
            self._seen[name] = len(records)
        for name in ("console", "marks", "crcs", "records"):
            items = getattr(dec, name)
            setattr(delta, name, list(items))
            items.clear()
        if self.compacting:
            self._compact()
        return delta

    def _learn_layers(self, delta: DecodedDelta) -> None:
        self.layers.update(self.telemetry.layers)
        if len(delta.spans):
            indices, first = np.unique(delta.spans.layer, return_index=True)
            for index, at in zip(indices.tolist(), first.tolist()):
                if index not in self.layers:
                    engine = Engine.NPU if delta.span_engines[at] == 1 else Engine.CPU
                    self.layers[index] = LayerInfo(index, "", "", engine)

    # -- compaction ------------------------------------------------------------------------------
    def _compact(self) -> None:
        """Drop the rows already handed out; keep what the kernel may still touch."""
        dec = self.telemetry
        s = dec._state
        is_open = bool(s[k.S_INF_OPEN])
        # Spans: only the inference in progress still owns rows that were not handed out.
        span_drop = int(s[k.S_INF_FIRST_SPAN]) if is_open else int(s[k.S_N_SPANS])
        # Inference rows: keep the one before the first untaken row (the kernel reads it when an
        # inference whose begin was lost learns its number).
        inf_drop = max(dec._taken - 1, 0)
        # Events: all handed out; keep the open inference's own (an NPU job begin awaits its end).
        n_events = int(s[k.S_N_EVENTS])
        event_drop = n_events
        if is_open and n_events:
            number = dec._infs[k.IN_NUMBER, int(s[k.S_INF_ROW])]
            others = np.flatnonzero(dec._events[k.EV_INFERENCE, :n_events] != number)
            event_drop = int(others[-1]) + 1 if len(others) else 0
        # An NPU job begin whose end has not come yet stays too (its end may come after damage
        # has closed its inference).
        types = dec._events[k.EV_TYPE, :event_drop]
        jobs = np.flatnonzero((types == RecordType.NPU_JOB_BEGIN) | (types == RecordType.NPU_JOB_END))
        if len(jobs) and types[jobs[-1]] == RecordType.NPU_JOB_BEGIN:
            event_drop = int(jobs[-1])
        n_words = int(s[k.S_N_WORDS])
        word_drop = int(dec._events[k.EV_WORDS, event_drop]) if event_drop < n_events else n_words
        text_drop = dec._text_done

        if span_drop:
            _shift_columns(dec._spans, span_drop, int(s[k.S_N_SPANS]))
            s[k.S_N_SPANS] -= span_drop
            s[k.S_INF_FIRST_SPAN] = max(int(s[k.S_INF_FIRST_SPAN]) - span_drop, 0)
        n_inf = int(s[k.S_N_INF])
        if inf_drop:
            _shift_columns(dec._infs, inf_drop, n_inf)
            n_inf -= inf_drop
            s[k.S_N_INF] = n_inf
            s[k.S_INF_ROW] = max(int(s[k.S_INF_ROW]) - inf_drop, 0)
            dec._taken -= inf_drop
        if span_drop and n_inf:
            for row in (k.IN_SPAN_FIRST, k.IN_SPAN_END):
                dec._infs[row, :n_inf] = np.maximum(dec._infs[row, :n_inf] - span_drop, 0)
        if event_drop:
            _shift_columns(dec._events, event_drop, n_events)
            s[k.S_N_EVENTS] = n_events - event_drop
            dec._events_done = max(dec._events_done - event_drop, 0)
        if word_drop:
            _shift(dec._words, word_drop, n_words)
            s[k.S_N_WORDS] = n_words - word_drop
            kept = int(s[k.S_N_EVENTS])
            dec._events[k.EV_WORDS, :kept] -= word_drop
        if text_drop:
            n_text = int(s[k.S_N_TEXT])
            _shift(dec._text, text_drop, n_text)
            _shift(dec._text_time, text_drop, n_text)
            s[k.S_N_TEXT] = n_text - text_drop
            dec._text_done = 0
        # Every row left was already handed out (or belongs to the open inference, whose events
        # were handed out too): count them as seen.
        self._seen = {"arena": len(dec._arena()), "stacks": len(dec._stacks()),
                      "cache_ops": len(dec._cache_ops()), "npu_jobs": len(dec._npu_jobs())}  # fmt: skip

    @property
    def table_rows(self) -> dict[str, int]:
        """Rows held in the decoder's tables (tests check they stay bounded)."""
        s = self.telemetry._state
        return {"spans": int(s[k.S_N_SPANS]), "inferences": int(s[k.S_N_INF]), "events": int(s[k.S_N_EVENTS]),
                "words": int(s[k.S_N_WORDS]), "text": int(s[k.S_N_TEXT])}  # fmt: skip


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
