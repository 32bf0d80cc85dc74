"""Textual's strips answer as before but never remember themselves (:mod:`tracer.tui.strip_cycles`).

A strip that kept itself in its own caches was freed only by a rare garbage collection: on the
live screen, 15,000 to 45,000 such objects every 5 s, and Python's allocator grew with them.
"""

from __future__ import annotations

import gc
import itertools

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from tui_helpers import replay_app, run, settle

from tracer.tui import strip_cycles

RED, BLUE = Style(color="red"), Style(bgcolor="blue")


def strips() -> list[Strip]:
    return [
        Strip([]),
        Strip([Segment("abc", RED)]),
        Strip([Segment("ab", RED), Segment("cdef", BLUE), Segment("g")]),
        Strip([Segment("wide 漢字", RED), Segment(" x")]),
    ]


def same(a: Strip | list[Strip], b: Strip | list[Strip]) -> bool:
    if isinstance(a, Strip) and isinstance(b, Strip):
        return a.cell_length == b.cell_length and list(a) == list(b)
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))  # type: ignore[arg-type]


def test_the_answers_are_textuals() -> None:
    strip_cycles.install()
    strip_cycles.install()  # (again: a no-op)
    assert strip_cycles.installed()
    for strip in strips():
        n = strip.cell_length
        for length, style in itertools.product(range(max(0, n - 2), n + 3), (None, BLUE)):
            ours = strip.extend_cell_length(length, style)
            assert same(ours, strip_cycles.original("extend_cell_length")(Strip(list(strip)), length, style))
        for start, end in itertools.product(range(n + 2), range(n + 3)):
            ours = strip.crop_extend(start, end, RED)
            assert same(ours, strip_cycles.original("crop_extend")(Strip(list(strip)), start, end, RED))
        for cuts in ([n], [1, n], [n, n + 4], [0, n], [2]):
            ours = list(strip.divide(cuts))
            assert same(ours, list(strip_cycles.original("divide")(Strip(list(strip)), cuts)))


def remembers_itself(strip: Strip) -> bool:
    """Whether one of the strip's caches holds the strip itself (a cycle through its caches)."""
    for cache in gc.get_referents(strip):
        for inner in gc.get_referents(cache):
            if inner is strip or (isinstance(inner, dict) and strip in inner.values()):
                return True
            if isinstance(inner, dict) and any(isinstance(v, list) and strip in v for v in inner.values()):
                return True
    return False


def test_a_strip_asked_for_itself_does_not_remember_itself() -> None:
    strip_cycles.install()
    strip = Strip([Segment("abcdef", RED)])
    assert strip.extend_cell_length(6) is strip
    assert strip.crop_extend(0, 6, None) is strip
    assert list(strip.divide([6])) == [strip]
    assert not remembers_itself(strip)
    # Textual's own methods do (what this module is for):
    textuals = Strip([Segment("abcdef", RED)])
    strip_cycles.original("crop_extend")(textuals, 0, 6, None)
    assert remembers_itself(textuals)


def test_the_screen_leaves_no_strip_for_the_garbage_collector(tmp_path) -> None:
    """Tab switches and steps on the demo replay: what the screen lets go of is freed at once."""
    app = replay_app(tmp_path=tmp_path)

    async def body(pilot) -> None:
        await settle(app, pilot)
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for key in ("2", "right", "right", "3", "4", "1", "s", "down", "2", "left", "1"):
                await pilot.press(key)
                await pilot.pause()
            app.refresh_views(force=True)
            await pilot.pause()
            gc.collect()
            left = [o for o in gc.garbage if isinstance(o, Strip)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert left == []

    run(app, body)
