"""The row of tabs under the status bar: one widget drawing its two lines itself.

It draws the cells Textual's ``Tabs`` drew (each label with a cell of padding either side, the
active one bright, an underline bar under it), but as one widget on the line API: a tab switch
restyles and repaints this one widget, where ``Tabs`` restyled two ``Tab`` widgets (their
``-active`` class) and repainted its eight (four tabs, the underline, three containers) and
placed its underline only after the next paint. A click on a label or on the bar under it
chooses that tab, as with ``Tabs``.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.renderables.bar import Bar
from textual.strip import Strip
from textual.widget import Widget

PADDING = 1  # cells of padding either side of a label (Textual's Tab: "padding: 0 1")
DRAWN = 32  # drawings kept at most (a few per tab: hovered or not, a width or two)


class TabBar(Widget):
    """The tabs: ``labels`` by name, one of them active (the pane in front).

    Args:
        labels: Each tab's label, by its name, in order.
        active: The name of the tab active at first (default: the first).
        id: The widget's id.
    """

    DEFAULT_CSS = """
    TabBar { width: 100%; height: 2; pointer: pointer; }
    TabBar > .tab-bar--tab { color: $foreground 50%; }
    TabBar > .tab-bar--active { color: $foreground; }
    TabBar > .tab-bar--underline { color: $block-cursor-background; background: $foreground 10%; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"tab-bar--tab", "tab-bar--active", "tab-bar--underline"}

    class Chosen(Message):
        """The user clicked a tab that is not the active one."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, labels: dict[str, str], active: str | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._labels = dict(labels)
        self._active = active if active is not None else next(iter(labels))
        self._hover: str | None = None
        # The two lines by what they show (active, hovered, width, labels): switching back and
        # forth between tabs draws nothing anew.
        self._drawn: dict[tuple[object, ...], list[Strip]] = {}

    @property
    def active(self) -> str:
        """The name of the active tab."""
        return self._active

    @active.setter
    def active(self, name: str) -> None:
        if name not in self._labels:
            raise ValueError(f"no tab named {name!r}")
        if name != self._active:
            self._active = name
            self.refresh()

    def set_label(self, name: str, label: str) -> None:
        """Relabel the tab ``name`` (the tabs after it move along)."""
        if self._labels[name] != label:
            self._labels[name] = label
            self.refresh()

    def span(self, name: str) -> tuple[int, int]:
        """The cells of the tab ``name``'s label, padding excluded (start, end: one past the last),
        on the bar as drawn (scrolled to keep the active tab in view when the tabs do not fit).
        """
        start, end = self._spans()[name]
        offset = self._scroll()
        return start + PADDING - offset, end - PADDING - offset

    def tab_at(self, x: int) -> str | None:
        """The name of the tab over column ``x`` of the bar (None: no tab there)."""
        x += self._scroll()
        return next((name for name, (start, end) in self._spans().items() if start <= x < end), None)

    def _spans(self) -> dict[str, tuple[int, int]]:
        """Each tab's cells, padding included, from the bar's left edge unscrolled."""
        spans, x = {}, 0
        for name, label in self._labels.items():
            width = Strip([Segment(label)]).cell_length + 2 * PADDING
            spans[name] = (x, x + width)
            x += width
        return spans

    def _scroll(self) -> int:
        """Columns scrolled off to the left: the active tab centred when the tabs do not fit
        (where Textual's ``Tabs`` scrolls them), else none.
        """
        spans = self._spans()
        total = max(end for _start, end in spans.values())
        width = self.size.width
        if total <= width:
            return 0
        start, end = spans[self._active]
        return max(0, min(total - width, (start + end) // 2 - width // 2))

    def _draw(self, width: int) -> list[Strip]:
        spans = self._spans()
        total = max(end for _start, end in spans.values())
        base = self.rich_style
        pad = Style(bgcolor=base.bgcolor)
        labels: list[Segment] = []
        for name, label in self._labels.items():
            bright = name in (self._active, self._hover)
            style = self.get_component_rich_style("tab-bar--active" if bright else "tab-bar--tab")
            labels += [Segment(" " * PADDING, pad), Segment(label, style), Segment(" " * PADDING, pad)]
        full = max(total, width)
        bar_style = self.get_component_rich_style("tab-bar--underline")
        start, end = spans[self._active]
        bar = Bar(
            highlight_range=(start + PADDING, end - PADDING),
            highlight_style=Style.from_color(bar_style.color),
            background_style=Style.from_color(bar_style.bgcolor),
        )
        console = Console(width=full, color_system="truecolor", legacy_windows=False, force_terminal=True)
        underline = console.render_lines(bar, console.options, style=base, pad=True)[0]
        offset = self._scroll()
        return [
            Strip(labels, total).extend_cell_length(full, pad).crop(offset, offset + width),
            Strip(underline, full).crop(offset, offset + width),
        ]

    def render_line(self, y: int) -> Strip:
        """Line 0: the labels; line 1: the underline bar under the active one."""
        width = self.size.width
        key = (self._active, self._hover, width, self.rich_style, *self._labels.values())
        lines = self._drawn.get(key)
        if lines is None:
            if len(self._drawn) >= DRAWN:
                self._drawn.clear()
            lines = self._drawn[key] = self._draw(width)
        return lines[y] if 0 <= y < len(lines) else Strip.blank(width)

    def on_click(self, event: events.Click) -> None:
        """A click on a label, or on the bar under it, chooses that tab."""
        event.stop()
        name = self.tab_at(event.x)
        if name is not None and name != self._active:
            self.post_message(self.Chosen(name))

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """The label under the pointer is bright (as Textual's ``Tab:hover``)."""
        name = self.tab_at(event.x) if event.y == 0 else None
        if name != self._hover:
            self._hover = name
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        """No label under the pointer any more."""
        if self._hover is not None:
            self._hover = None
            self.refresh()
