"""Serial-like sources through pyserial's ``serial_for_url``.

``serial:///dev/ttyACM0?baud=921600`` opens a device; ``socket://``, ``rfc2217://`` and ``loop://``
are pyserial's own URL handlers (QEMU's UART on a TCP port is ``socket://127.0.0.1:PORT``).
pyserial is imported here only, when such a source is opened.

Two pyserial behaviours would lose bytes and are worked around here:

* ``socket://`` empties its input buffer at the end of ``open()``, so bytes the peer sent right
  after the connection (QEMU starts the guest the moment we connect) would be thrown away.
* A blocking ``read(n)`` that meets the peer closing raises and discards what it had gathered in
  that call. Reads are therefore non-blocking (``timeout=0``: one ``recv`` of what is there) and
  the waiting is done here.
"""

from __future__ import annotations

import time
from typing import Any

from tracer.errors import SourceUnavailable, UsageError
from tracer.sources.base import SourceEnded, SourceLost
from tracer.sources.url import SourceUrl

DEFAULT_BAUD = 115200
POLL_INTERVAL = 0.002  # seconds between polls while nothing has arrived


class SerialSource:
    """A serial port or pyserial URL.

    Args:
        url: The parsed URL (``serial://``, ``socket://``, ``rfc2217://``, ``loop://``).
        connect_retries: Seconds to keep retrying the open (QEMU needs a moment to listen).
    """

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
        """Open the port, retrying for ``connect_retries`` seconds."""
        try:
            import serial  # loaded only when a serial source opens
        except ImportError:  # pragma: no cover - pyserial is a core dependency
            raise SourceUnavailable("pyserial is not installed: pip install pyserial") from None
        deadline = time.monotonic() + self._retry_for
        while True:
            try:
                port = serial.serial_for_url(self._pyserial_url(), baudrate=self.baud, timeout=0, do_not_open=True)
                if self._parsed.scheme == "socket":
                    # Keep what the peer sends the moment we connect (see the module docstring).
                    port.reset_input_buffer = _keep_input  # type: ignore[method-assign]  # this port only, on purpose
                port.open()
                self._port = port
                return
            except (serial.SerialException, OSError, ValueError) as exc:
                if time.monotonic() >= deadline:
                    raise SourceUnavailable(f"{self.url}: cannot open: {exc}") from None
                time.sleep(0.02)

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return what has arrived, waiting up to ``timeout`` seconds for the first byte."""
        import serial

        port = self._port
        assert port is not None, "open() first"
        deadline = time.monotonic() + timeout
        try:
            while True:
                data = port.read(max_bytes)
                if data:
                    return bytes(data)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return b""
                time.sleep(min(POLL_INTERVAL, remaining))
        except serial.SerialException as exc:
            # pyserial's socket:// reports the peer closing as an exception, not as b"".
            if "disconnected" in str(exc).lower():
                raise SourceEnded(self.url) from None
            raise SourceLost(f"{self.url}: {exc}") from None
        except OSError as exc:
            raise SourceLost(f"{self.url}: {exc}") from None

    def write(self, data: bytes) -> None:
        """Send bytes to the target (commands to a demo firmware).

        Raises:
            SourceLost: The port or connection went away.
        """
        import serial

        assert self._port is not None, "open() first"
        try:
            self._port.write(data)
        except (serial.SerialException, OSError) as exc:
            raise SourceLost(f"{self.url}: {exc}") from None

    def close(self) -> None:
        """Close the port."""
        if self._port is not None:
            self._port.close()
            self._port = None

    def metadata(self) -> dict[str, Any]:
        """The port and its baud rate."""
        return {"source": self.url, "baud": self.baud}


def _keep_input() -> None:
    """Stands in for pyserial's input flush on open."""
