"""Serial-like sources through pyserial's ``serial_for_url``.

``serial:///dev/ttyACM0?baud=921600`` opens a device; ``socket://``, ``rfc2217://`` and ``loop://``
are pyserial's own URL handlers (QEMU's UART on a TCP port is ``socket://127.0.0.1:PORT``).
pyserial is imported here only, when such a source is opened.
"""

from __future__ import annotations

from typing import Any

from tracer.errors import SourceUnavailable, UsageError
from tracer.sources.base import SourceEnded, SourceLost
from tracer.sources.url import SourceUrl

DEFAULT_BAUD = 115200


class SerialSource:
    """A serial port or pyserial URL."""

    def __init__(self, url: SourceUrl, connect_retries: float = 0.0) -> None:
        self.url = url.text
        self._parsed = url
        self._port: Any = None
        self._retry_for = connect_retries
        baud = url.option("baud", url.option("baudrate"))
        try:
            self.baud = int(baud) if baud else DEFAULT_BAUD
        except ValueError:
            raise UsageError(f"{self.url}: baud must be a number, not {baud!r}") from None

    def _pyserial_url(self) -> str:
        if self._parsed.scheme == "serial":
            return self._parsed.location
        query = "&".join(f"{k}={v}" for k, v in self._parsed.options.items() if k not in ("baud", "baudrate"))
        base = f"{self._parsed.scheme}://{self._parsed.location}"
        return f"{base}?{query}" if query else base

    def open(self) -> None:
        """Open the port, retrying for ``connect_retries`` seconds (QEMU needs a moment to listen)."""
        import time

        try:
            import serial  # noqa: PLC0415 - optional at import time of tracer
        except ImportError:  # pragma: no cover - pyserial is a core dependency
            raise SourceUnavailable("pyserial is not installed: pip install pyserial") from None
        deadline = time.monotonic() + self._retry_for
        while True:
            try:
                self._port = serial.serial_for_url(self._pyserial_url(), baudrate=self.baud, timeout=0.1)
                return
            except (serial.SerialException, OSError, ValueError) as exc:
                if time.monotonic() >= deadline:
                    raise SourceUnavailable(f"{self.url}: cannot open: {exc}") from None
                time.sleep(0.02)

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return received bytes."""
        import serial  # noqa: PLC0415

        assert self._port is not None, "open() first"
        try:
            self._port.timeout = timeout
            waiting = self._port.in_waiting
            data = self._port.read(min(max(waiting, 1), max_bytes))
        except serial.SerialException as exc:
            # pyserial's socket:// reports the peer closing as an exception, not as b"".
            if "disconnected" in str(exc).lower():
                raise SourceEnded(self.url) from None
            raise SourceLost(f"{self.url}: {exc}") from None
        except OSError as exc:
            raise SourceLost(f"{self.url}: {exc}") from None
        return bytes(data)

    def close(self) -> None:
        """Close the port."""
        if self._port is not None:
            self._port.close()
            self._port = None

    def metadata(self) -> dict[str, Any]:
        """The port and its baud rate."""
        return {"source": self.url, "baud": self.baud}
