"""Each defect the trial of the live screen found, driven as a user would (headless, ``Pilot``).

Every test here failed on the screen before the fix (checked against that code); what it asserts
is what the user sees: the text on screen, the colours of cells, or the selection the keys made.
"""

from __future__ import annotations

from pathlib import Path

from check_streams import budget_toml
from rich.style import Style
from session_streams import CLOCK_HZ, build_stream, write_capture
from tui_helpers import (
    GatedSource,
    inference_pieces,
    live_app,
    plain,
    redraw,
    replay_app,
    run,
    screen_lines,
    screen_text,
    settle,
    until,
)

from tracer.tui import palette as pal


def header(app) -> str:
    return plain(app.query_one("#inference-header"))


def cell_styles(strip) -> list[tuple[str, Style]]:
    """(character, style) of every cell of a drawn line."""
    return [(ch, seg.style) for seg in strip for ch in seg.text]


def gantt_line(app, word: str):
    """The drawn Gantt line that shows ``word``, and where."""
    gantt = app.query_one("#gantt")
    for y in range(gantt.content_size.height):
        strip = gantt.render_line(y)
        if word in strip.text:
            return strip, strip.text.index(word)
    raise AssertionError(f"{word!r} is not on the timeline")


def jitter_capture(tmp_path: Path, inferences: int = 300, **kw) -> Path:
    """A synthetic capture where an interrupt makes layer 3 slow in every 5th inference."""
    truth = build_stream(inferences=inferences, isr_every=5, isr_cycles=3_000, **kw)
    return write_capture(tmp_path / "jitter.trace", truth.data)


def synthetic_budget(tmp_path: Path) -> Path:
    """A budget for the synthetic stream's six layers (predictions near their mean)."""
    layers = [
        (f"layer{i}", "CONV_2D" if i % 2 == 0 else "ADD", "npu" if i % 2 == 0 else "cpu", 1200 + 100 * i)
        for i in range(6)
    ]
    return budget_toml(tmp_path / "budget.toml", layers, clock_hz=CLOCK_HZ)


# -- views go stale -------------------------------------------------------------------------------


def test_an_inference_chosen_on_the_latency_plot_shows_when_the_timeline_opens() -> None:
    """With the timeline seen once (at #19), select bar #5 on the latency plot, press 2: the
    timeline shows #5, and ← then #4."""
    app = replay_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2")
        await pilot.pause()
        assert header(app).startswith("inference #19")
        await pilot.press("1")
        await pilot.pause()
        plot = app.query_one("#latency")
        column = plot._columns.index(5)  # the plot's own map of columns to inferences
        await pilot.click("#latency", offset=(8 + 1 + column, 3))
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        assert header(app).startswith("inference #5")
        await pilot.press("left")
        await pilot.pause()
        assert header(app).startswith("inference #4")

    run(app, body)


def test_the_gantt_follows_the_layer_chosen_on_the_overview() -> None:
    app = replay_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", "1", "down", "down", "2")
        await pilot.pause()
        strip, at = gantt_line(app, "pw2")
        assert cell_styles(strip)[at][1].bgcolor.name == pal.SELECTED.lower()
        strip, at = gantt_line(app, "conv0")
        assert cell_styles(strip)[at][1].bgcolor.name != pal.SELECTED.lower()

    run(app, body)


def test_resizing_redraws_the_latency_plot_and_the_layer_history() -> None:
    app = replay_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.resize_terminal(120, 40)
        plot = app.query_one("#latency")
        detail = app.query_one("#detail")

        def bars() -> list[str]:
            lines = plain(detail).splitlines()
            assert any(line.startswith("history") for line in lines)
            return [line for line in lines if "█" in line and not line.startswith("history")]

        def redrawn() -> bool:
            fits = all(len(line) <= detail.content_size.width for line in bars())
            return plot.render_line(0).cell_length == plot.content_size.width and fits

        await until(pilot, redrawn)  # no forced redraw: the screen must follow by itself
        # the distribution's bars are laid out for the width: drawn again, they fit the new one
        assert bars()

    run(app, body, size=(200, 55))


# -- usable at 80x24 and 120x40 -------------------------------------------------------------------


def test_at_80x24_ratio_flags_and_the_findings_count_stay(tmp_path: Path) -> None:
    app = replay_app(jitter_capture(tmp_path, 40), synthetic_budget(tmp_path))

    async def body(pilot) -> None:
        await settle(app, pilot)
        lines = screen_lines(app)
        table = next(i for i, line in enumerate(lines) if " layer " in line and "#" in line)
        assert "ratio" in lines[table] and "flags" in lines[table]
        row3 = next(line for line in lines[table:] if " layer3 " in line)
        assert "jitter" in row3 and any(word.replace(".", "").isdigit() for word in row3.split())
        assert any("Findings (" in line for line in lines[:4])  # the count, on the Findings tab
        memory = next(line for line in lines if " arena " in line)
        assert "%" in memory  # the arena's bar and percentage, not clipped
        assert all(len(line) <= 80 for line in lines)

    run(app, body, size=(80, 24))


def test_at_120x40_the_status_bar_keeps_clock_emulation_loss_and_budget_on_two_lines() -> None:
    app = replay_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        first, second = screen_lines(app)[:2]
        assert "REPLAY" in first and "ended" in first
        assert "32 MHz" in second and "emulated" in second and "loss none" in second
        assert "tracer-demo" in second  # the budget
        assert "Overview" in screen_lines(app)[2]  # the third line is the tabs: nothing wrapped

    run(app, body, size=(120, 40))


# -- live -----------------------------------------------------------------------------------------


def test_a_pinned_inference_survives_the_ring(tmp_path: Path) -> None:
    """Paused replay with a ring of 4: step to #2, go back to #1, resume to the end: #1 stays."""
    path = write_capture(tmp_path / "s.trace", build_stream(inferences=40).data)
    app = replay_app(path, None, ring=4, speed=1.0, paused=True, index=False)

    async def body(pilot) -> None:
        await pilot.press("2")
        for _ in range(3):
            await pilot.press("right")
            await until(pilot, lambda: not app.session.stepping)
        await redraw(app, pilot)
        await pilot.press("left")
        await redraw(app, pilot)
        assert header(app).startswith("inference #1")
        app.session.set_speed(None)
        await pilot.press("space")
        await settle(app, pilot)
        assert app.snapshot.inferences == 40 and [r.number for r in app.snapshot.ring] == [36, 37, 38, 39]
        assert header(app).startswith("inference #1") and "6 layers" in header(app)

    run(app, body)


def test_live_says_when_an_inference_is_no_longer_held() -> None:
    truth = build_stream(inferences=40, text=False)
    source = GatedSource(inference_pieces(truth.data, 40))
    app = live_app(source, ring=4)

    async def body(pilot) -> None:
        source.allow(1000)
        await until(pilot, lambda: app.session.snapshot().inferences == 40)
        await redraw(app, pilot)
        plot = app.query_one("#latency")
        column = plot._columns.index(10)
        await pilot.click("#latency", offset=(8 + 1 + column, 3))
        await pilot.press("2")
        await redraw(app, pilot)
        text = header(app)
        assert "#10 is no longer held" in text and "last 4 inferences" in text, text

    run(app, body)


def test_pausing_live_keeps_the_recording_size_moving(tmp_path: Path) -> None:
    truth = build_stream(inferences=20, text=False)
    source = GatedSource(inference_pieces(truth.data, 20))
    app = live_app(source, tmp_path / "live.trace")

    async def body(pilot) -> None:
        source.allow(5)
        await until(pilot, lambda: app.session.snapshot().inferences >= 3)
        await pilot.press("space")
        await redraw(app, pilot)
        held = app.session.snapshot().status.recording_bytes
        source.allow(1000)
        await until(pilot, lambda: source.left == 0 and app.session.snapshot().status.recording_bytes > held)
        from tracer.tui import format as fmt

        def shown() -> bool:
            status = plain(app.query_one("#status"))
            return "paused" in status and fmt.size(app.session.snapshot().status.recording_bytes) in status

        await until(pilot, shown)  # the screen's own refresh, no forced redraw
        assert app.session.snapshot().status.recording_bytes > held

    run(app, body)


def test_a_capture_cut_in_the_middle_of_an_inference_is_not_shown_as_loss(tmp_path: Path) -> None:
    """Recording stopped (the user quit) during an inference: the last one is cut, nothing was lost."""
    path = write_capture(tmp_path / "cut.trace", build_stream(inferences=10, cut_last=True).data)
    app = replay_app(path, None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        status = app.query_one("#status")
        text = plain(status)
        assert "loss none" in text and "cut by the end" in text
        spans = [span for span in status.content.spans if pal.BAD.lower() in str(span.style).lower()]
        assert not spans, "nothing on the status line is red"
        await pilot.press("2")
        await pilot.pause()
        assert "cut by the end of the capture (not loss)" in header(app)

    run(app, body)


# -- flags, the canary, zoom ----------------------------------------------------------------------


def test_every_inference_that_shows_a_finding_is_flagged_not_only_the_listed_ones(tmp_path: Path) -> None:
    """60 inferences are preempted; the finding lists the first 20: #295 is flagged all the same."""
    app = replay_app(jitter_capture(tmp_path, 300), None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        finding = next(f for f in app.snapshot.findings if f.id == "jitter-preemption")
        assert 295 not in finding.inferences
        await pilot.press("2", "left", "left", "left", "left")
        await redraw(app, pilot)
        assert header(app).startswith("inference #295") and "jitter-preemption" in header(app)
        assert "!layer3" in screen_text(app)

    run(app, body)


def test_the_broken_stack_canary_is_placed_on_the_timeline(tmp_path: Path) -> None:
    path = write_capture(tmp_path / "canary.trace", build_stream(inferences=10, canary_at=4).data)
    app = replay_app(path, None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", *["left"] * 5)
        await redraw(app, pilot)
        assert header(app).startswith("inference #4")
        assert "▼ canary main" in screen_text(app)

    run(app, body)


def _axis(app) -> str:
    return next(line for line in screen_lines(app) if line.lstrip("│ ").startswith("time"))


def test_the_first_zoom_does_not_jump_to_the_left_edge() -> None:
    app = replay_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("right_square_bracket")
        await redraw(app, pilot)
        first_label = _axis(app).split("time", 1)[1].split()[0]
        assert first_label not in ("0", "+0") and first_label.startswith("+")

    run(app, body)


def test_bars_cut_by_the_zoom_keep_their_label() -> None:
    app = replay_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", "right_square_bracket", "right_square_bracket", "right_square_bracket")
        for _ in range(6):
            await pilot.press("full_stop")
        await redraw(app, pilot)
        gantt = app.query_one("#gantt")
        npu = next(
            gantt.render_line(y)
            for y in range(gantt.content_size.height)
            if gantt.render_line(y).text.lstrip().startswith("NPU")
        )
        runs = _bar_runs(npu)
        assert runs, "the view shows bars"
        for width, text in runs:
            if width >= 8:
                assert text.strip(), f"a bar {width} cells wide has no label"

    run(app, body)


def _bar_runs(strip) -> list[tuple[int, str]]:
    """(width, text) of each run of cells with one background (a bar) on a Gantt line."""
    runs: list[tuple[int, str]] = []
    current, text = None, []
    for ch, style in cell_styles(strip)[8:]:
        bg = style.bgcolor if style is not None else None
        if bg != current and text:
            if current is not None:
                runs.append((len(text), "".join(text)))
            text = []
        current = bg
        text.append(ch)
    if text and current is not None:
        runs.append((len(text), "".join(text)))
    return runs


def test_the_spans_table_cursor_selects_the_layer() -> None:
    app = replay_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", "down", "down", "down")
        await redraw(app, pilot)
        assert app.ui.layer == 3
        strip, at = gantt_line(app, "dw3")
        assert cell_styles(strip)[at][1].bgcolor.name == pal.SELECTED.lower()
        await pilot.press("1")
        await pilot.pause()
        assert app.query_one("#detail").border_title == "Layer 3 · dw3"

    run(app, body)


def test_the_findings_view_scrolls_by_keyboard(tmp_path: Path) -> None:
    app = replay_app(jitter_capture(tmp_path, 40), synthetic_budget(tmp_path))

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("3")
        await redraw(app, pilot)
        view = app.query_one("#findings-full")
        assert view.max_scroll_y > 0, "the findings are longer than the screen"
        await pilot.press("pagedown")
        await pilot.pause()
        assert view.scroll_y > 0
        await pilot.press("home")
        await pilot.pause()
        assert view.scroll_y == 0

    run(app, body, size=(80, 24))


def test_a_finished_capture_without_memory_reports_says_so(tmp_path: Path) -> None:
    path = write_capture(tmp_path / "nomem.trace", build_stream(inferences=5, memory=False).data)
    app = replay_app(path, None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        memory = plain(app.query_one("#memory"))
        assert "no arena report in this capture" in memory and "yet" not in memory

    run(app, body)
