"""Opening a source from its URL."""

from __future__ import annotations

from typing import Callable

from tracer.errors import UsageError
from tracer.sources.base import ByteSource
from tracer.sources.url import SourceUrl


def _file(url: SourceUrl) -> ByteSource:
    from tracer.sources.file import FileSource

    return FileSource(url)


def _tcp(url: SourceUrl) -> ByteSource:
    from tracer.sources.tcp import TcpSource

    return TcpSource(url)


def _serial(url: SourceUrl) -> ByteSource:
    from tracer.sources.serial_port import SerialSource

    return SerialSource(url)


# scheme -> (factory, one-line description with an example). Issue-specific backends add rows.
SCHEMES: dict[str, tuple[Callable[[SourceUrl], ByteSource], str]] = {
    "file": (_file, "file://capture.trace  a capture or another tool's raw trace file"),
    "tcp": (_tcp, "tcp://localhost:3443  a raw trace server (pyOCD/OpenOCD 3443, J-Link 2332, Orbuculum)"),
    "socket": (_serial, "socket://127.0.0.1:4321  a TCP byte stream via pyserial (QEMU or FVP UART)"),
    "serial": (_serial, "serial:///dev/ttyACM0?baud=921600  a serial port (USB-UART on SWO, board UART)"),
    "rfc2217": (_serial, "rfc2217://host:port  a serial port shared over the network"),
    "loop": (_serial, "loop://  pyserial's loopback (tests)"),
}


def source_schemes() -> list[str]:
    """The example lines for ``--help``."""
    return [text for _factory, text in SCHEMES.values()]


def open_source(text: str) -> ByteSource:
    """Return an unopened source for a URL.

    Raises:
        UsageError: Unknown scheme.
    """
    url = SourceUrl.parse(text)
    entry = SCHEMES.get(url.scheme)
    if entry is None:
        known = ", ".join(f"{s}://" for s in SCHEMES)
        raise UsageError(f"unknown source {text!r}: expected one of {known}")
    return entry[0](url)
