"""The sync mark end to end: trc_sync_pin built for the host (the real library), decoded by the
real decoder into SYNC_PIN records, and the meter's edges fitted to them; wrong or missing sync
said in words (exit 3), never a silent misalignment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from firmware_host import HARNESS, link_harness, run
from power_streams import synthetic_timeline
from telemetry_streams import decode

from tracer.errors import ExitCode
from tracer.power.attribute import attribute_energy
from tracer.power.simulate import Meter, PowerModel, SimulatedRecording
from tracer.power.sync import SyncError, marks_of
from tracer.telemetry.wire import RecordType

MODEL = PowerModel({0: 50.0, 1: 80.0, 2: 30.0}, other_mw=10.0, idle_mw=2.0)


def test_trc_sync_pin_sets_the_pin_then_records_it(host_lib: Path, tmp_path: Path) -> None:
    exe = link_harness(host_lib, tmp_path / "sync_pin", HARNESS / "sync_pin.c")
    out = tmp_path / "out.bin"
    done = run([str(exe), str(out)])
    pins = [line.split("=")[1].split(":") for line in done.stdout.split() if line.startswith("pin=")]
    assert [int(level) for _, level in pins] == [1, 0, 1]
    timeline = decode(out.read_bytes())
    sync = [r for r in timeline.records if r.type == RecordType.SYNC_PIN]
    assert [(r.words[0] & 1, (r.words[0] >> 8) & 0xFF, r.words[1]) for r in sync] == [(1, 2, 0), (0, 2, 1), (1, 2, 2)]
    for (clock, _), record in zip(pins, sync):
        assert record.cycle > int(clock)  # the time is read after the pin was set
        assert record.cycle - int(clock) <= 100  # ... by the next read of the clock
    marks = marks_of(timeline)
    assert marks.method == "sync pin" and marks.meter_input == 2
    assert timeline.inferences.complete.all()


def _timeline(**kw):
    return synthetic_timeline([300.0, 80.0, 500.0], inferences=40, **kw)


def test_no_digital_edge_said_in_words() -> None:
    timeline = _timeline()
    rec = SimulatedRecording(timeline, MODEL, Meter(100_000))
    rec._mark_at = np.array([1e18])  # the pin never moves on the meter: not wired
    with pytest.raises(SyncError, match=r"saw no edge on digital input 0: is the sync pin wired") as exc:
        attribute_energy(timeline, rec)
    assert exc.value.exit_code == ExitCode.CAPTURE_UNREADABLE


def test_edges_of_another_capture_refused() -> None:
    """A recording of another run (other inference timing) does not fit a straight line."""
    mine, other = _timeline(seed=1), _timeline(seed=7)
    rec = SimulatedRecording(other, MODEL, Meter(100_000, drift_ppm=150))
    with pytest.raises(SyncError, match=r"do not follow the sync pin marks on a straight line: residuals"):
        attribute_energy(mine, rec)


def test_wrong_input_said() -> None:
    timeline = _timeline()
    rec = SimulatedRecording(timeline, MODEL, Meter(100_000))
    with pytest.raises(SyncError, match=r"on digital input 3, which the recording lacks \(it has 0 \(sync\)\)"):
        attribute_energy(timeline, rec, meter_input=3)


def test_meter_started_late_is_matched_by_shift() -> None:
    """The meter missed the first three marks: the edges are matched from the fourth on."""
    timeline = _timeline()
    rec = SimulatedRecording(timeline, MODEL, Meter(250_000, drift_ppm=-180, white_mw=1.0))
    rec._mark_at = rec._mark_at.copy()
    rec._mark_at[:3] = -1.0  # before the first sample: the meter shows the level after them
    energy = attribute_energy(timeline, rec)
    assert energy.fit.pairs == 37 and energy.fit.method == "sync pin"
    assert energy.fit.drift_ppm == pytest.approx(-180, abs=5)


def test_regular_marks_with_missing_edges_refused() -> None:
    """Marks at a fixed period and fewer edges than marks: which edge is which cannot be told."""
    timeline = synthetic_timeline([300.0], inferences=30, gap_us=(400.0, 400.0), jitter=0.0)
    rec = SimulatedRecording(timeline, PowerModel({0: 10.0}, 5.0, 1.0), Meter(100_000))
    rec._mark_at = rec._mark_at.copy()
    rec._mark_at[:2] = -1.0
    with pytest.raises(SyncError, match=r"too regular to tell which meter edge is which"):
        attribute_energy(timeline, rec)


def test_inference_edges_without_sync_records() -> None:
    """No SYNC_PIN records: a pin high during each inference is matched to its begin and end."""
    timeline = _timeline(sync=False)
    rec = SimulatedRecording(timeline, MODEL, Meter(100_000, drift_ppm=200, white_mw=0.5))
    energy = attribute_energy(timeline, rec)
    assert energy.fit.method == "inference edges" and energy.fit.pairs == 80
    # 60 ms at 100 kS/s, edges quantised to +-0.5 sample: the slope is known to about 20 ppm.
    assert energy.fit.drift_ppm == pytest.approx(200, abs=60)


def test_no_marks_at_all_said() -> None:
    timeline = _timeline()
    rec = SimulatedRecording(timeline, MODEL, Meter(100_000))
    timeline.records, timeline.sync_pins = [], []
    timeline.inferences.end[:] = -1
    with pytest.raises(SyncError, match=r"no sync marks: the capture has no SYNC_PIN records"):
        attribute_energy(timeline, rec)
