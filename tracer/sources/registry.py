"""Opening a source from its URL."""

from __future__ import annotations

from collections.abc import Callable

from tracer.errors import UsageError
from tracer.sources.base import ByteSource
from tracer.sources.url import SourceUrl


def _file(url: SourceUrl) -> ByteSource:
    from tracer.capture.paths import not_a_file
    from tracer.sources.file import FileSource

    refused = not_a_file(url.location)
    if refused:  # a port typed as a path: say which URL reads it, before anything starts
        raise UsageError(refused)
    return FileSource(url)


def _tcp(url: SourceUrl) -> ByteSource:
    from tracer.sources.tcp import TcpSource

    return TcpSource(url)


def _serial(url: SourceUrl) -> ByteSource:
    from tracer.sources.serial_port import SerialSource

    return SerialSource(url)


def _jlink(url: SourceUrl) -> ByteSource:
    from tracer.sources.jlink import JLinkSource

    return JLinkSource(url)


def _pyocd(url: SourceUrl) -> ByteSource:
    from tracer.sources.pyocd_probe import PyocdSource

    return PyocdSource(url)


def _orbflow(url: SourceUrl) -> ByteSource:
    from tracer.sources.orbflow import OrbflowSource

    return OrbflowSource(url)


def _qemu(url: SourceUrl) -> ByteSource:
    from tracer.sources.qemu import open_qemu_url

    return open_qemu_url(url)


def _fvp(url: SourceUrl) -> ByteSource:
    raise UsageError(
        f"{url.text}: the FVP launcher takes the FVP command line after --, e.g. "
        "tracer record fvp -o run.trace -- FVP_Corstone_SSE-300_Ethos-U55 -a app.axf"
    )


# scheme -> (factory, one-line description with an example). Issue-specific backends add rows.
SCHEMES: dict[str, tuple[Callable[[SourceUrl], ByteSource], str]] = {
    "file": (_file, "file://capture.trace  a capture or another tool's raw trace file"),
    "tcp": (_tcp, "tcp://localhost:3443  a raw trace server (pyOCD/OpenOCD 3443, J-Link 2332, Orbuculum)"),
    "socket": (_serial, "socket://127.0.0.1:4321  a TCP byte stream via pyserial (QEMU or FVP UART)"),
    "serial": (_serial, "serial:///dev/ttyACM0?baud=921600  a serial port (USB-UART on SWO, board UART)"),
    "rfc2217": (_serial, "rfc2217://host:port  a serial port shared over the network"),
    "loop": (_serial, "loop://  pyserial's loopback (tests)"),
    "jlink": (_jlink, "jlink://600012345?device=STM32H743ZI&cpu=480M&swo=2M  a J-Link: SWO, &rtt=1, or polled memory"),
    "pyocd": (_pyocd, "pyocd://0240000034544e45?target=stm32h743zitx&cpu=480M&swo=2M  CMSIS-DAP/ST-Link via pyOCD"),
    "orbflow": (_orbflow, "orbflow://localhost:3402?tag=1  Orbuculum's framed stream (ITM of TPIU stream 1)"),
    "fvp": (_fvp, "fvp -- FVP_Corstone_SSE-300_Ethos-U55 -a app.axf  run an Arm FVP and record its UART"),
    "qemu": (_qemu, "qemu://mps3-an547?inferences=20  the demo firmware on QEMU (built when needed; tracer demo)"),
}


# Sources given by a word and a command line after --, not by a URL.
LAUNCHERS = ("fvp",)


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
        known = ", ".join(f"{s}://" for s in SCHEMES if s not in LAUNCHERS)
        raise UsageError(f"unknown source {text!r}: expected one of {known}, or 'fvp -- COMMAND' (an FVP to run)")
    return entry[0](url)
