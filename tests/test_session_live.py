"""A live session that records: the recording is whole as soon as the source ends, the gate's
findings at the end are the recording's, and the recording is indexed as it grows.

The source is a real one: ``file://`` (a capture replayed as a source, as ``tracer live
file://CAPTURE`` reads it), or a scripted device for how a source ends.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
from session_streams import CLOCK_HZ, DEMO_BUDGET, DEMO_CAPTURE, build_stream

from tracer.budget import load_budget
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter
from tracer.session.engine import Session, SessionOptions
from tracer.session.feeds import SourceFeed
from tracer.sources.base import SourceEnded
from tracer.sources.registry import open_source


class EndingSource:
    """A device that sends ``data`` in one read, then ends (the ``ByteSource`` protocol)."""

    url = "scripted://device"

    def __init__(self, data: bytes) -> None:
        self._data = data

    def open(self) -> None:
        pass

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        if not self._data:
            raise SourceEnded(self.url)
        data, self._data = self._data, b""
        return data

    def close(self) -> None:
        pass

    def metadata(self) -> dict:
        return {"source": self.url, "tpiu": False, "cpu_hz": CLOCK_HZ}


def live(source, recording: Path, budget: Path | None = None, **options: object) -> Session:
    """``tracer live SOURCE -o RECORDING``, run until the source ends (not closed)."""
    source.open()
    meta = CaptureMetadata.from_json(source.metadata())
    session = Session.live(
        SourceFeed(source, CaptureWriter(recording, meta)),
        meta,
        budget=load_budget([budget]) if budget else None,
        options=SessionOptions(**options),
    )
    session.run()
    assert session.ended, session.snapshot().status
    return session


def test_every_byte_is_in_the_recording_once_the_source_ends(tmp_path: Path) -> None:
    """The session says "ended" and reads its recording again at once: what the source sent last
    is in the file then, not only when the session is closed (it stayed in the recorder's memory)."""
    data = build_stream(inferences=5).data
    session = live(EndingSource(data), tmp_path / "live.trace")
    try:
        with open_capture(tmp_path / "live.trace") as reader:
            assert reader.read_stream() == data
    finally:
        session.close()


def test_a_recording_longer_than_the_window_ends_with_the_gate_on_the_whole_recording(tmp_path: Path, run_cli) -> None:
    """``tracer live file://demo.trace --ring 5``: at the end the findings are ``tracer check``'s on
    the recording (as at the end of a replay longer than its window), not the last 5 inferences'."""
    recording = tmp_path / "live.trace"
    session = live(open_source(f"file://{DEMO_CAPTURE}"), recording, DEMO_BUDGET, ring=5)
    try:
        diagnosis = session.snapshot().diagnosis
    finally:
        session.close()
    assert diagnosis.whole and diagnosis.scope == "the whole capture"
    done = run_cli("check", recording, "--budget", DEMO_BUDGET, "--format", "json")
    assert done.code in (0, 1), done.err
    assert [f.to_json() for f in diagnosis.findings] == json.loads(done.out)["findings"]


def test_the_recording_is_indexed_as_it_is_decoded(tmp_path: Path) -> None:
    """The live session indexes its recording itself (no second reading of the file): every
    inference, in order, with checkpoints; once the source has ended the index is complete and an
    inference that left the ring loads as it was decoded."""
    truth = build_stream(inferences=300, text=False)
    session = live(EndingSource(truth.data), tmp_path / "live.trace", ring=8)
    try:
        index = session.index
        assert index is not None and index.live and index.ready
        assert index.count == 300 and np.array_equal(index.numbers(), np.arange(300))
        assert [r.number for r in session.held.ring.items()] == list(range(292, 300))
        stretch = session.seek(100)
        assert stretch is not None and stretch.first_ordinal is not None
        record = stretch.at_ordinal(100)
        assert record is not None and record.number == 100
        assert [int(s.cycles) for s in record.inference.layers] == [truth.layer_cycles[la][100] for la in range(6)]
    finally:
        session.close()


def test_a_live_session_without_recording_has_no_index() -> None:
    session = Session.live(SourceFeed(EndingSource(build_stream(inferences=3).data), None), CaptureMetadata())
    session.run()
    assert session.index is None and session.seek(0) is None


def test_a_long_live_index_keeps_few_parts_of_numbers(tmp_path: Path) -> None:
    """A live session adds a few inference numbers per piece for days: the index keeps them in
    a few parts (log-many), not one array per piece, and hands them out in order."""
    from tracer.pipeline.stream_setup import StreamSetup
    from tracer.session.index import CaptureIndex

    meta = CaptureMetadata(source="scripted://device", tpiu=False, cpu_hz=CLOCK_HZ)
    index = CaptureIndex(str(tmp_path / "live.trace"), StreamSetup.of(meta, trusted=True), live=True)
    sizes = [1 + (i * 7) % 5 for i in range(20_000)]
    at = 0
    for size in sizes:
        index.add(np.arange(at, at + size))
        at += size
    assert index.count == at
    assert len(index._numbers) <= at.bit_length()  # (what its memory is made of)
    assert np.array_equal(index.numbers(), np.arange(at))


def test_a_seek_to_an_inference_not_yet_in_the_recording_waits_for_it_never_cuts_it(tmp_path: Path) -> None:
    """Live, the session has decoded inferences whose bytes the recorder still holds (it writes
    within its flush interval; here never, until told): the index does not read them as cut by the
    end of the file. The seek gives up (None) rather than show a wrong inference; once the bytes
    are written it reads them as they were decoded."""
    from tui_helpers import GatedSource

    truth = build_stream(inferences=12, text=False)
    head = len(truth.data) // 2
    source = GatedSource([truth.data[:head], truth.data[head:]])
    meta = CaptureMetadata.from_json(source.metadata())
    writer = CaptureWriter(tmp_path / "live.trace", meta, flush_interval=3600)
    session = Session.live(SourceFeed(source, writer), meta)
    session.start()
    try:
        source.allow(1)  # less than a chunk: it stays in the recorder's memory
        index = session.index
        assert index is not None
        for _ in range(400):
            if index.count >= 3 and session.decoder.bytes == head:
                break
            threading.Event().wait(0.01)
        assert index.count >= 3 and tmp_path.joinpath("live.trace").stat().st_size < head
        newest = index.count - 1
        assert index.load(newest) is None and session.seek(newest) is None
        writer.flush()  # (the reader thread is idle: nothing arrives)
        stretch = session.seek(newest)
        assert stretch is not None
        record = stretch.at_ordinal(newest)
        assert record is not None and record.number == newest and record.inference.complete
        assert [int(s.cycles) for s in record.inference.layers] == [truth.layer_cycles[la][newest] for la in range(6)]
        # Its neighbour after it has not closed yet: the stretch ends at the live edge.
        assert stretch.at_ordinal(newest + 1) is None
    finally:
        session.close()


def test_a_growing_index_never_reads_the_end_of_the_file_as_the_end_of_an_inference(tmp_path: Path) -> None:
    """The recording so far ends inside an inference the session has already seen close (its last
    bytes are still in the recorder's memory): loading it gives nothing, not that inference cut
    short by the end of the file; the one before it loads whole."""
    from session_streams import write_capture

    from tracer.session.index import CaptureIndex
    from tracer.session.rolling import RollingDecoder

    data = build_stream(inferences=12, text=False).data
    path = write_capture(tmp_path / "live.trace", data[: len(data) // 2])
    replay = Session.replay(str(path), options=SessionOptions(speed=None, index=False))
    replay.run()
    written = replay.snapshot()
    assert written.cut_at_end == 1  # the file ends inside an inference
    cut = written.inferences - 1  # its position
    # Indexed as a live session does, having decoded every byte (the file has half of them).
    index = CaptureIndex(str(path), replay.decoder.setup, spacing=len(data) * 2, live=True)
    decoder = RollingDecoder(replay.decoder.setup)
    for at in range(0, len(data), 1024):
        index.before(at, decoder)
        index.add(decoder.feed(data[at : at + 1024]).inferences.number)
    assert index.count == 12 and not index.ready
    assert index.load(cut) is None
    stretch = index.load(cut - 1)
    assert stretch is not None
    record = stretch.at_ordinal(cut - 1)
    assert record is not None and record.inference.complete and stretch.at_ordinal(cut) is None
