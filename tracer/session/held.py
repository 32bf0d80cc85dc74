"""Inferences the screen can show: stretches of consecutive inferences with what happened around them.

The ring (:class:`~tracer.session.ring.InferenceRing`) holds the most recent inferences; a
:class:`Stretch` is such a run of consecutive inferences together with the events and interrupt
slices around them, which is what a continuous timeline draws. Besides the ring a session holds:

- *pinned* stretches (:class:`Pins`): the inference the user looks at, and its neighbours, kept when
  the ring moves on, so a pinned inference never leaves the screen (a few at most);
- *loaded* stretches: inferences of a replayed capture read again from the file on request
  (:mod:`tracer.session.index`), so any inference of the file can be shown.

Everything here is immutable once built and safe to read from any thread.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from tracer.base.columns import LazyRecords
from tracer.session.ring import InferenceRecord
from tracer.session.window import EventView, column, extent

MAX_PINS = 8
MAX_LOADED = 4
NEIGHBOURS = 2  # inferences kept on each side of a pinned one (the timeline around it)


@dataclasses.dataclass(frozen=True)
class Stretch:
    """Consecutive inferences, oldest first, and what happened around them.

    Attributes:
        records: The inferences.
        events: Their events and the interrupt slices of the time they cover (and between them).
        kind: ``"ring"``, ``"pinned"`` or ``"loaded"``.
        first_ordinal: The position of ``records[0]`` among every inference of the stream (the
            first to close is 0), when known.
    """

    records: tuple[InferenceRecord, ...]
    events: EventView
    kind: str = "ring"
    first_ordinal: int | None = None

    def ordinal(self, position: int) -> int | None:
        """The position in the stream of ``records[position]``."""
        return None if self.first_ordinal is None else self.first_ordinal + position

    def at_ordinal(self, ordinal: int) -> InferenceRecord | None:
        """The record at stream position ``ordinal``, if held here."""
        if self.first_ordinal is None or not 0 <= ordinal - self.first_ordinal < len(self.records):
            return None
        return self.records[ordinal - self.first_ordinal]

    def position(self, number: int) -> int | None:
        """Where inference ``number`` is in :attr:`records` (the newest with that number)."""
        for at in range(len(self.records) - 1, -1, -1):
            if self.records[at].number == number:
                return at
        return None

    def record(self, number: int) -> InferenceRecord | None:
        """Inference ``number``, if held here."""
        at = self.position(number)
        return None if at is None else self.records[at]

    @functools.cached_property
    def extents(self) -> tuple[np.ndarray, np.ndarray]:
        """Start and end cycle of each record (-1 where unknown), for finding what a time range shows."""
        pairs = [extent(r) for r in self.records]
        lo = np.array([-1 if a is None else a for a, _ in pairs], np.int64)
        hi = np.array([-1 if b is None else b for _, b in pairs], np.int64)
        return lo, hi

    def between(self, lo: int, hi: int) -> list[InferenceRecord]:
        """The records that overlap cycles ``lo``..``hi``."""
        starts, ends = self.extents
        pick = np.flatnonzero((starts >= 0) & (ends >= 0) & (ends >= lo) & (starts <= hi))
        return [self.records[int(i)] for i in pick.tolist()]


def pinned_stretch(ring: Stretch, number: int) -> Stretch | None:
    """Inference ``number`` of the ring with its neighbours, and only the events around them."""
    at = ring.position(number)
    if at is None:
        return None
    return narrowed(ring, at - NEIGHBOURS, at + NEIGHBOURS + 1, "pinned")


def narrowed(stretch: Stretch, lo: int, hi: int, kind: str) -> Stretch:
    """Records ``lo:hi`` of ``stretch`` with only the events and slices of the time they cover."""
    lo = max(0, lo)
    records = stretch.records[lo:hi]
    first = stretch.ordinal(lo)
    starts, ends = Stretch(records, EventView()).extents
    known = np.concatenate([starts[starts >= 0], ends[ends >= 0]])
    if not len(known):
        return Stretch(records, EventView(), kind, first)
    t0, t1 = int(known.min()), int(known.max())
    view = stretch.events
    chunks = tuple(c for c in view.chunks if c.last >= t0 and c.first <= t1)
    return Stretch(
        records, EventView(chunks, _slices_between(view.isrs, t0, t1), _slices_between(view.tasks, t0, t1)), kind, first
    )


def _slices_between(slices: Sequence[Any], t0: int, t1: int) -> Sequence[Any]:
    """The slices (in start order) that overlap ``t0``..``t1``, as one contiguous run of them."""
    if not len(slices):
        return slices
    if isinstance(slices, LazyRecords):
        starts, ends = column(slices, 0), column(slices, 1)
    else:
        starts = np.array([s.start for s in slices], np.int64)
        ends = np.array([s.end for s in slices], np.int64)
    end = int(np.searchsorted(starts, t1, side="right"))
    inside = np.flatnonzero(ends[:end] >= t0)
    return slices[int(inside[0]) : end] if len(inside) else slices[0:0]


class Pins:
    """The pinned stretches, at most :data:`MAX_PINS` (the least recently pinned go first)."""

    def __init__(self) -> None:
        self._held: collections.OrderedDict[int, Stretch] = collections.OrderedDict()

    def add(self, number: int, stretch: Stretch) -> None:
        """Keep ``stretch`` for inference ``number``."""
        self._held[number] = stretch
        self._held.move_to_end(number)
        while len(self._held) > MAX_PINS:
            self._held.popitem(last=False)

    def remove(self, number: int) -> None:
        """Let inference ``number`` go."""
        self._held.pop(number, None)

    def __contains__(self, number: object) -> bool:
        return number in self._held

    def stretches(self) -> tuple[Stretch, ...]:
        """The pinned stretches, least recently pinned first."""
        return tuple(self._held.values())
