"""Decoding a whole capture into a timeline, streaming: the path of ``tracer report`` and ``demo``."""

from __future__ import annotations

import dataclasses
import os
from typing import Callable

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import CaptureReader, open_capture
from tracer.decode.stream import decode_reader
from tracer.decode.tpiu import TpiuMode
from tracer.telemetry.decoder import TelemetryDecoder
from tracer.telemetry.model import InferenceTimeline


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
    """

    timeline: InferenceTimeline
    metadata: CaptureMetadata
    stream_bytes: int
    host_seconds: float | None
    warnings: list[str]
    records: int
    trace_doubt: str | None = None


def decode_capture(
    path: str | os.PathLike[str] | CaptureReader, on_progress: Callable[[int], None] | None = None
) -> DecodedCapture:
    """Read, decode and assemble a capture (or another tool's raw ITM file).

    Raises:
        CaptureError: The file is missing or unreadable.
    """
    reader = path if isinstance(path, CaptureReader) else open_capture(path)
    with reader:
        meta = reader.metadata
        decoder = TelemetryDecoder(clock_hz=meta.cpu_hz, source=meta.source or reader.name, expected_bytes=reader.size)
        itm, batches = decode_reader(reader, TpiuMode.AUTO, None, hold_timestamps=False)
        for batch in batches:
            decoder.feed(batch)
            if on_progress is not None:
                on_progress(itm.input_bytes)
        decoder.finish()
        first_ns, last_ns = itm.first_host_ns, itm.last_host_ns
        warnings = [str(w) for w in reader.warnings] + [f"{reader.name}: {m}" for m in itm.warnings]
        host_seconds = (last_ns - first_ns) / 1e9 if first_ns is not None and last_ns is not None else None
        return DecodedCapture(decoder.timeline(), meta, itm.input_bytes, host_seconds, warnings,
                              decoder.records_accepted, itm.doubt)  # fmt: skip
