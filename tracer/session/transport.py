"""How the session's worker takes its pieces: when a replay's next piece is due, stepping one
inference at a time, and the screen's right of way.

Decoding and drawing share one interpreter lock, and a decoder call holds it for milliseconds at
a time; while a key is being answered (:meth:`Transport.hold_for_ui`) the worker stands aside:
between pieces, and inside the findings rules' run (tens of milliseconds, :meth:`Transport.yielding`).
Live bytes are still read and recorded meanwhile (the reader thread does not wait); the decoder
catches up afterwards.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from tracer.session.feeds import CaptureFeed, Piece, SourceFeed
from tracer.session.pacing import Pacer

STEP_SLICE = 128  # bytes decoded at a time while stepping, so a step stops right after one inference
LIVE_SLICE = 32 * 1024  # live: bytes decoded at a time, so a key waits for one slice at most (a few ms)


class Transport:
    """Due times, steps and holds of one session's worker.

    Args:
        pacer: The replay's pacer.
        lock: The session's lock (the wake condition is on it, so controls and the worker agree).
    """

    def __init__(self, pacer: Pacer, lock: threading.RLock) -> None:
        self.pacer = pacer
        self.wake = threading.Condition(lock)
        self.steps = 0  # inferences still to release while stepping
        self.ui_hold_until = 0.0
        self._pending: Piece | None = None

    def notify(self) -> None:
        """Something changed (a control, a stop): wake the worker."""
        with self.wake:
            self.wake.notify_all()

    # -- the screen's right of way ---------------------------------------------------------------
    def hold_for_ui(self, seconds: float = 0.1) -> None:
        """Let the screen answer a key first: the worker waits (at most ``seconds``)."""
        self.ui_hold_until = time.monotonic() + seconds

    def release_ui_hold(self) -> None:
        """The screen has answered: decode on."""
        self.ui_hold_until = 0.0
        self.notify()

    def give_way(self, stopped: Callable[[], bool]) -> None:
        """Wait while the screen is answering a key (the worker, between pieces)."""
        while not stopped():
            left = self.ui_hold_until - time.monotonic()
            if left <= 0:
                return
            with self.wake:
                self.wake.wait(min(left, 0.02))

    @contextlib.contextmanager
    def yielding(self, stopped: Callable[[], bool]) -> Iterator[None]:
        """Long work of the worker thread inside: it stops at its next Python call while the screen
        answers a key, and goes on when the screen has answered.

        The findings rules run for tens of milliseconds at a time (up to ~100 ms on a busy
        machine); the worker checks for a hold only between pieces, so a key pressed during a run
        would share the interpreter with it. A profile hook (this thread only) checks at each call.
        """

        def check(_frame: FrameType, event: str, _arg: Any) -> None:
            if event == "call" and self.ui_hold_until > time.monotonic():
                self.give_way(stopped)

        before = sys.getprofile()
        sys.setprofile(check)
        try:
            yield
        finally:
            sys.setprofile(before)

    def give_way_briefly(self, stop: threading.Event) -> None:
        """A helper thread's turn between pieces of work: wait while the screen answers a key."""
        left = self.ui_hold_until - time.monotonic()
        if left > 0:
            stop.wait(min(left, 0.1))
        else:
            time.sleep(0)  # let the other threads run

    # -- pieces ----------------------------------------------------------------------------------
    def next_piece(self, feed: CaptureFeed | SourceFeed) -> Piece | None:
        """The rest of a piece cut for a step, else the feed's next piece (None: nothing yet)."""
        if self._pending is not None:
            piece, self._pending = self._pending, None
            return piece
        return feed.next_piece(0.1)

    def live_slices(self, piece: Piece, stopped: Callable[[], bool]) -> Iterator[Piece]:
        """A live piece in slices of :data:`LIVE_SLICE`, giving way to the screen between them.

        What queued up while the decoder stood aside comes as one piece (up to 128 KB, tens of
        milliseconds of decoding); cut, a key pressed meanwhile waits for one slice, not all of it.
        """
        for at in range(0, len(piece.data), LIVE_SLICE):
            if at:
                self.give_way(stopped)
            yield piece.cut(at, at + LIVE_SLICE)

    def cut_for_step(self, piece: Piece) -> Piece:
        """While stepping, decode in small slices so the step ends right after one inference."""
        if self.steps <= 0 or len(piece.data) <= STEP_SLICE:
            return piece
        self._pending = piece.cut(STEP_SLICE)
        return piece.cut(0, STEP_SLICE)

    def wait_due(self, media: float, stopped: Callable[[], bool]) -> bool:
        """Block until media time ``media`` is due (or a step is asked for); False if stopped meanwhile."""
        with self.wake:
            while not stopped():
                if self.steps > 0:
                    return True
                wait = self.pacer.wait_for(media)
                if wait == 0.0:
                    return True
                self.wake.wait(0.1 if wait is None else min(wait, 0.1))
        return False
