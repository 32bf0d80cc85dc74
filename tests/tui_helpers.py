"""Driving the screen in tests: build the app on a capture, wait for the replay, read what shows."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from session_streams import DEMO_BUDGET, DEMO_CAPTURE

from tracer.budget import load_budget
from tracer.session.engine import Session, SessionOptions
from tracer.tui.app import TracerApp


def replay_app(
    capture: Path | str = DEMO_CAPTURE,
    budget: Path | str | None = DEMO_BUDGET,
    tmp_path: Path | None = None,
    **options: Any,
) -> TracerApp:
    """The app on a replay of ``capture`` (as fast as possible unless ``speed`` is given)."""
    known = {f.name for f in dataclasses.fields(SessionOptions)}  # (the tests also run on older code)
    opts = SessionOptions(**{k: v for k, v in {"speed": None, **options}.items() if k in known})
    session = Session.replay(str(capture), budget=load_budget([budget]) if budget else None, options=opts)
    return TracerApp(session, export_dir=tmp_path)


def run(app: TracerApp, body: Callable[[Any], Awaitable[None]], size: tuple[int, int] = (160, 48)) -> None:
    """Run ``body(pilot)`` in the app at ``size``; the session is closed afterwards."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await body(pilot)

    try:
        asyncio.run(main())
    finally:
        app.session.close()


async def settle(app: TracerApp, pilot: Any) -> None:
    """Wait for the replay to end and its index to be complete, then draw once more."""
    for _ in range(2000):
        index = getattr(app.session, "index", None)
        if app.session.ended and (index is None or index.ready or index.error):
            break
        await pilot.pause(0.01)
    assert app.session.ended
    await redraw(app, pilot)


async def redraw(app: TracerApp, pilot: Any) -> None:
    """Let pending work run, then draw every visible view from a fresh snapshot."""
    await pilot.pause()
    others = [w for w in app.workers if w.group != "session"]  # not the decoder: it runs until the end
    if others:
        await app.workers.wait_for_complete(others)
    app.refresh_views(force=True)
    await pilot.pause()


async def until(pilot: Any, condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Wait (on the app's loop) until ``condition()`` holds."""
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError("condition not met in time")


def screen_lines(app: TracerApp) -> list[str]:
    """The screen as text, line by line, as the terminal would show it (Textual's compositor)."""
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]


def screen_text(app: TracerApp) -> str:
    """The screen as one text."""
    return "\n".join(screen_lines(app))


def plain(widget: Any) -> str:
    """What a Static shows, as plain text."""
    content = widget.content
    return content.plain if hasattr(content, "plain") else str(content)


def lane(app: TracerApp, name: str) -> str:
    """One lane of the Gantt as text (without its name)."""
    from tracer.tui.widgets.timeline import GUTTER, TimelineView

    gantt = app.query_one("#gantt", TimelineView)
    names = gantt._lane_names
    assert name in names, names
    return gantt.render_line(names.index(name)).text[GUTTER:]


class GatedSource:
    """A live source (the :class:`~tracer.sources.base.ByteSource` protocol the real backends
    implement) that hands out its pieces one by one, each only once the test lets it.

    Stands in for a device: :meth:`allow` releases the next ``n`` pieces; after the last, the
    source ends (unless ``hold_open``: then it just has nothing more to say).
    """

    def __init__(self, pieces: list[bytes], hold_open: bool = True) -> None:
        import threading

        self.url = "gated://device"
        self._pieces = list(pieces)
        self._allowed = 0
        self._cond = threading.Condition()
        self._hold_open = hold_open

    def allow(self, n: int = 1) -> None:
        with self._cond:
            self._allowed += n
            self._cond.notify_all()

    @property
    def left(self) -> int:
        return len(self._pieces)

    def open(self) -> None:
        pass

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        from tracer.sources.base import SourceEnded

        with self._cond:
            if not (self._allowed and self._pieces):
                # Nothing to hand out: wait as a device's read does (returning at once would make
                # the session's reader thread spin, taking the CPU the screen under test needs).
                self._cond.wait(timeout)
            if self._allowed and self._pieces:
                self._allowed -= 1
                return self._pieces.pop(0)
        if not self._pieces and not self._hold_open:
            raise SourceEnded(self.url)
        return b""

    def close(self) -> None:
        pass

    def metadata(self) -> dict:
        from session_streams import CLOCK_HZ

        return {"source": self.url, "tpiu": False, "cpu_hz": CLOCK_HZ}


def live_app(source: GatedSource, recording: Path | None = None, **options: Any) -> TracerApp:
    """The app on a live session of ``source`` (recorded to ``recording`` unless None)."""
    from tracer.capture.metadata import CaptureMetadata
    from tracer.capture.writer import CaptureWriter
    from tracer.session.feeds import SourceFeed

    meta = CaptureMetadata.from_json(source.metadata())
    writer = CaptureWriter(recording, meta, flush_bytes=1) if recording is not None else None
    session = Session.live(SourceFeed(source, writer), meta, options=SessionOptions(**options))
    return TracerApp(session)


def inference_pieces(data: bytes, count: int) -> list[bytes]:
    """``data`` (a stream of ``count`` inferences after its prologue) cut into about ``count`` pieces."""
    size = max(1, len(data) // count)
    return [data[at : at + size] for at in range(0, len(data), size)]
