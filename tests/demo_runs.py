"""Recording the QEMU demo into a capture, for the firmware and demo tests."""

from __future__ import annotations

from pathlib import Path

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.pipeline.record import record
from tracer.sources.qemu import QemuDemoSource


def record_demo(elf: Path, inferences: int, scenario: str, capture: Path, icount_shift: int = 0) -> int | None:
    """Run the demo firmware on QEMU until it exits, recording its UART into ``capture``; returns
    QEMU's exit status (the firmware's)."""
    source = QemuDemoSource(elf, inferences, scenario, icount_shift=icount_shift)
    source.open()
    try:
        with CaptureWriter(capture, CaptureMetadata.from_json(source.metadata())) as writer:
            result = record(source, writer, duration=120)
    finally:
        source.close()
    assert result.ended == "end of stream", result
    return source.exit_code
