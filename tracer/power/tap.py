"""A live meter's most recent samples, held in memory while its recording is being written.

A JLS file cannot be read while the meter's recorder writes it: pyjls's reader takes a file that
was not closed for a damaged one and repairs it in place, under the writer's feet. So a meter
recording live also hands its samples to a :class:`SampleTap`, which keeps the newest
:data:`WINDOW_SAMPLES` of them (in the blocks they came in; the oldest blocks dropped) and counts
the edges of each digital input that left with them. :meth:`SampleTap.window` is a
:class:`~tracer.power.recording.PowerRecording` of what it holds, numbered from the recording's
first sample, which :func:`~tracer.power.attribute.attribute_energy` attributes as it does a
file: the inferences inside the window get their energy, the older ones are outside it.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Iterator

import numpy as np

from tracer.power.recording import CHUNK_SAMPLES, PowerChunk, RecordingInfo

WINDOW_SAMPLES = 1 << 23  # 8 Mi samples, 40 MB: 84 s of a PPK2, 8 s of a Joulescope at 1 MS/s


@dataclasses.dataclass(frozen=True)
class _Block:
    first: int
    power: np.ndarray  # float32 watts
    digital: np.ndarray | None  # one byte per sample


class SampleTap:
    """The newest samples of a meter, fed by its reading thread, read by the session's.

    Args:
        info: The recording's description (its ``samples`` and window fields are filled in by
            :meth:`window`).
        capacity: Samples held at most (the oldest blocks go first; the newest is always held).
    """

    def __init__(self, info: RecordingInfo, capacity: int = WINDOW_SAMPLES) -> None:
        self.info = info
        self.capacity = capacity
        self._lock = threading.Lock()
        self._blocks: collections.deque[_Block] = collections.deque()
        self._held = 0
        self._total = 0
        self._edges_before = dict.fromkeys(info.digital, 0)

    @property
    def samples(self) -> int:
        """Samples fed since the meter started."""
        with self._lock:
            return self._total

    def add(self, power: np.ndarray, digital: np.ndarray | None) -> None:
        """The meter's next samples: watts, and the digital inputs (bit ``i``: input ``i``)."""
        n = len(power)
        if n == 0:
            return
        watts = np.array(power, np.float32)  # copies: the caller may reuse its buffers
        bits = None if digital is None else np.array(digital[:n], np.uint8)
        with self._lock:
            self._blocks.append(_Block(self._total, watts, bits))
            self._total += n
            self._held += n
            while self._held - len(self._blocks[0].power) >= self.capacity:
                self._drop()

    def _drop(self) -> None:
        """Drop the oldest block, counting the edges that leave with it: the changes between its
        samples, and the one into the next block's first sample (a window's first sample's level
        is no edge of the window).
        """
        old = self._blocks.popleft()
        self._held -= len(old.power)
        following = self._blocks[0].digital
        if old.digital is None or following is None:
            return
        levels = np.concatenate((old.digital, following[:1]))
        changed = levels[:-1] ^ levels[1:]
        for bit in self._edges_before:
            self._edges_before[bit] += int(np.count_nonzero((changed >> bit) & 1))

    def window(self) -> TapWindow:
        """What is held now, as a recording (the blocks are shared, never changed)."""
        with self._lock:
            blocks = tuple(self._blocks)
            first = blocks[0].first if blocks else self._total
            info = dataclasses.replace(
                self.info, samples=self._total, first_sample=first, edges_before=dict(self._edges_before)
            )
        return TapWindow(info, blocks)


class TapWindow:
    """The samples a tap held at one moment: a :class:`~tracer.power.recording.PowerRecording`
    whose chunks start at ``info.first_sample``.
    """

    def __init__(self, info: RecordingInfo, blocks: tuple[_Block, ...]) -> None:
        self._info = info
        self._blocks = blocks

    @property
    def info(self) -> RecordingInfo:
        """The recording's description, with the window's first sample and the edges before it."""
        return self._info

    @property
    def seconds(self) -> float:
        """The window's length, seconds."""
        return ((self._info.samples or 0) - self._info.first_sample) / self._info.sample_rate

    def chunks(self, samples: int = CHUNK_SAMPLES) -> Iterator[PowerChunk]:
        """The held samples, blocks joined into chunks of up to ``samples``."""
        pending: list[_Block] = []
        count = 0
        for block in self._blocks:
            pending.append(block)
            count += len(block.power)
            if count >= samples:
                yield _joined(pending)
                pending, count = [], 0
        if pending:
            yield _joined(pending)


def _joined(blocks: list[_Block]) -> PowerChunk:
    power = np.concatenate([b.power for b in blocks]).astype(np.float64)
    if any(b.digital is None for b in blocks):
        return PowerChunk(blocks[0].first, power, None)
    return PowerChunk(blocks[0].first, power, np.concatenate([b.digital for b in blocks if b.digital is not None]))
