"""``tcp://HOST:PORT``: raw trace servers (pyOCD/OpenOCD SWO on 3443, J-Link GDB server SWO on 2332, Orbuculum)."""

from __future__ import annotations

import socket
from typing import Any

from tracer.errors import SourceUnavailable
from tracer.sources.base import SourceEnded, SourceLost
from tracer.sources.url import SourceUrl

DEFAULT_PORT = 3443


class TcpSource:
    """A plain TCP client; the server sends raw trace bytes until it closes."""

    def __init__(self, url: SourceUrl, connect_timeout: float = 5.0) -> None:
        self.url = url.text
        self.host, self.port = url.host_port(DEFAULT_PORT)
        self._timeout = connect_timeout
        self._sock: socket.socket | None = None

    def open(self) -> None:
        """Connect to the server."""
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=self._timeout)
        except OSError as exc:
            raise SourceUnavailable(f"{self.url}: cannot connect to {self.host}:{self.port}: {exc}") from None

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return received bytes; raises SourceEnded when the server closes."""
        assert self._sock is not None, "open() first"
        self._sock.settimeout(timeout)
        try:
            data = self._sock.recv(max_bytes)
        except TimeoutError:
            return b""
        except ConnectionResetError as exc:
            raise SourceLost(f"{self.url}: connection reset by the server ({exc})") from None
        except OSError as exc:
            raise SourceLost(f"{self.url}: {exc}") from None
        if not data:
            raise SourceEnded(self.url)
        return data

    def close(self) -> None:
        """Close the connection."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def metadata(self) -> dict[str, Any]:
        """The server's address."""
        return {"source": self.url}
