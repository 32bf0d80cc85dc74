"""A table on Textual's line API: a fixed header, rows drawn as cached strips, one cursor row.

Textual's ``DataTable`` renders every cell through Rich again whenever any cell changes; fed new
numbers several times a second that costs more than the rest of the screen together. Here a row's
strip is rebuilt only when its text changes, and drawing a row is joining segments.

Narrower than its columns, the table lays out by priority: the columns marked ``keep`` stay (in
their order) and the others follow in the order they matter (the reverse of :attr:`LineTable.DROP`,
which lists them first dropped first); ``<`` and ``>`` scroll through those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip

from tracer.tui import palette as pal
from tracer.tui.widgets.scrolling import SteadyScrollView

ZEBRA = Style(bgcolor="#1A1F24")
CURSOR = Style(bgcolor="#0F5C9E")
CURSOR_UNFOCUSED = Style(bgcolor="#23384A")
HEADER = Style(color=pal.MUTED, bold=True, bgcolor="#1E1E1E")

Cell = tuple[str, str]  # text, Rich style


@dataclasses.dataclass(frozen=True)
class Column:
    """A column: its key, header text, alignment, least width, and whether it stays when the
    table is too narrow (``keep``); ``max_width`` cuts its text then (0: never).
    """

    key: str
    header: str
    right: bool = False
    min_width: int = 0
    keep: bool = False
    max_width: int = 0


def _style(text: str) -> Style:
    return Style.parse(text) if text else Style()


class LineTable(SteadyScrollView, can_focus=True, inherit_bindings=False):
    """Rows of cells with a fixed header and a cursor row.

    Subclasses set :attr:`COLUMNS` and call :meth:`set_rows`.
    """

    COLUMNS: tuple[Column, ...] = ()
    DROP: tuple[str, ...] = ()  # columns not kept, first dropped first (others: after these, from the right)
    DEFAULT_CSS = """
    LineTable { height: auto; max-height: 100%; scrollbar-size-vertical: 1; overflow-x: hidden; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("less_than_sign", "columns(-1)", "Columns ←", show=False),
        Binding("greater_than_sign", "columns(1)", "Columns →", show=False),
    ]

    class RowHighlighted(Message):
        """The cursor moved to the row with this key."""

        def __init__(self, table: LineTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> LineTable:
            """The table (for ``@on`` selectors)."""
            return self.table

    class HeaderClicked(Message):
        """A column header was clicked."""

        def __init__(self, table: LineTable, column: str) -> None:
            super().__init__()
            self.table = table
            self.column = column

        @property
        def control(self) -> LineTable:
            """The table (for ``@on`` selectors)."""
            return self.table

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._keys: list[str] = []
        self._cells: list[tuple[Cell, ...]] = []
        self._strips: dict[tuple, Strip] = {}
        self._widths: list[int] = [max(len(c.header), c.min_width) for c in self.COLUMNS]
        self._headers: list[str] = [c.header for c in self.COLUMNS]
        self.cursor_row = 0
        self.column_scroll = 0  # columns scrolled past, when narrow
        self._shown: list[int] = list(range(len(self.COLUMNS)))
        self._present: list[int] = list(range(len(self.COLUMNS)))  # columns with something in them
        self._natural_width = sum(w + 2 for w in self._widths)  # their widths, with the gaps
        self.hidden: list[str] = []  # columns out of view now (keys)
        self._fitted: dict[int, int] = {}  # widened columns (narrow: room left given to cut ones)

    # -- data ------------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        """Rows shown."""
        return len(self._keys)

    @property
    def keys(self) -> list[str]:
        """Row keys in display order."""
        return list(self._keys)

    def set_headers(self, headers: Sequence[str]) -> None:
        """Change header texts (a sort arrow)."""
        if list(headers) != self._headers:
            self._headers = list(headers)
            self._fit()
            self.refresh()

    def set_rows(self, rows: Sequence[tuple[str, tuple[Cell, ...]]]) -> None:
        """Show ``rows`` (key, cells) in this order; only rows whose text changed are redrawn."""
        keys = [key for key, _cells in rows]
        cells = [c for _key, c in rows]
        if keys == self._keys and cells == self._cells:
            return
        changed = [
            i for i, c in enumerate(cells) if i >= len(self._cells) or self._cells[i] != c or keys[i] != self._keys[i]
        ]
        self._keys, self._cells = keys, cells
        widths_before = list(self._widths)
        self._fit()
        self.virtual_size = Size(self.size.width, len(keys) + 1)
        if self.cursor_row >= len(keys):
            self.cursor_row = max(0, len(keys) - 1)
        if self._widths != widths_before or len(changed) > len(keys) // 2:
            self.refresh()
        else:
            for i in changed:
                self._refresh_row(i)

    def _fit(self) -> None:
        widths = [max(len(h), c.min_width) for h, c in zip(self._headers, self.COLUMNS)]
        for row in self._cells:
            for j, (text, _style) in enumerate(row):
                if len(text) > widths[j]:
                    widths[j] = len(text)
        if widths != self._widths:
            self._widths = widths
            self._strips.clear()
        # Worked out once per change of the rows: drawing a row asks for every column's width.
        self._present = [
            i
            for i in range(len(self.COLUMNS))
            if self.COLUMNS[i].keep or not self._cells or any(row[i][0] for row in self._cells)
        ]
        self._natural_width = sum(self._widths[i] + 2 for i in self._present)
        self._arrange()

    def _priority(self) -> list[int]:
        """Columns that scroll when narrow, most wanted first."""
        keys = [c.key for c in self.COLUMNS]
        rest = [i for i, c in enumerate(self.COLUMNS) if not c.keep]
        dropped = [keys.index(k) for k in self.DROP if k in keys]
        return [i for i in rest if i not in dropped] + [i for i in reversed(dropped) if i in rest]

    def _arrange(self) -> None:
        """Which columns show, in which order, and how wide, for the width now.

        Narrow, the kept columns show and the others by priority, each that fits (a wide one
        that does not fit leaves its place to narrower ones after it); the room left widens the
        kept columns cut to their ``max_width`` (flags, names) back towards their full text.
        """
        width = self.size.width - 1
        fitted: dict[int, int] = {}
        # A column with nothing in it (a baseline column without a baseline) is left out.
        every = self._present
        if sum(self._capped(i) + 2 for i in every) <= width or width <= 0:
            shown, hidden = every, []
            self.column_scroll = 0
        else:
            kept = [i for i, c in enumerate(self.COLUMNS) if c.keep]
            rest = [i for i in self._priority() if i in every]
            self.column_scroll = max(0, min(self.column_scroll, len(rest) - 1))
            more = 10  # the "N more ›" in the header
            # The kept columns whole when they fit (the flags say what is wrong: cut, they said
            # "p99 over jitter i…" beside empty columns); the others in the room left.
            if sum(self._widths[i] + 2 for i in kept) <= width - more:
                fitted = {i: self._widths[i] for i in kept if self._widths[i] != self._capped(i)}
            room = width - more - sum(fitted.get(i, self._capped(i)) + 2 for i in kept)
            shown = list(kept)
            for i in rest[self.column_scroll :]:
                if self._capped(i) + 2 <= room:
                    shown.append(i)
                    room -= self._capped(i) + 2
            hidden = [self.COLUMNS[i].key for i in every if i not in shown]
            if not hidden:
                room += more
            for i in sorted(kept, key=lambda i: -self.COLUMNS[i].max_width):
                now = fitted.get(i, self._capped(i))
                grow = min(max(0, room), self._widths[i] - now)
                if grow > 0:
                    fitted[i] = now + grow
                    room -= grow
        if shown != self._shown or fitted != self._fitted:
            self._shown, self.hidden, self._fitted = shown, hidden, fitted
            self._strips.clear()
            self.refresh()
        else:
            self.hidden = hidden

    def _capped(self, i: int) -> int:
        """Column ``i``'s width, cut to its ``max_width`` when the table is narrower than its columns."""
        w = self._widths[i]
        cap = self.COLUMNS[i].max_width
        return min(w, max(cap, len(self._headers[i]))) if cap and self.size.width - 1 < self._natural_width else w

    def _width(self, i: int) -> int:
        return self._fitted.get(i) or self._capped(i)

    def action_columns(self, step: int) -> None:
        """Scroll the columns that do not fit by ``step``."""
        before = self.column_scroll
        self.column_scroll = max(0, self.column_scroll + step)
        self._arrange()
        if self.column_scroll != before:
            self._strips.clear()
            self.refresh()

    def on_resize(self) -> None:
        """Lay the columns out for the new width; the cursor row stays in view."""
        self._arrange()
        self.scroll_wanted()

    def scroll_wanted(self) -> None:
        """The cursor row in view."""
        self.move_cursor(self.cursor_row, announce=False)

    def cell(self, key: str, column: str) -> str:
        """A cell's text."""
        j = next(i for i, c in enumerate(self.COLUMNS) if c.key == column)
        return self._cells[self._keys.index(key)][j][0]

    def column_x(self, column: str) -> int:
        """Where a column starts, in cells from the table's left edge (inside its border)."""
        x = 1
        for i in self._shown:
            if self.COLUMNS[i].key == column:
                return x
            x += self._width(i) + 2
        raise KeyError(column)

    @property
    def shown_columns(self) -> list[str]:
        """The keys of the columns in view, in order."""
        return [self.COLUMNS[i].key for i in self._shown]

    # -- cursor ----------------------------------------------------------------------------------
    def move_cursor(self, row: int, announce: bool = True) -> None:
        """Put the cursor on ``row``, scrolled into view."""
        if not self._keys:
            return
        row = max(0, min(len(self._keys) - 1, row))
        if row != self.cursor_row:
            old, self.cursor_row = self.cursor_row, row
            self._refresh_row(old)
            self._refresh_row(row)
            if announce:
                self.post_message(self.RowHighlighted(self, self._keys[row]))
        visible = max(1, self.size.height - 1)
        if row < self.scroll_y:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= self.scroll_y + visible:
            self.scroll_to(y=row - visible + 1, animate=False, immediate=True)

    def action_cursor_up(self) -> None:
        """Up a row."""
        self.move_cursor(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        """Down a row."""
        self.move_cursor(self.cursor_row + 1)

    def action_page_up(self) -> None:
        """Up a page."""
        self.move_cursor(self.cursor_row - max(1, self.size.height - 2))

    def action_page_down(self) -> None:
        """Down a page."""
        self.move_cursor(self.cursor_row + max(1, self.size.height - 2))

    def action_first(self) -> None:
        """The first row."""
        self.move_cursor(0)

    def action_last(self) -> None:
        """The last row."""
        self.move_cursor(len(self._keys) - 1)

    def on_click(self, event: Click) -> None:
        """A header sorts; a row moves the cursor."""
        y = event.y - self.styles.gutter.top
        x = event.x - self.styles.gutter.left
        if y == 0:
            at = 0
            for i in self._shown:
                width = self._width(i)
                if at <= x < at + width + 2:
                    self.post_message(self.HeaderClicked(self, self.COLUMNS[i].key))
                    return
                at += width + 2
            return
        row = int(self.scroll_y) + y - 1
        if 0 <= row < len(self._keys):
            self.move_cursor(row)

    def on_focus(self) -> None:
        """The cursor colour says where the keys go (a row's strip is cached by its colours)."""
        self._refresh_row(self.cursor_row)

    def on_blur(self) -> None:
        """See :meth:`on_focus`."""
        self._refresh_row(self.cursor_row)

    # -- drawing ---------------------------------------------------------------------------------
    def _refresh_row(self, row: int) -> None:
        y = row - int(self.scroll_y) + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def render_line(self, y: int) -> Strip:
        """The header (always on top), else a row."""
        width = self.size.width
        if y == 0:
            strip = self._row_strip([(h, "") for h in self._headers], HEADER, width)
            if self.hidden:
                more = ("‹" if self.column_scroll else " ") + f"{len(self.hidden)} more ›"
                strip = Strip([*strip.crop(0, max(0, width - len(more) - 1)), Segment(" " + more, HEADER)], width)
            return strip
        row = int(self.scroll_y) + y - 1
        if not 0 <= row < len(self._keys):
            return Strip.blank(width)
        if row == self.cursor_row:
            base = CURSOR if self.has_focus else CURSOR_UNFOCUSED
        else:
            base = ZEBRA if row % 2 else Style()
        key = (self._cells[row], base, width, tuple(self._shown))
        cached = self._strips.get(key)
        if cached is None:
            if len(self._strips) > 4 * max(64, len(self._keys)):
                self._strips.clear()
            cached = self._strips[key] = self._row_strip(list(self._cells[row]), base, width)
        return cached

    def _row_strip(self, cells: list[Cell], base: Style, width: int) -> Strip:
        segments = [Segment(" ", base)]
        for i in self._shown:
            text, style = cells[i]
            w = self._width(i)
            if len(text) > w:
                text = text[: w - 1] + "…"
            body = text.rjust(w) if self.COLUMNS[i].right else text.ljust(w)
            segments.append(Segment(body, base + _style(style)))
            segments.append(Segment("  ", base))
        return Strip(segments).adjust_cell_length(width, base)
