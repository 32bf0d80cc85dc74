"""An SVG screenshot of the screen, made by the app itself (the README's picture, the snapshot tests).

The capture is replayed as fast as possible to its end, keys are pressed, and the screen is
exported at a fixed size. Nothing on it depends on the wall clock, so the same capture gives the
same picture::

    python -m tracer.tui.screenshot docs/tui.svg
    python -m tracer.tui.screenshot timeline.svg --keys 2 --size 160x48
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.session.engine import Session, SessionOptions

if TYPE_CHECKING:
    from textual.pilot import Pilot

    from tracer.tui.app import TracerApp

DEFAULT_CAPTURE = "captures/demo.trace"
DEFAULT_BUDGET = "captures/demo_budget.toml"
SETTLE_TRIES = 50  # exports at most, 20 ms apart, before taking the last one


def screenshot(
    capture: str,
    budget: Sequence[str] = (),
    keys: Sequence[str] = (),
    size: tuple[int, int] = (160, 48),
    title: str | None = None,
) -> str:
    """Replay ``capture`` to its end, press ``keys``, return the screen as SVG."""
    from tracer.budget import load_budget
    from tracer.tui.app import TracerApp

    session = Session.replay(
        capture, budget=load_budget(list(budget)) if budget else None, options=SessionOptions(speed=None)
    )
    app = TracerApp(session)
    app.animation_level = "none"

    async def run() -> str:
        async with app.run_test(size=size) as pilot:
            for _ in range(3000):
                index = session.index
                if session.ended and (index is None or index.ready or index.error is not None):
                    break
                await pilot.pause(0.01)
            app.refresh_views(force=True)
            await pilot.pause()
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
                await _quiet(app)
            return await _settled_screen(app, pilot, title or f"tracer replay {capture}")

    try:
        return asyncio.run(run())
    finally:
        session.close()


async def _settled_screen(app: TracerApp, pilot: Pilot[int], title: str) -> str:
    """The screen once it stops changing: nothing left to redraw and two exports in a row equal.

    A slow or busy machine may still be answering the last key (a message, a redraw request) when
    the keys are done; exporting then would picture a moment, not the result.
    """
    last = ""
    for _ in range(SETTLE_TRIES):
        await _quiet(app)
        app.refresh_views(force=True)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        svg = app.export_screenshot(title=title)
        if app.settled and _painted(app) and _unstamped(svg) == _unstamped(last):
            return svg
        last = svg
        await pilot.pause(0.02)
    return last


def _painted(app: TracerApp) -> bool:
    """Textual has nothing left to lay out or paint: no widget waiting for a relayout, a restyle or
    a repaint (a tab whose label grew is laid out at the screen's next update; an export before it
    shows the old width). Reads Textual's own flags (pinned version, see pyproject.toml).
    """
    from textual.widget import Widget

    screen = app.screen
    if (
        screen._layout_required
        or screen._scroll_required
        or screen._repaint_required
        or screen._recompose_required
        or screen._dirty_widgets
    ):
        return False
    widgets = list(screen.walk_children(Widget, with_self=False))
    # A view's scrollbars are not among its children: a bar still to repaint counts too.
    bars = [b for w in widgets for b in (w._vertical_scrollbar, w._horizontal_scrollbar) if b is not None]
    return not any(
        w._layout_required or w._repaint_required or w._refresh_styles_required or w._scroll_required
        for w in widgets + bars
    )


def _unstamped(svg: str) -> str:
    """Without Rich's per-export CSS class prefix (``terminal-NNN``)."""
    return re.sub(r"terminal-\d+", "terminal", svg)


async def _quiet(app: TracerApp) -> None:
    """Wait for the work a key started (reading an inference from the file) to finish."""
    others = [w for w in app.workers if w.group != "session"]
    if others:
        await app.workers.wait_for_complete(others)


def main(argv: list[str] | None = None) -> int:
    """``python -m tracer.tui.screenshot OUT.svg [--capture ...] [--budget ...] [--keys ...]``."""
    parser = argparse.ArgumentParser(
        prog="python -m tracer.tui.screenshot",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("output", metavar="OUT.svg", help="where to write the SVG")
    parser.add_argument("--capture", default=DEFAULT_CAPTURE, metavar="CAPTURE", help=f"default: {DEFAULT_CAPTURE}")
    parser.add_argument("--budget", action="append", metavar="FILE", help=f"default: {DEFAULT_BUDGET}")
    parser.add_argument("--keys", nargs="*", default=[], metavar="KEY", help="keys to press first (Textual names)")
    parser.add_argument("--size", default="160x48", metavar="WxH", help="terminal size (default: 160x48)")
    args = parser.parse_args(argv)
    width, _, height = args.size.partition("x")
    budget = args.budget if args.budget is not None else ([DEFAULT_BUDGET] if os.path.exists(DEFAULT_BUDGET) else [])
    try:
        svg = screenshot(args.capture, budget, args.keys, (int(width), int(height)))
    except TracerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    Path(args.output).write_text(svg, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
