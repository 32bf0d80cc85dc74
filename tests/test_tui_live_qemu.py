"""``tracer live`` on the QEMU demo target: the screen shows inferences arriving while they are recorded.

Runs the real chain (demo firmware built by the cross compiler, QEMU mps3-an547, its UART through
pyserial ``socket://``, the reconnecting source, the recorder, the session and the app, headless).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.pipeline.capture import decode_capture
from tracer.session.engine import Session
from tracer.session.feeds import SourceFeed
from tracer.sources.reconnect import ReconnectingSource
from tracer.sources.registry import open_source
from tracer.tui.app import TracerApp

INFERENCES = 200  # a few seconds of arrivals, so the screen sees them come in even on a busy machine


@pytest.mark.qemu
def test_live_screen_on_the_qemu_demo(tmp_path: Path) -> None:
    url = f"qemu://mps3-an547?inferences={INFERENCES}"
    source = ReconnectingSource(lambda: open_source(url))
    source.open()
    meta = CaptureMetadata.from_json(source.metadata())
    writer = CaptureWriter(tmp_path / "live.trace", meta)
    session = Session.live(SourceFeed(source, writer), meta)
    app = TracerApp(session)
    seen: list[int] = []

    async def main() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(3000):
                await pilot.pause(0.01)
                if app.snapshot is not None:
                    seen.append(app.snapshot.inferences)
                if session.ended:
                    break
            assert session.ended, session.snapshot().status
            app.refresh_views(force=True)
            await pilot.pause()
            assert app.snapshot.inferences == INFERENCES
            status = app.snapshot.status
            assert (
                status.mode == "live" and status.state == "ended" and status.recording == str(tmp_path / "live.trace")
            )
            assert "emulated" in status.labels["cycles"] and status.labels["npu_pmu"] == "simulated"
            assert app.query_one("#layers").row_count == 10

    try:
        asyncio.run(main())
    finally:
        session.close()
    assert any(0 < n < INFERENCES for n in seen), "inferences arrived over time, not all at once"
    decoded = decode_capture(tmp_path / "live.trace")
    assert len(decoded.timeline.inferences) == INFERENCES and decoded.timeline.inferences.complete.all()
