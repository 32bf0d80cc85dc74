"""The TUI's behaviour, driven like a user through ``App.run_test()`` and ``Pilot`` (headless).

Each test builds the app on a real capture (the shipped demo capture with its budget, or a
synthetic one from our encoder) and presses keys; no test touches hardware.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from session_streams import DEMO_BUDGET, DEMO_CAPTURE, ROOT, build_stream, write_capture
from tui_helpers import until

from tracer.budget import load_budget
from tracer.errors import ExitCode
from tracer.session.engine import Session, SessionOptions
from tracer.tui.app import TracerApp
from tracer.tui.help import HelpPanel, HelpScreen, help_text
from tracer.tui.keys import KEYS
from tracer.tui.widgets.layers import LayersTable
from tracer.tui.widgets.timeline import GUTTER, TimelineView

SIZE = (160, 48)


def demo_app(tmp_path: Path | None = None, **options: object) -> TracerApp:
    opts = SessionOptions(**{"speed": None, **options})
    session = Session.replay(str(DEMO_CAPTURE), budget=load_budget([DEMO_BUDGET]), options=opts)
    return TracerApp(session, export_dir=tmp_path)


async def settle(app: TracerApp, pilot) -> None:
    """Wait for the replay to end, then draw once more."""
    for _ in range(1000):
        if app.session.ended:
            break
        await pilot.pause(0.01)
    assert app.session.ended
    app.refresh_views(force=True)
    await pilot.pause()


def run(app: TracerApp, body: Callable[..., Awaitable[None]]) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await body(pilot)

    asyncio.run(main())


def table(app: TracerApp) -> LayersTable:
    return app.query_one("#layers", LayersTable)


def plain(widget: object) -> str:
    """What a Static shows, as plain text."""
    content = widget.content
    return content.plain if hasattr(content, "plain") else str(content)


# -- every panel shows the capture ---------------------------------------------------------------


def test_every_panel_shows_the_demo_capture() -> None:
    app = demo_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        snap = app.snapshot
        assert snap is not None and snap.inferences == 20
        layers = table(app)
        assert layers.row_count == 10
        conv0 = snap.layer(0)
        assert layers.cell_text(0, "name") == "conv0"
        assert layers.cell_text(0, "p50") == f"{conv0.cycles.p50:,}"
        assert layers.cell_text(0, "predicted") == f"{round(conv0.predicted):,}"
        assert layers.cell_text(0, "ratio") == f"{conv0.ratio:.2f}"
        assert layers.cell_text(5, "engine") == "CPU"
        status = plain(app.query_one("#status"))
        assert "REPLAY" in status and "ended" in status and "32 MHz" in status
        assert "NPU PMU simulated" in status and "emulated" in status
        memory = plain(app.query_one("#memory"))
        assert "arena" in memory and "13,312 of 16,384 B" in memory and "main" in memory and "handler" in memory
        detail = plain(app.query_one("#detail"))
        assert "p50" in detail and f"{conv0.cycles.p50:,}" in detail and "history" in detail
        assert "simulated" in detail  # the NPU PMU numbers carry their label
        latency = app.query_one("#latency")
        assert f"p50 {snap.latency.stats.p50:,}" in latency.border_subtitle and "budget" in latency.border_subtitle
        console = app.query_one("#console-compact")
        assert console.line_count >= 10 and "EXIT 0" in "\n".join(console.lines)
        assert "Findings" in app.query_one("#findings-compact").border_title

    run(app, body)


def test_every_view_catches_up_after_a_real_time_replay_ends() -> None:
    """Views drawn at their own pace (the table twice a second, memory once) still show the last
    data once the stream stops: nobody forces a refresh here."""
    app = demo_app(speed=1.0)

    async def body(pilot) -> None:
        for _ in range(500):
            if app.session.ended:
                break
            await pilot.pause(0.01)
        await pilot.pause(1.3)  # longer than the slowest view's pace

        def caught_up() -> bool:
            return (
                table(app).row_count == 10
                and "13,312 of 16,384 B" in plain(app.query_one("#memory"))
                and plain(app.query_one("#detail")).startswith("NPU")
                and "cpu" in plain(app.query_one("#findings-compact Static")).lower()
            )

        await until(pilot, caught_up)  # (a busy machine may need more than the pace)

    run(app, body)


# -- keys -----------------------------------------------------------------------------------------


def test_the_docs_list_every_key() -> None:
    docs = (ROOT / "docs" / "tui.md").read_text(encoding="utf-8")
    for key in KEYS:
        assert f"`{key.display}`" in docs, key.display


def test_help_lists_every_key_and_closes() -> None:
    app = demo_app()
    rendered = help_text().plain
    for key in KEYS:
        assert key.display in rendered and key.help[:40] in rendered, key

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        panel = app.screen.query_one("#help", HelpPanel)
        assert panel.is_open and app.focused is panel
        await pilot.press("escape")
        await pilot.pause()
        assert not panel.is_open and not isinstance(app.screen, HelpScreen) and app.focused is table(app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")  # closes the help, does not quit
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen) and app.is_running

    run(app, body)


def test_the_help_wraps_every_description_at_80_columns() -> None:
    """At 80x24 the help's descriptions were cut at the panel's edge ("live: the screen h"):
    each now wraps under itself, so every word of every key's help is on a line that fits."""
    from tui_helpers import run as run_at

    app = demo_app()
    seen: dict[str, object] = {}

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        panel = app.screen.query_one("#help", HelpPanel)
        width = panel.scrollable_content_region.width
        lines = [panel.render_line(y) for y in range(len(panel._lines))]
        seen["width"] = width
        seen["cut"] = [s.text for s in panel._lines if s.cell_length > width]
        seen["text"] = " ".join(" ".join(s.text.split()) for s in lines)

    run_at(app, body, size=(80, 24))
    assert 60 <= int(seen["width"]) < 80  # type: ignore[call-overload]
    assert seen["cut"] == []
    words = str(seen["text"])
    for key in KEYS:
        assert " ".join(key.help.split()) in words, key  # every word, in order (wrapped lines joined)


@pytest.mark.parametrize(("key", "code"), [("q", ExitCode.OK), ("ctrl+c", ExitCode.INTERRUPTED)])
def test_quit_keys(key: str, code: int) -> None:
    app = demo_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press(key)
        await pilot.pause()

    run(app, body)
    assert app.return_value == code


def test_command_palette_offers_every_action() -> None:
    app = demo_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for key in KEYS:
            assert f"{key.title} ({key.display})" in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "CommandPalette"

    run(app, body)


def test_selection_moves_the_detail_and_the_timeline() -> None:
    app = demo_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        assert app.ui.layer == 0
        await pilot.press("down", "down")
        await pilot.pause()
        assert app.ui.layer == 2
        assert app.query_one("#detail").border_title == "Layer 2 · pw2"
        await pilot.press("2")
        await pilot.pause()
        app.refresh_views(force=True)
        await pilot.pause()
        spans = app.query_one("#spans")
        assert spans.cursor_row == 2  # the selected layer's row in the inference

    run(app, body)


def test_sorting_by_key_and_by_header() -> None:
    app = demo_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        snap = app.snapshot
        by_p50 = [r.index for r in sorted(snap.layers, key=lambda r: (-r.cycles.p50, -r.index))]
        await pilot.press("s")  # index -> p50, slowest first
        await pilot.pause()
        assert app.ui.sort == "p50"
        assert table(app).order == by_p50
        await pilot.press("S")
        await pilot.pause()
        assert table(app).order == list(reversed(by_p50))
        await pilot.click("#layers", offset=(table(app).column_x("p99") + 1, 1))  # the "p99" header
        await pilot.pause()
        assert app.ui.sort == "p99"
        by_ratio = [r.index for r in sorted(snap.layers, key=lambda r: (-(r.ratio or -1), -r.index))]
        app.ui.sort, app.ui.reverse = "ratio", False
        app.refresh_views(force=True)
        await pilot.pause()
        assert table(app).order == by_ratio

    run(app, body)


def test_filter_keeps_matching_layers_and_escape_clears_it() -> None:
    app = demo_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"cpu")
        await pilot.pause()
        app.refresh_views(force=True)
        await pilot.pause()
        assert table(app).order == [5, 6, 8, 9]
        await pilot.press("enter")
        await pilot.pause()
        assert app.focused is table(app) and table(app).order == [5, 6, 8, 9]
        await pilot.press("slash")
        await pilot.press("ctrl+a", "ctrl+k", *"conv 0")  # words must all match
        await pilot.pause()
        app.refresh_views(force=True)
        await pilot.pause()
        assert table(app).order == [0]
        await pilot.press("escape")
        await pilot.pause()
        app.refresh_views(force=True)
        await pilot.pause()
        assert app.ui.filter == "" and table(app).row_count == 10

    run(app, body)


def test_space_pauses_and_resumes_the_replay(tmp_path: Path) -> None:
    truth = build_stream(inferences=400)
    path = write_capture(tmp_path / "slow.trace", truth.data, ns_per_byte=50_000)  # about a minute long
    session = Session.replay(str(path), options=SessionOptions(speed=1.0))
    app = TracerApp(session)

    async def body(pilot) -> None:
        await pilot.pause(0.2)
        await pilot.press("space")
        await pilot.pause(0.1)
        assert session.paused
        held = session.snapshot().status.bytes
        await pilot.pause(0.3)
        assert session.snapshot().status.bytes == held
        assert "paused" in plain(app.query_one("#status"))
        await pilot.press("space")
        await until(pilot, lambda: session.snapshot().status.bytes > held)
        assert not session.paused
        await pilot.press("plus")
        await pilot.pause()
        assert session.speed == 2.0
        await pilot.press("minus", "minus")
        await pilot.pause()
        assert session.speed == 0.5

    run(app, body)


def test_replay_stepping_is_deterministic() -> None:
    """Paused at the start, → steps one inference at a time; ← goes back; the same every run."""

    def steps() -> list[tuple[int, int | None, str]]:
        app = demo_app(speed=1.0, paused=True)
        seen: list[tuple[int, int | None, str]] = []

        async def body(pilot) -> None:
            await pilot.press("2")
            # The header is fitted to its width: read it once the timeline's first layout gave it one.
            await until(pilot, lambda: app.query_one("#inference-header").content_size.width > 40)
            for _ in range(4):
                await pilot.press("right")
                for _ in range(500):
                    if not app.session.stepping:
                        break
                    await pilot.pause(0.01)
                app.refresh_views(force=True)
                await pilot.pause()
                header = plain(app.query_one("#inference-header"))
                seen.append((app.snapshot.inferences, app.ui.inference, header.split(" (")[0].split("  ")[0]))
            await pilot.press("left")
            await pilot.pause()
            app.refresh_views(force=True)
            await pilot.pause()
            header = plain(app.query_one("#inference-header"))
            seen.append((app.snapshot.inferences, app.ui.inference, header.split(" (")[0].split("  ")[0]))

        run(app, body)
        return seen

    first = steps()
    assert first == [
        (1, None, "inference #0"),
        (2, None, "inference #1"),
        (3, None, "inference #2"),
        (4, None, "inference #3"),
        (4, 2, "inference #2"),
    ]
    assert steps() == first


def test_timeline_zoom_and_scroll_keys() -> None:
    app = demo_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2")
        await pilot.pause()
        gantt = app.query_one("#gantt", TimelineView)
        fitted = gantt.viewport()
        await pilot.press("right_square_bracket", "right_square_bracket")
        await pilot.pause()
        zoomed = gantt.viewport()
        assert gantt.zoom == 4.0 and zoomed.cpc == pytest.approx(fitted.cpc / 4)
        await pilot.press("full_stop")
        await pilot.pause()
        assert gantt.viewport().t0 == pytest.approx(zoomed.t0 + zoomed.width * zoomed.cpc / 4)
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert gantt.zoom == 2.0
        await pilot.press("0")
        await pilot.pause()
        assert gantt.zoom == 1.0 and gantt.viewport() == fitted

    run(app, body)


def test_clicking_a_timeline_bar_selects_its_layer() -> None:
    app = demo_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2")
        await pilot.pause()
        app.refresh_views(force=True)
        await pilot.pause()
        gantt = app.query_one("#gantt", TimelineView)
        # dw3 (layer 3) runs from about 47% to 73% of the inference, on the NPU lane (lane 3, under
        # the time axis, its ticks and the inference lane; the border is row 0).
        vp = gantt.viewport()
        record = app.snapshot.ring[-1]
        dw3 = next(s for s in record.inference.layers if s.layer == 3)
        x = GUTTER + 1 + int(vp.x((dw3.start + dw3.end) / 2))
        await pilot.click("#gantt", offset=(x, 4))
        await pilot.pause()
        assert app.ui.layer == 3

    run(app, body)


def test_export_writes_the_report_json(tmp_path: Path) -> None:
    app = demo_app(tmp_path)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("e")
        for _ in range(500):
            if app.last_export is not None:
                break
            await pilot.pause(0.01)

    run(app, body)
    assert app.last_export == tmp_path / "demo-report.json"
    report = json.loads(app.last_export.read_text())
    assert report["schema_version"] == 1 and report["inferences"]["count"] == 20
    assert [layer["name"] for layer in report["layers"]][:3] == ["conv0", "dw1", "pw2"]
    assert report["layers"][0]["predicted_cycles"] is not None
    assert report["findings"] and report["findings"][0]["id"] == "cpu-operators"


def test_only_the_tab_in_front_is_laid_out_and_a_tab_shown_again_is_not_redrawn() -> None:
    """A key lays out and paints what is shown: the panes behind are not in the compositor at all
    (before, the overview stayed laid out under the other tabs and was rendered with them), and
    the overview coming back, with nothing changed meanwhile, is painted from what its views drew
    (before, each of them was drawn again, first at a size it did not have yet)."""
    app = demo_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        overview = [table(app), app.query_one("#latency"), app.query_one("#memory"), app.query_one("#detail")]
        await pilot.press("2")
        await pilot.pause(0.3)
        shown = app.screen._compositor.visible_widgets
        assert app.query_one("#gantt") in shown and app.query_one("#spans") in shown
        assert not any(view in shown for view in overview)
        draws = [view.draws for view in overview]
        await pilot.press("1")
        await pilot.pause(0.3)
        shown = app.screen._compositor.visible_widgets
        assert all(view in shown for view in overview)
        assert app.query_one("#gantt") not in shown
        assert [view.draws for view in overview] == draws

    run(app, body)


def test_hidden_views_are_not_refreshed_and_catch_up_when_shown(tmp_path: Path) -> None:
    truth = build_stream(inferences=300)
    path = write_capture(tmp_path / "long.trace", truth.data, ns_per_byte=20_000)
    session = Session.replay(str(path), options=SessionOptions(speed=1.0))
    app = TracerApp(session)

    async def body(pilot) -> None:
        gantt = app.query_one("#gantt", TimelineView)
        layers = table(app)
        await until(pilot, lambda: layers.draws > 0)  # (waits for what it asserts: a busy machine is slow)
        await pilot.pause(0.3)
        assert gantt.draws == 0  # the timeline tab is hidden
        before = app.refreshes
        await pilot.press("question_mark")  # the help screen covers the app: the timer stops
        await pilot.pause(0.4)
        assert app.refreshes <= before + 1
        await pilot.press("escape")
        await pilot.press("2")
        await until(pilot, lambda: gantt.draws > 0)
        await pilot.pause()
        drawn = layers.draws
        await pilot.pause(0.3)
        assert layers.draws == drawn  # the overview is hidden now

    run(app, body)


# -- the commands -------------------------------------------------------------------------------


def test_replay_command_checks_its_inputs_before_opening_the_screen(run_cli, tmp_path: Path) -> None:
    missing = run_cli("replay", tmp_path / "nope.trace")
    assert missing.code == 3 and "no such file" in missing.err
    speed = run_cli("replay", DEMO_CAPTURE, "--speed", "fast")
    assert speed.code == 2 and "--speed" in speed.err
    bad_budget = tmp_path / "budget.toml"
    bad_budget.write_text("[model\n")
    budget = run_cli("replay", DEMO_CAPTURE, "--budget", bad_budget)
    assert budget.code == 2 and "budget.toml" in budget.err
    no_terminal = run_cli("replay", DEMO_CAPTURE)  # the test's stdout is not a terminal
    assert no_terminal.code == 2 and "needs a terminal" in no_terminal.err and "tracer report" in no_terminal.err


def test_live_command_checks_its_inputs_before_opening_anything(run_cli) -> None:
    unknown = run_cli("live", "bogus://x")
    assert unknown.code == 2 and "unknown source" in unknown.err
    zero = run_cli("live", "demo", "--inferences", "0")
    assert zero.code == 2 and "--inferences" in zero.err
    stray = run_cli("live", "tcp://localhost:3443", "--", "extra")
    assert stray.code == 2 and "only 'fvp' takes a command" in stray.err
    ring = run_cli("live", "tcp://localhost:3443", "--ring", "0")
    assert ring.code == 2 and "--ring" in ring.err


@pytest.mark.parametrize("verb", ["live", "replay"])
def test_help_teaches_with_examples(run_cli, verb: str) -> None:
    done = run_cli(verb, "--help")
    assert done.code == 0
    assert "examples:" in done.out and f"tracer {verb} " in done.out and "--budget FILE" in done.out
