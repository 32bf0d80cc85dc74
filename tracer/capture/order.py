"""Putting a capture's data chunks back in stream order, and saying truthfully what was not there.

A writer appends chunks in stream order, each stamped with the stream offset of its first byte, so
in a sound file every chunk starts where the one before ended. What else a file can hold, and what
the reader makes of it:

* a damaged chunk whose head is intact: its stream bytes are known lost (counted before the next);
* chunks out of order (two swapped): a chunk that starts past the next expected byte is held (up to
  ``HOLD_CHUNKS`` chunks and ``HOLD_BYTES`` bytes) until the missing bytes arrive; then all are
  given in order and nothing is lost;
* a chunk whose bytes were already given (written twice): dropped, said to be a repeat;
* a chunk of bytes that were already given up as lost (out of order beyond the hold window):
  dropped, said to be late;
* a gap that neither damage nor reordering fills (a chunk cut out of the file): its bytes count as
  lost, as long as the part of it no damaged chunk accounts for is no larger than the whole file;
* an offset that jumps further than that (a head from another writer, or forged): not believed;
  the offsets are rebased so the stream stays contiguous, and only the file bytes skipped as
  unreadable, which could have held data, are counted as lost.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import NamedTuple

from tracer.capture.format import CHUNK_HEAD

HOLD_CHUNKS = 16
HOLD_BYTES = 4 * 1024 * 1024
MAX_RANGES = 1024  # lost ranges remembered to tell a late chunk from a repeated one


class DataChunk(NamedTuple):
    """A data chunk as read, before ordering (a tuple: one is made per 16 KiB read).

    Attributes:
        position: File position of its head.
        offset: The stream offset its head gives.
        data: Its payload.
        host_ns: Host arrival time.
        verified: False for a chunk cut short by the end of the file.
    """

    position: int
    offset: int
    data: bytes
    host_ns: int | None
    verified: bool = True


class Ordered(NamedTuple):
    """A chunk in stream order: ``offset`` is where its bytes go, ``lost_before`` how many bytes
    before it are known lost.
    """

    chunk: DataChunk
    offset: int
    lost_before: int


class StreamOrder:
    """Feeds chunks in; gives them back in stream order (see the module docstring).

    Args:
        warn: Called with (file position, message) for everything worth saying.
        file_size: The size of the file: no gap in the stream can be larger.
    """

    def __init__(self, warn: Callable[[int, str], None], file_size: int) -> None:
        self._warn = warn
        self._file_size = file_size
        self.expected = 0  # stream offset of the next byte to give
        self._shift = 0  # subtracted from heads' offsets after a jump that was not believed
        self._held: list[tuple[int, int, DataChunk]] = []  # (head's offset, position, chunk): a heap
        self._held_bytes = 0
        self._damaged: list[tuple[int, int]] = []  # stream ranges of damaged chunks ahead
        self._given_up: list[tuple[int, int]] = []  # stream ranges counted as lost
        self._spare = 0  # file bytes skipped without a readable head: they may have held stream bytes
        self._last_position = -1  # file position of the chunk given last

    def skipped(self, file_bytes: int) -> None:
        """The reader skipped ``file_bytes`` of the file without a readable chunk head in them."""
        self._spare += max(0, file_bytes - CHUNK_HEAD.size)

    def damaged(self, offset: int, length: int) -> None:
        """A data chunk with an intact head failed its checksum: its stream bytes are lost."""
        start = offset - self._shift
        if start + length > self.expected:
            self._damaged.append((max(start, self.expected), start + length))

    def add(self, chunk: DataChunk) -> list[Ordered]:
        """Take one chunk; return what can now be given in order."""
        offset = chunk.offset - self._shift
        if offset == self.expected and not self._held:  # the sound file's every chunk
            self.expected = offset + len(chunk.data)
            if self._damaged:
                self._damaged = [(s, e) for s, e in self._damaged if e > self.expected]
            self._last_position = chunk.position
            return [Ordered(chunk, offset, 0)]
        if offset > self.expected:
            _, uncovered = self._gap(offset)
            if uncovered > self._spare:  # not damage the file shows: maybe out of order, wait
                heapq.heappush(self._held, (chunk.offset, chunk.position, chunk))
                self._held_bytes += len(chunk.data)
                if len(self._held) > HOLD_CHUNKS or self._held_bytes > HOLD_BYTES:
                    return self._release_first()
                return []
        return self._give(chunk) + self._drain()

    def finish(self) -> list[Ordered]:
        """End of file: give everything still held, gaps counted."""
        out: list[Ordered] = []
        while self._held:
            out += self._release_first()
        return out

    # -- internals -------------------------------------------------------------------------------
    def _gap(self, offset: int) -> tuple[int, int]:
        """(bytes damaged chunks cover, bytes nothing explains) from the next expected byte to ``offset``."""
        covered = 0
        at = self.expected
        for start, end in sorted(self._damaged):
            start, end = max(start, at), min(end, offset)
            if end > start:
                covered += end - start
                at = end
        return covered, offset - self.expected - covered

    def _give(self, chunk: DataChunk) -> list[Ordered]:
        offset = chunk.offset - self._shift
        end = offset + len(chunk.data)
        if end <= self.expected:
            self._drop(chunk, offset, end)
            return []
        if offset < self.expected:  # overlaps what was given: keep the rest
            self._warn(
                chunk.position,
                f"chunk at byte {chunk.position} holds stream bytes {offset}..{end}, of which "
                f"{offset}..{self.expected} were already read; that part dropped, the rest kept",
            )
            chunk = chunk._replace(data=chunk.data[self.expected - offset :])
            offset = self.expected
        lost = self._count_lost(chunk, offset) if offset > self.expected else 0
        offset = self.expected + lost
        self.expected = offset + len(chunk.data)
        self._damaged = [(s, e) for s, e in self._damaged if e > self.expected]
        self._last_position = chunk.position
        return [Ordered(chunk, offset, lost)]

    def _count_lost(self, chunk: DataChunk, offset: int) -> int:
        """The bytes from the next expected one to ``offset`` are missing: how many to count lost."""
        gap = offset - self.expected
        covered, uncovered = self._gap(offset)
        if uncovered <= self._spare:  # damage the file shows
            self._spare -= uncovered
        elif uncovered <= self._file_size:  # missing from the file, or further out of order than the window
            self._spare = 0
        else:
            believed = covered + self._spare
            self._warn(
                chunk.position,
                f"stream offset jumps at byte {chunk.position}: its chunk says {chunk.offset} but the bytes before end "
                f"at {self.expected + self._shift}: {uncovered} bytes apart that no damaged chunk accounts for, in a file "
                f"of {self._file_size}; not believed: "
                f"offsets rebased, {believed} byte(s) counted as lost",
            )
            self._shift += gap - believed
            self._spare = 0
            gap = believed
        if gap:
            self._given_up.append((self.expected, self.expected + gap))
            del self._given_up[:-MAX_RANGES]
        return gap

    def _drop(self, chunk: DataChunk, offset: int, end: int) -> None:
        if any(start < end and offset < stop for start, stop in self._given_up):
            self._warn(
                chunk.position,
                f"chunk at byte {chunk.position} holds stream bytes {offset}..{end}, which came out of order after "
                "the bytes that follow them, too late: they were counted as lost; dropped",
            )
        else:
            self._warn(
                chunk.position,
                f"chunk at byte {chunk.position} holds stream bytes {offset}..{end} again (already read from an "
                "earlier chunk); dropped",
            )

    def _drain(self) -> list[Ordered]:
        """Give held chunks that now follow on."""
        out: list[Ordered] = []
        while self._held:
            offset = self._held[0][0] - self._shift
            _, uncovered = self._gap(offset) if offset > self.expected else (0, 0)
            if uncovered > self._spare:
                break
            _, _, chunk = heapq.heappop(self._held)
            self._held_bytes -= len(chunk.data)
            if chunk.position < self._last_position and offset == self.expected:
                self._warn(
                    chunk.position,
                    f"chunk at byte {chunk.position} (stream bytes {offset}..{offset + len(chunk.data)}) came out of "
                    f"order, before the bytes that precede it (at byte {self._last_position}); put back in place",
                )
            out += self._give(chunk)
        return out

    def _release_first(self) -> list[Ordered]:
        """The hold window is full, or the file ended: the gap before the first held chunk is lost."""
        _, _, chunk = heapq.heappop(self._held)
        self._held_bytes -= len(chunk.data)
        return self._give(chunk) + self._drain()
