"""Memory as the firmware reports it: tensor-arena use and each stack's high-water mark.

Besides the running state the screen shows, :class:`MemoryTracker` keeps the few reports that
decide every memory figure of a whole capture (the arena's highest and last report; per stack its
first, first broken, highest and last), so the findings rules, run on those instead of on every
report since the start, come to the same verdicts with constant memory.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.base.columns import LazyRecords
from tracer.base.timeline import ArenaSample, StackSample

WARN_FRACTION = 0.75  # the field's thresholds: stacks above 75% are a warning ...
ALARM_FRACTION = 0.90  # ... and less than 10% of headroom is an alarm


@dataclasses.dataclass(frozen=True)
class StackState:
    """One stack over the session.

    Attributes:
        name: As the firmware names it.
        size: Bytes (last report).
        high_water: Highest high-water mark reported, in bytes.
        canary_ok: False once any report saw the canary overwritten.
        samples: Reports received.
    """

    name: str
    size: int
    high_water: int
    canary_ok: bool
    samples: int

    @property
    def fraction(self) -> float | None:
        """High-water over size."""
        return self.high_water / self.size if self.size else None


@dataclasses.dataclass(frozen=True)
class MemoryInfo:
    """Memory now.

    Attributes:
        arena_used: Arena bytes in use at the last report.
        arena_peak: Highest arena use reported.
        arena_size: The arena's size (last report that gave it).
        arena_planned: The arena the budget planned (None without a budget that says).
        arena_samples: Arena reports received.
        stacks: Every stack reported, in the order first seen.
    """

    arena_used: int | None = None
    arena_peak: int | None = None
    arena_size: int | None = None
    arena_planned: int | None = None
    arena_samples: int = 0
    stacks: tuple[StackState, ...] = ()

    @property
    def arena_fraction(self) -> float | None:
        """Peak arena use over its size."""
        if self.arena_peak is None or not self.arena_size:
            return None
        return self.arena_peak / self.arena_size


class MemoryTracker:
    """Folds memory reports into :class:`MemoryInfo`, with constant memory."""

    def __init__(self) -> None:
        self._used: int | None = None
        self._peak: int | None = None
        self._size: int | None = None
        self._arena_samples = 0
        self._stacks: dict[str, StackState] = {}
        self._seq = 0  # reports received, for keeping the kept ones in arrival order
        self._arena_kept: dict[str, tuple[int, ArenaSample]] = {}
        self._stack_kept: dict[str, dict[str, tuple[int, StackSample]]] = {}

    def add_arena(self, samples: LazyRecords[ArenaSample]) -> None:
        """Add arena reports (columns: cycle, used, size, inference)."""
        if not len(samples):
            return
        used = samples.column(1)
        size = samples.column(2)
        seq = self._seq
        self._seq += len(samples)
        self._arena_samples += len(samples)
        self._used = int(used[-1])
        peak = int(used.max())
        if self._peak is None or peak > self._peak:
            at = int(np.argmax(used))
            self._arena_kept["peak"] = (seq + at, samples[at])
        self._peak = peak if self._peak is None else max(self._peak, peak)
        self._arena_kept["last"] = (seq + len(samples) - 1, samples[len(samples) - 1])
        known = size[size > 0]
        if len(known):
            self._size = int(known[-1])

    def add_stacks(self, samples: LazyRecords[StackSample]) -> None:
        """Add stack reports (columns: cycle, id, high water, size, canary ok)."""
        if not len(samples):
            return
        ids = samples.column(1)
        high, size, ok = samples.column(2), samples.column(3), samples.column(4)
        seq = self._seq
        self._seq += len(samples)
        for stack_id, at in zip(*(a.tolist() for a in np.unique(ids, return_index=True))):
            mine = ids == stack_id
            name = samples[int(at)].stack
            old = self._stacks.get(name)
            self._keep_stack(name, samples, np.flatnonzero(mine), seq)
            hw, n = int(high[mine].max()), int(mine.sum())
            self._stacks[name] = StackState(
                name=name,
                size=int(size[mine][-1]),
                high_water=hw if old is None else max(hw, old.high_water),
                canary_ok=bool(ok[mine].all()) and (old is None or old.canary_ok),
                samples=n + (old.samples if old else 0),
            )

    def _keep_stack(self, name: str, samples: LazyRecords[StackSample], rows: np.ndarray, seq: int) -> None:
        kept = self._stack_kept.setdefault(name, {})
        high, ok = samples.column(2)[rows], samples.column(4)[rows]
        picks = {"last": int(rows[-1])}
        if "first" not in kept:
            picks["first"] = int(rows[0])
        broken = np.flatnonzero(ok == 0)
        if len(broken) and "broken" not in kept:
            picks["broken"] = int(rows[broken[0]])
        top = int(np.argmax(high))
        if "high" not in kept or int(high[top]) > kept["high"][1].high_water:
            picks["high"] = int(rows[top])
        for what, row in picks.items():
            kept[what] = (seq + row, samples[row])

    @property
    def reports(self) -> int:
        """Arena and stack reports received."""
        return self._seq

    def deciding_samples(self) -> tuple[list[ArenaSample], list[StackSample]]:
        """The reports every arena and stack figure of the whole stream follows from, in arrival order."""
        arena = sorted(dict(self._arena_kept.values()).items())
        stacks = sorted(dict(p for kept in self._stack_kept.values() for p in kept.values()).items())
        return [sample for _, sample in arena], [sample for _, sample in stacks]

    def info(self, planned: int | None = None) -> MemoryInfo:
        """The state now (``planned``: the budget's arena)."""
        return MemoryInfo(
            self._used, self._peak, self._size, planned, self._arena_samples, tuple(self._stacks.values())
        )
