"""Scroll views put where they want to be, whichever comes first: their scroll or the layout that
shows their scrollbar (headless, ``Pilot``).

Textual refuses a scroll while a view shows no scrollbar. When lines or rows arrive, the layout
that shows it comes later, and on a busy machine even after the view's ``call_after_refresh``: the
console then showed its newest lines with its scrollbar at the top, for good (seen in CI as a
snapshot with the thumb in the wrong place). Here the view's after-refresh calls run at once,
before any layout, as they may on a busy machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from textual.app import App, ComposeResult
from textual.widget import Widget

from tracer.base.timeline import ConsoleLine
from tracer.tui.widgets.console import ConsoleView
from tracer.tui.widgets.line_table import Column, LineTable


def at_once(widget: Widget) -> None:
    """``widget.call_after_refresh(f)`` calls ``f`` at once: before the layout of what it just did."""
    widget.call_after_refresh = lambda callback, *args, **kwargs: callback(*args, **kwargs)  # type: ignore[method-assign]


class Holder(App[None]):
    """One widget, 11 rows high (9 inside its border)."""

    CSS = "#under-test { height: 11; }"

    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


def run(widget: Widget, body: Callable[[Any], Any]) -> None:
    async def main() -> None:
        async with Holder(widget).run_test(size=(60, 20)) as pilot:
            await pilot.pause()
            await body(pilot)

    asyncio.run(main())


def test_a_following_console_has_its_scrollbar_at_the_end_after_its_first_lines() -> None:
    lines = [ConsoleLine(cycle=i * 1_000, text=f"line {i}") for i in range(15)]
    console = ConsoleView(lambda start, end: (lines[start:end], end), id="under-test")

    async def body(pilot: Any) -> None:
        at_once(console)
        console.show_snapshot(SimpleNamespace(console_seq=15, status=SimpleNamespace(clock_hz=1_000)), None)  # type: ignore[arg-type]
        for _ in range(3):
            await pilot.pause()
        assert console.show_vertical_scrollbar
        assert console.scroll_y == console.max_scroll_y == 15 - 9
        assert console.vertical_scrollbar.position == console.scroll_y
        assert "line 14" in console.render_line(8).text  # the newest line at the bottom

    run(console, body)


class Rows(LineTable):
    COLUMNS = (Column("index", "#", right=True, keep=True), Column("name", "name"))


def test_a_table_filled_and_moved_to_its_last_row_before_its_layout_shows_that_row() -> None:
    table = Rows(id="under-test")

    async def body(pilot: Any) -> None:
        table.set_rows([(str(i), ((str(i), ""), (f"row {i}", ""))) for i in range(30)])
        table.move_cursor(29)
        for _ in range(3):
            await pilot.pause()
        assert table.cursor_row == 29
        assert table.scroll_y == table.max_scroll_y > 0
        shown = [table.render_line(y).text for y in range(table.size.height)]
        assert any("row 29" in line for line in shown)

    run(table, body)
