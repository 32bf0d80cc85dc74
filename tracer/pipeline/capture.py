"""A capture through the decoders, streaming: packets for ``tracer decode``, a timeline for ``report``.

The decode layer takes bytes and knows nothing of capture files; this module reads a capture's
chunks (with their host arrival times and gaps) into it, and the packets into the telemetry decoder.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from tracer.base.beside import usable_cores
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import CaptureReader, open_capture
from tracer.decode.packets import PacketBatch
from tracer.decode.stream import TraceDecoder
from tracer.decode.tpiu import TpiuMode
from tracer.pipeline.ahead import RunAhead
from tracer.pipeline.memory import prefer_small_pages
from tracer.pipeline.stream_setup import StreamSetup

if TYPE_CHECKING:
    from tracer.base.timeline import InferenceTimeline

FEED_BYTES = 1 << 20  # contiguous capture chunks are decoded together up to this


@dataclasses.dataclass
class DecodedCapture:
    """A capture's timeline and the facts about the capture itself.

    Attributes:
        timeline: What the telemetry says.
        metadata: The capture header.
        stream_bytes: Bytes of the trace stream.
        host_seconds: Host arrival time from the first to the last chunk (None for raw files).
        warnings: Damage found while reading and decoding, with positions.
        records: Telemetry records accepted.
        trace_doubt: Why the stream does not look like ITM/DWT trace, or None.
        threads: Threads that decoded it: 2 when reading and ITM decoding ran ahead of the
            record assembly on a thread of their own.
    """

    timeline: InferenceTimeline
    metadata: CaptureMetadata
    stream_bytes: int
    host_seconds: float | None
    warnings: list[str]
    records: int
    trace_doubt: str | None = None
    threads: int = 1


def decode_capture(
    path: str | os.PathLike[str] | CaptureReader,
    on_progress: Callable[[int], None] | None = None,
    *,
    threads: int | None = None,
) -> DecodedCapture:
    """Read, decode and assemble a capture (or another tool's raw ITM file).

    ``threads`` 2 reads and ITM-decodes on a thread of its own, ahead of the record assembly on
    the caller's (the same batches in the same order: identical results); 1 does both on the
    caller's thread (and so does 0). None: 2 when the process may run on two cores or more.

    Raises:
        CaptureError: The file is missing or unreadable.
    """
    # Here, not at the top: ``tracer decode`` needs only decode_reader, and its start-up time counts.
    from tracer.pipeline.stream import StreamDecoder
    from tracer.telemetry.probe_samples import probe_npu_records
    from tracer.telemetry.swo_pc import SwoPcCollector

    prefer_small_pages()  # the tables below are fresh memory: see tracer.pipeline.memory
    threads = 2 if (usable_cores() if threads is None else threads) > 1 else 1
    reader = path if isinstance(path, CaptureReader) else open_capture(path)
    with reader:
        meta = reader.metadata
        stream = StreamDecoder(
            StreamSetup.of(meta, trusted=reader.is_capture, source=reader.name),
            expected_bytes=reader.size,
            reuse_batches=True,
        )
        decoder, itm = stream.telemetry, stream.itm
        batches = read_batches(reader, itm)
        pcs = SwoPcCollector()  # DWT PC samples: placed in the layer spans they arrived inside

        def fed() -> Iterator[tuple[PacketBatch, int]]:
            for batch in batches:
                # What only reads the batches runs ahead too: nothing reads it before the end.
                decoder.read_beside(batch)
                pcs.feed(batch)
                # Each batch with the bytes read when it was made: on_progress must not read
                # ``itm`` while another thread decodes into it.
                yield batch, itm.input_bytes

        # Reading and ITM decoding run ahead on a thread of their own (docs/decoder.md, "Threads").
        with RunAhead(fed(), threaded=threads > 1) as ahead:
            previous = None
            for batch, done in ahead:
                decoder.assemble(batch)
                # Each batch's memory takes a later one once nothing reads it: not before the next
                # batch arrives, since the PC sample collector keeps the last batch it saw until it
                # sees the next (on the producer's thread, before that batch is handed over).
                if previous is not None:
                    itm.give_back(previous)
                previous = batch
                if on_progress is not None:
                    on_progress(done)
        decoder.finish()
        warnings, host_seconds = read_facts(reader, itm)
        timeline = decoder.timeline()
        # A probe's NPU samples (capture notes) join the firmware's records when CYCCNT places them.
        polled, why = probe_npu_records((event for _, event in reader.events), timeline)
        timeline.records = [*timeline.records, *polled, *pcs.finish(timeline)]
        warnings += [f"{reader.name}: {w}" for w in why]
        return DecodedCapture(
            timeline, meta, itm.input_bytes, host_seconds, warnings, decoder.records_accepted, itm.doubt, threads
        )


def read_facts(reader: CaptureReader, itm: TraceDecoder) -> tuple[list[str], float | None]:
    """A capture read through ``itm``: its warnings (the file's, then the decoder's) and the host
    arrival time from its first to its last chunk (None for raw files).
    """
    warnings = [str(w) for w in reader.warnings] + [f"{reader.name}: {m}" for m in itm.warnings]
    first_ns, last_ns = itm.first_host_ns, itm.last_host_ns
    host_seconds = (last_ns - first_ns) / 1e9 if first_ns is not None and last_ns is not None else None
    return warnings, host_seconds


def decode_reader(
    reader: CaptureReader,
    tpiu: TpiuMode = TpiuMode.AUTO,
    tpiu_id: int | None = None,
    hold_timestamps: bool = True,
    *,
    packets: bool = True,
    reuse_batches: bool = False,
) -> tuple[TraceDecoder, Iterator[PacketBatch]]:
    """Decode a whole capture's packets, streaming (``tracer decode``).

    ``tpiu`` AUTO defers to the capture's metadata when it says whether the stream is formatted
    (:class:`~tracer.pipeline.stream.StreamSetup`). ``packets=False`` only counts (the batches are
    empty; read ``decoder.stats_json()``). ``reuse_batches``: the caller gives each batch back to
    the decoder (``decoder.give_back``) when nothing reads it any more, and later batches are
    decoded into its memory (:mod:`tracer.decode.pool`).

    Returns:
        The decoder (stats and warnings fill in as batches are consumed) and the batches.
    """
    setup = StreamSetup.of(reader.metadata, trusted=reader.is_capture, source=reader.name, tpiu=tpiu, tpiu_id=tpiu_id)
    decoder = TraceDecoder(setup.tpiu, setup.tpiu_id, hold_timestamps, packets=packets, reuse_batches=reuse_batches)
    decoder.warnings.extend(setup.warnings)
    return decoder, read_batches(reader, decoder)


def read_batches(reader: CaptureReader, decoder: TraceDecoder) -> Iterator[PacketBatch]:
    """The packet batches of a capture's stream, decoded by ``decoder`` as its chunks are read
    (the host arrival times of the first and last chunk noted on the decoder).
    """
    # Captures come in chunks of 16 KiB; contiguous ones are fed together, up to FEED_BYTES, so
    # the decoder's cost per call does not grow with the number of chunks.
    pending: list[bytes] = []
    size = lost = 0
    joined = bytearray()  # the chunks fed together, in the same memory each time (see joined_view)

    def joined_view() -> bytes | memoryview:
        # The decoder reads the bytes fed only while it is fed (it copies what it keeps), so
        # one buffer serves every feed: b"".join would be fresh pages per feed.
        nonlocal joined
        if len(pending) == 1:
            return pending[0]
        if len(joined) < size:
            joined = bytearray(size + (size >> 4))
        at = 0
        for data in pending:
            joined[at : at + len(data)] = data
            at += len(data)
        return memoryview(joined)[:size]

    for chunk in reader.chunks():
        if chunk.host_ns is not None:
            if decoder.first_host_ns is None:
                decoder.first_host_ns = chunk.host_ns
            decoder.last_host_ns = chunk.host_ns
        if pending and (chunk.lost_before or size >= FEED_BYTES):
            batch = decoder.feed(joined_view(), lost)
            pending, size = [], 0
            if len(batch):
                yield batch
        if not pending:
            lost = chunk.lost_before
        pending.append(chunk.data)
        size += len(chunk.data)
    if pending:
        batch = decoder.feed(joined_view(), lost)
        if len(batch):
            yield batch
    last = decoder.finish()
    if len(last):
        yield last
