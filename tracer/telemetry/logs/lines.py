"""Cutting text into lines and taking off the logging prefixes firmware puts in front of them."""

from __future__ import annotations

import re

from tracer.limits import MAX_LOG_LINE_CHARS, bounded_numbers

# MLEK ("INFO - "), ExecuTorch ("I [executorch:file.cpp:120] "), ethos-u-core-software's
# ethosu_log.h ("I: ", "W: ", "E: ", "D: function(): "), Zephyr-style ("<inf> name: ") and bracketed
# timestamps ("[00:00:01.234,567] ", "[   12.345] ").
_PREFIXES = (
    re.compile(r"^(?P<level>INFO|WARN|WARNING|ERROR|DEBUG|TRACE) - ?"),
    re.compile(r"^(?P<level>[DIWEF]) \[executorch:[^\]]*\]\s?"),
    re.compile(r"^(?P<level>[IWED]): (?:\w+\(\): )?"),
    re.compile(r"^\[[0-9:.,\s]+\]\s*(?:<(?P<level>inf|wrn|err|dbg)>\s*[\w.]*:\s*)?"),
)
_LEVELS = {
    "E": "error",
    "ERROR": "error",
    "err": "error",
    "F": "error",
    "W": "warning",
    "WARN": "warning",
    "WARNING": "warning",
    "wrn": "warning",
}
MAX_LINE_CHARS = MAX_LOG_LINE_CHARS  # longer lines are cut here (a <metrics> line is a few KiB)


def strip_prefix(line: str) -> tuple[str, str]:
    """``(level, text)``: the log level the prefix gave (``"error"``, ``"warning"`` or ``""``) and
    the text after the prefix, without surrounding white space.
    """
    text = line.strip()
    level = ""
    for pattern in _PREFIXES:
        m = pattern.match(text)
        if m:
            level = _LEVELS.get(m.group("level") or "", "")
            text = text[m.end() :].strip()
            break
    return level, text


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# What the readers' patterns are given of a line: enough for every format (a <metrics> line is a
# few KiB; tables align with a few dozen spaces), little enough that a pattern slow on a long
# line or a long run of spaces stays quick (a 100,000-space run once made one run for minutes).
MAX_PARSED_CHARS = 64 * 1024
MAX_SPACE_RUN = 64
_SPACE_RUN = re.compile(rf"[ \t]{{{MAX_SPACE_RUN + 1},}}")


def parse_view(text: str) -> str:
    """The line as the readers parse it: at most ``MAX_PARSED_CHARS`` characters, runs of spaces
    and tabs cut to ``MAX_SPACE_RUN``, digit runs bounded (:func:`tracer.limits.bounded_numbers`).
    The console keeps the line as it came.
    """
    text = text[:MAX_PARSED_CHARS]
    if len(text) > MAX_SPACE_RUN:
        text = _SPACE_RUN.sub(" " * MAX_SPACE_RUN, text)
    return bounded_numbers(text)


class LineSplitter:
    r"""Turns text arriving in pieces (ITM port 0, a UART) into whole lines.

    ``\\n``, ``\\r\\n`` and a lone ``\\r`` all end a line; any split of the input gives the same
    lines. Linear in the input whatever the lines' length: only new text is searched for breaks,
    and a line is kept up to ``MAX_LOG_LINE_CHARS`` characters (the rest is dropped and counted
    in ``dropped_chars`` and ``cut_lines``), so one endless line costs neither time nor memory.
    """

    def __init__(self) -> None:
        self._pieces: list[str] = []  # the line not yet ended, in the pieces it came in
        self._kept = 0  # characters in those pieces
        self._cutting = False  # the line not yet ended is longer than it may be
        self._cr = False  # the last piece ended with "\r": a following "\n" belongs to it
        self.cut_lines = 0
        self.dropped_chars = 0

    def feed(self, text: str) -> list[str]:
        """The lines completed by ``text``."""
        if self._cr and text.startswith("\n"):
            text = text[1:]
        self._cr = text.endswith("\r")
        parts = _LINE_BREAK.split(text)
        self._add(parts[0])
        if len(parts) == 1:
            return []
        lines = [self._take()]
        for whole in parts[1:-1]:
            self._add(whole)
            lines.append(self._take())
        self._add(parts[-1])
        return lines

    def finish(self) -> list[str]:
        """The last line, if the text did not end with a line break."""
        if not self._pieces and not self._cutting:
            return []
        line = self._take()
        return [line] if line else []

    def _add(self, piece: str) -> None:
        room = MAX_LOG_LINE_CHARS - self._kept
        if len(piece) > room:
            self.dropped_chars += len(piece) - max(room, 0)
            self._cutting = True
            piece = piece[: max(room, 0)]
        if piece:
            self._pieces.append(piece)
            self._kept += len(piece)

    def _take(self) -> str:
        line = "".join(self._pieces)
        if self._cutting:
            self.cut_lines += 1
        self._pieces, self._kept, self._cutting = [], 0, False
        return line
