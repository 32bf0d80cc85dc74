"""Events that belong to an inference (cache operations, NPU jobs, ISR slices, marks), held until it closes.

The decoder hands out an event as soon as its record arrives, while the inference it happened in
is still running; :class:`PendingEvents` keeps such events until the feed that closes their
inference, then gives them to that feed's :class:`~tracer.session.ring.InferenceBlock`.
"""

from __future__ import annotations

import numpy as np

from tracer.session.ring import empty_columns
from tracer.telemetry.model import IsrSlice, Mark

MAX_PENDING_MARKS = 4096
MAX_PENDING_ISRS = 4096


def _concat(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    if not len(a[0]):
        return b
    if not len(b[0]):
        return a
    return tuple(np.concatenate((x, y)) for x, y in zip(a, b))


def _rows(columns: tuple[np.ndarray, ...], mask: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(c[mask] for c in columns)


class PendingEvents:
    """Per-inference events not yet attached to a closed inference."""

    def __init__(self) -> None:
        self.cache = empty_columns(5)  # cycle, op, address, length, inference
        self.jobs = empty_columns(4)  # start, end, inference, job
        self.isrs: list[tuple[int | None, IsrSlice]] = []
        self.marks: list[Mark] = []

    def add(
        self,
        cache: tuple[np.ndarray, ...],
        jobs: tuple[np.ndarray, ...],
        isrs: list[tuple[int | None, IsrSlice]],
        marks: list[Mark],
    ) -> None:
        """Events the last feed produced."""
        self.cache = _concat(self.cache, tuple(np.asarray(c, np.int64) for c in cache))
        self.jobs = _concat(self.jobs, tuple(np.asarray(c, np.int64) for c in jobs))
        self.isrs.extend(isrs)
        self.marks.extend(marks)

    def take(
        self, numbers: np.ndarray, last_end: int | None
    ) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], tuple[tuple[int, IsrSlice], ...], tuple[Mark, ...]]:
        """The events of the inferences ``numbers`` just closed; later ones stay, older ones go.

        Args:
            numbers: Numbers of the inferences closed.
            last_end: End cycle of the newest of them (marks up to it are taken).
        """
        newest = int(numbers.max()) if len(numbers) else None
        cache_owner, job_owner = self.cache[4], self.jobs[2]
        cache = _rows(self.cache, np.isin(cache_owner, numbers))
        jobs = _rows(self.jobs, np.isin(job_owner, numbers))
        if newest is not None:
            self.cache = _rows(self.cache, cache_owner > newest)
            self.jobs = _rows(self.jobs, job_owner > newest)
        wanted = set(numbers.tolist())
        isrs = tuple((n, s) for n, s in self.isrs if n in wanted)
        if newest is not None:
            self.isrs = [(n, s) for n, s in self.isrs if n is not None and n > newest][-MAX_PENDING_ISRS:]
        marks: tuple[Mark, ...] = ()
        if last_end is not None:
            marks = tuple(m for m in self.marks if m.cycle <= last_end)
            self.marks = [m for m in self.marks if m.cycle > last_end]
        self.marks = self.marks[-MAX_PENDING_MARKS:]
        return cache, jobs, isrs, marks  # type: ignore[return-value]
