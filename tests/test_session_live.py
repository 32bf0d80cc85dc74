"""A live session that records: the recording is whole as soon as the source ends, and the gate's
findings at the end are the recording's.

The source is a real one: ``file://`` (a capture replayed as a source, as ``tracer live
file://CAPTURE`` reads it), or a scripted device for how a source ends.
"""

from __future__ import annotations

import json
from pathlib import Path

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
