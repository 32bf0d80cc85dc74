"""The screen's right of way under load: the worker stands aside while a key is answered, and a
layout that only moves or stretches a view does not redraw it.

The figures (key response under 100,000 records/s) are measured by ``benchmarks/bench_tui.py``;
these tests check the mechanisms, not timings.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from session_streams import DEMO_CAPTURE
from tui_helpers import redraw, replay_app, run, screen_lines, settle, until

from tracer.session.engine import Session, SessionOptions
from tracer.session.feeds import Piece
from tracer.session.pacing import Pacer
from tracer.session.transport import LIVE_SLICE, Transport
from tracer.tui.widgets.spans import SpansTable
from tracer.tui.widgets.tab_bar import TabBar
from tracer.tui.widgets.timeline import InferenceHeader, TimelineView


def _step(counter: list[int]) -> None:
    counter[0] += 1


def _count_while_yielding(transport: Transport, counter: list[int], stop: threading.Event) -> None:
    """Python calls in a loop, inside ``yielding`` (as the findings rules run)."""
    with transport.yielding(stop.is_set):
        while not stop.is_set():
            _step(counter)


def _advances(counter: list[int], seconds: float) -> bool:
    before = counter[0]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if counter[0] != before:
            return True
        time.sleep(0.005)
    return False


def test_long_work_in_the_worker_stops_while_the_screen_answers_a_key() -> None:
    transport = Transport(Pacer(), threading.RLock())
    counter, stop = [0], threading.Event()
    worker = threading.Thread(target=_count_while_yielding, args=(transport, counter, stop), daemon=True)
    worker.start()
    try:
        assert _advances(counter, 5.0)  # not held: it runs
        transport.hold_for_ui(30.0)
        time.sleep(0.05)  # to its next call
        held_at = counter[0]
        time.sleep(0.2)
        assert counter[0] == held_at  # it stood aside the whole time
        transport.release_ui_hold()
        assert _advances(counter, 5.0)  # and goes on as soon as the screen has answered
    finally:
        transport.release_ui_hold()
        stop.set()
        worker.join(5)
    assert not worker.is_alive()


def test_the_profile_hook_is_removed_after_the_work() -> None:
    import sys

    transport = Transport(Pacer(), threading.RLock())
    before = sys.getprofile()
    with transport.yielding(lambda: False):
        assert sys.getprofile() is not before
    assert sys.getprofile() is before


def test_the_hold_lasts_until_the_redraws_the_key_asked_for_are_done(tmp_path: Path) -> None:
    app = replay_app(tmp_path=tmp_path)

    async def body(pilot) -> None:
        await settle(app, pilot)
        transport = app.session._transport
        app._answering_until = time.monotonic() + 10
        transport.hold_for_ui(10)
        app._dirty = True  # a redraw asked for is still to come
        app._answered()
        assert transport.ui_hold_until > time.monotonic()
        app._dirty = False
        app._answered()
        assert transport.ui_hold_until == 0.0 and app._answering_until == 0.0

    run(app, body)


def test_a_layout_that_only_stretches_a_view_does_not_redraw_it(tmp_path: Path) -> None:
    """The timeline's height follows its lanes; the table below it and the header above are moved
    or stretched by that, not changed: they are drawn again only for a new width."""
    app = replay_app(tmp_path=tmp_path)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2")
        await redraw(app, pilot)
        spans = app.query_one("#spans", SpansTable)
        header = app.query_one("#inference-header", InferenceHeader)
        gantt = app.query_one("#gantt", TimelineView)
        draws = spans.draws, header.draws, gantt.draws
        await pilot.resize_terminal(160, 40)  # shorter: the table shrinks
        await pilot.pause()
        await pilot.pause()
        assert (spans.draws, header.draws, gantt.draws) == draws
        # The selected layer's row is still in view after the table shrank.
        assert spans.scroll_y <= spans.cursor_row < spans.scroll_y + spans.size.height - 1
        await pilot.resize_terminal(140, 40)  # narrower: drawn again for the new width
        await until(pilot, lambda: header.draws > draws[1] and gantt.draws > draws[2])

    run(app, body)


def test_a_large_live_piece_is_decoded_in_slices_that_give_way_between_them() -> None:
    transport = Transport(Pacer(), threading.RLock())
    data = bytes(range(256)) * (3 * LIVE_SLICE // 256 + 7)
    piece = Piece(data, 1000, 5)
    transport.hold_for_ui(0.15)
    started = time.monotonic()
    parts = []
    for part in transport.live_slices(piece, lambda: False):
        parts.append((part, time.monotonic() - started))
    assert b"".join(p.data for p, _ in parts) == data  # every byte, in order
    assert [p.offset for p, _ in parts] == [1000 + i * LIVE_SLICE for i in range(len(parts))]
    assert [p.lost_before for p, _ in parts] == [5] + [0] * (len(parts) - 1)  # the loss before it, once
    assert all(len(p.data) <= LIVE_SLICE for p, _ in parts) and len(parts) == 4
    assert parts[0][1] < 0.1  # the first slice at once
    assert parts[1][1] >= 0.1  # the next one waited for the screen's answer


def underline_under(tabs: TabBar) -> tuple[int, int]:
    """The cells of the tab bar's underline drawn in the highlight's colour (start, one past the end)."""
    highlight = tabs.get_component_rich_style("tab-bar--underline").color
    cells = [seg.style.color if seg.style else None for seg in tabs.render_line(1) for _ in seg.text]
    lit = [x for x, color in enumerate(cells) if color == highlight]
    return (lit[0], lit[-1] + 1) if lit else (0, 0)


def test_a_tab_switch_is_painted_once_and_the_underline_with_it(tmp_path: Path) -> None:
    """Switching tabs lays the screen out and paints it once: not whole a second time for the
    focus moving to the table in front, not again a frame later for the tabs' underline or for a
    scrollbar whose view got the same layout as before (the console's, on the overview)."""
    app = replay_app(tmp_path=tmp_path)

    async def body(pilot) -> None:
        await settle(app, pilot)
        compositor = app.screen._compositor
        paints: list[str] = []
        for kind in ("render_full_update", "render_partial_update"):
            paint = getattr(compositor, kind)

            def counted(*args, _paint=paint, _kind=kind, **kwargs):
                paints.append(_kind)
                return _paint(*args, **kwargs)

            setattr(compositor, kind, counted)  # this compositor only (the instance's attribute)
        tabs = app.query_one("#tabs", TabBar)
        for key in "2341":  # each view drawn once (the first time a tab shows, its views are drawn: a second paint)
            await pilot.press(key)
            await until(pilot, lambda: app.settled)
        for key, name in (("2", "timeline"), ("1", "overview"), ("4", "console"), ("1", "overview")):
            paints.clear()
            await pilot.press(key)
            await until(pilot, lambda: app.settled)
            for _ in range(5):
                await pilot.pause(0.02)
            assert app.active_tab == name and tabs.active == name
            assert paints == ["render_partial_update"], (key, paints)
            assert underline_under(tabs) == tabs.span(name)
            assert app.focused is not None and app.focused.id == {"overview": "layers", "timeline": "spans"}.get(
                name, "console-full"
            )

    run(app, body)


def test_the_tab_row_is_one_widget_drawn_once_and_restyled_by_no_tab_switch(tmp_path: Path) -> None:
    """Textual's ``Tabs`` repainted eight widgets for the row of tabs at each switch (four tabs,
    the underline, three containers) and restyled two (the ``-active`` class moving): the row is
    one widget, its two lines drawn once per switch (and not at all for a pair of tabs drawn
    before), restyled never."""
    from textual._styles_cache import StylesCache
    from textual.css.stylesheet import Stylesheet

    app = replay_app(tmp_path=tmp_path)
    rendered: set[object] = set()
    restyled: list[object] = []
    lines: list[int] = []

    async def body(pilot) -> None:
        await settle(app, pilot)
        tabs = app.query_one("#tabs", TabBar)
        row = tabs.region
        render_widget, update_nodes, render_line = StylesCache.render_widget, Stylesheet.update_nodes, tabs.render_line

        def rendering(cache, widget, crop):
            if widget.region.overlaps(row) and widget.region.height <= row.height:
                rendered.add(widget)
            return render_widget(cache, widget, crop)

        def restyling(sheet, nodes, animate=False):
            nodes = list(nodes)
            restyled.extend(n for n in nodes if n.region.overlaps(row) and n.region.height <= row.height)
            return update_nodes(sheet, nodes, animate)

        def drawing(y):
            lines.append(y)
            return render_line(y)

        StylesCache.render_widget = rendering  # type: ignore[method-assign]
        Stylesheet.update_nodes = restyling  # type: ignore[method-assign]
        tabs.render_line = drawing  # type: ignore[method-assign]
        try:
            for key in "2341":
                lines.clear()
                await pilot.press(key)
                await until(pilot, lambda: app.settled)
                await pilot.pause(0.02)
                assert sorted(lines) == [0, 1], (key, lines)
        finally:
            StylesCache.render_widget = render_widget  # type: ignore[method-assign]
            Stylesheet.update_nodes = update_nodes  # type: ignore[method-assign]
        assert rendered == {tabs}
        assert restyled == []
        drawn = dict(tabs._drawn)
        await pilot.press("2")
        await until(pilot, lambda: app.settled)
        assert tabs._drawn == drawn  # drawn before: taken as it was

    run(app, body)


def test_a_click_on_a_tab_or_the_bar_under_it_shows_that_tab(tmp_path: Path) -> None:
    app = replay_app(tmp_path=tmp_path)

    async def body(pilot) -> None:
        await settle(app, pilot)
        tabs = app.query_one("#tabs", TabBar)
        for name, line in (("timeline", 0), ("console", 1), ("findings", 0), ("overview", 1)):
            start, end = tabs.span(name)
            await pilot.click("#tabs", offset=((start + end) // 2, line))
            await until(pilot, lambda: app.settled)
            assert app.active_tab == name and tabs.active == name
            assert underline_under(tabs) == (start, end)
        assert tabs.tab_at(tabs.span("layer")[1] + 5) is None  # past the last tab: nothing

    run(app, body)


def test_at_80_columns_the_active_tab_stays_in_view(tmp_path: Path) -> None:
    """Labels wider than the screen (a long findings count) scroll to keep the active tab in
    view, as Textual's ``Tabs`` did."""
    app = replay_app(tmp_path=tmp_path)

    async def body(pilot) -> None:
        await settle(app, pilot)
        tabs = app.query_one("#tabs", TabBar)
        tabs.set_label("findings", "3 Findings (" + "9 errors, " * 8 + "1 info)")
        await pilot.press("4")
        await until(pilot, lambda: app.settled)
        await pilot.pause()
        start, end = tabs.span("console")
        assert 0 <= start < end <= 80
        assert "4 Console" in screen_lines(app)[2]
        assert underline_under(tabs) == (start, end)
        await pilot.press("1")
        await until(pilot, lambda: app.settled)
        await pilot.pause()
        assert screen_lines(app)[2].startswith(" 1 Overview")
        assert tabs.span("overview") == (1, 11)

    run(app, body, size=(80, 24))


def test_a_snapshot_with_nothing_new_is_the_last_one_with_a_fresh_status() -> None:
    """A screen asking again (a key answered while the decoder stands aside) gets the picture it
    had, not one built again; the status moves on, and any change of the session gives a new one."""
    session = Session.replay(str(DEMO_CAPTURE), options=SessionOptions(speed=None, index=False))
    try:
        session.run()
        first = session.snapshot()
        again = session.snapshot()
        assert again.layers is first.layers and again.ring is first.ring and again.latency is first.latency
        assert again.status is not first.status and again.status == first.status
        number = first.ring[-1].number
        assert session.pin(number)  # a change (it counts the version up): built again
        pinned = session.snapshot()
        assert pinned.version > first.version and pinned.layers is not first.layers
        assert any(s.record(number) is not None for s in pinned.stretches)
    finally:
        session.close()


def test_no_garbage_collection_starts_while_a_key_is_answered(tmp_path: Path) -> None:
    """A collection of the young objects takes the screen's thread 8-15 ms under load: none starts
    between a key and its answer painted; collections go on after it, also after a key that asked
    no redraw (the help: its hold ends by itself, though the refresh timer rests meanwhile)."""
    import gc

    app = replay_app(tmp_path=tmp_path)
    seen: list[bool] = []

    async def body(pilot) -> None:
        await settle(app, pilot)
        show_view = app.show_view

        def watched(name: str) -> None:
            seen.append(gc.isenabled())
            show_view(name)

        app.show_view = watched  # type: ignore[method-assign]
        assert gc.isenabled()
        await pilot.press("2")
        await until(pilot, lambda: app.settled and not app._answering_until)
        assert seen == [False]  # off while the key was being answered
        assert gc.isenabled()  # and on again once it was
        await pilot.press("question_mark")  # the help: no redraw asked for
        assert not gc.isenabled()
        await until(pilot, gc.isenabled, seconds=2.0)  # ended by itself
        await pilot.press("escape")
        assert not gc.isenabled()
        await until(pilot, gc.isenabled, seconds=2.0)

    try:
        run(app, body)
    finally:
        gc.enable()  # (whatever happened above, the other tests collect)
    assert gc.isenabled()


def test_the_truecolor_filter_gives_textuals_result_and_keeps_what_it_does_not_change(tmp_path: Path) -> None:
    """Every line painted anew goes through it: segment for segment Textual's own filter's result
    (ANSI colours to the theme's, dim blended, control codes dropped), with the segments whose
    style is truecolor already kept instead of built again; the app uses it, also after a change
    of theme."""
    from rich.segment import Segment
    from rich.style import Style
    from textual.color import Color
    from textual.filter import ANSIToTruecolor

    from tracer.tui.truecolor import CachedTruecolor

    app = replay_app(tmp_path=tmp_path)
    stock = next(f for f in app._filters if isinstance(f, ANSIToTruecolor))
    assert type(stock) is CachedTruecolor
    theirs = ANSIToTruecolor(stock._terminal_theme)
    kept = Segment("12.3", Style(color="#4EBF71", bgcolor="#242F38", bold=True))
    line = [
        Segment(" ", None),
        kept,
        Segment("ansi", Style(color="red", bgcolor="bright_black")),
        Segment("dim", Style(color="#8A9099", dim=True)),
        Segment("\x1b", Style(color="#FFFFFF"), [(1,)]),  # type: ignore[list-item]
        Segment("plain", Style(italic=True)),
        kept,
    ]
    for background in (Color(36, 47, 56), Color(0, 0, 0), Color(36, 47, 56)):  # again: from its cache
        ours = stock.apply(line, background)
        assert ours == theirs.apply(line, background)
        assert ours[1] is kept and ours[6] is kept
        assert ours[2].style != line[2].style and ours[4].control is None

    async def body(pilot) -> None:
        await settle(app, pilot)
        app.theme = "textual-light"
        await pilot.pause()
        assert [type(f) for f in app._filters if isinstance(f, ANSIToTruecolor)] == [CachedTruecolor]

    run(app, body)


def test_keys_held_down_do_not_hold_garbage_collections_for_long() -> None:
    """Keys faster than their answers (a key held down) keep collections held; after a second in
    a row one key is answered with them on, and the next may hold them again."""
    import asyncio
    import gc

    from tracer.tui.collections_held import HELD_AT_MOST_S, CollectionsHeld

    async def keys() -> list[bool]:
        held = CollectionsHeld()
        states = []
        start = time.monotonic()
        while time.monotonic() - start < HELD_AT_MOST_S + 0.5:
            held.hold(0.25)
            states.append(gc.isenabled())
            await asyncio.sleep(0.03)  # the next key comes before this one's hold ended
        held.resume()
        return states

    try:
        states = asyncio.run(keys())
    finally:
        gc.enable()
    assert not states[0] and states.count(True) >= 1  # held at first, let go once in a while
    assert states.index(True) * 0.03 <= HELD_AT_MOST_S + 0.2
    assert gc.isenabled()


def test_the_help_is_made_and_drawn_before_the_first_question_mark(tmp_path: Path) -> None:
    """Made on the first ``?``, the help took 35-70 ms of the screen's thread (the slowest key of
    a run): it is mounted and drawn out of sight once the app is up, so the first ``?`` draws no
    line of it anew; after a resize it opens laid out for the new size."""
    from tracer.tui.help import HelpPanel, HelpScreen

    app = replay_app(tmp_path=tmp_path)
    drawn: list[int] = []

    async def body(pilot) -> None:
        await settle(app, pilot)
        assert app.is_screen_installed("help")
        help_screen = app.get_screen("help")
        assert isinstance(help_screen, HelpScreen) and help_screen.is_running and not help_screen.is_current
        panel = help_screen.query_one(HelpPanel)
        await until(pilot, lambda: bool(panel.region))  # laid out out of sight
        render_line = panel.render_line

        def drawing(y: int):
            drawn.append(y)
            return render_line(y)

        panel.render_line = drawing  # type: ignore[method-assign]
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.pause()
        assert app.screen is help_screen and panel.is_open and app.focused is panel
        assert drawn == []  # every line of it was drawn ahead
        await pilot.press("escape")
        await pilot.pause()
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.pause()
        assert app.screen is help_screen and panel.region.right <= 100 and panel.region.bottom <= 30
        assert drawn  # drawn again, for the new size

    run(app, body)


def test_an_inference_with_a_lane_fewer_keeps_the_gantts_height_and_lays_nothing_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lanes come with what the shown inference's stretch holds (the ring's, a pinned one's):
    under load, stepping between the newest inference and the one before changed them, the
    Gantt's height with them, and the pane was laid out again in the key's answer. The Gantt is
    as tall as the most lanes it has drawn: a lane fewer leaves its row empty, nothing moves."""
    import tracer.tui.widgets.timeline as timeline

    app = replay_app(tmp_path=tmp_path)
    every_lane = timeline.lanes

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2")
        await until(pilot, lambda: app.settled)
        await redraw(app, pilot)
        gantt = app.query_one("#gantt", TimelineView)
        spans = app.query_one("#spans", SpansTable)
        names, height, table = list(gantt._lane_names), gantt.outer_size.height, spans.region
        layouts: list[object] = []
        screen = app.screen
        refresh_layout = screen._refresh_layout

        def counted(*args, **kwargs):
            layouts.append(args)
            return refresh_layout(*args, **kwargs)

        screen._refresh_layout = counted  # type: ignore[method-assign]
        monkeypatch.setattr(timeline, "lanes", lambda data, vp: every_lane(data, vp)[:-1])
        await pilot.press("left")
        await until(pilot, lambda: app.settled)
        await pilot.pause(0.05)
        assert gantt._lane_names == names[:-1]  # drawn with a lane fewer
        assert gantt.outer_size.height == height and spans.region == table
        assert gantt.render_line(len(names) - 1).text.strip() == ""  # its row empty (no stray edge)
        assert layouts == []
        monkeypatch.setattr(timeline, "lanes", every_lane)
        await pilot.press("left")
        await until(pilot, lambda: app.settled)
        await pilot.pause(0.05)
        assert gantt._lane_names == names and gantt.outer_size.height == height
        assert layouts == []

    run(app, body)


def test_the_status_bar_is_redrawn_with_a_key_only_when_the_key_changes_the_session(tmp_path: Path) -> None:
    """A key that changes what views show (a tab, a sort, a layer) redrew the status bar too, from
    the newest snapshot (its rates and counts move with every piece of data): a second text
    laid out and painted in every answer. It keeps its own pace then; pause and speed, which it
    shows, still redraw it at once."""
    from tracer.tui.widgets.status import StatusBar

    app = replay_app(tmp_path=tmp_path)

    async def body(pilot) -> None:
        await settle(app, pilot)
        status = app.query_one("#status", StatusBar)
        for key in ("2", "3", "1", "s", "down", "S"):
            before = status.draws
            await pilot.press(key)
            await until(pilot, lambda: app.settled)
            await pilot.pause(0.02)
            assert status.draws == before, key
        for key in ("plus", "space"):
            before = status.draws
            await pilot.press(key)
            await until(pilot, lambda: app.settled)
            assert status.draws == before + 1, key

    run(app, body)


def test_a_tab_switch_draws_no_scrollbar_whose_look_did_not_change(tmp_path: Path) -> None:
    """Textual renders a scrollbar anew (through Rich: 1-1.6 ms a time) whenever its view is
    restyled or laid out, as at every tab switch (the focus moves): the tables' scrollbars draw
    their lines once per look (size, position, colours) and a switch back and forth draws none."""
    from textual.scrollbar import ScrollBarRender

    from tracer.tui.widgets.scrolling import SteadyScrollBar

    app = replay_app(tmp_path=tmp_path)
    drawn: list[object] = []
    render = ScrollBarRender.__rich_console__

    def counted(bar, console, options):
        drawn.append(bar)
        return render(bar, console, options)

    async def body(pilot) -> None:
        await settle(app, pilot)
        for key in "2121":
            await pilot.press(key)
            await until(pilot, lambda: app.settled)
        for _ in range(5):
            await pilot.pause(0.02)
        bars = [app.query_one(table).vertical_scrollbar for table in ("#layers", "#spans")]
        assert all(isinstance(bar, SteadyScrollBar) for bar in bars)
        assert all(bar.display for bar in bars)  # shown: there is something to draw
        ScrollBarRender.__rich_console__ = counted  # type: ignore[method-assign]
        try:
            for key in "2121":
                await pilot.press(key)
                await until(pilot, lambda: app.settled)
                for _ in range(3):
                    await pilot.pause(0.02)
        finally:
            ScrollBarRender.__rich_console__ = render  # type: ignore[method-assign]
        assert drawn == []

    run(app, body, size=(120, 24))
