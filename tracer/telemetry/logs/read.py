"""``read_log``: a whole text log from a path or a stream."""

from __future__ import annotations

import io
import os
from typing import IO, TYPE_CHECKING, Union

from tracer.base.timeline import InferenceTimeline
from tracer.errors import CaptureError, reading_file
from tracer.telemetry.logs.reader import LogReader
from tracer.telemetry.logs.sniff import SNIFF_BYTES, first_binary_position, is_text_log

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

LogInput = Union[str, "os.PathLike[str]", IO[bytes], IO[str]]


def read_log(source: LogInput, name: str | None = None) -> InferenceTimeline:
    """Read a firmware text log.

    Args:
        source: A path, a binary stream or a text stream.
        name: What to call it in messages (default: the path, or the stream's ``name``).

    Raises:
        CaptureError: The file cannot be read, or its first bytes are binary (with the line and
            byte offset of the first binary byte).
    """
    if isinstance(source, (str, os.PathLike)):
        label = name or str(source)
        with reading_file(label, "a log", CaptureError), open(source, "rb") as handle:
            return _read_binary(handle, label)
    label = name or str(getattr(source, "name", "<log>"))
    if isinstance(source, io.TextIOBase):
        return _read_lines(source, label)
    first = source.read(0)
    if isinstance(first, str):
        return _read_lines(source, label)  # type: ignore[arg-type]  # it read as str: a text stream
    return _read_binary(source, label)  # type: ignore[arg-type]  # it read as bytes: a binary stream


def _read_binary(handle: IO[bytes], label: str) -> InferenceTimeline:
    head = handle.read(SNIFF_BYTES)
    if head and not is_text_log(head):
        line, offset = first_binary_position(head)
        raise CaptureError(
            f"{label}: line {line}: not a text log (binary data near byte {offset}); expected UART or FVP text output"
        )
    stream = io.TextIOWrapper(io.BufferedReader(_Prepend(head, handle)), encoding="utf-8", errors="replace", newline="")
    return _read_lines(stream, label)


def _read_lines(stream: IO[str], label: str) -> InferenceTimeline:
    reader = LogReader(label)
    while True:
        chunk = stream.read(1 << 16)
        if not chunk:
            break
        reader.feed_text(chunk)
    return reader.finish()


class _Prepend(io.RawIOBase):
    """The sniffed head followed by the rest of the stream."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer, /) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(view))
        n = len(data)
        view[:n] = data
        return n
