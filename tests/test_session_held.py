"""What the session holds for the screen beyond its ring: every finding's instances, pinned
inferences, any inference of a replayed file (its index), a baseline, the end of a stream told
apart from loss."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from session_streams import DEMO_CAPTURE, build_stream, write_capture

from tracer.analysis.analyze import analyze
from tracer.pipeline.load import load_timeline
from tracer.session.baseline import load_baseline
from tracer.session.engine import Session, SessionOptions
from tracer.session.flags import FindingFlags
from tracer.session.held import MAX_PINS, Pins, Stretch
from tracer.session.index import CaptureIndex
from tracer.session.window import EventView


def replay(path: Path | str, **options: object) -> Session:
    session = Session.replay(str(path), options=SessionOptions(**{"speed": None, **options}))
    session.run()
    assert session.ended and session.wait_done(30)
    return session


def jitter_stream(tmp_path: Path, inferences: int = 300) -> Path:
    return write_capture(tmp_path / "jitter.trace", build_stream(inferences, isr_every=5, isr_cycles=3_000).data)


# -- every instance of every finding --------------------------------------------------------------


def test_flags_name_every_inference_the_analysis_finds_not_only_the_listed(tmp_path: Path) -> None:
    timeline, source = load_timeline(jitter_stream(tmp_path))
    analysis = analyze(timeline, source)
    flags = FindingFlags(analysis.findings, analysis)
    jitter = next(i for i, f in enumerate(analysis.findings) if f.id == "jitter-preemption")
    hits = next(i for i, f in enumerate(analysis.findings) if f.id == "isr-in-layer")
    expected = list(range(0, 300, 5))
    assert len(analysis.findings[jitter].inferences) == 20  # what the report lists
    assert flags.instances(jitter).tolist() == [[n, 3] for n in expected]  # every one
    assert flags.instances(hits).tolist() == [[n, 3] for n in expected]
    assert set(flags.at(295)) == {3} and flags.at(296) == {}
    assert flags.covers(0) and flags.covers(299) and not flags.covers(300)


def test_stepping_through_instances_wraps_and_goes_both_ways(tmp_path: Path) -> None:
    timeline, source = load_timeline(jitter_stream(tmp_path, 30))
    analysis = analyze(timeline, source)
    flags = FindingFlags(analysis.findings, analysis)
    jitter = next(i for i, f in enumerate(analysis.findings) if f.id == "jitter-preemption")
    assert flags.step(jitter, None, None, 1) == (0, 3)
    assert flags.step(jitter, 0, 3, 1) == (5, 3)
    assert flags.step(jitter, 5, 0, 1) == (5, 3)  # layer 0 of #5 comes before layer 3 of #5
    assert flags.step(jitter, 25, 3, 1) == (0, 3)  # wraps around
    assert flags.step(jitter, 0, 3, -1) == (25, 3)
    assert flags.step(None, 7, 3, 1) == (10, 3)


def test_the_broken_canary_is_an_instance_at_its_inference(tmp_path: Path) -> None:
    path = write_capture(tmp_path / "c.trace", build_stream(inferences=10, canary_at=4).data)
    timeline, source = load_timeline(path)
    analysis = analyze(timeline, source)
    flags = FindingFlags(analysis.findings, analysis)
    canary = next(i for i, f in enumerate(analysis.findings) if f.id == "stack-canary")
    (stack,) = analysis.memory.stacks
    assert stack.first_broken_inference == 4
    assert [row[0] for row in flags.instances(canary).tolist()] == [4]


# -- pins -----------------------------------------------------------------------------------------


def test_a_pinned_inference_stays_when_the_ring_moves_on(tmp_path: Path) -> None:
    path = write_capture(tmp_path / "s.trace", build_stream(inferences=60).data)
    session = Session.replay(str(path), options=SessionOptions(ring=8, speed=1.0, paused=True, index=False))
    worker = threading.Thread(target=session.run, daemon=True)
    worker.start()
    try:
        for _ in range(10):
            assert session.step()
            while session.stepping:
                threading.Event().wait(0.005)
        snapshot = session.snapshot()
        assert [r.number for r in snapshot.ring][-1] == 9
        assert session.pin(5) and not session.pin(99)
        session.set_speed(None)
        session.resume()
        assert session.wait_done(30)
    finally:
        session.stop()
    snapshot = session.snapshot()
    assert [r.number for r in snapshot.ring] == list(range(52, 60))
    stretch, record = snapshot.locate(5)
    assert stretch.kind == "pinned" and record.number == 5 and len(record.inference.layers) == 6
    assert [r.number for r in stretch.records] == [3, 4, 5, 6, 7] and stretch.ordinal(2) == 5
    isr = stretch.events.of(record).isrs  # inference 5 had an interrupt in layer 3
    assert len(isr) == 1 and record.start <= isr[0].start <= record.end
    assert snapshot.locate(ordinal=5) == (stretch, record)
    assert snapshot.locate(number=20) is None  # left the ring, not pinned
    session.unpin(5)
    assert session.snapshot().locate(5) is None


def test_pins_are_bounded() -> None:
    pins = Pins()
    for n in range(MAX_PINS + 3):
        pins.add(n, Stretch((), EventView(), "pinned"))
    assert len(pins.stretches()) == MAX_PINS and 0 not in pins and MAX_PINS + 2 in pins


# -- the index of a replayed file -----------------------------------------------------------------


def test_any_inference_of_the_file_loads_as_the_replay_decoded_it(tmp_path: Path) -> None:
    """With checkpoints every 4 kB, an inference read again from the file (from the checkpoint
    before it) equals the one the ring held when it was replayed."""
    truth = build_stream(inferences=120)
    path = write_capture(tmp_path / "s.trace", truth.data)
    whole = replay(path, ring=200)  # the ring holds all: the reference
    reference = {r.number: r for r in whole.snapshot().ring}
    session = replay(path, ring=8)
    assert session.index is not None
    index = CaptureIndex(str(path), session.index.setup, spacing=4096)
    index.build()
    assert index.ready and index.count == 120 and index.checkpoints > 3
    assert index.numbers().tolist() == list(range(120))
    for ordinal in (0, 1, 37, 64, 118, 119):
        stretch = index.load(ordinal)
        assert stretch is not None and stretch.kind == "loaded"
        record = stretch.at_ordinal(ordinal)
        assert record is not None and record.number == ordinal
        mine, theirs = record.inference, reference[ordinal].inference
        assert mine == theirs
        assert stretch.events.of(record).isrs == whole.snapshot().events.of(reference[ordinal]).isrs
        assert [len(stretch.events.of(record).npu_jobs), len(stretch.events.of(record).cache_ops)] == [3, 3]
    assert index.load(120) is None


def test_the_index_stays_bounded_on_a_long_capture(tmp_path: Path) -> None:
    path = write_capture(tmp_path / "long.trace", build_stream(inferences=600, text=False).data)
    setup = Session.replay(str(path)).index.setup
    index = CaptureIndex(str(path), setup, spacing=256, most=16)  # every piece at first: far too many
    index.build()
    assert index.ready and index.count == 600
    assert 8 <= index.checkpoints <= 16 and index.spacing >= 4 * 256
    stretch = index.load(599)
    assert stretch is not None and stretch.at_ordinal(599).number == 599


def test_session_seek_holds_the_loaded_stretch(tmp_path: Path) -> None:
    path = write_capture(tmp_path / "s.trace", build_stream(inferences=50).data)
    session = replay(path, ring=4)
    index = session.index
    for _ in range(500):
        if index.ready:
            break
        threading.Event().wait(0.01)
    assert index.ready and index.count == 50
    assert session.snapshot().file_inferences == 50
    assert session.snapshot().locate(number=10) is None
    stretch = session.seek(10)
    assert stretch is not None
    found = session.snapshot().locate(ordinal=10)
    assert found is not None and found[1].number == 10 and found[0].kind == "loaded"
    assert session.pin(10)  # a loaded inference can be pinned too


# -- baseline, end of stream, live pause ----------------------------------------------------------


def test_the_baseline_is_the_capture_s_analysis_per_layer() -> None:
    baseline = load_baseline(DEMO_CAPTURE)
    timeline, source = load_timeline(DEMO_CAPTURE)
    analysis = analyze(timeline, source)
    assert baseline.p50 == {i: s.cycles.p50 for i, s in analysis.layers.items()}
    assert baseline.matched(timeline.layers) == baseline.p50
    renamed = {i: type(info)(i, f"other{i}", info.op, info.engine) for i, info in timeline.layers.items()}
    assert baseline.matched(renamed) == {}  # other names: nothing lines up


def test_a_replay_with_a_baseline_shows_its_p50_per_layer() -> None:
    session = replay(DEMO_CAPTURE, baseline=str(DEMO_CAPTURE), index=False)
    snapshot = session.snapshot()
    assert snapshot.baseline_name == "demo.trace"
    assert snapshot.baseline == {row.index: row.cycles.p50 for row in snapshot.layers}


def test_a_stream_cut_in_an_inference_is_counted_apart_from_loss(tmp_path: Path) -> None:
    path = write_capture(tmp_path / "cut.trace", build_stream(inferences=10, cut_last=True).data)
    snapshot = replay(path).snapshot()
    assert snapshot.inferences == 11 and snapshot.complete_inferences == 10 and snapshot.cut_at_end == 1


@pytest.mark.parametrize("count", [3])
def test_the_index_reports_no_inference_out_of_range(tmp_path: Path, count: int) -> None:
    path = write_capture(tmp_path / "s.trace", build_stream(inferences=count).data)
    index = replay(path).index
    for _ in range(500):
        if index.ready:
            break
        threading.Event().wait(0.01)
    assert index.ordinal(1) == 1 and index.ordinal(99) is None and index.number_at(5) is None
    assert np.array_equal(index.numbers(), np.arange(count))
