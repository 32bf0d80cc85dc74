"""Paths a user types where a file is expected but that name a port, a pipe or a device.

``tracer report /dev/ttyS0`` or ``tracer record /dev/ttyACM0 -o run.trace`` name a serial port
where a file was expected (a bare path is a file, ``file://``): reading one as a capture would
block on the port, or fail on its first seek. :func:`not_a_file` says what the path is and what
to type instead, before anything is opened.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

# Names of devices on Linux, macOS and Windows, and of serial ports among them.
_DEVICE_NAME = re.compile(r"^(/dev/.+|COM\d+|\\\\\.\\COM\d+)$", re.IGNORECASE)
_PORT_NAME = re.compile(r"^(/dev/(tty|cu\.|serial/|rfcomm).*|COM\d+|\\\\\.\\COM\d+)$", re.IGNORECASE)


def serial_hint(path: str) -> str:
    """What to type to read the port ``path``, and where to find the ports."""
    return f"a serial port is a source URL: serial://{path}?baud=115200 ('tracer list' shows the ports)"


def not_a_file(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a file, when it names a device, a pipe or a socket (present,
    or missing under a device's name); None for a file, a directory or any other missing path.
    """
    text = os.fspath(path)
    try:
        mode = Path(text).stat().st_mode
    except OSError:
        if _DEVICE_NAME.match(text):
            return f"{text}: no such device; {serial_hint(text)}"
        return None
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        port = _PORT_NAME.match(text)
        return f"{text} is a device, not a capture file" + (f"; {serial_hint(text)}" if port else "")
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        kind = "a pipe" if stat.S_ISFIFO(mode) else "a socket"
        return (
            f"{text} is {kind}, not a capture file: record the stream first (tracer record SOURCE "
            "-o run.trace, with a source URL: tracer record --help)"
        )
    return None
