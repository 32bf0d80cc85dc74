"""The firmware's console: ITM port 0 or UART text, stamped with target time where known."""

from __future__ import annotations

from typing import Callable

from textual.binding import Binding
from textual.widgets import Log

from tracer.session.engine import CONSOLE_LINES
from tracer.session.snapshot import SessionSnapshot
from tracer.base.timeline import ConsoleLine
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View

MAX_LINES = CONSOLE_LINES  # as many as the session keeps


def console_text(line: ConsoleLine, clock_hz: int | None) -> str:
    """``  0.094731 s │ text`` (target time when the line has one and the clock is known)."""
    if line.cycle is not None and clock_hz:
        return f"{line.cycle / clock_hz:>11.6f} s │ {line.text}"
    if line.cycle is not None:
        return f"{line.cycle:>11,} c │ {line.text}"
    return f"{'':>13} │ {line.text}"


class ConsoleView(View, Log, inherit_bindings=False):
    """Console lines as they arrive (plain text: cheap at any rate)."""

    interval = 0.25

    DEFAULT_CSS = """
    ConsoleView { border: round $primary-darken-2; border-title-color: $text; }
    """
    BINDINGS = [
        Binding("up", "scroll_up", "Up", show=False),
        Binding("down", "scroll_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom", show=False),
    ]

    def __init__(self, lines: Callable[[int, int], tuple[list[ConsoleLine], int]], *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, max_lines=MAX_LINES, auto_scroll=True)
        self.border_title = "Console"
        self._source = lines
        self._seq = 0
        self._count = 0

    def on_resize(self) -> None:
        """Keep the newest line in sight after a resize."""
        if self.auto_scroll:
            self.scroll_end(animate=False, immediate=True)

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Append the lines that arrived since the last refresh."""
        if snapshot.console_seq == self._seq:
            return
        lines, self._seq = self._source(self._seq, snapshot.console_seq)
        if not lines:
            return
        clock = snapshot.status.clock_hz
        self.write_lines([console_text(line, clock) for line in lines[-MAX_LINES:]])
        self._count += len(lines)
        self.border_title = f"Console ({self._count:,} lines)"
