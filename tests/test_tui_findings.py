"""The screen diagnoses what ``tracer check`` diagnoses, on a real fault: the QEMU demo's isr-jitter
scenario (the S32K timer preempting layer 4, pw4, in inferences 1 and 5), recorded as ``tracer demo
--scenario isr-jitter --inferences 8`` records it, then replayed in the app (headless, ``Pilot``).
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.pipeline.record import record
from tracer.session.engine import Session, SessionOptions
from tracer.sources.qemu import QemuDemoSource
from tracer.tui.app import TracerApp
from tracer.tui.widgets.layers import LayersTable
from tracer.tui.widgets.spans import SpansTable

pytestmark = pytest.mark.qemu

INFERENCES = 8


@pytest.fixture(scope="module")
def jitter_capture(qemu_build: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tui-findings") / "isr-jitter.trace"
    source = QemuDemoSource(qemu_build / "demo" / "tracer_demo.elf", INFERENCES, "isr-jitter")
    source.open()
    try:
        with CaptureWriter(path, CaptureMetadata.from_json(source.metadata())) as writer:
            result = record(source, writer, duration=60)
    finally:
        source.close()
    assert result.ended == "end of stream" and source.exit_code == 0, result
    return path


def plain(widget: Any) -> str:
    """What a Static shows, as plain text (a table rendered at the screen's width)."""
    content = widget.content
    if hasattr(content, "plain"):
        return content.plain
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(content)
    return console.export_text()


def lane(app: TracerApp, name: str) -> str:
    from tui_helpers import lane as drawn_lane

    return drawn_lane(app, name)


def test_the_screen_shows_the_gates_jitter_finding_and_the_interrupt(jitter_capture: Path, run_cli: Any) -> None:
    done = run_cli("check", jitter_capture, "--format", "json")
    gate = json.loads(done.out)["findings"]
    session = Session.replay(str(jitter_capture), options=SessionOptions(speed=None))
    app = TracerApp(session)

    async def main() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(1000):
                if session.ended:
                    break
                await pilot.pause(0.01)
            app.refresh_views(force=True)
            await pilot.pause()
            snap = app.snapshot
            assert snap is not None and [f.to_json() for f in snap.findings] == gate
            assert [(f.id, f.layer) for f in snap.findings][:1] == [("jitter-preemption", 4)]
            assert "jitter" in app.query_one("#layers", LayersTable).cell_text(4, "flags")

            await pilot.press("3")
            await pilot.pause()
            text = plain(app.query_one("#findings-full Static"))
            assert "WARNING" in text and "jitter-preemption" in text and "layer 4 (pw4)" in text
            assert "S32K_TIMER interrupt (exception 18)" in text and "shows in 2 inferences: #1, #5" in text
            assert "fix: lower the interrupt's priority" in text
            assert "over all 8 inferences" in app.query_one("#findings-full").border_subtitle

            await pilot.press("2", "left", "left")  # from the newest (#7) to #5
            await pilot.pause()
            app.refresh_views(force=True)
            await pilot.pause()
            assert app.ui.inference == 5
            assert "S32K_TIMER" in lane(app, "ISR") and "!pw4" in lane(app, "NPU")
            header = plain(app.query_one("#inference-header"))
            assert "1 ISR ·" in header and "pw4: jitter-preemption +1" in header
            assert "jitter-preemption" in app.query_one("#spans", SpansTable).cell("4", "flags")

            await pilot.press("left")  # #4: no interrupt, nothing flagged
            await pilot.pause()
            app.refresh_views(force=True)
            await pilot.pause()
            assert app.ui.inference == 4
            assert app.ui.inference == 4 and "pw4" in lane(app, "NPU") and "!pw4" not in lane(app, "NPU")
            assert "!#4" not in lane(app, "infer") and lane(app, "ISR").strip() == ""

    try:
        asyncio.run(main())
    finally:
        session.close()
