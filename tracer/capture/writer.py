"""Appending raw bytes to a capture so that a crash or a kill loses at most the unflushed tail."""

from __future__ import annotations

import errno
import json
import os
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from tracer.capture.format import (
    CHUNK_HEAD,
    CHUNK_MARKER,
    CRC,
    DATA_CHUNK_BYTES,
    HEAD_CRC_SPAN,
    HEADER_PREFIX,
    MAGIC,
    VERSION,
    ChunkKind,
)
from tracer.capture.metadata import CaptureMetadata
from tracer.errors import OutputError, UsageError


def encode_chunk(kind: ChunkKind, payload: bytes, host_ns: int, stream_offset: int, stream: int = 0) -> bytes:
    """Return one chunk, head and payload, ready to append."""
    head = CHUNK_HEAD.pack(
        CHUNK_MARKER, int(kind), stream, 0, host_ns, stream_offset, len(payload), zlib.crc32(payload), 0
    )
    head_crc = zlib.crc32(head[:HEAD_CRC_SPAN])
    return head[:HEAD_CRC_SPAN] + CRC.pack(head_crc) + payload


def encode_header(metadata: CaptureMetadata) -> bytes:
    """Return the file magic and the metadata header."""
    body = json.dumps(metadata.to_json(), sort_keys=True).encode()
    return MAGIC + HEADER_PREFIX.pack(VERSION, len(body)) + body + CRC.pack(zlib.crc32(body))


class CaptureWriter:
    """Append-only writer of a ``.trace`` capture.

    Bytes handed to :meth:`write` are gathered for at most ``flush_interval`` seconds or
    ``flush_bytes`` bytes, then appended as one checksummed chunk with a single ``os.write``, so a
    killed process leaves every earlier chunk intact. ``fsync`` runs every ``sync_interval`` seconds
    and on close.

    Args:
        path: Where to write. Refused if it exists, unless ``overwrite``.
        metadata: The header.
        overwrite: Replace an existing file.
        flush_bytes: Largest data chunk payload, at most ``DATA_CHUNK_BYTES`` (16 KiB): a damaged
            chunk loses its bytes, so chunks stay small.
        flush_interval: Longest time a received byte waits in memory, in seconds.
        sync_interval: Seconds between fsyncs.
        clock: Host clock in nanoseconds (injectable for tests).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        metadata: CaptureMetadata,
        *,
        overwrite: bool = False,
        flush_bytes: int = DATA_CHUNK_BYTES,
        flush_interval: float = 0.1,
        sync_interval: float = 1.0,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        if not 0 < flush_bytes <= DATA_CHUNK_BYTES:
            raise ValueError(f"flush_bytes must be 1..{DATA_CHUNK_BYTES}, not {flush_bytes}")
        self.path = Path(path)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            self._fd: int | None = os.open(self.path, flags | getattr(os, "O_BINARY", 0), 0o644)
        except FileExistsError:
            raise UsageError(f"{self.path} exists; choose another name or pass --force to replace it") from None
        except OSError as exc:
            raise UsageError(f"cannot create {self.path}: {exc.strerror}") from None
        self.metadata = metadata.stamped()
        self._clock = clock
        self._flush_bytes = flush_bytes
        self._flush_ns = int(flush_interval * 1e9)
        self._sync_ns = int(sync_interval * 1e9)
        self._pending = bytearray()
        self._pending_since: int | None = None
        self._last_sync = clock()
        self.stream_offset = 0
        self.file_size = 0
        self._append(encode_header(self.metadata))
        self._fsync()

    # -- writing ---------------------------------------------------------------------------------
    def write(self, data: bytes, host_ns: int | None = None) -> None:
        """Add received bytes; they reach the file within ``flush_interval``."""
        if not data:
            return
        now = self._clock() if host_ns is None else host_ns
        if self._pending_since is None:
            self._pending_since = now
        self._pending += data
        while len(self._pending) >= self._flush_bytes:
            self._emit_data(self._flush_bytes)
        self.flush_if_due(now)

    def note(self, event: dict[str, Any]) -> None:
        """Record an event about the source (disconnect, reconnect, probe-reported loss)."""
        self.flush()
        payload = json.dumps(event, sort_keys=True).encode()
        self._append(encode_chunk(ChunkKind.EVENT, payload, self._clock(), self.stream_offset))

    def update_metadata(self, patch: dict[str, Any]) -> None:
        """Record metadata learned after the header was written."""
        self.flush()
        self.metadata = self.metadata.merged(patch)
        payload = json.dumps(patch, sort_keys=True).encode()
        self._append(encode_chunk(ChunkKind.METADATA, payload, self._clock(), self.stream_offset))

    def flush_if_due(self, now: int | None = None) -> None:
        """Flush if the oldest pending byte has waited long enough; call it on read timeouts too."""
        now = self._clock() if now is None else now
        if self._pending_since is not None and now - self._pending_since >= self._flush_ns:
            self.flush()
        if now - self._last_sync >= self._sync_ns and self._fd is not None:
            self._fsync()
            self._last_sync = now

    def flush(self) -> None:
        """Append everything pending as chunks now."""
        while self._pending:
            self._emit_data(min(len(self._pending), self._flush_bytes))

    def close(self) -> None:
        """Flush, fsync and close. Safe to call twice."""
        if self._fd is None:
            return
        try:
            self.flush()
            self._fsync()
        finally:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as exc:
                raise OutputError(str(self.path), exc) from None

    @property
    def bytes_received(self) -> int:
        """Stream bytes handed to the writer so far, flushed or not."""
        return self.stream_offset + len(self._pending)

    # -- internals -------------------------------------------------------------------------------
    def _emit_data(self, size: int) -> None:
        payload = bytes(self._pending[:size])
        del self._pending[:size]
        host_ns = self._pending_since if self._pending_since is not None else self._clock()
        self._append(encode_chunk(ChunkKind.DATA, payload, host_ns, self.stream_offset))
        self.stream_offset += len(payload)
        self._pending_since = self._clock() if self._pending else None

    def _append(self, blob: bytes) -> None:
        if self._fd is None:
            raise ValueError("capture is closed")
        view = memoryview(blob)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as exc:  # a full disk, /dev/full: say which file and why (exit 2)
            raise OutputError(str(self.path), exc) from None
        self.file_size += len(blob)

    def _fsync(self) -> None:
        assert self._fd is not None
        try:
            os.fsync(self._fd)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EROFS):  # a device or pipe that cannot sync
                raise OutputError(str(self.path), exc) from None

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
