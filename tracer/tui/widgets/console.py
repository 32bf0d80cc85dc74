"""The firmware's console: ITM port 0 or UART text, stamped with target time where known.

On Textual's line API (a line is drawn only when it shows), with lines that say something went
wrong highlighted: errors, faults, failed asserts in red, warnings in amber. It follows the
newest line until the user scrolls up, and again once they are back at the end.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.strip import Strip

from tracer.base.timeline import ConsoleLine
from tracer.session.engine import CONSOLE_LINES
from tracer.session.snapshot import SessionSnapshot
from tracer.tui import palette as pal
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View
from tracer.tui.widgets.scrolling import SteadyScrollView

MAX_LINES = CONSOLE_LINES  # as many as the session keeps
ERROR = re.compile(
    r"\b(error|err|fail(ed|ure)?|fault|hardfault|assert(ion)?|panic|abort(ed)?|overflow|"
    r"overrun|exception|fatal|crash(ed)?)\b",
    re.IGNORECASE,
)
WARNING = re.compile(r"\b(warn(ing)?|timeout|retry|dropped|lost)\b", re.IGNORECASE)
STAMP = Style(color=pal.MUTED)
TEXT = Style(color=pal.TEXT)
ERROR_STYLE = Style(color=pal.BAD, bold=True)
FOUND = Style(bgcolor="#0F5C9E")  # the line a search found
WARNING_STYLE = Style(color=pal.WARN)


def console_text(line: ConsoleLine, clock_hz: int | None) -> str:
    """``  0.094731 s │ text`` (target time when the line has one and the clock is known)."""
    if line.cycle is not None and clock_hz:
        return f"{line.cycle / clock_hz:>11.6f} s │ {line.text}"
    if line.cycle is not None:
        return f"{line.cycle:>11,} c │ {line.text}"
    return f"{'':>13} │ {line.text}"


def line_style(text: str) -> Style:
    """Red for a line that says something failed, amber for a warning, plain otherwise."""
    if ERROR.search(text):
        return ERROR_STYLE
    if WARNING.search(text):
        return WARNING_STYLE
    return TEXT


class ConsoleView(View, SteadyScrollView, can_focus=True, inherit_bindings=False):
    """Console lines as they arrive."""

    interval = 0.25

    DEFAULT_CSS = """
    ConsoleView { border: round $primary-darken-2; border-title-color: $text; scrollbar-size-vertical: 1;
                  overflow-x: hidden; }
    ConsoleView:focus { border: round $primary; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move('scroll_up')", "Up", show=False),
        Binding("down,j", "move('scroll_down')", "Down", show=False),
        Binding("pageup", "move('scroll_page_up')", "Page up", show=False),
        Binding("pagedown", "move('scroll_page_down')", "Page down", show=False),
        Binding("home", "move('scroll_home')", "Top", show=False),
        Binding("end", "move('scroll_end')", "Bottom", show=False),
        Binding("less_than_sign", "sideways(-1)", "Scroll left", show=False),
        Binding("greater_than_sign", "sideways(1)", "Scroll right", show=False),
    ]

    def __init__(self, lines: Callable[[int, int], tuple[list[ConsoleLine], int]], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Console"
        self._source = lines
        self._seq = 0
        self._count = 0
        self._errors = 0
        self._lines: collections.deque[tuple[str, Style]] = collections.deque(maxlen=MAX_LINES)
        self._follow = True  # show the newest lines (until the user scrolls up)
        self._x = 0  # columns of the text scrolled past (``<`` ``>``: lines longer than the view)
        self._widest = 0
        self._found: int | None = None  # the line the last search found (marked)

    @property
    def line_count(self) -> int:
        """Lines held."""
        return len(self._lines)

    @property
    def lines(self) -> list[str]:
        """The lines held, oldest first (tests)."""
        return [text for text, _ in self._lines]

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Append the lines that arrived since the last refresh."""
        if snapshot.console_seq == self._seq:
            return
        lines, self._seq = self._source(self._seq, snapshot.console_seq)
        if not lines:
            return
        clock = snapshot.status.clock_hz
        for line in lines[-MAX_LINES:]:
            style = line_style(line.text)
            self._errors += style is ERROR_STYLE
            text = console_text(line, clock)
            self._widest = max(self._widest, len(text))
            self._lines.append((text, style))
        self._count += len(lines)
        errors = f" · {self._errors:,} error{'s' if self._errors != 1 else ''}" if self._errors else ""
        self.border_title = f"Console ({self._count:,} lines{errors})"
        self._say_sideways()
        self.styles.border_title_color = pal.BAD if self._errors else None
        self._fit()  # (a scrollbar still to appear puts the view at its end then: scroll_wanted)
        self.refresh()

    def _fit(self) -> None:
        self.virtual_size = Size(self.size.width, len(self._lines))
        self.scroll_wanted()

    def on_resize(self) -> None:
        """Keep the newest line in sight after a resize (when following)."""
        self._fit()
        self._say_sideways()

    def _say_sideways(self) -> None:
        """The border says when lines go on past the right edge (and how far it is scrolled)."""
        cut = self._widest > self.scrollable_content_region.width
        where = f"from column {self._x + 1} · " if self._x else ""
        said = f"{where}< > scroll sideways" if cut or self._x else ""
        if said != self.border_subtitle:  # (set, even to the same, it repaints the view)
            self.border_subtitle = said

    def action_sideways(self, step: int) -> None:
        """Scroll the text sideways by about what shows of it (the time stamps stay)."""
        stamp = 15
        shown = self.scrollable_content_region.width  # (without the scrollbar)
        most = max(0, self._widest - shown)
        self._x = max(0, min(most + 1, self._x + step * max(8, shown - stamp - 4)))
        self._say_sideways()
        self.refresh()

    def search(self, words: str, direction: int = 1) -> bool:
        """Show the next line (after the one found last, else after the top) that holds ``words``."""
        needle = words.lower()
        count = len(self._lines)
        start = self._found if self._found is not None else self._top() - direction
        for step in range(1, count + 1):
            row = (start + direction * step) % count
            if needle in self._lines[row][0].lower():
                self._found = row
                self._follow = False
                self.scroll_to(
                    y=max(0, min(row - self.size.height // 2, self.max_scroll_y)), animate=False, immediate=True
                )
                self.refresh()
                return True
        return False

    def scroll_wanted(self) -> None:
        """At the end, while following."""
        if self._follow:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def _top(self) -> int:
        """The line at the top: the newest lines while following, else where the user scrolled to."""
        if self._follow:
            return max(0, len(self._lines) - self.size.height)
        return int(self.scroll_y)

    def action_move(self, how: str) -> None:
        """Scroll by a line, a page, to the top or the end; following stops above the end."""
        if self._follow:
            self.scroll_to(y=self._top(), animate=False, immediate=True)
        self._follow = False
        getattr(self, how)(animate=False, immediate=True)
        self._follow = how == "scroll_end" or self.scroll_y >= self.max_scroll_y
        self.refresh()

    def on_mouse_scroll_up(self) -> None:
        """The wheel up: stop following (the newest lines) to read back."""
        if self._follow:
            self.scroll_to(y=self._top(), animate=False, immediate=True)
            self._follow = False

    def render_line(self, y: int) -> Strip:
        """One console line (its time stamp muted)."""
        width = self.size.width
        row = self._top() + y
        if not 0 <= row < len(self._lines):
            return Strip.blank(width)
        text, style = self._lines[row]
        stamp, bar, body = text.partition("│")
        if self._x:
            body = body[self._x :]
        if row == self._found:
            style = style + FOUND
        return Strip([Segment(stamp + bar, STAMP), Segment(body, style)]).crop_extend(0, width, None)
