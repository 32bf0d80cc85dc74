"""What a trace view draws, event by event: tracks, slices, instants and counter values (the
vocabulary :mod:`tracer.export.perfetto_layout` and :mod:`tracer.export.sampling_layout` share, in a
leaf module so that neither imports the other to name them).
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True, slots=True)
class Track:
    """A track: a lane of slices and instants, or a counter.

    Attributes:
        name: As shown.
        counter: True for a counter track.
        unit: ``bytes`` or ``count`` for counters.
    """

    name: str
    counter: bool = False
    unit: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Slice:
    """Something with a duration on a track (``end_ns > start_ns``)."""

    track: str
    start_ns: int
    end_ns: int
    name: str
    category: str
    args: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Instant:
    """A moment on a track."""

    track: str
    ts_ns: int
    name: str
    category: str
    args: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class CounterValue:
    """A counter track's value from ``ts_ns`` on."""

    track: str
    ts_ns: int
    value: int
