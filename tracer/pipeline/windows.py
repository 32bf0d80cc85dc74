"""A capture of any size as a sequence of timelines ("windows") of consecutive inferences, in bounded memory.

The telemetry decoder keeps every row it decoded (about 450 bytes per layer execution with its
events) until told to forget: a 1 GB capture would need several GB. :func:`read_windows` reads a
large capture through the decoder's streaming protocol instead (``take`` what closed,
``discard_taken``, ``discard_isrs``), cutting a window whenever about :data:`WINDOW_SPANS` layer
executions have closed (an inference longer than that stays whole: a window ends only after an
inference closed). Each window is an :class:`~tracer.base.timeline.InferenceTimeline` of its own
inferences, their spans, events, memory reports, console lines, interrupt slices and DWT
data-trace accesses, and of the records up to its last layer execution's end (those after it
belong to the inference still in progress: the next window's), with the capture's facts (clock,
labels, layer descriptions, PMU names; the loss counters so far), which
:func:`~tracer.analysis.analyze.analyze` reads unchanged. Its task lane and per-span facts (work
counts, CPU counters, the time other tasks took) are made with what it needs of the windows before
it (:mod:`tracer.pipeline.window_carry`). What a caller keeps of each window (a digest, Parquet
rows) is compact, so memory stays flat whatever the capture's size.

Console text is left as lines, for :class:`~tracer.pipeline.window_text.WindowText`, which
merges the capture's text once.

Inputs up to :data:`WHOLE_BYTES`, and every text log or ETDump, are one window: exactly the
timeline :func:`~tracer.pipeline.load.load_timeline` gives. In a capture read in windows, DWT PC
samples and a probe's polled NPU samples (placed against the whole timeline) are left out, with a
warning that says so.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator

import numpy as np

from tracer.base.columns import LazyRecords
from tracer.base.cores import usable_cores
from tracer.base.facts import InputFacts
from tracer.base.timeline import InferenceTimeline
from tracer.capture.reader import CaptureReader, open_capture
from tracer.decode.packets import PacketKind
from tracer.pipeline.ahead import RunAhead
from tracer.pipeline.capture import read_batches, read_facts
from tracer.pipeline.load import CAPTURE, RAW_ITM, InputFile, load_timeline, settle_clock, sniff_input
from tracer.pipeline.memory import prefer_small_pages
from tracer.pipeline.stream import StreamDecoder
from tracer.pipeline.stream_setup import StreamSetup
from tracer.pipeline.window_carry import Carry
from tracer.telemetry.decoder import NewRows, TelemetryDecoder
from tracer.telemetry.record_facts import attach_record_facts

WHOLE_BYTES = 8 << 20  # inputs up to this size are read whole (one window)
WINDOW_SPANS = 12_500  # layer executions per window: about 15 MB while one is decoded and analysed
WINDOWS_AHEAD = 1  # windows queued for the caller (one more is made meanwhile): each is memory
PROGRESS_BYTES = 8 << 20  # the caller hears the bytes read with each window, or at least this often


def is_windowed(path: str | os.PathLike[str] | InputFile, whole_bytes: int | None = None) -> bool:
    """Whether :func:`read_windows` reads ``path`` in windows (else it is one window, read whole).

    Raises:
        CaptureError: The file is missing or unreadable.
    """
    source = sniff_input(path)
    whole_bytes = WHOLE_BYTES if whole_bytes is None else whole_bytes
    return source.size > whole_bytes and source.kind in (CAPTURE, RAW_ITM)


def read_windows(
    path: str | os.PathLike[str] | InputFile,
    on_progress: Callable[[int], None] | None = None,
    whole_bytes: int | None = None,
    window_spans: int | None = None,
    clock_hz: int | None = None,
) -> Iterator[tuple[InferenceTimeline, InputFacts]]:
    """The windows of an input, in order, each with the input's facts so far (the last: all of them).

    Args:
        path: The input (or the input sniffed already: :func:`~tracer.pipeline.load.sniff_input`).
        on_progress: Called with the stream bytes read so far.
        whole_bytes: Inputs up to this size are one window (default :data:`WHOLE_BYTES`).
        window_spans: Layer executions per window (default :data:`WINDOW_SPANS`).
        clock_hz: The clock the input's cycles count when it does not say (``--clock``).

    Raises:
        CaptureError: The file is missing or unreadable.
    """
    window_spans = WINDOW_SPANS if window_spans is None else window_spans
    source = sniff_input(path)
    if is_windowed(source, whole_bytes):
        # Each window's tables and columns are fresh memory, mostly far less than a huge page of
        # it: small pages (tracer.pipeline.memory) keep the peak resident memory down.
        prefer_small_pages()
        with open_capture(source.path) as reader:
            # Windows are made on a thread of their own, ahead of the caller, who analyses the last
            # one meanwhile (docs/decoder.md, "Threads"); on_progress runs on the caller's thread.
            made = _stream(reader, source.path, window_spans, clock_hz)
            with RunAhead(made, WINDOWS_AHEAD, "tracer-windows", threaded=usable_cores() > 1) as ahead:
                for done, window in ahead:
                    if on_progress is not None:
                        on_progress(done)
                    if window is not None:
                        yield window
        return
    yield load_timeline(source, on_progress=on_progress, clock_hz=clock_hz)


def _stream(
    reader: CaptureReader, label: str, window_spans: int, clock_hz: int | None
) -> Iterator[tuple[int, tuple[InferenceTimeline, InputFacts] | None]]:
    """The windows of ``reader``'s stream as they are cut, each with the stream bytes read so far;
    between windows further apart than :data:`PROGRESS_BYTES`, the bytes read alone (no window).
    """
    kind = CAPTURE if reader.is_capture else RAW_ITM
    meta = reader.metadata
    # (no expected size: a window's rows are forgotten once taken, the tables stay small)
    stream = StreamDecoder(StreamSetup.of(meta, trusted=reader.is_capture, source=reader.name), reuse_batches=True)
    decoder, itm = stream.telemetry, stream.itm
    batches = read_batches(reader, itm)
    facts = InputFacts(kind, meta.source or label, label, 0)
    cut = _Cut(clock_hz)
    told = 0  # the stream bytes read when the caller last heard
    # Reading and ITM decoding run ahead on a thread of their own, as in decode_capture (each batch
    # with the bytes read when it was made, and what only reads the batch: the packets the decoder
    # reads beside the records, picked out); the thread ends when this generator does or is closed.
    fed = ((batch, itm.input_bytes, decoder.pick_beside(batch)) for batch in batches)
    with RunAhead(fed, threaded=usable_cores() > 1) as ahead:
        for batch, done, picked in ahead:
            # In step with the records: a window cut here reads what is beside them so far.
            decoder.read_picked(picked)
            decoder.assemble(batch)
            itm.give_back(batch)  # (nothing else keeps it: its memory takes a later batch)
            # (an inference longer than a window is held until it closes: nothing is handed out early)
            if decoder.held_rows["spans"] >= window_spans and decoder.untaken_inferences:
                yield done, _window(decoder, facts, done, cut)
                told = done
            elif done - told >= PROGRESS_BYTES:
                yield done, None
                told = done
    decoder.finish()
    facts.trace_doubt = itm.doubt
    facts.warnings, facts.host_seconds = read_facts(reader, itm)
    # Counted only (SwoPcCollector would keep every layer header of the capture): the ITM decoder
    # counts every packet it hands out, by kind.
    pc_samples = int(itm.itm.stats.packets[PacketKind.PC_SAMPLE])
    if pc_samples:
        facts.warnings.append(
            f"{reader.name}: {pc_samples} DWT PC samples left out: a capture larger than "
            f"{WHOLE_BYTES >> 20} MB is read in windows, and they are placed against the whole"
        )
    polled = sum(
        len(qread)
        for _, e in reader.events
        if e.get("event") == "npu samples" and isinstance(qread := e.get("qread"), list)
    )
    if polled:
        facts.warnings.append(
            f"{reader.name}: {polled} NPU samples polled by the probe left out: a capture "
            f"larger than {WHOLE_BYTES >> 20} MB is read in windows"
        )
    # The last window, even without an inference: it carries the capture's facts at its end.
    yield itm.input_bytes, _window(decoder, facts, itm.input_bytes, cut, final=True)


@dataclasses.dataclass
class _Cut:
    """Where the last window ended (its last layer execution's end: interrupt slices and records
    after it belong to the next window), the ``--clock`` to settle every window's clock with, and
    what later windows need of earlier ones.
    """

    clock_hz: int | None
    after: int | None = None
    carry: Carry = dataclasses.field(default_factory=Carry)
    console_lines: int = 0  # console lines so far


def _window(
    decoder: TelemetryDecoder, facts: InputFacts, stream_bytes: int, cut: _Cut, final: bool = False
) -> tuple[InferenceTimeline, InputFacts]:
    """The rows closed since the last window as a timeline; then the decoder forgets them."""
    rows = decoder.take()
    base = decoder.timeline(rows=False)  # (the window's rows are those taken)
    end_time = decoder.end_time
    decoder.discard_taken()
    timeline = _timeline(base, rows, cut.after)
    # DWT data-trace accesses: those stamped before the window's end (the rest wait; the final
    # window has all that are left).
    handed = 0
    if len(rows.spans):
        cut.after = int(rows.spans.end.max())
        handed = decoder.discard_accesses(cut.after)
        decoder.discard_isrs(cut.after)
    timeline.data_trace = list(base.data_trace) if final else base.data_trace[:handed]
    timeline.records = cut.carry.own(rows.records, cut.after, final)
    attach_record_facts(timeline)
    cut.carry.attach(timeline, end_time if final else cut.after)
    window_facts = dataclasses.replace(
        facts, bytes=stream_bytes, records=decoder.records_accepted, warnings=list(facts.warnings)
    )
    cut.console_lines += len(timeline.console)
    window_facts.console_lines = cut.console_lines
    settle_clock(timeline, window_facts, window_facts.path or window_facts.source, cut.clock_hz)
    return timeline, window_facts


def _timeline(base: InferenceTimeline, rows: NewRows, after: int | None) -> InferenceTimeline:
    """``base`` (the decoder's facts) with the window's own rows: the interrupt slices that start
    after the last window's end (``after``) up to this window's.
    """
    isrs = base.isrs  # the slices held: from the window's start (older ones were discarded) on
    assert isinstance(isrs, LazyRecords)  # the decoder's columns: cut by their start column
    if after is not None and len(isrs):
        isrs = isrs[int(np.searchsorted(isrs.column(0), after, side="right")) :]
    if len(rows.spans) and len(isrs):
        isrs = isrs[: int(np.searchsorted(isrs.column(0), int(rows.spans.end.max()), side="right"))]
    return dataclasses.replace(
        base,
        inferences=rows.inferences,
        spans=rows.spans,
        arena=rows.arena,
        stacks=rows.stacks,
        cache_ops=rows.cache_ops,
        npu_jobs=rows.npu_jobs,
        console=list(rows.console),
        marks=list(rows.marks),
        crcs=list(rows.crcs),
        records=list(rows.records),
        isrs=isrs,
    )
