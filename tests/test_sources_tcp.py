"""Trace servers over TCP on loopback: raw SWO servers (pyOCD/OpenOCD 3443, J-Link GDB server 2332,
Orbuculum's legacy raw ports) and Orbuculum's orbflow port (3402).

The servers are real sockets on 127.0.0.1 (ephemeral ports: the well-known ones may be taken on a
developer's machine); ``tracer record`` runs in-process through the CLI.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.capture.reader import open_capture
from tracer.errors import CaptureError
from tracer.sources.orbflow import OrbflowDecoder


class Server:
    """A one-connection TCP server that sends ``payload`` in random-sized writes."""

    def __init__(
        self,
        payload: bytes,
        *,
        reset_after: bool = False,
        hold: float = 0.0,
        seed: int = 1,
        until: Callable[[], bool] | None = None,
    ) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.payload = payload
        self.reset_after = reset_after
        self.hold = hold
        self.until = until  # after sending, wait (at most 30 s) until this holds before closing
        self.rng = random.Random(seed)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(10)
        conn, _ = self.sock.accept()
        at = 0
        while at < len(self.payload):
            n = self.rng.randint(1, 9000)
            conn.sendall(self.payload[at : at + n])
            at += n
        time.sleep(self.hold)
        deadline = time.monotonic() + 30
        while self.until is not None and not self.until() and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.reset_after:
            # SO_LINGER 0: close() sends RST instead of FIN, as a crashing server or a pulled cable does.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()
        self.sock.close()


def test_raw_swo_server_stream_is_recorded_byte_exact(run_cli, tmp_path: Path) -> None:
    """What pyOCD/OpenOCD (3443) or the J-Link GDB server (2332) send is the capture, byte for byte."""
    payload = os.urandom(3 * 1024 * 1024 + 17)
    server = Server(payload)
    out = tmp_path / "swo.trace"
    done = run_cli("record", f"tcp://127.0.0.1:{server.port}", "-o", out, "--cpu-hz", "160M")
    assert done.code == 0, done.err
    assert "end of stream" in done.err
    with open_capture(out) as reader:
        assert reader.read_stream() == payload
        assert reader.metadata.cpu_hz == 160_000_000
        assert not reader.warnings


def recorded(path: Path) -> int:
    """The stream bytes a capture being written holds so far (0: none yet)."""
    try:
        with open_capture(path) as reader:
            return len(reader.read_stream())
    except CaptureError:  # (not there yet, or its header not written yet)
        return 0


def test_reset_connection_keeps_every_byte_that_arrived(run_cli, tmp_path: Path) -> None:
    """The server resets the connection once every byte it sent is in the capture (on a loaded
    machine the recorder may still be reading them 0.3 s later, and a reset drops what the
    receiving socket still holds: those bytes never arrived)."""
    payload = os.urandom(512 * 1024)
    out = tmp_path / "reset.trace"
    server = Server(payload, reset_after=True, hold=0.3, until=lambda: recorded(out) >= len(payload))
    done = run_cli("record", f"tcp://127.0.0.1:{server.port}", "-o", out)
    assert done.code == 4, done.err
    assert "source lost" in done.err and "reset" in done.err and "Traceback" not in done.err
    assert f"({len(payload)} bytes)" in done.err
    with open_capture(out) as reader:
        assert reader.read_stream() == payload
        assert any(event["event"] == "source lost" for _offset, event in reader.events)


def test_unreachable_server_is_exit_4(run_cli, tmp_path: Path) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    done = run_cli("record", f"tcp://127.0.0.1:{port}", "-o", tmp_path / "x.trace")
    assert done.code == 4 and "cannot connect" in done.err
    assert not (tmp_path / "x.trace").exists()


# -- orbflow ---------------------------------------------------------------------------------
def cobs_encode(data: bytes) -> bytes:
    """COBS as in the COBS paper (independent of the decoder under test)."""
    out = bytearray()
    block = bytearray()
    for byte in data:
        if byte == 0:
            out += bytes([len(block) + 1]) + block
            block.clear()
        else:
            block.append(byte)
            if len(block) == 254:
                out += b"\xff" + block
                block.clear()
    out += bytes([len(block) + 1]) + block
    return bytes(out)


def orbflow_frame(tag: int, data: bytes) -> bytes:
    body = bytes([tag]) + data
    return cobs_encode(body + bytes([(-sum(body)) & 0xFF])) + b"\x00"


def test_orbflow_server_gives_the_itm_stream(run_cli, tmp_path: Path) -> None:
    rng = random.Random(7)
    itm = [bytes(rng.randrange(256) for _ in range(rng.randint(1, 600))) for _ in range(300)]
    frames = []
    for i, part in enumerate(itm):
        frames.append(orbflow_frame(1, part))
        if i % 50 == 0:
            frames.append(orbflow_frame(2, b"ETM data"))  # another TPIU stream: not ours
    bad = bytearray(orbflow_frame(1, b"\x01\x02\x03lost"))
    bad[2] ^= 0x55  # damaged in transit: checksum fails
    frames.insert(10, bytes(bad))
    server = Server(b"".join(frames))
    out = tmp_path / "orb.trace"
    done = run_cli("record", f"orbflow://127.0.0.1:{server.port}", "-o", out)
    assert done.code == 0, done.err
    with open_capture(out) as reader:
        assert reader.read_stream() == b"".join(itm)
        damaged = [e for _o, e in reader.events if e["event"] == "orbflow frame damaged"]
        assert len(damaged) == 1 and damaged[0]["reason"] == "checksum mismatch"
        assert reader.metadata.extra["transport"] == "orbflow" and reader.metadata.tpiu is False


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=700), max_size=12), st.data())
def test_orbflow_any_split_gives_the_same_payload(parts: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(orbflow_frame(1, p) for p in parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    decoder = OrbflowDecoder(1)
    got = b""
    last = 0
    for cut in [*cuts, len(stream)]:
        got += decoder.feed(stream[last:cut])
        last = cut
    assert got == b"".join(parts) and decoder.damaged == 0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_orbflow_random_bytes_never_raise(blob: bytes) -> None:
    decoder = OrbflowDecoder(1)
    decoder.feed(blob)
    assert decoder.damaged == len(decoder.drain_events())
