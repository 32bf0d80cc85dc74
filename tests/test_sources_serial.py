"""Serial sources through pyserial: ``loop://`` (pyserial's loopback device) and ``socket://``
(pyserial's TCP handler, the way QEMU's and an FVP's UART are reached)."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter
from tracer.pipeline.record import record
from tracer.sources.registry import open_source


def test_loop_port_bytes_are_recorded_exactly(tmp_path: Path) -> None:
    src = open_source("loop://?baud=921600")
    src.open()
    payload = os.urandom(40_000)
    port = src._port  # the loopback's other end is the same pyserial object
    out = tmp_path / "loop.trace"
    with CaptureWriter(out, CaptureMetadata(source=src.url)) as writer:
        for at in range(0, len(payload), 1024):
            # pyserial's loopback holds at most 4096 bytes and blocks the writer beyond that:
            # drain each piece before writing the next.
            port.write(payload[at : at + 1024])
            while writer.bytes_received < min(at + 1024, len(payload)):
                record(src, writer, duration=0.02)
    src.close()
    with open_capture(out) as reader:
        assert reader.read_stream() == payload
    assert src.metadata()["baud"] == 921600


def test_socket_uart_peer_closing_ends_cleanly(run_cli, tmp_path: Path) -> None:
    payload = os.urandom(60_000)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        # Sent the moment the client connects, as QEMU does: pyserial's socket:// would empty
        # its input at the end of open(); SerialSource keeps these bytes.
        conn.sendall(payload)
        conn.close()
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    out = tmp_path / "uart.trace"
    done = run_cli("record", f"socket://127.0.0.1:{srv.getsockname()[1]}", "-o", out)
    assert done.code == 0, done.err
    with open_capture(out) as reader:
        assert reader.read_stream() == payload
