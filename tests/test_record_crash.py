"""A capture being recorded survives Ctrl-C and a killed process.

``tracer record`` runs as a real subprocess reading from a local TCP server that streams a known
byte sequence without end; the test interrupts it with SIGINT or kills it with SIGKILL, then reads
the capture back: every byte in it equals what the server sent, from the first byte on.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tracer.capture.reader import open_capture

PATTERN = bytes((i * 7 + 3) & 0xFF for i in range(65536)) + b"tracer"  # not a multiple of any chunk


class EndlessServer:
    """Streams PATTERN repeated, until the client goes away; remembers how much it sent."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.sent = 0
        self.connected = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(20)
        conn, _ = self.sock.accept()
        self.connected.set()
        deadline = time.monotonic() + 30
        try:
            while time.monotonic() < deadline:
                conn.sendall(PATTERN)
                self.sent += len(PATTERN)
                time.sleep(0.005)  # about 13 MB/s at most: a fast SWO link
        except OSError:
            pass
        finally:
            conn.close()
            self.sock.close()


def expected_prefix(n: int) -> bytes:
    reps = n // len(PATTERN) + 1
    return (PATTERN * reps)[:n]


def start_recording(tmp_path: Path, server: EndlessServer) -> tuple[subprocess.Popen[bytes], Path]:
    out = tmp_path / "run.trace"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracer", "record", f"tcp://127.0.0.1:{server.port}", "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert server.connected.wait(20), proc.stderr.read() if proc.stderr else b""
    return proc, out


def wait_for_bytes(out: Path, at_least: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if out.exists() and out.stat().st_size > at_least:
            return
        time.sleep(0.05)
    pytest.fail(f"{out} did not grow past {at_least} bytes")


def test_ctrl_c_keeps_every_byte(tmp_path: Path) -> None:
    server = EndlessServer()
    proc, out = start_recording(tmp_path, server)
    wait_for_bytes(out, 1_000_000)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    message = err.decode()
    assert "interrupted" in message and "Traceback" not in message
    with open_capture(out) as reader:
        data = reader.read_stream()
        assert not reader.warnings  # closed cleanly: no cut chunk
    assert len(data) > 1_000_000
    assert data == expected_prefix(len(data))
    assert f"keeps {len(data)} bytes" in message


def test_killed_process_leaves_a_readable_capture(tmp_path: Path) -> None:
    server = EndlessServer()
    proc, out = start_recording(tmp_path, server)
    wait_for_bytes(out, 2_000_000)
    proc.kill()  # SIGKILL: no handler runs, nothing is flushed
    proc.wait(timeout=20)
    assert proc.returncode == -signal.SIGKILL
    with open_capture(out) as reader:
        data = reader.read_stream()
    assert len(data) > 1_000_000
    assert data == expected_prefix(len(data))
    assert len(data) <= server.sent


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_flush_like_ctrl_c(tmp_path: Path, signum: int) -> None:
    """A service manager's stop (SIGTERM) or a closed terminal (SIGHUP) keeps the unflushed tail:
    the capture is closed cleanly and holds every byte the message counts."""
    server = EndlessServer()
    proc, out = start_recording(tmp_path, server)
    wait_for_bytes(out, 1_000_000)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=20)
    message = err.decode()
    assert proc.returncode == 130, message
    assert "Traceback" not in message
    assert signal.Signals(signum).name in message
    with open_capture(out) as reader:
        data = reader.read_stream()
        assert not reader.warnings
    assert data == expected_prefix(len(data))
    assert f"keeps {len(data)} bytes" in message


def _live_in_a_terminal(tmp_path: Path, server: EndlessServer) -> tuple[subprocess.Popen[bytes], Path, int]:
    """``tracer live`` on a pseudo-terminal (it draws a screen), stderr on a pipe."""
    import pty

    out = tmp_path / "live.trace"
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracer", "live", f"tcp://127.0.0.1:{server.port}", "-o", str(out)],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    threading.Thread(target=_drain_terminal, args=(master,), daemon=True).start()
    return proc, out, master


def _drain_terminal(fd: int) -> None:
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_live_flushes_on_sigterm_and_sighup(tmp_path: Path, signum: int) -> None:
    """``tracer live`` stopped by a signal closes its capture like a quit: every byte it counted is in it."""
    server = EndlessServer()
    proc, out, master = _live_in_a_terminal(tmp_path, server)
    try:
        assert server.connected.wait(30)
        wait_for_bytes(out, 500_000)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        os.close(master)
    message = err.decode()
    assert proc.returncode == 130, message
    assert "Traceback" not in message
    with open_capture(out) as reader:
        data = reader.read_stream()
        assert not reader.warnings
    assert data == expected_prefix(len(data))
    assert f"recorded {len(data):,} bytes" in message
