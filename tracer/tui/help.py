"""The help screen: every key and mouse action, from the same table the bindings are made of."""

from __future__ import annotations

import textwrap
from typing import ClassVar

from rich.console import Console
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tracer.tui import palette as pal
from tracer.tui.keys import KEYS, MOUSE_HELP, VIEW_KEYS

WIDEST = 200  # columns of the help's widest drawing (its panel is at most 118 wide)

GROUPS = (
    ("playback", "Playback"),
    ("findings", "Findings"),
    ("layers", "Layers"),
    ("timeline", "Timeline"),
    ("views", "Views"),
    ("general", "General"),
)


def help_rows() -> list[tuple[str, str, str]]:
    """(key, what it does, kind) rows: kind is ``group``, ``key``, ``mouse`` or ``gap``."""
    rows: list[tuple[str, str, str]] = []
    for n, (group, title) in enumerate(GROUPS):
        if n:
            rows.append(("", "", "gap"))
        rows.append((title, "", "group"))
        rows += [(key.display, key.help, "key") for key in KEYS if key.group == group]
        rows += [(key, does, "key") for key, does, where in VIEW_KEYS if where == group]
    rows += [
        ("ctrl+p", "command palette: every action above by name", "key"),
        ("ctrl+c", "quit as an interrupt (exit code 130)", "key"),
        ("", "", "gap"),
        ("Mouse", "", "group"),
    ]
    rows += [(what, does, "mouse") for what, does in MOUSE_HELP]
    return rows


def help_text(width: int | None = None) -> Text:
    """The help as styled text (drawn once per width: cheaper than a table each time it opens).

    Args:
        width: The columns it has: a description longer than its share wraps under itself (a
            hanging indent past the keys' column), so at 80 columns every word is still there.
            None: one line per key, however long.
    """
    rows = help_rows()
    keys = max(len(key) for key, _does, kind in rows if kind == "key")
    text = Text(no_wrap=True)
    for key, does, kind in rows:
        if kind == "group":
            text.append(f"{key}\n", style=f"bold {pal.INFO}")
        elif kind == "gap":
            text.append("\n")
        else:
            lead = f"{'':>{keys}}  {key}: " if kind == "mouse" else f"{key:>{keys}}  "
            text.append(lead, style=f"bold {pal.ACCENT}")
            room = None if width is None else max(width - len(lead), MIN_DESCRIPTION)
            lines = (
                textwrap.wrap(does, room, break_on_hyphens=False) if room is not None and len(does) > room else [does]
            )
            text.append(f"\n{'':>{len(lead)}}".join(lines) + "\n", style=pal.TEXT)
    text.rstrip()
    return text


MIN_DESCRIPTION = 20  # columns a description keeps on the narrowest screen (cut beyond)


class HelpPanel(ScrollView, can_focus=True):
    """Every key, grouped, in a frame, drawn on the line API from lines made once."""

    DEFAULT_CSS = """
    HelpPanel {
        width: 118; max-width: 95%; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 1 2;
        border-title-color: $text; border-subtitle-color: $text-muted;
        scrollbar-size-vertical: 1; overflow-x: hidden;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "scroll_up", "Up", show=False),
        Binding("down,j", "scroll_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "tracer · keys"
        self.border_subtitle = "escape, ? or q to close"
        self._lines_by_width: dict[int, list[Strip]] = {}
        self._lines = self.lines_for(WIDEST)
        self.virtual_size = Size(max(s.cell_length for s in self._lines), len(self._lines))

    def lines_for(self, width: int) -> list[Strip]:
        """The help's lines for ``width`` columns, descriptions wrapped to fit (made once per width)."""
        lines = self._lines_by_width.get(width)
        if lines is None:
            console = Console(width=WIDEST, color_system="truecolor", legacy_windows=False)
            text = help_text(width)
            lines = [Strip(list(line)) for line in console.render_lines(text, console.options, pad=False)]
            self._lines_by_width[width] = lines
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """As tall as the help at ``width`` (the stylesheet caps it at the screen)."""
        # Wrapped for the columns left beside the scrollbar, which it has when the screen is short.
        self._lines = self.lines_for(width - self.styles.scrollbar_size_vertical)
        self.virtual_size = Size(width, len(self._lines))
        return len(self._lines)

    def render_line(self, y: int) -> Strip:
        """One line of the help."""
        row = int(self.scroll_y) + y
        width = self.scrollable_content_region.width
        if 0 <= row < len(self._lines):
            return self._lines[row].crop_extend(0, width, None)
        return Strip.blank(width)

    @property
    def is_open(self) -> bool:
        """True while its screen is the one shown."""
        return self.is_attached and self.screen.is_current


class HelpScreen(Screen[None]):
    """The help on a screen of its own, pushed over the app's: opening it lays out and draws the
    help alone, and closing it paints the app's screen again as it was (nothing is laid out or
    drawn anew), so it answers at once even while data streams in. Escape, ? or q closes it.
    """

    DEFAULT_CSS = """
    HelpScreen { align-horizontal: center; padding: 1 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        """The panel, focused (it scrolls with the arrows and page keys)."""
        yield HelpPanel(id="help")

    def on_mount(self) -> None:
        """Take the keys; mounted ahead (out of sight), lay out and draw for the app's size."""
        panels = self.query(HelpPanel)
        if not panels:  # (the app closed around it while it was being made: an early Ctrl-C)
            return
        panels.first().focus()
        if not self.is_current:
            self.call_later(self.draw_ahead)

    def draw_ahead(self) -> None:
        """Lay the help out and draw it for the app's size, out of sight (it is not the current
        screen: nothing is shown). Opening it then paints lines its widgets have drawn already; at
        another size it is laid out again as it opens, as it would be anyway.
        """
        if self.is_current or not self.is_attached:
            return
        self._refresh_layout(self.app.size)  # (Textual's own; it shows nothing for a screen not current)
        self._compositor.render_full_update()  # the lines, into each widget's cache

    def action_close(self) -> None:
        """Back to the app."""
        self.dismiss()
