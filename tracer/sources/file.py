"""``file://PATH``: replay a capture or another tool's raw trace file as a source."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tracer.capture.reader import CaptureChunk, CaptureReader, open_capture
from tracer.sources.base import SourceEnded
from tracer.sources.url import SourceUrl


class FileSource:
    """Reads the stream bytes of a file, as fast as asked (pacing is the replayer's job)."""

    def __init__(self, url: SourceUrl) -> None:
        self.url = url.text
        self.path = url.location
        self._reader: CaptureReader | None = None
        self._chunks: Iterator[CaptureChunk] | None = None
        self._pending = b""

    def open(self) -> None:
        """Open the file (a missing file is a capture error, exit 3)."""
        self._reader = open_capture(self.path)
        self._chunks = self._reader.chunks()

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return the next bytes of the file's stream."""
        del timeout
        assert self._chunks is not None, "open() first"
        if not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                raise SourceEnded(self.path)
            self._pending = chunk.data
        data, self._pending = self._pending[:max_bytes], self._pending[max_bytes:]
        return data

    def close(self) -> None:
        """Close the file."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def metadata(self) -> dict[str, Any]:
        """The replayed capture's own metadata, so a re-recording keeps its clocks."""
        meta = self._reader.metadata.to_json() if self._reader and self._reader.is_capture else {}
        meta["source"] = self.url
        return meta

    @property
    def warnings(self) -> list[str]:
        """Damage found in the file so far."""
        return [str(w) for w in self._reader.warnings] if self._reader else []
