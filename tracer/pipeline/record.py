"""Recording a source into a capture, losing nothing that arrived."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

from tracer.capture.writer import CaptureWriter
from tracer.sources.base import ByteSource, SourceEnded, SourceLost


@dataclasses.dataclass
class RecordResult:
    """How a recording ended.

    Attributes:
        bytes: Stream bytes written.
        seconds: Wall time spent.
        ended: ``"end of stream"``, ``"duration"``, ``"stopped"`` or ``"lost"``.
        message: Detail for ``"lost"``.
    """

    bytes: int
    seconds: float
    ended: str
    message: str = ""


def record(
    source: ByteSource,
    writer: CaptureWriter,
    *,
    duration: float | None = None,
    stop: threading.Event | None = None,
    on_data: Callable[[bytes], None] | None = None,
    on_tick: Callable[[int], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RecordResult:
    """Copy an opened source into ``writer`` until it ends, ``duration`` passes or ``stop`` is set.

    Every byte read is handed to the writer before anything else happens to it, so a crash of a
    consumer (``on_data``) cannot lose it. The writer is flushed but not closed. Sources that
    report events (a probe's overflow count, a reconnection, polled memory samples) through an
    optional ``drain_events()`` method have them written into the capture as notes.

    Args:
        source: An opened source.
        writer: Where the bytes go.
        duration: Seconds to record; None for until the end.
        stop: Set from another thread (Ctrl-C handler, UI) to stop.
        on_data: Called with each piece of data after it is written (live decoding).
        on_tick: Called about ten times a second with the bytes so far (progress).
        clock: Monotonic clock (injectable).
    """
    start = clock()
    last_tick = start
    ended, message = "end of stream", ""
    drain = getattr(source, "drain_events", None)
    try:
        while True:
            if stop is not None and stop.is_set():
                ended = "stopped"
                break
            now = clock()
            if duration is not None and now - start >= duration:
                ended = "duration"
                break
            timeout = 0.1 if duration is None else max(0.0, min(0.1, duration - (now - start)))
            try:
                data = source.read(65536, timeout)
            except SourceEnded:
                _write_events(drain, writer)
                break
            except SourceLost as exc:
                ended, message = "lost", str(exc)
                _write_events(drain, writer)
                writer.note({"event": "source lost", "message": message, "bytes_received": writer.bytes_received})
                break
            if drain is not None:
                _write_events(drain, writer)
            if data:
                writer.write(data)
                if on_data is not None:
                    on_data(data)
            else:
                writer.flush_if_due()
            if on_tick is not None and now - last_tick >= 0.1:
                on_tick(writer.bytes_received)
                last_tick = now
    finally:
        writer.flush()
    return RecordResult(writer.bytes_received, clock() - start, ended, message)


def _write_events(drain: Callable[[], list[dict[str, Any]]] | None, writer: CaptureWriter) -> None:
    """Write the source's pending events as capture notes."""
    if drain is None:
        return
    for event in drain():
        writer.note(event)
