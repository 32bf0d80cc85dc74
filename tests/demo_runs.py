"""Recording the QEMU demo into a capture, for the firmware and demo tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.decode.itm import decode_bytes
from tracer.decode.packets import PacketKind
from tracer.pipeline.record import record
from tracer.sources.qemu import QemuDemoSource, qemu_command


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


def run_to_exit(elf: Path) -> subprocess.CompletedProcess[bytes]:
    """Run ``elf`` on QEMU (the demo's command line, the UART on stdout) until it exits."""
    command = qemu_command(elf, port=0)
    command[command.index("-serial") + 1] = "stdio"
    return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)


def port0_text(stream: bytes) -> str:
    """The text the firmware wrote on ITM port 0 of ``stream``."""
    packets = decode_bytes(stream)
    text = (packets.kind == PacketKind.SWIT) & (packets.b == 0)
    return b"".join(int(v).to_bytes(8, "little")[:c] for v, c in zip(packets.a[text], packets.c[text])).decode()
