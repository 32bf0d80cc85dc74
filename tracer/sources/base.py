"""The one small interface every byte source implements."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from tracer.errors import SourceUnavailable


class SourceEnded(Exception):
    """The source has no more bytes: end of file, the peer closed, the firmware exited."""


class SourceLost(SourceUnavailable):
    """The source went away unexpectedly (cable pulled, probe reset, connection reset)."""


@runtime_checkable
class ByteSource(Protocol):
    """A stream of trace bytes.

    ``read`` returns what has arrived (``b""`` if nothing came within ``timeout``), raises
    :class:`SourceEnded` at a clean end and :class:`SourceLost` when the device goes away. A source
    never drops bytes it has received: on loss, what arrived before is returned first.
    """

    url: str

    def open(self) -> None:
        """Connect. Raises :class:`~tracer.errors.SourceUnavailable` if it cannot."""

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return received bytes, at most ``max_bytes``."""

    def close(self) -> None:
        """Disconnect; safe to call twice."""

    def metadata(self) -> dict[str, Any]:
        """Facts for the capture header (source URL, clocks, TPIU, encoding)."""
