"""Paths users type: serial ports named as files, pipes, read-only dataset folders and network
peers that are not a Dask scheduler all end as the exit-code contract says, with a hint, never
with a traceback or a hang.

The peers are real sockets on 127.0.0.1 (ephemeral ports). The read-only folder is a read-only
tmpfs mount when this runs as root (root writes through permission bits), a folder without write
permission otherwise, and a path under /proc (which takes no new folder) in both cases.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"


def _char_device_port() -> str:
    """A serial-port-named character device present here (/dev/tty is on every Linux)."""
    for path in ("/dev/ttyS0", "/dev/tty", "/dev/console"):
        if os.path.exists(path) and stat.S_ISCHR(os.stat(path).st_mode):
            return path
    pytest.fail("no character device named like a serial port on this machine")


def _missing_port() -> str:
    return next(f"/dev/ttyACM{n}" for n in range(90, 200) if not os.path.exists(f"/dev/ttyACM{n}"))


def _hinted(text: str, port: str) -> bool:
    return f"serial://{port}" in text and "tracer list" in text


def test_a_port_given_to_record_is_a_usage_error_with_the_url_to_use(run_cli, tmp_path: Path) -> None:
    port = _char_device_port()
    done = run_cli("record", port, "-o", tmp_path / "x.trace")
    assert done.code == 2, done.err
    assert "is a device, not a capture file" in done.err and _hinted(done.err, port)
    assert not (tmp_path / "x.trace").exists()


def test_a_port_given_to_report_check_export_is_not_a_capture(run_cli, tmp_path: Path) -> None:
    port = _char_device_port()
    for args in (("report", port), ("check", port), ("export", port, "--format", "csv", "-o", tmp_path / "x.csv")):
        done = run_cli(*args)
        assert done.code == 3, (args, done.err)
        assert _hinted(done.err, port), done.err


def test_a_missing_port_points_to_serial_urls_and_tracer_list(run_cli, tmp_path: Path) -> None:
    """``tracer live /dev/ttyACM9``: refused before the screen (which needs a terminal) is asked for."""
    port = _missing_port()
    for args in (("live", port), ("record", port, "-o", tmp_path / "y.trace")):
        done = run_cli(*args)
        assert done.code == 2, (args, done.err)
        assert "no such device" in done.err and _hinted(done.err, port)
    done = run_cli("report", port)
    assert done.code == 3 and _hinted(done.err, port)


def _tracer(*args: object, timeout: float = 120, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """``tracer ARGS`` in a process of its own: a hang fails the test instead of stopping the run."""
    command = [sys.executable, "-m", "tracer", *(str(a) for a in args)]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload]
    except subprocess.TimeoutExpired:
        pytest.fail(f"tracer {' '.join(map(str, args))} still running after {timeout} s")


def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks until someone writes: tracer says what it is instead."""
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    done = _tracer("report", fifo, timeout=30)
    assert done.returncode == 3 and "is a pipe, not a capture file" in done.stderr


def test_a_file_given_through_stdin_still_reads() -> None:
    """/dev/stdin redirected from a capture is that file: no device refused there."""
    with open(DEMO, "rb") as stdin:
        done = _tracer("report", "/dev/stdin", stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert "inferences  20" in done.stdout


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder nothing can be written in (see the module docstring)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"root without the right to mount a read-only tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_ingest_into_a_read_only_folder_is_an_output_error(run_cli, read_only_folder: Path) -> None:
    pytest.importorskip("pyarrow")
    done = run_cli("ingest", DEMO, "-o", read_only_folder / "ds", "--workers", "1")
    assert done.code == 2, done.err
    assert f"cannot write the dataset {read_only_folder / 'ds'}" in done.err
    assert "Traceback" not in done.err


def test_ingest_where_no_folder_can_be_made_is_an_output_error(run_cli) -> None:
    pytest.importorskip("pyarrow")
    done = run_cli("ingest", DEMO, "-o", "/proc/self/tracer-dataset", "--workers", "1")
    assert done.code == 2, done.err
    assert "cannot write the dataset /proc/self/tracer-dataset" in done.err


class Peer:
    """A TCP server on 127.0.0.1 that accepts and then says nothing, or sends ``banner``."""

    def __init__(self, banner: bytes = b"") -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.banner = banner
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if self.banner:
                conn.sendall(self.banner)

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


def test_a_silent_scheduler_port_does_not_hang(tmp_path: Path) -> None:
    """A peer that accepts and says nothing: the handshake has a deadline (exit 4 within seconds)."""
    pytest.importorskip("distributed")
    peer = Peer()
    try:
        address = f"tcp://127.0.0.1:{peer.port}"
        done = _tracer("ingest", DEMO, "-o", tmp_path / "ds", "--scheduler", address, timeout=30)
    finally:
        peer.close()
    assert done.returncode == 4, done.stderr
    assert f"cannot reach the Dask scheduler at {address} within 5 s" in done.stderr
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize(
    ("banner", "said"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", "answered, but not as a Dask scheduler does"),
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "answered, but not as a Dask scheduler does"),
    ],
    ids=["ssh-banner", "http"],
)
@pytest.mark.parametrize("verb", ["ingest", "compare"])
def test_a_scheduler_port_that_is_not_dask(run_cli, tmp_path: Path, banner: bytes, said: str, verb: str) -> None:
    """A peer that speaks first, and not Dask: refused from its first bytes, nothing allocated for them."""
    pytest.importorskip("distributed")
    peer = Peer(banner)
    try:
        address = f"tcp://127.0.0.1:{peer.port}"
        start = time.monotonic()
        if verb == "ingest":
            done = run_cli("ingest", DEMO, "-o", tmp_path / "ds", "--scheduler", address)
        else:
            done = run_cli("compare", DEMO, DEMO, "--scheduler", address)
        elapsed = time.monotonic() - start
    finally:
        peer.close()
    assert done.code == 4, done.err
    assert said in done.err and address in done.err
    assert elapsed < 20
    assert not (tmp_path / "ds").exists()  # nothing made before the scheduler answered
