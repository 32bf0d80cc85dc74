"""A power recording: samples at a fixed rate, power in watts, and up to 8 digital inputs.

Every reader gives the same thing: :class:`RecordingInfo` (rate, what was measured, which
digital inputs) and :meth:`PowerRecording.chunks`, which yields :class:`PowerChunk` one after
the other, in bounded memory, whatever the recording's length. A recording of current only (a
PPK2's CSV) becomes power with the supply voltage the user gives (``--supply-voltage``): the
file does not carry it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Protocol

import numpy as np

from tracer.errors import UsageError

CHUNK_SAMPLES = 1 << 20  # samples per chunk: 8 MB of float64 power, whatever the file's length


@dataclasses.dataclass(frozen=True)
class RecordingInfo:
    """What a recording is.

    Attributes:
        path: The file (or ``joulescope://`` ...) as given.
        meter: Who recorded it (``Joulescope JS220``, ``PPK2 CSV``, ``CSV``, ``simulated``).
        sample_rate: Samples per second of the meter's clock (nominal: its drift is fitted).
        samples: Samples in the recording, or None when not known before reading it (CSV).
        quantity: ``power`` (watts measured) or ``current`` (amperes times ``voltage``).
        voltage: The supply voltage that turned current into power (None: power measured, or
            per-sample voltage).
        digital: The digital inputs recorded, by number (bit ``i`` of :attr:`PowerChunk.digital` is
            input ``i``): their names in the file.
        simulated: True when no meter measured it (``tracer demo --power``).
        first_sample: The first sample held: 0 for a file; a live meter's window
            (:mod:`tracer.power.tap`) holds only its newest samples.
        edges_before: Per digital input, its edges before :attr:`first_sample` (to pair the
            window's edges with the capture's marks by their place in the run).
    """

    path: str
    meter: str
    sample_rate: float
    samples: int | None
    quantity: str
    voltage: float | None
    digital: dict[int, str]
    simulated: bool = False
    first_sample: int = 0
    edges_before: dict[int, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class PowerChunk:
    """Consecutive samples.

    Attributes:
        first: Index of the first sample in the recording.
        power: Watts, one per sample (the mean over the sample's period).
        digital: The digital inputs, one byte per sample (bit ``i``: input ``i``), or None.
    """

    first: int
    power: np.ndarray
    digital: np.ndarray | None

    def __len__(self) -> int:
        return int(self.power.shape[0])


class PowerRecording(Protocol):
    """What attribution reads: the info and the samples in chunks."""

    @property
    def info(self) -> RecordingInfo:
        """The recording's description."""
        ...

    def chunks(self, samples: int = CHUNK_SAMPLES) -> Iterator[PowerChunk]:
        """The samples from the first, ``samples`` at a time (the last chunk may be shorter)."""
        ...


def power_of(current: np.ndarray, voltage: np.ndarray | float | None, path: str) -> np.ndarray:
    """Watts from amperes and volts (a column, or one supply voltage)."""
    if voltage is None:
        raise UsageError(
            f"{path}: the recording has current but no voltage; give the supply voltage "
            "(e.g. --supply-voltage 3.3) to turn it into power"
        )
    return np.multiply(current, voltage, dtype=np.float64)
