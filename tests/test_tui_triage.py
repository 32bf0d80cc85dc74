"""The live screen as a triage tool (issue 27): each defect of the trial, driven as a user would
(headless, ``Pilot``), on the QEMU demo's scenario captures and synthetic ones.

Every test here failed on the screen before its fix; what it asserts is what the user sees (the
text on screen, a notice, the selection the keys made).
"""

from __future__ import annotations

from pathlib import Path

from session_streams import ROOT, build_stream
from tui_helpers import GatedSource, plain, redraw, replay_app, run, screen_lines, settle, until

from tracer.capture.metadata import CaptureMetadata
from tracer.session.engine import Session, SessionOptions
from tracer.session.feeds import SourceFeed
from tracer.tui.app import TracerApp

SCENARIOS = ROOT / "tests" / "data" / "scenarios"
ISR_JITTER = SCENARIOS / "isr-jitter.trace"


def header(app: TracerApp) -> list[str]:
    return plain(app.query_one("#inference-header")).splitlines()


def notices(app: TracerApp) -> list[str]:
    """The notices (toasts) shown so far, as text."""
    return [str(n.message) for n in app._notifications]


# -- navigation that goes stale -------------------------------------------------------------------


def test_the_cursor_line_follows_the_inference_after_a_jump_and_follow() -> None:
    """``3``, Down, Enter (to the first inference showing the finding, cursor on its layer), then
    ``f``: the header shows the newest inference, and its cursor line names that inference too
    (it said ``in pw4 of #1`` under inference #7)."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("3", "down", "enter")
        await redraw(app, pilot)
        first, cursor = header(app)
        number = app.ui.inference
        assert first.startswith(f"inference #{number} ") and f"of #{number}" in cursor
        await pilot.press("f")
        await redraw(app, pilot)
        newest = app.snapshot.ring[-1].number
        first, cursor = header(app)
        assert newest != number and first.startswith(f"inference #{newest} ")
        assert f"of #{newest}" in cursor, cursor  # the same layer, in the inference shown
        await pilot.press("left")
        await redraw(app, pilot)
        assert f"of #{newest - 1}" in header(app)[1]

    run(app, body, size=(120, 40))


def test_the_header_names_the_finding_chosen_before_enter() -> None:
    """After Enter on a finding, the inference header names that finding first (it named the
    first finding of the layer, another one)."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        ids = [f.id for f in app.snapshot.findings]
        for n, finding in enumerate(ids):
            if not len(app.snapshot.diagnosis.flags.instances(n)):
                continue
            await pilot.press("3", *["down"] * (n + 1), "enter")
            await redraw(app, pilot)
            assert app.ui.finding is not None and app.ui.finding[0] == finding
            assert f": {finding}" in header(app)[0], (finding, header(app)[0])
            await pilot.press("escape")

    run(app, body, size=(160, 40))


def test_an_inference_outside_the_capture_is_answered_at_once() -> None:
    """``2 g 99 Enter`` on a capture of 8 inferences: a notice says which inferences it holds, the
    timeline keeps the inference it showed (not "reading inference #99 ..." for good), and ``←``
    steps from there."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", "g", "9", "9", "enter")
        await redraw(app, pilot)
        assert any("no inference #99 in the capture: it holds #0 to #7 (8 inferences)" in n for n in notices(app))
        text = "\n".join(screen_lines(app))
        assert "reading inference" not in text
        assert header(app)[0].startswith("inference #7 ")
        await pilot.press("left")
        await redraw(app, pilot)
        assert header(app)[0].startswith("inference #6 ")

    run(app, body, size=(120, 40))


def test_a_message_on_the_timeline_is_drawn_across_its_width() -> None:
    """A message in place of the Gantt fills its line: the axis drawn before does not stay
    beside it (the line was as long as the message)."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2")
        await redraw(app, pilot)
        gantt = app.query_one("#gantt")
        gantt._data, gantt._extent, gantt._message = None, None, "reading inference #5 from the capture ..."
        gantt._layout()
        width = gantt.content_size.width
        assert all(len(gantt.render_line(y).text) == width for y in range(gantt.content_size.height))

    run(app, body, size=(120, 40))


def test_a_gantt_with_a_lane_fewer_draws_no_stray_row(tmp_path: Path) -> None:
    """The Gantt keeps its height when the inference shown has fewer lanes (a seek far into a
    capture, a stretch without marks): the row left over is blank, not an edge without a lane."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2")
        await redraw(app, pilot)
        gantt = app.query_one("#gantt")
        lanes = len(gantt._lane_names)
        gantt._rows = lanes + 1  # it drew one lane more before (another stretch)
        gantt._layout()
        assert len(gantt._strips) == lanes + 1
        assert gantt.render_line(lanes).text.strip() == ""

    run(app, body, size=(120, 40))


def test_findings_say_measuring_while_the_first_inferences_arrive() -> None:
    """Live, the rules run once on the stream's first bytes (no inference yet: "nothing could be
    measured"); until they run again, the findings say they are measuring instead of that error
    while the status line counts inferences. (A clock that stands still keeps the rules from
    running a second time; the source is :class:`GatedSource`.)"""
    prologue = build_stream(0).data
    data = build_stream(6).data
    assert data.startswith(prologue)
    source = GatedSource([prologue, data[len(prologue) :]])
    meta = CaptureMetadata.from_json(source.metadata())
    session = Session.live(SourceFeed(source, None), meta, options=SessionOptions(), clock=lambda: 1000.0)
    app = TracerApp(session)

    async def body(pilot) -> None:
        source.allow(1)
        await until(pilot, lambda: app.session.snapshot().diagnosis.ran)
        assert app.session.snapshot().diagnosis.findings  # "nothing could be measured"
        source.allow(1)
        await until(pilot, lambda: app.session.snapshot().inferences >= 5)
        assert app.session.snapshot().diagnosis.inferences == 0  # the rules did not run again
        await redraw(app, pilot)
        text = "\n".join(screen_lines(app))
        assert "nothing could be measured" not in text
        assert "measuring" in plain(app.query_one("#findings-compact").query_one("FindingRow"))
        assert "Findings (" not in text  # the tab counts no error

    run(app, body, size=(160, 48))


def test_the_key_bar_keeps_help_and_quit_at_80_columns() -> None:
    """At 80 columns the key bar ended at ``e Exp…``: ``? Help`` and ``q Quit`` never showed."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        for width in (80, 60, 44):
            await pilot.resize_terminal(width, 24)
            await redraw(app, pilot)
            bar = screen_lines(app)[-1]
            assert "? Help" in bar and "q Quit" in bar, (width, bar)
            assert "…" not in bar

    run(app, body, size=(80, 24))


# -- text cut while there is room -----------------------------------------------------------------


def test_the_flags_show_whole_while_the_table_has_room() -> None:
    """At 120 and 80 columns the flags read ``p99 over jitter isr 2`` whole (they were cut to
    ``p99 over jitter i…`` beside 16-26 empty columns)."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        for size in ((120, 40), (80, 24)):
            await pilot.resize_terminal(*size)
            await redraw(app, pilot)
            table = app.query_one("#layers")
            flags = table.cell_text(4, "flags")
            assert flags.startswith("p99 over")
            row = next(line for line in screen_lines(app) if "│   4  pw4" in line)
            assert flags in row and "…" not in row, (size, row)

    run(app, body, size=(120, 40))


def test_memory_says_the_canary_and_the_failed_allocation_whole() -> None:
    """``CANARY OVERWRITTEN`` (it read ``CANARY O…``) and what the failed allocation asked for
    (``allocation failed (resize buffer): reque…``), at 120x40 and 80x24."""
    for capture, words in (
        ("stack-overflow", ("CANARY OVERWRITTEN", "CANARY")),
        ("arena-too-small", ("12,288 available", "12,288 available")),
    ):
        app = replay_app(SCENARIOS / f"{capture}.trace")

        async def body(pilot, app=app, words=words) -> None:
            await settle(app, pilot)
            for size, word in zip(((120, 40), (80, 24)), words):
                await pilot.resize_terminal(*size)
                await redraw(app, pilot)
                text = "\n".join(screen_lines(app))
                assert word in text, (size, text)

        run(app, body, size=(120, 40))


# -- words ----------------------------------------------------------------------------------------


def test_a_capture_without_a_complete_inference_does_not_say_waiting() -> None:
    """arena-too-small, replayed to its end: the latency plot says the capture has no complete
    inference (it said "waiting for a complete inference" for good)."""
    app = replay_app(SCENARIOS / "arena-too-small.trace")

    async def body(pilot) -> None:
        await settle(app, pilot)
        subtitle = app.query_one("#latency").border_subtitle
        assert "waiting" not in subtitle and "no complete inference" in subtitle

    run(app, body, size=(120, 40))


def test_the_live_end_state_gives_its_reason_and_drops_the_rec_dot(tmp_path: Path) -> None:
    """The source ends: the status says why and what was recorded, no more ``● REC``."""
    truth = build_stream(4)
    source = GatedSource([truth.data], hold_open=False)
    from tui_helpers import live_app

    app = live_app(source, tmp_path / "live.trace")

    async def body(pilot) -> None:
        source.allow(1)
        await until(pilot, lambda: app.session.ended)
        await redraw(app, pilot)
        status = plain(app.query_one("#status"))
        assert "ended (the source ended" in status, status
        assert "● REC" not in status and "recorded " in status

    run(app, body, size=(160, 48))


def test_evidence_prints_buffers_as_the_firmware_engineer_reads_them() -> None:
    """missing-clean's evidence: ``buffer=0x31000000 (3,072 B)``, not a Python dict."""
    app = replay_app(SCENARIOS / "missing-clean.trace")

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("3")
        await redraw(app, pilot)
        text = "\n".join(screen_lines(app))
        assert "buffer=0x31000000 (3,072 B)" in text
        assert "{'address'" not in text

    run(app, body, size=(160, 48))
