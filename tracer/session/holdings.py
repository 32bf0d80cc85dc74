"""What a session holds beyond its ring: pinned inferences, inferences read again from the capture
(replayed or being recorded: its index), and the baseline it compares with.

Kept apart from the session's lock on purpose: pinning an inference or reading one from the file
never waits for the decoder to finish folding a piece (the screen pins on every key that changes
the inference; that must answer at once). Its own small lock guards the two collections.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.session.baseline import Baseline, load_baseline
from tracer.session.held import MAX_LOADED, Pins, Stretch, pinned_stretch
from tracer.session.index import CaptureIndex

if TYPE_CHECKING:
    from tracer.budget.model import Budget


class Holdings:
    """Pins, loaded stretches, the index and the baseline of one session.

    Args:
        index: The capture's index (None: live without recording, or not wanted).
        baseline: The baseline capture's path (``--baseline``), or None.
    """

    def __init__(self, index: CaptureIndex | None = None, baseline: str | None = None) -> None:
        self.index = index
        self.baseline_path = baseline
        self.baseline: Baseline | None = None
        self._lock = threading.Lock()
        self._pins = Pins()
        self._loaded: collections.OrderedDict[int, Stretch] = collections.OrderedDict()

    def stretches(self) -> tuple[Stretch, ...]:
        """Pinned, then loaded stretches (for a snapshot)."""
        with self._lock:
            return self._pins.stretches() + tuple(self._loaded.values())

    def pin(self, number: int, ring: Stretch | None) -> bool:
        """Keep inference ``number`` (from ``ring``, or a loaded stretch); False if neither holds it."""
        with self._lock:
            if number in self._pins:
                return True
            stretch = pinned_stretch(ring, number) if ring is not None else None
            if stretch is None:
                stretch = next((s for s in reversed(self._loaded.values()) if s.record(number) is not None), None)
            if stretch is None:
                return False
            self._pins.add(number, stretch)
            return True

    def unpin(self, number: int) -> None:
        """Let a pinned inference go."""
        with self._lock:
            self._pins.remove(number)

    def load(self, ordinal: int) -> Stretch | None:
        """Read inference ``ordinal`` (and neighbours) from the capture and hold it (the last few)."""
        if self.index is None:
            return None
        stretch = self.index.load(ordinal)
        if stretch is None:
            return None
        with self._lock:
            key = stretch.first_ordinal or 0
            self._loaded[key] = stretch
            self._loaded.move_to_end(key)
            while len(self._loaded) > MAX_LOADED:
                self._loaded.popitem(last=False)
        return stretch

    def jobs(
        self,
        stopped: Callable[[], bool],
        give_way: Callable[[], None],
        budget: Budget | None,
        changed: Callable[[str | None], None],
    ) -> list[tuple[str, Callable[[], None]]]:
        """The work to do in threads beside the session: build the index, read the baseline.

        Args:
            stopped: True once the session is asked to stop.
            give_way: Called between pieces of work (the screen may be answering a key).
            budget: The session's budget (the baseline is analysed with it).
            changed: Called when the baseline is read (with a warning if it could not be).
        """
        out: list[tuple[str, Callable[[], None]]] = []
        index = self.index
        if index is not None and not index.live:  # a live recording's index is the worker's
            out.append(("tracer-index", lambda: index.build(stopped, give_way)))
        path = self.baseline_path
        if path:

            def read_baseline() -> None:
                try:
                    self.baseline = load_baseline(path, budget)
                except TracerError as exc:
                    changed(f"--baseline: {exc}")
                    return
                changed(None)

            out.append(("tracer-baseline", read_baseline))
        return out
