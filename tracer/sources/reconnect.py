"""A source that survives its device going away: it reports the loss and reconnects with backoff.

``tracer live`` wraps its source in :class:`ReconnectingSource` so that a board that resets, a
probe that is unplugged or a trace server that restarts shows as "lost", then "reconnecting",
then "connected" again, while every byte received before the loss stays in the capture. Events
reach listeners (the TUI's status bar) as they happen and are also queued for
:meth:`ReconnectingSource.drain_events`, which the recorder writes into the capture as notes,
together with the inner source's own events (polled memory, probe overflows, damaged frames).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from typing import Any

from tracer.errors import SourceUnavailable
from tracer.sources.base import ByteSource, SourceEnded, SourceLost


@dataclasses.dataclass(frozen=True)
class SourceEvent:
    """A change of a source's state.

    Attributes:
        state: ``"connected"``, ``"lost"``, ``"reconnecting"`` or ``"ended"``.
        attempt: Reconnection attempt number (0 for the first connection).
        delay: Seconds until the next attempt (``"reconnecting"`` only).
        message: Why (the error text), when known.
        bytes_received: Stream bytes received so far, over all connections.
        host_time: Host wall-clock time of the event (seconds since the epoch).
    """

    state: str
    attempt: int = 0
    delay: float = 0.0
    message: str = ""
    bytes_received: int = 0
    host_time: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The event as a capture note."""
        return {"event": f"source {self.state}", **dataclasses.asdict(self)}


@dataclasses.dataclass(frozen=True)
class Backoff:
    """Delays between reconnection attempts: ``initial``, times ``factor`` each time, at most ``maximum``."""

    initial: float = 0.2
    factor: float = 2.0
    maximum: float = 5.0

    def delay(self, attempt: int) -> float:
        """The delay before attempt ``attempt`` (1 = first retry)."""
        return min(self.maximum, self.initial * self.factor ** max(0, attempt - 1))


class ReconnectingSource:
    """Wraps a source factory; reconnects whenever the source is lost.

    ``read`` never raises :class:`SourceLost`: it returns ``b""`` while the device is away and
    keeps trying. Bytes never go missing inside the wrapper: the inner source returns what it
    received before it reports a loss (the :class:`ByteSource` contract), and the wrapper passes
    them on. What the device sent while disconnected is, of course, not received.

    Args:
        factory: Builds a new, unopened inner source (called for every attempt).
        backoff: Delays between attempts.
        reconnect_on_end: Also reconnect when the source ends cleanly (a trace server that
            restarts); otherwise the end is passed on as :class:`SourceEnded`.
        max_attempts: Give up after this many failed attempts in a row (None: never).
        clock: Monotonic clock (injectable for tests).
        sleep: Sleep function (injectable for tests).
        wall_clock: Wall-clock time for event stamps.
    """

    def __init__(
        self,
        factory: Callable[[], ByteSource],
        *,
        backoff: Backoff | None = None,
        reconnect_on_end: bool = False,
        max_attempts: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._factory = factory
        self._backoff = backoff or Backoff()
        self._reconnect_on_end = reconnect_on_end
        self._max_attempts = max_attempts
        self._clock = clock
        self._sleep = sleep
        self._wall = wall_clock
        self._inner: ByteSource | None = None
        self._attempt = 0
        self._next_try = 0.0
        self._listeners: list[Callable[[SourceEvent], None]] = []
        self._pending: list[dict[str, Any]] = []  # capture notes not yet drained: ours and the inner source's
        self._last_metadata: dict[str, Any] = {}
        self.bytes_received = 0
        self.state = "idle"
        self.url = ""

    # -- observing -----------------------------------------------------------------------------
    def add_listener(self, listener: Callable[[SourceEvent], None]) -> None:
        """Call ``listener`` with every :class:`SourceEvent` as it happens (from the reading thread)."""
        self._listeners.append(listener)

    def drain_events(self) -> list[dict[str, Any]]:
        """Events since the last call, as capture notes, in order: ours and the inner source's."""
        self._take_inner_events()
        notes, self._pending = self._pending, []
        return notes

    def _take_inner_events(self) -> None:
        drain = getattr(self._inner, "drain_events", None)
        if drain is not None:
            self._pending.extend(drain())

    def _emit(self, state: str, delay: float = 0.0, message: str = "") -> None:
        self.state = state
        event = SourceEvent(state, self._attempt, delay, message, self.bytes_received, self._wall())
        self._take_inner_events()
        self._pending.append(event.to_json())
        for listener in self._listeners:
            listener(event)

    # -- ByteSource ------------------------------------------------------------------------------
    def open(self) -> None:
        """Connect the first time; a source that cannot be opened at all is an error (exit 4)."""
        inner = self._factory()
        self.url = inner.url
        inner.open()
        self._inner = inner
        self._last_metadata = inner.metadata()
        self._emit("connected")

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return received bytes, or ``b""`` while disconnected or reconnecting."""
        if self._inner is None:
            self._try_reconnect(timeout)
            return b""
        try:
            data = self._inner.read(max_bytes, timeout)
        except SourceLost as exc:
            self._lose(str(exc))
            return b""
        except SourceEnded as exc:
            if not self._reconnect_on_end:
                self._emit("ended", message=str(exc))
                raise
            self._lose(f"{exc or self.url}: ended")
            return b""
        self.bytes_received += len(data)
        return data

    def close(self) -> None:
        """Close the inner source."""
        self._drop_inner()

    def metadata(self) -> dict[str, Any]:
        """The inner source's metadata (from its last connection)."""
        return dict(self._last_metadata)

    # -- internals -------------------------------------------------------------------------------
    def _lose(self, message: str) -> None:
        self._drop_inner()
        self._emit("lost", message=message)
        self._schedule(message)

    def _schedule(self, message: str) -> None:
        self._attempt += 1
        if self._max_attempts is not None and self._attempt > self._max_attempts:
            raise SourceLost(f"{self.url}: gave up after {self._max_attempts} reconnection attempts ({message})")
        delay = self._backoff.delay(self._attempt)
        self._next_try = self._clock() + delay
        self._emit("reconnecting", delay=delay, message=message)

    def _try_reconnect(self, timeout: float) -> None:
        wait = self._next_try - self._clock()
        if wait > 0:
            self._sleep(min(wait, timeout))
            if self._next_try - self._clock() > 0:
                return
        inner = self._factory()
        try:
            inner.open()
        except SourceUnavailable as exc:
            self._schedule(str(exc))
            return
        self._inner = inner
        self._last_metadata = inner.metadata()
        self._emit("connected")
        self._attempt = 0

    def _drop_inner(self) -> None:
        if self._inner is not None:
            self._take_inner_events()  # what it reported before it went away
            with contextlib.suppress(OSError):
                self._inner.close()
            self._inner = None
