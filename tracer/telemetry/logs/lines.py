"""Cutting text into lines and taking off the logging prefixes firmware puts in front of them."""

from __future__ import annotations

import re

# MLEK ("INFO - "), ExecuTorch ("I [executorch:file.cpp:120] "), ethos-u-core-software's
# ethosu_log.h ("I: ", "W: ", "E: ", "D: function(): "), Zephyr-style ("<inf> name: ") and bracketed
# timestamps ("[00:00:01.234,567] ", "[   12.345] ").
_PREFIXES = (
    re.compile(r"^(?P<level>INFO|WARN|WARNING|ERROR|DEBUG|TRACE) - ?"),
    re.compile(r"^(?P<level>[DIWEF]) \[executorch:[^\]]*\]\s?"),
    re.compile(r"^(?P<level>[IWED]): (?:\w+\(\): )?"),
    re.compile(r"^\[[0-9:.,\s]+\]\s*(?:<(?P<level>inf|wrn|err|dbg)>\s*[\w.]*:\s*)?"),
)
_LEVELS = {"E": "error", "ERROR": "error", "err": "error", "F": "error", "W": "warning", "WARN": "warning",
           "WARNING": "warning", "wrn": "warning"}  # fmt: skip
MAX_LINE_CHARS = 1 << 20  # longer lines are parsed up to here (a <metrics> line is a few KiB)


def strip_prefix(line: str) -> tuple[str, str]:
    """``(level, text)``: the log level the prefix gave (``"error"``, ``"warning"`` or ``""``) and
    the text after the prefix, without surrounding white space."""
    text = line.strip()
    level = ""
    for pattern in _PREFIXES:
        m = pattern.match(text)
        if m:
            level = _LEVELS.get(m.group("level") or "", "")
            text = text[m.end() :].strip()
            break
    return level, text


class LineSplitter:
    """Turns text arriving in pieces (ITM port 0, a UART) into whole lines.

    ``\\n``, ``\\r\\n`` and a lone ``\\r`` all end a line; any split of the input gives the same
    lines.
    """

    def __init__(self) -> None:
        self._partial = ""
        self._cr = False  # the last piece ended with "\r": a following "\n" belongs to it

    def feed(self, text: str) -> list[str]:
        """The lines completed by ``text``."""
        if self._cr and text.startswith("\n"):
            text = text[1:]
        self._cr = False
        data = self._partial + text
        if data.endswith("\r"):
            self._cr = True
        parts = re.split(r"\r\n|\r|\n", data)
        self._partial = parts.pop()
        return parts

    def finish(self) -> list[str]:
        """The last line, if the text did not end with a line break."""
        rest, self._partial = self._partial, ""
        return [rest] if rest else []
