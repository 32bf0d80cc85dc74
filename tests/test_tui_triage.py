"""The live screen as a triage tool (issue 27): each defect of the trial, driven as a user would
(headless, ``Pilot``), on the QEMU demo's scenario captures and synthetic ones.

Every test here failed on the screen before its fix; what it asserts is what the user sees (the
text on screen, a notice, the selection the keys made).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from session_streams import ROOT, build_stream, write_capture
from tui_helpers import (
    GatedSource,
    inference_pieces,
    live_app,
    plain,
    redraw,
    replay_app,
    run,
    screen_lines,
    settle,
    until,
)

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


def test_live_an_inference_past_the_recording_is_answered_at_once_and_one_that_left_the_ring_loads(
    tmp_path: Path,
) -> None:
    """Live, recording, with 30 of 40 inferences arrived and a ring of 8: ``2 g 99 Enter`` says at
    once what the recording holds so far and that it is live; ``g 3 Enter`` (left the ring long
    ago) reads #3 from the recording and shows it, as a replay would; ``f`` follows the live edge."""
    truth = build_stream(inferences=40, text=False)
    pieces = inference_pieces(truth.data, 40)
    source = GatedSource(pieces)
    app = live_app(source, tmp_path / "live.trace", ring=8)
    arrived = 30

    async def body(pilot) -> None:
        source.allow(arrived)
        session = app.session
        await until(pilot, lambda: session.decoder.bytes == sum(len(p) for p in pieces[:arrived]))
        version = session.version  # the last piece is decoded; two counts on, it is folded and indexed
        await until(pilot, lambda: session.version >= version + 2)
        index = session.index
        assert index is not None and not index.ready
        count = index.count
        assert 20 < count < 40 and session.snapshot().inferences == count
        await redraw(app, pilot)
        await pilot.press("2", "g", "9", "9", "enter")
        await redraw(app, pilot)
        said = f"no inference #99 recorded yet: the capture holds #0 to #{count - 1} so far ({count} inferences; live, still recording)"
        assert any(said in n for n in notices(app)), notices(app)
        assert "reading inference" not in "\n".join(screen_lines(app))
        await pilot.press("g", "3", "enter")
        await until(pilot, lambda: session.snapshot().locate(ordinal=3) is not None)
        await redraw(app, pilot)
        assert header(app)[0].startswith("inference #3 "), header(app)
        await pilot.press("f")
        await redraw(app, pilot)
        assert header(app)[0].startswith(f"inference #{count - 1} "), header(app)

    run(app, body, size=(160, 40))


def test_a_capture_without_inferences_says_so_once_it_is_read(tmp_path: Path) -> None:
    """``g 5 Enter`` on a capture that holds no inference, read to its end: a notice says it holds
    none (it said "not indexed yet: the capture is still being read", as if it were not read)."""
    path = write_capture(tmp_path / "none.trace", build_stream(inferences=0).data)
    app = replay_app(path, budget=None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        assert app.session.index is not None and app.session.index.ready
        await pilot.press("g", "5", "enter")
        await redraw(app, pilot)
        assert any("no inference #5 in the capture: it holds none" in n for n in notices(app)), notices(app)

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


# -- panels out of reach --------------------------------------------------------------------------


def test_the_layer_detail_is_a_key_away_at_80x24_and_says_the_budget() -> None:
    """At 80x24 the overview has no room for the layer detail: ``5`` (or enter on a layer) shows
    it, with the budget (p50 and p99 against the limit, the amount over) and the findings about
    the layer in full; backspace goes back to the table."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("j", "j", "j", "j")  # (j: down, as in less and vim)
        assert app.ui.layer == 4
        await pilot.press("enter")
        await redraw(app, pilot)
        assert app.active_tab == "layer"
        text = "\n".join(screen_lines(app))
        assert "Layer 4 · pw4" in text
        assert "limit 23,438 (+15%)" in text and "p99 2.15× over by 20,319" in text
        assert "jitter-preemption:" in text
        await pilot.press("backspace")
        await redraw(app, pilot)
        assert app.active_tab == "overview" and app.focused is app.query_one("#layers")
        await pilot.press("5")
        await redraw(app, pilot)
        assert app.active_tab == "layer"

    run(app, body, size=(80, 24))


def test_the_layer_detail_keeps_values_with_their_units_and_scrolls_when_clipped() -> None:
    """At 120x40 the detail in the overview said ``p50 1.041`` / ``ms`` on two lines and its
    last lines could not be seen; now a value keeps its unit and the panel scrolls."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("down", "down", "down", "down")
        await redraw(app, pilot)
        lines = plain(app.query_one("#detail")).splitlines()
        assert any("p50 646.8 µs" in line for line in lines), lines
        box = app.query_one("#detail-box")
        assert box.max_scroll_y > 0  # more than it shows: it scrolls
        assert len(lines) > box.content_size.height

    run(app, body, size=(120, 40))


def test_the_layer_detail_shows_the_sampled_operators_against_vela() -> None:
    """The npu-sampling capture with its Vela budget: the NPU job's layer lists each sampled
    operator with its measured NPU cycles, Vela's estimate and the ratio (at 120x40 it was not
    on screen at all)."""
    vela = ROOT / "firmware_snippets" / "demo" / "model" / "vela"
    from tracer.budget import load_budget

    files = [*sorted(vela.glob("sampling_net_*.csv")), vela / "sampling_net_debug.xml"]
    session = Session.replay(
        str(ROOT / "captures" / "demo_sampling.trace"), budget=load_budget(files), options=SessionOptions(speed=None)
    )
    app = TracerApp(session)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("end", "5")
        await redraw(app, pilot)
        text = "\n".join(screen_lines(app))
        assert "Layer 10 · sampling_net" in text
        assert "Vela NPU" in text and "ratio" in text
        job = app.snapshot.diagnosis.analysis.sampling.npu.jobs[0]
        top = max(job.operators, key=lambda op: op.share)
        row = next(line for line in text.splitlines() if f"│ {top.name} " in line)
        assert f"{top.ratio:.2f}×" in row and f"{top.predicted_npu_cycles:,.0f}" in row

    run(app, body, size=(120, 40))


def test_replay_takes_an_elf_and_checks_it(run_cli, tmp_path: Path) -> None:
    """``--elf`` on replay (and live): a file that is not an ELF is a usage error, before the screen."""
    bad = tmp_path / "app.elf"
    bad.write_bytes(b"not an elf")
    done = run_cli("replay", ROOT / "captures" / "demo.trace", "--elf", bad)
    assert done.code == 2 and "not an ELF file" in done.err
    assert "--elf" in run_cli("live", "--help").out


def test_hot_spots_are_named_from_the_elf(firmware_build: Path) -> None:
    """With the demo's ELF (built by the fixture), the CPU hot spots of the sampled capture read
    as functions (``main+0x858``), not raw addresses."""
    from tracer.elf.inlines import open_locator

    app = replay_app(ROOT / "captures" / "demo_sampling.trace")
    app.locator = open_locator(firmware_build / "demo" / "tracer_demo.elf")

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("5")
        await redraw(app, pilot)
        line = next(line for line in screen_lines(app) if "sampled cpu hot spots" in line)
        names = line.split("samples:")[1]
        assert "0x1000" not in names.split("+")[0], line
        assert re.search(r"[A-Za-z_]\w*(\+0x[0-9a-f]+)? \d+%", names), line

    run(app, body, size=(160, 40))


# -- conventions ----------------------------------------------------------------------------------


def test_tab_moves_the_keys_between_the_panes_visibly() -> None:
    """Tab goes from the layers table to the layer detail and the console (each shows it has the
    keys by its border); shift+tab comes back."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        seen = [app.focused.id]
        for _ in range(2):
            await pilot.press("tab")
            await pilot.pause()
            seen.append(app.focused.id)
        assert seen == ["layers", "detail-box", "console-compact"], seen
        box = app.query_one("#detail-box")
        await pilot.press("shift+tab")
        await pilot.pause()
        assert app.focused is box and box.styles.border_top[1] != app.query_one("#layers").styles.border_top[1]

    run(app, body, size=(160, 48))


def test_slash_searches_the_findings_and_the_console() -> None:
    """``/`` on the findings chooses the next finding that holds the words; on the console it
    shows the next line that holds them."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        ids = [f.id for f in app.snapshot.findings]
        await pilot.press("3", "slash", *"isr-in-layer", "enter")
        await redraw(app, pilot)
        assert app.ui.finding is not None and app.ui.finding[0] == "isr-in-layer"
        chosen = app.query_one("#findings-full").selected
        assert ids[chosen] == "isr-in-layer"
        row = list(app.query("#findings-full FindingRow"))[chosen]
        assert row.has_class("-selected") and row.styles.border_left[0] != ""  # a marker, not only a shade
        await pilot.press("escape", "4", "slash", *"layer=7", "enter")
        await redraw(app, pilot)
        console = app.query_one("#console-full")
        assert console._found is not None and "layer=7" in console.lines[console._found]
        assert any("layer=7" in line for line in screen_lines(app))

    run(app, body, size=(120, 40))


def test_console_lines_longer_than_the_view_scroll_sideways() -> None:
    """The overview's console cut lines mid-word (``TOTAL layer=3 co``): its border says ``< >``
    and ``>`` shows the rest."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        console = app.query_one("#console-compact")
        assert "< > scroll sideways" in console.border_subtitle
        cut = next(line for line in screen_lines(app) if "TOTAL layer=3" in line)
        assert "cycles=" not in cut
        console.focus()
        await pilot.press("greater_than_sign")
        await redraw(app, pilot)
        assert any("cycles=" in line for line in screen_lines(app))

    run(app, body, size=(120, 40))


def test_every_column_sorts_the_baseline_change_included() -> None:
    """With ``--baseline``, ``s`` reaches the Δp50 column and a click on its header sorts by it
    (it was skipped and the click did nothing)."""
    app = replay_app(ISR_JITTER, baseline=str(ROOT / "captures" / "demo.trace"))

    async def body(pilot) -> None:
        await settle(app, pilot)
        await until(pilot, lambda: bool(app.session.snapshot().baseline))
        await redraw(app, pilot)
        table = app.query_one("#layers")
        assert "delta" in table.sort_keys()
        for _ in range(len(table.sort_keys())):
            await pilot.press("s")
            if app.ui.sort == "delta":
                break
        assert app.ui.sort == "delta"
        await pilot.press("s")
        x = table.column_x("delta")
        await pilot.click("#layers", offset=(x + 1, 1))
        await redraw(app, pilot)
        assert app.ui.sort == "delta"
        changes = [float(table.cell_text(k, "delta").rstrip("%")) for k in table.order]
        assert changes == sorted(changes, reverse=True)

    run(app, body, size=(200, 48))


# -- two inferences side by side ------------------------------------------------------------------


def test_c_compares_two_inferences_layer_by_layer_with_what_explains_it() -> None:
    """isr-jitter: ``c`` on #5 (the timer interrupt preempts pw4 in it), then → to #7: the header
    says the difference in latency, the spans table gives each layer's cycles in #5 and the
    difference, and names the interrupt that made pw4 slower in #5; ``c`` on #5 again clears it."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("2", "left", "left", "c")
        await redraw(app, pilot)
        assert app.ui.compare == (5, 5)
        await pilot.press("right", "right")
        await redraw(app, pilot)
        ring = {r.number: r.inference for r in app.snapshot.ring}
        slow, normal = ring[5], ring[7]
        assert f"vs #5: {normal.latency_cycles - slow.latency_cycles:+,} cycles" in header(app)[0]
        spans = app.query_one("#spans")
        pw4 = {s.layer: s for s in slow.layers}[4], {s.layer: s for s in normal.layers}[4]
        assert spans.cell("4", "ref") == f"{pw4[0].cycles:,}"
        assert spans.cell("4", "delta") == f"{pw4[1].cycles - pw4[0].cycles:+,}"
        assert spans.cell("4", "why").startswith("-S32K_TIMER ")
        assert spans.cell("0", "why") == ""
        text = "\n".join(screen_lines(app))
        assert "vs #5" in text and "S32K_TIMER" in text
        await pilot.press("left", "left", "c")
        await redraw(app, pilot)
        assert app.ui.compare is None and spans.cell("4", "delta") == ""

    run(app, body, size=(160, 48))


def test_a_long_budget_name_cut_on_the_status_line_says_so() -> None:
    """The status line's short form of a long budget name ends with an ellipsis (it was cut to
    16 characters without one)."""
    from tracer.tui.widgets.status import _second_line

    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        snapshot = app.snapshot
        long = dataclasses.replace(snapshot, budget_name="tracer-demo-int8-ten-layer-classifier")
        shorts = [p.short.plain for p in _second_line(long.status, long) if p.short is not None]
        assert "tracer-demo-int…" in shorts, shorts

    run(app, body, size=(120, 40))


def test_the_p99_flag_says_how_far_over_as_the_ratio_column_does() -> None:
    """The ratio column is p50's; the ``p99 over`` flag now says p99 against the prediction in
    the same terms (``p99 over 2.15×``), and the layer view the amount over the limit."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        row = app.snapshot.layer(4)
        table = app.query_one("#layers")
        assert table.cell_text(4, "ratio") == f"{row.cycles.p50 / row.predicted:.2f}"
        assert f"p99 over {row.cycles.p99 / row.predicted:.2f}×" in table.cell_text(4, "flags")

    run(app, body, size=(160, 48))


def test_j_and_k_scroll_the_help() -> None:
    """``j``/``k`` do what ↓/↑ do in the help (as in less, vim, k9s, lazygit; the tables'
    ``j`` is in the 80x24 layer test)."""
    app = replay_app(ISR_JITTER)

    async def body(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        panel = app.screen.query_one("HelpPanel")
        await pilot.press("j", "j", "j")
        await pilot.pause()
        assert panel.scroll_y == 3
        await pilot.press("k")
        await pilot.pause()
        assert panel.scroll_y == 2

    run(app, body, size=(80, 24))
