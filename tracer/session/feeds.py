"""Where a session's bytes come from: a capture being replayed, or a live source being recorded.

Both hand out :class:`Piece` objects through ``next_piece(timeout)`` and raise
:class:`~tracer.sources.base.SourceEnded` at the end, so the session has one loop for both.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import CaptureChunk, CaptureReader, open_capture
from tracer.capture.writer import CaptureWriter
from tracer.sources.base import ByteSource, SourceEnded

DEFAULT_PIECE = 2048  # replay granularity: small enough for smooth pacing, large enough to be cheap
FAST_PIECE = 64 * 1024  # replay as fast as possible
PREPASS_LIMIT = 256 * 1024 * 1024  # captures up to this size are measured up front (length, duration)
COALESCE_BYTES = 128 * 1024  # live: queued reads handed to the decoder at once
READ_GATHER_S = 0.01  # live: pause after a short read, so reads come in batches


@dataclasses.dataclass(frozen=True)
class Piece:
    """Stream bytes to decode.

    Attributes:
        data: The bytes.
        offset: Stream offset of ``data[0]``.
        lost_before: Bytes known lost just before (a damaged capture chunk).
        host_seconds: Host arrival time of ``data[0]``, seconds after the first byte (captures only).
    """

    data: bytes
    offset: int
    lost_before: int = 0
    host_seconds: float | None = None

    def cut(self, start: int, stop: int | None = None) -> Piece:
        """Bytes ``start:stop`` of this piece (the loss before it stays with its first byte)."""
        lost = self.lost_before if start == 0 else 0
        return Piece(self.data[start:stop], self.offset + start, lost, self.host_seconds)


class CaptureFeed:
    """A capture, piece by piece, with host arrival times interpolated inside each chunk.

    Args:
        path: The capture (``.trace`` or another tool's raw file).
        piece_bytes: Largest piece.
        start: Begin at this stream offset (no length measured).

    Raises:
        CaptureError: The file cannot be read.
    """

    def __init__(self, path: str | os.PathLike[str], piece_bytes: int = DEFAULT_PIECE, start: int = 0) -> None:
        self.path = os.fspath(path)
        self.piece_bytes = piece_bytes
        self._reader: CaptureReader = open_capture(path)
        self.stream_bytes: int | None = None
        self.duration_seconds: float | None = None
        self.has_host_times = self._reader.is_capture
        self._start = start
        if not start:
            self._measure()
        self.metadata: CaptureMetadata = self._reader.metadata
        self._pieces = self._walk()

    @property
    def is_capture(self) -> bool:
        """True for a ``.trace`` capture (its header can be trusted), False for another tool's raw file."""
        return self._reader.is_capture

    @property
    def warnings(self) -> list[str]:
        """Damage found in the file so far."""
        return [str(w) for w in self._reader.warnings]

    def _measure(self) -> None:
        """Length and host duration, from a pass over the chunks (small enough captures only)."""
        if self._reader.size > PREPASS_LIMIT:
            return  # has_host_times stays: a capture's chunks are stamped
        first = last = None
        total = 0
        for chunk in self._reader.chunks():
            total = chunk.offset + len(chunk.data)
            if chunk.host_ns is not None:
                first = chunk.host_ns if first is None else first
                last = chunk.host_ns
        self.stream_bytes = total
        self.has_host_times = first is not None
        if first is not None and last is not None:
            self.duration_seconds = (last - first) / 1e9

    def _walk(self) -> Iterator[Piece]:
        chunks = self._reader.chunks()
        current = next(chunks, None)
        origin = current.host_ns if current is not None else None
        while current is not None:
            following = next(chunks, None)
            yield from self._split(current, following, origin)
            current = following

    def _split(self, chunk: CaptureChunk, following: CaptureChunk | None, origin: int | None) -> Iterator[Piece]:
        start = None if chunk.host_ns is None or origin is None else (chunk.host_ns - origin) / 1e9
        # The chunk's bytes arrived between its stamp and the next chunk's.
        span = 0.0
        if start is not None and following is not None and following.host_ns is not None and origin is not None:
            span = max(0.0, (following.host_ns - origin) / 1e9 - start)
        data = chunk.data
        size = len(data)
        if chunk.offset + size <= self._start:
            return  # before where this feed begins
        at = 0
        while at < size:
            # The piece size is read once per piece: the speed may change it between two pieces,
            # and a step and a slice of different sizes would feed bytes twice or skip them.
            length = self.piece_bytes
            first = max(at, self._start - chunk.offset)  # a feed that begins inside this piece
            if first < at + length:
                when = None if start is None else start + span * first / size
                lost = chunk.lost_before if first == 0 else 0
                yield Piece(data[first : at + length], chunk.offset + first, lost, when)
            at += length

    def next_piece(self, timeout: float = 0.0) -> Piece:
        """The next piece; raises :class:`SourceEnded` after the last."""
        del timeout
        piece = next(self._pieces, None)
        if piece is None:
            raise SourceEnded(self.path)
        return piece

    def set_piece_bytes(self, size: int) -> None:
        """Change the granularity for the pieces still to come (pieces in flight keep theirs)."""
        self.piece_bytes = size

    def close(self) -> None:
        """Close the file."""
        self._reader.close()


class SourceFeed:
    """A live source, read by its own thread; every byte is written to the capture first.

    The reader thread does nothing but read and record (both wait on I/O, not on the decoder), so a
    busy decoder or screen never leaves bytes waiting in a device's small buffer. What it read waits
    in a queue for the decoder; ``backlog`` says how much.

    Args:
        source: An opened source (usually a :class:`~tracer.sources.reconnect.ReconnectingSource`).
        writer: The capture being recorded, or None (``--no-record``).
        read_bytes: Largest read.
    """

    def __init__(self, source: ByteSource, writer: CaptureWriter | None, read_bytes: int = 64 * 1024) -> None:
        self.source = source
        self.writer = writer
        self.read_bytes = read_bytes
        self.offset = 0
        self.warnings: list[str] = []
        self._drain: Callable[[], list[dict[str, Any]]] | None = getattr(source, "drain_events", None)
        self._queue: collections.deque[Piece] = collections.deque()
        self._arrived = threading.Condition()
        self._end: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.backlog = 0  # bytes read and recorded, not yet decoded

    @property
    def url(self) -> str:
        """The source's URL."""
        return getattr(self.source, "url", "") or ""

    def start(self) -> None:
        """Start the reader thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._read_loop, name="tracer-source-reader", daemon=True)
            self._thread.start()

    def _read_loop(self) -> None:
        try:
            while not self._stop.is_set():
                piece = self._read(0.1)
                if piece is not None:
                    with self._arrived:
                        self._queue.append(piece)
                        self.backlog += len(piece.data)
                        self._arrived.notify()
                    if len(piece.data) < self.read_bytes // 2:
                        # A trickle: let it gather for a moment (the device's buffer holds it) so the
                        # thread wakes a hundred times a second at most, not once per packet.
                        self._stop.wait(READ_GATHER_S)
        except BaseException as exc:  # noqa: BLE001 - handed to the decoder thread, which raises it
            with self._arrived:
                self._end = exc
                self._arrived.notify()

    def _read(self, timeout: float) -> Piece | None:
        try:
            data = self.source.read(self.read_bytes, timeout)
        except BaseException:
            # The source ended or gave up: what it sent is in the capture file now, not when the
            # session is closed (the session then reads the whole recording; a crash loses nothing).
            self._notes()
            if self.writer is not None:
                self.writer.flush()
            raise
        self._notes()
        if not data:
            if self.writer is not None:
                self.writer.flush_if_due()
            return None
        if self.writer is not None:
            self.writer.write(data)
        piece = Piece(data, self.offset)
        self.offset += len(data)
        return piece

    def next_piece(self, timeout: float = 0.1) -> Piece | None:
        """Bytes received (already in the capture), or None if nothing came within ``timeout``.

        Raises what ended the source (:class:`SourceEnded`, :class:`SourceLost`) once everything
        received before it has been handed out.
        """
        if self._thread is None:
            return self._read(timeout)
        with self._arrived:
            if not self._queue and self._end is None:
                self._arrived.wait(timeout)
            if self._queue:
                # Hand out what has queued up as one piece: the decoder's cost is per call.
                first = self._queue.popleft()
                parts, size = [first.data], len(first.data)
                while self._queue and size < COALESCE_BYTES:
                    more = self._queue.popleft()
                    parts.append(more.data)
                    size += len(more.data)
                self.backlog -= size
                return Piece(b"".join(parts), first.offset) if len(parts) > 1 else first
            if self._end is not None:
                raise self._end
            return None

    def _notes(self) -> None:
        """Source events (lost, reconnecting, connected) go into the capture as notes."""
        if self._drain is None or self.writer is None:
            return
        for event in self._drain():
            self.writer.note(event)

    @property
    def recording_bytes(self) -> int | None:
        """Size of the capture file so far."""
        return self.writer.file_size if self.writer is not None else None

    def close(self) -> None:
        """Stop the reader, flush and close the capture, then close the source."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        try:
            if self.writer is not None:
                self.writer.close()
        finally:
            self.source.close()
