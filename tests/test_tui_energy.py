"""The screen with a power recording (``tracer replay CAPTURE --power FILE``): energy columns in
the layers table, the inference's energy in the timeline's header, a power lane on the timeline;
a recording that does not belong says why and the screen stays up.

Driven by Textual's pilot, on a capture of our encoder (SYNC_PIN marks) and the recording a
simulated meter made of it, written as a real JLS through pyjls (tracer.power.simulate); the
per-layer power model is the truth the screen's numbers are checked against.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from check_streams import write_capture
from power_streams import sync_capture
from tui_helpers import lane, plain, redraw, replay_app, run, settle, until

from tracer.pipeline.load import load_timeline
from tracer.power.reading import open_recording
from tracer.power.simulate import Meter, PowerModel, SimulatedRecording, write_jls
from tracer.tui import format as fmt
from tracer.tui.widgets.layer_detail import LayerDetail
from tracer.tui.widgets.layers import LayersTable
from tracer.tui.widgets.power_lane import BLOCKS, mean_power
from tracer.tui.widgets.timeline import InferenceHeader, TimelineView

pytest.importorskip("pyjls")
MODEL = PowerModel({0: 40.0, 1: 95.0, 2: 25.0}, other_mw=12.0, idle_mw=2.0)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A capture, its meter's JLS, and another run's JLS (which does not belong to it)."""
    tmp = tmp_path_factory.mktemp("tui_energy")
    capture = sync_capture(tmp / "run.trace")
    timeline, _ = load_timeline(str(capture))
    jls = tmp / "run.jls"
    write_jls(str(jls), SimulatedRecording(timeline, MODEL, Meter(100_000, drift_ppm=150, white_mw=1.0, seed=3)))
    other_timeline, _ = load_timeline(str(sync_capture(tmp / "other.trace", seed=9)))
    other = tmp / "other.jls"
    write_jls(str(other), SimulatedRecording(other_timeline, MODEL, Meter(100_000, seed=5)))
    return capture, jls, other


def _number(text: str) -> float:
    found = re.match(r"\s*([0-9,.]+)", text)
    assert found, text
    return float(found.group(1).replace(",", ""))


def test_energy_columns_header_and_power_lane(files: tuple[Path, Path, Path]) -> None:
    capture, jls, _ = files
    app = replay_app(capture, budget=None, power=open_recording(str(jls)))

    async def body(pilot) -> None:
        await settle(app, pilot)
        await until(pilot, lambda: app.session.snapshot().energy.state != "reading")
        await redraw(app, pilot)
        state = app.session.snapshot().energy
        assert state.state == "ready", state.message
        table = app.query_one("#layers", LayersTable)
        # The model's power per layer, within 1 % (layer 2 runs 300 cycles: 0.6 of a sample, fitted).
        for layer in (0, 1):
            assert _number(table.cell_text(layer, "power")) == pytest.approx(MODEL.layer_mw[layer], rel=0.01)
        energy_uj = _number(table.cell_text(1, "energy"))
        assert energy_uj == pytest.approx(state.analysis.layers[1].energy_uj, rel=0.01)
        assert "±" in table.cell_text(1, "energy")
        assert "demo" not in table.border_subtitle and "run.jls" in table.border_subtitle
        assert "SIMULATED" in table.border_subtitle
        app.select_layer(1)
        await redraw(app, pilot)
        detail = plain(app.query_one("#detail", LayerDetail))
        measured = state.analysis.layers[1]
        assert f"energy {fmt.energy(measured.energy_uj)} ±" in detail and "integrated" in detail
        # Sorting by energy puts the NPU layer (the most energy per execution) first.
        app.select(sort="energy")
        await redraw(app, pilot)
        assert table.order[0] == 1

        app.show_view("timeline")
        await redraw(app, pilot)
        header = app.query_one("#inference-header", InferenceHeader)
        number = app.session.snapshot().ring[-1].number
        shown = header.content.plain
        assert f"{fmt.energy(state.analysis.inference_uj[number])} µJ (mean " in shown
        drawn = lane(app, "mW")
        blocks = [ch for ch in drawn if ch in BLOCKS]
        assert len(blocks) > 0.5 * len(drawn.strip())
        # Layer 1 (95 mW, the highest) draws full blocks; layer 0 (40 mW) about 40/95 of them.
        assert drawn.count("█") > 0 and "▄" in drawn
        gantt = app.query_one("#gantt", TimelineView)
        assert "mW" in gantt._lane_names

    run(app, body)


def test_no_recording_no_energy_columns_nor_lane(files: tuple[Path, Path, Path]) -> None:
    capture, _, _ = files
    app = replay_app(capture, budget=None)

    async def body(pilot) -> None:
        await settle(app, pilot)
        table = app.query_one("#layers", LayersTable)
        assert table.cell_text(1, "energy") == "" and "energy" not in [table.COLUMNS[i].key for i in table._present]
        app.show_view("timeline")
        await redraw(app, pilot)
        assert "mW" not in app.query_one("#gantt", TimelineView)._lane_names
        assert app.session.snapshot().energy is None

    run(app, body)


def test_a_recording_of_another_run_says_why(files: tuple[Path, Path, Path]) -> None:
    capture, _, other = files
    app = replay_app(capture, budget=None, power=open_recording(str(other)))

    async def body(pilot) -> None:
        await settle(app, pilot)
        await until(pilot, lambda: app.session.snapshot().energy.state != "reading")
        await redraw(app, pilot)
        state = app.session.snapshot().energy
        assert state.state == "failed" and state.analysis is None
        table = app.query_one("#layers", LayersTable)
        assert table.border_subtitle.startswith("energy: ") and "other.jls" in table.border_subtitle
        assert table.cell_text(1, "energy") == ""  # no column of dashes pretending to measure
        app.show_view("timeline")
        await redraw(app, pilot)
        assert "mW" not in app.query_one("#gantt", TimelineView)._lane_names
        assert "not aligned" in app.query_one("#inference-header", InferenceHeader).content.plain

    run(app, body)


def test_mean_power_per_cell_is_the_step_functions_mean() -> None:
    cycles = np.array([100, 130, 200, 260], np.int64)
    mw = np.array([10.0, 50.0, 20.0, 0.0])
    t0 = np.array([90.0, 100.0, 120.0, 150.0, 250.0, 260.0])
    t1 = t0 + 20
    got = mean_power(cycles, mw, t0, t1)
    # Brute force: the step function sampled at every cycle (outside [100, 260): undefined).
    grid = np.arange(0, 400)
    level = np.where((grid >= 100) & (grid < 260), mw[np.searchsorted(cycles, grid, side="right") - 1], np.nan)
    for k in range(len(t0)):
        inside = level[int(t0[k]) : int(t1[k])]
        inside = inside[~np.isnan(inside)]
        assert (np.isnan(got[k]) and not len(inside)) or got[k] == pytest.approx(inside.mean())


def test_replay_power_bad_file_exits_before_the_screen(files: tuple[Path, Path, Path], run_cli, tmp_path) -> None:
    capture, _, _ = files
    missing = run_cli("replay", capture, "--power", tmp_path / "none.jls")
    assert missing.code == 3 and "none.jls" in missing.err
    current_only = tmp_path / "ppk.csv"
    current_only.write_text("Timestamp(ms),Current(uA),D0-D7\n0.00,10,10000000\n0.01,10,00000000\n")
    done = run_cli("replay", capture, "--power", current_only)
    assert done.code == 2 and "--supply-voltage" in done.err


class RecordingMeter:
    """Stands in for a meter recording beside the live capture (tracer's MeterRecorder protocol;
    the real Joulescope and PPK2 recorders are tested at their libraries' boundary in
    test_power_live.py): on stop it writes what a meter would have recorded of the capture so far.
    """

    def __init__(self, capture: Path) -> None:
        self.capture = capture
        self.path = str(capture.with_suffix(".jls"))
        self.stops = 0

    def start(self) -> None:
        pass

    def stop(self) -> None:
        self.stops += 1
        timeline, _ = load_timeline(str(self.capture))
        write_jls(self.path, SimulatedRecording(timeline, MODEL, Meter(100_000, drift_ppm=-60, white_mw=1.0, seed=8)))


def test_live_with_a_meter_shows_energy_once_the_source_ends(tmp_path: Path) -> None:
    from power_streams import sync_stream
    from tui_helpers import GatedSource, inference_pieces, live_app

    source = GatedSource(inference_pieces(sync_stream(30, seed=4), 30), hold_open=False)
    capture = tmp_path / "live.trace"
    meter = RecordingMeter(capture)
    app = live_app(source, capture, meter=meter)

    async def body(pilot) -> None:
        await pilot.pause(0.2)
        app.refresh_views(force=True)
        await pilot.pause()
        assert app.session.snapshot().energy.state == "recording" and meter.stops == 0
        table = app.query_one("#layers", LayersTable)
        assert "the meter records to live.jls" in table.border_subtitle
        source.allow(1000)
        await until(pilot, lambda: app.session.snapshot().energy.state in ("ready", "failed"), 30)
        await redraw(app, pilot)
        state = app.session.snapshot().energy
        assert state.state == "ready", state.message
        assert meter.stops == 1
        assert _number(table.cell_text(1, "power")) == pytest.approx(MODEL.layer_mw[1], rel=0.01)
        app.show_view("timeline")
        await redraw(app, pilot)
        assert "mW" in app.query_one("#gantt", TimelineView)._lane_names

    run(app, body)
    assert meter.stops == 1  # closing the session does not stop it twice


def test_live_power_without_a_capture_is_a_usage_error(run_cli) -> None:
    done = run_cli("live", "tcp://127.0.0.1:9", "--power", "joulescope://", "--no-record")
    assert done.code == 2 and "--no-record" in done.err


def test_closing_the_session_gives_up_the_attribution(files: tuple[Path, Path, Path]) -> None:
    """Quitting must not wait for a long recording to be attributed: once the session is
    stopped, the attribution gives up between reads and leaves no state claiming a result."""
    from tracer.session.energy import READING, READY, SessionEnergy

    capture, jls, _ = files
    calls: list[int] = []
    stopped = SessionEnergy.replayed(open_recording(str(jls)))
    stopped.attribute(str(capture), lambda: calls.append(1), stopped=lambda: True)
    assert stopped.state.state == READING and stopped.state.analysis is None and calls == [1]
    going = SessionEnergy.replayed(open_recording(str(jls)))
    going.attribute(str(capture), lambda: calls.append(2), stopped=lambda: False)
    assert going.state.state == READY and calls == [1, 2, 2]


class TappedMeter:
    """Stands in for a meter that reads its own samples while it records (the PPK2's recorder,
    tested at ppk2-api's boundary in test_power_live.py, feeds its tap the same way): the test
    hands it what a meter would have sampled of the run so far; on stop it writes its JLS.
    """

    def __init__(self, capture: Path, recording: SimulatedRecording, capacity: int) -> None:
        from tracer.power.tap import SampleTap

        self.path = str(capture.with_suffix(".jls"))
        self.recording = recording
        self.tap = SampleTap(recording.info, capacity)
        self._blocks = list(recording.chunks(50))
        self.stops = 0

    def start(self) -> None:
        pass

    def sample_until(self, sample: float) -> None:
        """Hand the tap the meter's blocks that end before ``sample``."""
        while self._blocks and self._blocks[0].first + len(self._blocks[0]) <= sample:
            block = self._blocks.pop(0)
            self.tap.add(block.power, block.digital)

    def stop(self) -> None:
        self.stops += 1
        write_jls(self.path, self.recording)


@pytest.mark.parametrize("capacity", [1 << 20, 6000])
def test_live_with_a_meter_shows_energy_as_it_records(tmp_path: Path, capacity: int) -> None:
    """While the source still sends, the layers table and the power lane show the energy of the
    inferences the meter has sampled so far, and say to which inference and that the meter still
    records; a tap smaller than the run (6000 samples: about 14 inferences) measures its newest."""
    from power_streams import sync_stream
    from tui_helpers import GatedSource, inference_pieces, live_app

    stream = sync_stream(30, seed=4)
    truth, _ = load_timeline(str(write_capture(tmp_path / "whole.trace", stream)))
    recording = SimulatedRecording(truth, MODEL, Meter(100_000, drift_ppm=80, white_mw=1.0, seed=6))
    ends = recording.samples_of(truth.inferences.end)
    pieces = inference_pieces(stream, 30)
    source = GatedSource(pieces, hold_open=False)
    capture = tmp_path / "live.trace"
    meter = TappedMeter(capture, recording, capacity)
    app = live_app(source, capture, meter=meter)

    async def body(pilot) -> None:
        table = app.query_one("#layers", LayersTable)
        source.allow(20)
        await until(pilot, lambda: source.left == len(pieces) - 20)
        meter.sample_until(100)  # before the first sync mark: nothing to align yet, and it says so
        await until(pilot, lambda: app.session.snapshot().energy.message != "", 30)
        await redraw(app, pilot)
        assert app.session.snapshot().energy.analysis is None
        assert "the meter saw no edge" in app.session.snapshot().energy.message
        assert "aligning its newest samples (not yet: " in table.border_subtitle
        meter.sample_until(ends[17] + 60)  # the meter has sampled inferences 0-17 of those sent
        await until(pilot, lambda: app.session.snapshot().energy.analysis is not None, 30)
        await redraw(app, pilot)
        state = app.session.snapshot().energy
        assert state.state == "recording" and meter.stops == 0
        assert state.upto == 17 and max(state.analysis.inference_uj) == 17
        if capacity < recording.samples:
            assert state.analysis.left_out["outside_recording"] > 0 and min(state.analysis.inference_uj) > 0
        else:
            assert min(state.analysis.inference_uj) == 0
        assert _number(table.cell_text(1, "power")) == pytest.approx(MODEL.layer_mw[1], rel=0.01)
        said = rf"energy of inferences #{state.since}–#17 \(the meter.s last [0-9.]+ s\), meter recording"
        assert re.search(said, table.border_subtitle), table.border_subtitle
        app.show_view("timeline")
        await redraw(app, pilot)
        assert "mW" in app.query_one("#gantt", TimelineView)._lane_names
        # The run goes on: the energy follows the meter.
        source.allow(3)
        await until(pilot, lambda: source.left == len(pieces) - 23)
        meter.sample_until(ends[20] + 60)
        try:
            await until(pilot, lambda: app.session.snapshot().energy.upto == 20, 30)
        except AssertionError:
            raise AssertionError(app.session.snapshot().energy) from None
        source.allow(1000)
        meter.sample_until(recording.samples)
        await until(pilot, lambda: app.session.snapshot().energy.state in ("ready", "failed"), 30)
        state = app.session.snapshot().energy
        assert state.state == "ready", state.message
        assert meter.stops == 1 and len(state.analysis.inference_uj) == 30  # the whole run, from the file

    run(app, body)
