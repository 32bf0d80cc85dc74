"""Disconnect and reconnect: ``ReconnectingSource`` over a real loopback server that goes away and
comes back, and its backoff with a controlled clock."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter
from tracer.errors import SourceUnavailable
from tracer.pipeline.record import record
from tracer.sources.base import SourceEnded, SourceLost
from tracer.sources.reconnect import Backoff, ReconnectingSource, SourceEvent
from tracer.sources.registry import open_source


def wait_until(condition: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def serve_twice(
    port_holder: list[int],
    first: bytes,
    second: bytes,
    gap: float,
    ready: threading.Event,
    received: Callable[[], int],
    finished: threading.Event,
) -> None:
    """Serve ``first`` then reset; after ``gap`` s listen again on the same port and serve ``second``.

    The server resets only once the client has read ``first`` (``received``: a reset discards
    unread bytes) and closes only once the client has stopped (``finished``: a close read in the
    same ``record`` call as the last bytes ends it early); on a busy machine either would otherwise
    depend on timing.
    """
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    port_holder.append(srv.getsockname()[1])
    srv.listen(1)
    ready.set()
    conn, _ = srv.accept()
    conn.sendall(first)
    wait_until(lambda: received() >= len(first))
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    conn.close()
    srv.close()  # the device is gone: connections are refused for a while
    time.sleep(gap)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port_holder[0]))
    srv.listen(1)
    srv.settimeout(10)
    conn, _ = srv.accept()
    conn.sendall(second)
    finished.wait(10)  # the client has stopped recording: it must not see the close
    conn.close()
    srv.close()


def test_lost_then_reconnected_and_no_byte_lost(tmp_path: Path) -> None:
    first, second = bytes(range(256)) * 400, bytes(reversed(range(256))) * 300
    port: list[int] = []
    ready = threading.Event()
    got = bytearray()
    finished = threading.Event()
    args = (port, first, second, 0.6, ready, lambda: len(got), finished)
    thread = threading.Thread(target=serve_twice, args=args, daemon=True)
    thread.start()
    ready.wait(5)
    url = f"tcp://127.0.0.1:{port[0]}"
    seen: list[SourceEvent] = []
    src = ReconnectingSource(lambda: open_source(url), backoff=Backoff(0.05, 2.0, 0.2))
    src.add_listener(seen.append)
    src.open()
    out = tmp_path / "live.trace"
    with CaptureWriter(out, CaptureMetadata(source=url)) as writer:
        deadline = time.monotonic() + 10
        while len(got) < len(first) + len(second) and time.monotonic() < deadline:
            result = record(src, writer, duration=0.2, on_data=got.extend)
            assert result.ended == "duration"
    finished.set()
    src.close()
    assert bytes(got) == first + second
    states = [e.state for e in seen]
    assert states[0] == "connected" and "lost" in states
    lost_at = states.index("lost")
    assert states[lost_at + 1] == "reconnecting" and states[-1] == "connected"
    assert seen[lost_at].bytes_received == len(first)
    assert any(e.state == "reconnecting" and e.attempt >= 2 for e in seen)  # refused at least once: backoff grew
    with open_capture(out) as reader:
        assert reader.read_stream() == first + second
        notes = [e["event"] for _o, e in reader.events]
    assert "source lost" in notes and "source reconnecting" in notes and notes[-1] == "source connected"


class Flaky:
    """A source that fails to open ``failures`` times, then serves ``data`` once and is lost."""

    opened = 0

    def __init__(self, plan: list[str]) -> None:
        self.plan = plan
        self.url = "flaky://"

    def open(self) -> None:
        Flaky.opened += 1
        if self.plan.pop(0) == "refuse":
            raise SourceUnavailable("refused")

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        step = self.plan.pop(0) if self.plan else "lost"
        if step == "lost":
            raise SourceLost("cable pulled")
        if step == "end":
            raise SourceEnded("done")
        return step.encode()

    def close(self) -> None:
        pass

    def metadata(self) -> dict[str, str]:
        return {"source": self.url}


def test_backoff_doubles_up_to_the_maximum() -> None:
    now = [0.0]
    plan = ["ok", "a", "lost", "refuse", "refuse", "refuse", "refuse", "ok", "b", "end"]
    src = ReconnectingSource(
        lambda: Flaky(plan),
        backoff=Backoff(0.1, 2.0, 0.3),
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    src.open()
    data = b""
    with pytest.raises(SourceEnded):
        for _ in range(100):
            data += src.read(timeout=0.5)
    events = src.drain_events()
    delays = [e["delay"] for e in events if e["state"] == "reconnecting"]
    assert data == b"ab"
    assert delays == [0.1, 0.2, 0.3, 0.3, 0.3]
    assert [e["state"] for e in events][-2:] == ["connected", "ended"]


def test_gives_up_after_max_attempts() -> None:
    plan = ["ok", "lost"] + ["refuse"] * 10
    now = [0.0]
    src = ReconnectingSource(
        lambda: Flaky(plan),
        backoff=Backoff(0.01, 1.0, 0.01),
        max_attempts=3,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    src.open()
    with pytest.raises(SourceLost, match="gave up after 3"):
        for _ in range(50):
            src.read(timeout=0.05)


def test_first_open_failure_is_reported() -> None:
    src = ReconnectingSource(lambda: Flaky(["refuse"]))
    with pytest.raises(SourceUnavailable):
        src.open()


class Noting(Flaky):
    """A :class:`Flaky` source that also reports capture notes of its own (as probes do)."""

    def __init__(self, plan: list[str], notes: list[dict[str, str]]) -> None:
        super().__init__(plan)
        self.notes = notes

    def drain_events(self) -> list[dict[str, str]]:
        notes, self.notes = self.notes, []
        return notes


def test_the_inner_sources_notes_reach_the_capture_in_order() -> None:
    """Notes of the wrapped source (memory polls, probe overflows) are drained with the source's
    own state changes, including those of a connection that was just lost."""
    now = [0.0]
    sources = iter(
        [
            Noting(["ok", "a", "lost"], [{"kind": "poll", "n": "1"}]),
            Noting(["ok", "b", "end"], [{"kind": "poll", "n": "2"}]),
        ]
    )
    src = ReconnectingSource(
        lambda: next(sources),
        backoff=Backoff(0.1, 1.0, 0.1),
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    src.open()
    with pytest.raises(SourceEnded):
        for _ in range(50):
            src.read(timeout=0.5)
    notes = src.drain_events()
    polls = [n["n"] for n in notes if n.get("kind") == "poll"]
    states = [n.get("state") for n in notes]
    assert polls == ["1", "2"]
    assert notes.index({"kind": "poll", "n": "1"}) < states.index("lost")
    assert src.drain_events() == []
