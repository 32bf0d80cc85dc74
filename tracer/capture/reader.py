"""Reading captures back: ``.trace`` files and other tools' raw trace files alike.

The two are told apart by content (the ``.trace`` magic), never by name: pyOCD, OpenOCD, J-Link
and Orbuculum raw files often end in ``.trace`` too. Damage never stops a read: a cut file gives
back everything before the cut, a damaged chunk is skipped, and each is reported as a
:class:`CaptureWarning` with its byte position.
"""

from __future__ import annotations

import dataclasses
import io
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from tracer.capture.format import (
    CHUNK_HEAD,
    CHUNK_MARKER,
    CRC,
    HEAD_CRC_SPAN,
    HEADER_PREFIX,
    MAGIC,
    MAX_CHUNK_PAYLOAD,
    MAX_HEADER_JSON,
    ChunkKind,
)
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.notes import checked_note
from tracer.capture.order import DataChunk, Ordered, StreamOrder
from tracer.capture.paths import not_a_file
from tracer.errors import CaptureError, reading_file
from tracer.limits import InputError, parse_json

RAW_CHUNK = 1 << 20
READ_BUFFER = 1 << 20  # many 16 KiB chunks per read from the OS; seeks within it cost nothing


@dataclasses.dataclass(frozen=True, slots=True)
class CaptureChunk:
    """Stream bytes as they were received.

    Attributes:
        offset: Position of ``data[0]`` in the source's byte stream.
        data: The bytes.
        host_ns: Host arrival time (ns since the epoch), None for raw files.
        lost_before: Stream bytes known to be lost right before this chunk (a damaged chunk).
        verified: False when the chunk was cut short and its checksum could not be checked.
    """

    offset: int
    data: bytes
    host_ns: int | None = None
    lost_before: int = 0
    verified: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class CaptureWarning:
    """Damage found while reading, at a byte position of the file."""

    position: int
    message: str

    def __str__(self) -> str:
        return self.message


def open_capture(path: str | os.PathLike[str]) -> CaptureReader:
    """Open a capture or raw trace file for reading.

    Raises:
        CaptureError: The file is missing, a directory, a device or pipe, or unreadable.
    """
    p = Path(path)
    refused = not_a_file(p)
    if refused:  # a port or a pipe: opening it could block, and it cannot seek
        raise CaptureError(refused)
    with reading_file(str(p), "a capture", CaptureError):
        stream = open(p, "rb", buffering=READ_BUFFER)  # noqa: SIM115 - owned by the reader
    return CaptureReader(stream, name=str(p))


class CaptureReader:
    """Reads one capture, streaming: memory does not grow with the file.

    Args:
        stream: A binary stream positioned at the start of the file.
        name: How to name the file in messages.
    """

    def __init__(self, stream: BinaryIO, name: str = "<stream>") -> None:
        self._stream = stream
        self.name = name
        self.warnings: list[CaptureWarning] = []
        self.events: list[tuple[int, dict[str, object]]] = []
        self.size = _size_of(stream)
        start = stream.read(len(MAGIC))
        # A file shorter than the magic that is a start of it is a capture cut inside its magic
        # (a raw stream of under 8 bytes that happens to begin 89 'T' 'R'... is the price).
        cut_in_magic = 0 < len(start) < len(MAGIC) and MAGIC.startswith(start)
        self.is_capture = start == MAGIC or cut_in_magic
        self.metadata = CaptureMetadata(source=f"file://{name}")
        self._data_start = 0
        if cut_in_magic:
            self._warn(0, f"truncated at byte {len(start)}, inside the capture's magic number")
            self._data_start = self.size
        elif self.is_capture:
            self._data_start = self._read_header()
        self._header_warnings = len(self.warnings)
        stream.seek(self._data_start)

    @classmethod
    def from_bytes(cls, blob: bytes, name: str = "<bytes>") -> CaptureReader:
        """Read a capture held in memory (tests, exports)."""
        return cls(io.BytesIO(blob), name=name)

    @property
    def kind(self) -> str:
        """``"capture"`` for a ``.trace`` capture, ``"raw"`` for another tool's raw stream."""
        return "capture" if self.is_capture else "raw"

    def close(self) -> None:
        """Close the file."""
        self._stream.close()

    def __enter__(self) -> CaptureReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chunks(self) -> Iterator[CaptureChunk]:
        """Yield the stream's bytes in order; warnings and events collect as found.

        Each pass finds the chunks' damage and events again, so a second pass (a pre-pass for the
        length, then the read) reports each once; the header's warnings stay.
        """
        del self.warnings[self._header_warnings :]
        self.events.clear()
        self._stream.seek(self._data_start)
        if self.is_capture:
            yield from self._capture_chunks()
        else:
            yield from self._raw_chunks()

    def read_stream(self) -> bytes:
        """Return all stream bytes at once (small files, tests, export)."""
        return b"".join(chunk.data for chunk in self.chunks())

    # -- raw -------------------------------------------------------------------------------------
    def _raw_chunks(self) -> Iterator[CaptureChunk]:
        offset = 0
        while True:
            data = self._stream.read(RAW_CHUNK)
            if not data:
                return
            yield CaptureChunk(offset, data)
            offset += len(data)

    # -- .trace ----------------------------------------------------------------------------------
    def _warn(self, position: int, message: str) -> None:
        self.warnings.append(CaptureWarning(position, f"{self.name}: {message}"))

    def _read_header(self) -> int:
        prefix = self._stream.read(HEADER_PREFIX.size)
        base = len(MAGIC)
        if len(prefix) < HEADER_PREFIX.size:
            self._warn(base, f"truncated at byte {base + len(prefix)}, inside the capture header")
            return self.size
        version, length = HEADER_PREFIX.unpack(prefix)
        body_at = base + HEADER_PREFIX.size
        if length > MAX_HEADER_JSON:
            self._warn(base, f"capture header at byte {base} is damaged (length {length}); metadata unknown")
            return self._resync(body_at)
        body = self._stream.read(length)
        crc = self._stream.read(CRC.size)
        end = body_at + length + CRC.size
        if len(body) < length or len(crc) < CRC.size:
            first_chunk = self._resync(body_at)
            if first_chunk < self.size:  # chunks follow: the length is what is damaged
                self._warn(body_at, f"capture header at byte {base} is damaged (length {length}); metadata ignored")
                return first_chunk
            self._warn(body_at, f"truncated at byte {body_at + len(body) + len(crc)}, inside the capture header")
            return self.size
        if CRC.unpack(crc)[0] != zlib.crc32(body):
            # The length may be the damaged part: find the first chunk by its own checksum.
            self._warn(body_at, f"capture header at byte {body_at} fails its checksum; metadata ignored")
            return self._resync(body_at)
        header = self._json(body, body_at, f"capture header at byte {body_at}", "metadata ignored")
        if header is not None:
            self.metadata, problems = CaptureMetadata.checked(header)
            for problem in problems:
                self._warn(body_at, f"capture header at byte {body_at}: {problem}")
        if version > 1:
            self._warn(base, f"capture format version {version} is newer than this tracer knows (1)")
        return end

    def _capture_chunks(self) -> Iterator[CaptureChunk]:
        order = StreamOrder(self._warn, self.size)
        for item in self._chunks_in_file(order):
            yield from map(_given, order.add(item))
        yield from map(_given, order.finish())

    def _chunks_in_file(self, order: StreamOrder) -> Iterator[DataChunk]:
        """The data chunks in file order; events and metadata patches applied, damage said."""
        pos = self._data_start
        self._stream.seek(pos)
        while True:
            if self._stream.tell() != pos:  # after a skip: the reads below leave it at the next chunk
                self._stream.seek(pos)
            at = pos
            head = self._stream.read(CHUNK_HEAD.size)
            if not head:
                return
            if len(head) < CHUNK_HEAD.size:
                self._warn(pos, f"truncated at byte {pos + len(head)}: a chunk header was cut short")
                return
            fields = _parse_head(head)
            if fields is None:
                nxt = self._resync(pos + 1)
                self._warn(pos, f"corrupt chunk at byte {pos}: bad chunk header checksum; skipped {nxt - pos} bytes")
                order.skipped(nxt - pos)
                pos = nxt
                continue
            kind, _stream_id, host_ns, offset, length, payload_crc = fields
            body_at = pos + CHUNK_HEAD.size
            if kind not in _KINDS:
                self._warn(
                    pos,
                    f"chunk at byte {pos} is of kind {kind}, which this tracer does not know (written by a newer "
                    f"one?); its {length} bytes skipped",
                )
                pos = body_at + length
                continue
            payload = self._stream.read(length)
            if len(payload) < length:
                self._warn(
                    body_at + len(payload),
                    f"truncated at byte {body_at + len(payload)}: last chunk (at byte {pos}) cut after "
                    f"{len(payload)} of {length} bytes; those bytes are kept unverified",
                )
                if kind == ChunkKind.DATA and payload:
                    yield DataChunk(pos, offset, payload, host_ns, verified=False)
                return
            pos = body_at + length
            if zlib.crc32(payload) != payload_crc:
                self._warn(
                    body_at,
                    f"corrupt chunk at byte {body_at}: checksum mismatch; stream bytes "
                    f"{offset}..{offset + length} skipped",
                )
                if kind == ChunkKind.DATA:
                    order.damaged(offset, length)
                continue
            if kind == ChunkKind.DATA:
                yield DataChunk(at, offset, payload, host_ns)
            elif kind == ChunkKind.EVENT:
                event = self._json(payload, body_at, f"event chunk at byte {at}", "ignored")
                wrong = None if event is None else checked_note(event)
                if wrong is not None:
                    self._warn(at, f"event chunk at byte {at}: {wrong}; ignored")
                elif event is not None:
                    self.events.append((offset, event))
            else:
                patch = self._json(payload, body_at, f"metadata chunk at byte {at}", "ignored")
                if patch is not None:
                    self.metadata, problems = self.metadata.merged_checked(patch)
                    for problem in problems:
                        self._warn(at, f"metadata chunk at byte {at}: {problem}")

    def _json(self, blob: bytes, at: int, what: str, consequence: str) -> dict[str, Any] | None:
        """A JSON object from the file, or None with a warning saying why not."""
        try:
            value = parse_json(blob, nonfinite=True)
        except InputError as exc:
            self._warn(at, f"{what} is not usable JSON ({exc.message}, at byte {at + exc.offset}); {consequence}")
            return None
        if not isinstance(value, dict):
            self._warn(at, f"{what} is {_shape(value)}, not a JSON object; {consequence}")
            return None
        return value

    def _resync(self, start: int) -> int:
        """Return the file position of the next valid chunk head at or after ``start``."""
        window = 1 << 20
        pos = start
        while pos < self.size:
            self._stream.seek(pos)
            block = self._stream.read(window + CHUNK_HEAD.size)
            at = block.find(CHUNK_MARKER)
            while at != -1:
                head = block[at : at + CHUNK_HEAD.size]
                if len(head) < CHUNK_HEAD.size:
                    break
                if _parse_head(head) is not None:
                    return pos + at
                at = block.find(CHUNK_MARKER, at + 1)
            pos += window
        return self.size


_KINDS = frozenset(ChunkKind)


def _parse_head(head: bytes) -> tuple[int, int, int, int, int, int] | None:
    """The fields of a chunk head whose checksum holds (whatever its kind), else None."""
    marker, kind, stream_id, _res, host_ns, offset, length, payload_crc, head_crc = CHUNK_HEAD.unpack(head)
    if marker != CHUNK_MARKER or zlib.crc32(head[:HEAD_CRC_SPAN]) != head_crc:
        return None
    if length > MAX_CHUNK_PAYLOAD:
        return None
    return kind, stream_id, host_ns, offset, length, payload_crc


def _given(item: Ordered) -> CaptureChunk:
    chunk = item.chunk
    return CaptureChunk(item.offset, chunk.data, chunk.host_ns, item.lost_before, chunk.verified)


def _shape(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "a string"


def _size_of(stream: BinaryIO) -> int:
    here = stream.tell()
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(here)
    return size
