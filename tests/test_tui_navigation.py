"""Going from a finding to its evidence, to any inference of a file, along continuous time with a
cursor and a measured range; a baseline, a screenshot, the console's errors (headless, ``Pilot``)."""

from __future__ import annotations

from pathlib import Path

from session_streams import CLOCK_HZ, DEMO_CAPTURE, build_stream, write_capture
from tui_helpers import lane, plain, redraw, replay_app, run, screen_text, settle, until

from tracer.tui.widgets.console import ERROR_STYLE, WARNING_STYLE, line_style


def header(app) -> str:
    return plain(app.query_one("#inference-header"))


def jitter_capture(tmp_path: Path, inferences: int) -> Path:
    return write_capture(tmp_path / "jitter.trace", build_stream(inferences, isr_every=5, isr_cycles=3_000).data)


def test_enter_on_a_finding_then_n_and_N_walk_its_evidence(tmp_path: Path) -> None:
    app = replay_app(jitter_capture(tmp_path, 40), None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        findings = [f.id for f in app.snapshot.findings]
        at = findings.index("jitter-preemption")
        await pilot.press("3", *["down"] * (at + 1))
        await pilot.pause()
        assert app.ui.finding == ("jitter-preemption", 3)
        await pilot.press("enter")
        await redraw(app, pilot)
        assert app.active_tab == "timeline" and (app.ui.inference, app.ui.layer) == (0, 3)
        assert header(app).startswith("inference #0") and "jitter-preemption" in header(app)
        span = next(s for s in app.snapshot.ring[0].inference.layers if s.layer == 3)
        assert app.ui.cursor == span.start  # the cursor on the layer that shows it
        await pilot.press("n")
        await redraw(app, pilot)
        assert (app.ui.inference, app.ui.layer) == (5, 3)
        await pilot.press("N", "N")
        await redraw(app, pilot)
        assert (app.ui.inference, app.ui.layer) == (35, 3)  # wrapped around to the last one
        assert "!layer3" in lane(app, "CPU")

    run(app, body)


def test_n_without_a_chosen_finding_visits_every_flagged_inference(tmp_path: Path) -> None:
    app = replay_app(jitter_capture(tmp_path, 20), None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        seen = []
        for _ in range(5):
            await pilot.press("n")
            await redraw(app, pilot)
            seen.append(app.ui.inference)
        assert seen == [0, 5, 10, 15, 0]

    run(app, body)


def test_replay_shows_any_inference_of_the_file(tmp_path: Path) -> None:
    """A ring of 8 over 300 inferences: g 10, ← to the first, → back; each read from the file."""
    app = replay_app(jitter_capture(tmp_path, 300), None, ring=8)

    async def body(pilot) -> None:
        await settle(app, pilot)
        assert app.snapshot.file_inferences == 300
        await pilot.press("2", "g", "1", "0", "enter")
        await until(pilot, lambda: app.session.snapshot().locate(ordinal=10) is not None)
        await redraw(app, pilot)
        assert header(app).startswith("inference #10  11 of 300 in the file")
        assert "jitter-preemption" in header(app)  # the whole capture's findings, flagged at #10
        assert "!layer3" in lane(app, "CPU")
        for expected in (9, 8):
            await pilot.press("left")
            await until(pilot, lambda: app.session.snapshot().locate(ordinal=expected) is not None)  # noqa: B023 - awaited here
            await redraw(app, pilot)
            assert header(app).startswith(f"inference #{expected} ")
        await pilot.press("n")  # the next inference showing a finding after #8: #10
        await until(pilot, lambda: app.ui.inference == 10)
        await redraw(app, pilot)
        assert header(app).startswith("inference #10 ")
        await pilot.press("f")
        await redraw(app, pilot)
        assert header(app).startswith("inference #299 ")

    run(app, body)


def test_the_timeline_runs_on_across_inferences_with_gaps_and_interrupts(tmp_path: Path) -> None:
    truth = build_stream(12, isr_every=5, isr_cycles=3_000, gap=4_000)
    app = replay_app(write_capture(tmp_path / "gaps.trace", truth.data), None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", "left", "left")  # #9, between #8 and #10 (an interrupt in #10)
        await pilot.press("left_square_bracket", "left_square_bracket")  # zoom out: the neighbours show
        await redraw(app, pilot)
        inferences = lane(app, "infer")
        assert "#8" in inferences and "#9" in inferences and "#10" in inferences
        assert "·" in inferences  # the gaps between them
        assert "SecureFault" in lane(app, "ISR")  # exception 7's handler, inside #10
        legend = plain(app.query_one("#legend"))
        assert "canary broken" in legend and "no inference" in legend and "cursor" in legend

    run(app, body)


def test_cursor_and_range_measure_cycles_and_time() -> None:
    app = replay_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", "l")
        await redraw(app, pilot)
        start = app.ui.cursor
        assert start is not None and "cursor +" in header(app)
        await pilot.press("m", *["l"] * 10)
        await redraw(app, pilot)
        gantt = app.query_one("#gantt")
        cells = gantt.viewport().cpc * 10
        length = app.ui.cursor - start
        assert abs(length - cells) <= 10
        text = header(app)
        assert f"range {length:,} cycles" in text
        from tracer.tui import format as fmt

        assert fmt.cycle_time(length, 32_000_000) in text  # the demo's clock
        before = app.ui.cursor
        await pilot.press("L")  # to the next edge of a layer, a job, the inference
        await redraw(app, pilot)
        record = app.snapshot.ring[-1]
        events = app.snapshot.events.of(record)
        edges = {t for s in record.inference.layers for t in (s.start, s.end)}
        edges |= {t for j in events.npu_jobs for t in (j.start, j.end)} | {record.start, record.end}
        assert app.ui.cursor in edges and app.ui.cursor > before
        assert not any(before < t < app.ui.cursor for t in edges)  # the nearest
        await pilot.press("escape")
        await pilot.pause()
        assert app.ui.mark is None

    run(app, body)


def test_zoom_keeps_the_cursor_in_place() -> None:
    app = replay_app()

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", *["l"] * 30)
        await redraw(app, pilot)
        gantt = app.query_one("#gantt")
        x = gantt.viewport().x(app.ui.cursor)
        await pilot.press("right_square_bracket", "right_square_bracket")
        await redraw(app, pilot)
        assert abs(gantt.viewport().x(app.ui.cursor) - x) <= 1

    run(app, body)


def test_a_baseline_adds_its_p50_and_the_change(tmp_path: Path) -> None:
    app = replay_app(baseline=str(DEMO_CAPTURE))

    async def body(pilot) -> None:
        await settle(app, pilot)
        await until(pilot, lambda: bool(app.session.snapshot().baseline))
        await redraw(app, pilot)
        table = app.query_one("#layers")
        assert table.cell_text(0, "delta") == "+0.0%" and table.cell_text(0, "base") == table.cell_text(0, "p50")
        assert "Δp50 against demo.trace" in table.border_subtitle

    run(app, body)


def test_the_baseline_option_checks_its_file(run_cli, tmp_path: Path) -> None:
    done = run_cli("replay", DEMO_CAPTURE, "--baseline", tmp_path / "nope.trace")
    assert done.code == 3 and "--baseline" in done.err and "no such file" in done.err


def test_p_writes_the_screen_as_svg(tmp_path: Path) -> None:
    app = replay_app(tmp_path=tmp_path)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", "p")
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()

    run(app, body)
    first, second = tmp_path / "demo-timeline.svg", tmp_path / "demo-timeline-2.svg"
    assert first.is_file() and second.is_file() and app.last_screenshot == second
    assert first.read_text().startswith("<svg") and "inference #19" in first.read_text().replace("&#160;", " ")


def test_console_lines_that_report_errors_are_red(tmp_path: Path) -> None:
    assert line_style("E: HardFault at 0x0800_1234") is ERROR_STYLE
    assert line_style("assertion failed: arena") is ERROR_STYLE
    assert line_style("warning: slow frame") is WARNING_STYLE
    assert line_style("inference 3 done") not in (ERROR_STYLE, WARNING_STYLE)
    from telemetry_encoder import TelemetryEncoder

    from tracer.telemetry.wire import TimeSource

    enc = TelemetryEncoder()
    enc.target_info(0, CLOCK_HZ, TimeSource.DWT)
    enc.text("boot ok\nERROR: input tensor not aligned\nall fine\n")
    app = replay_app(write_capture(tmp_path / "e.trace", bytes(enc.out)), None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("4")
        await redraw(app, pilot)
        console = app.query_one("#console-full")
        assert "1 error" in console.border_title
        row = next(y for y in range(console.content_size.height) if "ERROR" in console.render_line(y).text)
        styles = {seg.style for seg in console.render_line(row) if "ERROR" in seg.text}
        assert styles == {ERROR_STYLE}
        assert "3 lines · 1 error" in screen_text(app)

    run(app, body)


def test_the_help_names_the_keys_of_each_view() -> None:
    from tracer.tui.help import help_text

    text = help_text().plain
    for words in ("enter", "findings: go to the first inference", "< >", "escape", "next inference and layer"):
        assert words in text, words
