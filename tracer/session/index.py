"""Any inference of a capture: an index of it, and reading an inference again.

The session's ring holds the most recent inferences only. :class:`CaptureIndex` keeps, for one
capture and with bounded memory:

- the number of every inference, in the order they close (8 bytes each: a 1 GB capture of
  500-byte inferences needs 16 MB), so an inference is found by number or by position;
- checkpoints: the decoder's state (pickled and compressed, about 16 kB; functions it holds are
  kept by reference) every so many stream
  bytes, at most :data:`MAX_CHECKPOINTS` of them: when there would be more, every other one goes
  and the spacing doubles.

:meth:`CaptureIndex.load` reads an inference again: it restores the checkpoint before it, decodes
from there with the session's own folding (:class:`~tracer.session.state.StreamState`) until the
inference and its neighbours have closed, and returns them as a
:class:`~tracer.session.held.Stretch` (at most one checkpoint spacing of stream decoded; the
capture file is read from its start up to there, without decoding, because a capture chunk is
found by walking the chunks before it).

A replay's index reads the capture once more in a background thread when the replay opens
(:meth:`CaptureIndex.build`). A live session that records is its own index's reader: the session's
worker hands each piece it decodes to the index (:meth:`CaptureIndex.before`, :meth:`CaptureIndex.add`),
so the recording is indexed as it grows without being decoded twice, and
:meth:`CaptureIndex.close` marks it complete when the source ends. Until then the index is
*growing*: a load reads the capture up to what the recorder has written so far (the last bytes
reach the file within the recorder's flush interval) and never closes the inference in progress.

A decoder whose state cannot be pickled gets no checkpoints but the start: loading then decodes
from the start of the capture (slower, never wrong).
"""

from __future__ import annotations

import bisect
import dataclasses
import io
import pickle
import threading
import types
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from tracer.pipeline.stream_setup import StreamSetup
from tracer.session.feeds import FAST_PIECE, CaptureFeed
from tracer.session.held import Stretch, narrowed
from tracer.session.rolling import RollingDecoder
from tracer.session.state import StreamState
from tracer.sources.base import SourceEnded

CHECKPOINT_BYTES = 1 << 18  # stream bytes between checkpoints, to begin with (a load decodes at most this)
MAX_CHECKPOINTS = 256
AROUND = 3  # neighbours loaded on each side of the inference asked for
LOAD_RING = 4096  # inferences one load may close before it stops (it keeps those it needs)


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """Where decoding can start again.

    Attributes:
        offset: Stream offset of the next piece.
        closed: Inferences closed before it (the position of the next one to close).
        state: The decoder, pickled and compressed (None: a new decoder, at the start).
    """

    offset: int
    closed: int
    state: bytes | None = None


class _CheckpointPickler(pickle.Pickler):
    """Pickles a decoder's state, keeping functions by reference.

    A checkpoint is only ever read back in this process, so the functions the decoder holds (some
    are local lambdas of a cache, which pickle cannot write) are kept in a table and stand in the
    pickle as a key: the restored decoder shares them, as a deep copy would.
    """

    def __init__(self, file: io.BytesIO, table: dict[int, Any]) -> None:
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self._table = table

    def persistent_id(self, obj: Any) -> int | None:
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            self._table[id(obj)] = obj
            return id(obj)
        return None


class _CheckpointUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, table: dict[int, Any]) -> None:
        super().__init__(file)
        self._table = table

    def persistent_load(self, pid: Any) -> Any:
        return self._table[pid]


class CaptureIndex:
    """Every inference of one capture (see the module docstring).

    Args:
        path: The capture.
        setup: How to make its decoder.
        window: The session's statistics window (for the folding of a load).
        spacing: Stream bytes between checkpoints, to begin with.
        most: Checkpoints kept at most.
        live: The capture is being recorded; the session indexes it as it decodes (no
            :meth:`build`).
    """

    def __init__(
        self,
        path: str,
        setup: StreamSetup,
        window: int = 64,
        spacing: int = CHECKPOINT_BYTES,
        most: int = MAX_CHECKPOINTS,
        live: bool = False,
    ) -> None:
        self.path = path
        self.live = live
        self.setup = setup
        self._window = window
        self._lock = threading.Lock()
        self._checkpoints: list[Checkpoint] = [Checkpoint(0, 0)]
        self._numbers: list[np.ndarray] = []
        self._all: np.ndarray | None = None
        self._count = 0
        self.spacing = spacing
        self._most = most
        self.picklable = True
        self.ready = False
        self.error: str | None = None
        self.bytes_read = 0
        self._functions: dict[int, Any] = {}  # what the checkpoints refer to (see _CheckpointPickler)
        self._next_checkpoint = spacing

    # -- building --------------------------------------------------------------------------------
    def build(self, stopped: Callable[[], bool] = lambda: False, give_way: Callable[[], None] = lambda: None) -> None:
        """Read the whole capture once (a background thread); ``stopped`` ends it early."""
        try:
            feed = CaptureFeed(self.path, FAST_PIECE)
        except Exception as exc:  # noqa: BLE001 - the replay itself says why the file cannot be read
            self.error = str(exc)
            return
        decoder = RollingDecoder(self.setup)
        try:
            while not stopped():
                give_way()
                try:
                    piece = feed.next_piece()
                except SourceEnded:
                    self.add(decoder.finish().inferences.number)
                    self.close()
                    return
                self.before(piece.offset, decoder)
                self.add(decoder.feed(piece.data, piece.lost_before).inferences.number)
                self.bytes_read = piece.offset + len(piece.data)
        except Exception as exc:  # noqa: BLE001 - a damaged file ends the index where the replay would stop
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            feed.close()

    def due(self, offset: int) -> bool:
        """Whether a checkpoint is due before the stream is decoded from ``offset``."""
        return offset >= self._next_checkpoint and self.picklable

    def before(self, offset: int, decoder: RollingDecoder) -> None:
        """``decoder`` is about to decode the stream from ``offset``: a checkpoint when one is due."""
        if self.due(offset):
            self._checkpoint(offset, decoder)
            self._next_checkpoint = offset + self.spacing

    def add(self, numbers: np.ndarray) -> None:
        """The numbers of the inferences the last piece closed, in the order they closed."""
        if len(numbers):
            with self._lock:
                parts = self._numbers
                parts.append(numbers.astype(np.int64, copy=True))
                # A live session adds a few numbers per piece for days: parts of equal size merge
                # (as a binary counter carries), so they stay few and each number is copied
                # log-many times.
                while len(parts) > 1 and len(parts[-1]) >= len(parts[-2]):
                    tail = parts.pop()
                    parts[-1] = np.concatenate((parts[-1], tail))
                self._count += len(numbers)

    def close(self) -> None:
        """Every inference of the capture is indexed: it grows no more."""
        with self._lock:
            self._all = np.concatenate(self._numbers) if self._numbers else np.zeros(0, np.int64)
            self._numbers = [self._all]
            self.ready = True

    def _checkpoint(self, offset: int, decoder: RollingDecoder) -> None:
        buffer = io.BytesIO()
        try:
            _CheckpointPickler(buffer, self._functions).dump(decoder)
        except Exception:  # noqa: BLE001 - a decoder that cannot be pickled: loads start at the beginning
            self.picklable = False
            return
        state = zlib.compress(buffer.getvalue(), 1)
        with self._lock:
            self._checkpoints.append(Checkpoint(offset, self._count, state))
            if len(self._checkpoints) > self._most:
                self._checkpoints = self._checkpoints[::2]  # the start stays; the spacing doubles
                self.spacing *= 2

    # -- reading ---------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Inferences indexed so far (all of them once :attr:`ready`)."""
        return self._count

    @property
    def checkpoints(self) -> int:
        """Checkpoints held."""
        return len(self._checkpoints)

    def numbers(self) -> np.ndarray:
        """The numbers of the inferences indexed so far, in the order they close."""
        with self._lock:
            if self._all is None or len(self._all) != self._count:
                self._all = np.concatenate(self._numbers) if self._numbers else np.zeros(0, np.int64)
                self._numbers = [self._all]
            return self._all

    def ordinal(self, number: int, near: int | None = None) -> int | None:
        """The position of inference ``number`` (the one nearest position ``near`` if it repeats)."""
        found = np.flatnonzero(self.numbers() == number)
        if not len(found):
            return None
        if near is None or len(found) == 1:
            return int(found[0])
        return int(found[np.argmin(np.abs(found - near))])

    def number_at(self, ordinal: int) -> int | None:
        """The number of the inference at ``ordinal`` (None: not indexed)."""
        numbers = self.numbers()
        return int(numbers[ordinal]) if 0 <= ordinal < len(numbers) else None

    def missing(self, number: int) -> str:
        """Why inference ``number`` cannot be shown, saying which inferences the capture holds.

        ``no inference #99 in the capture: it holds #0 to #19 (20 inferences)``; while a live
        recording grows, what it holds so far.
        """
        count = self.count
        numbers = self.numbers() if count else None
        held = f"#{int(numbers.min())} to #{int(numbers.max())}" if numbers is not None else ""
        if self.live and not self.ready:
            if numbers is None:
                return f"no inference #{number} recorded yet: none so far (live, still recording)"
            return (
                f"no inference #{number} recorded yet: the capture holds {held} so far "
                f"({count:,} inference{'s' if count != 1 else ''}; live, still recording)"
            )
        if not self.ready:
            if numbers is None:
                return f"inference #{number} is not indexed yet: the capture is still being read"
            return f"inference #{number} is not indexed yet: {count:,} read so far ({held})"
        if numbers is None:
            return f"no inference #{number} in the capture: it holds none"
        return (
            f"no inference #{number} in the capture: it holds {held} ({count:,} inference{'s' if count != 1 else ''})"
        )

    def load(self, ordinal: int, around: int = AROUND) -> Stretch | None:
        """Inference ``ordinal`` with ``around`` neighbours each side, read again from the capture.

        While the index grows (a live recording), the capture is read up to what the recorder has
        written so far; neighbours whose bytes are not there yet are left out.

        Returns:
            The stretch (its ``first_ordinal`` set), or None when that inference is not indexed
            (or, growing, its last bytes have not reached the file yet).
        """
        complete = self.ready  # read before the file: a capture complete now is complete in it
        if not 0 <= ordinal < self._count:
            return None
        first = max(0, ordinal - around)
        last = min(self._count - 1, ordinal + around)
        with self._lock:
            at = bisect.bisect_right([c.closed for c in self._checkpoints], first) - 1
            checkpoint = self._checkpoints[max(0, at)]
        if checkpoint.state:
            decoder = _CheckpointUnpickler(io.BytesIO(zlib.decompress(checkpoint.state)), self._functions).load()
        else:
            decoder = RollingDecoder(self.setup)
        state = StreamState(LOAD_RING, self._window, 1)
        closed = checkpoint.closed
        feed = CaptureFeed(self.path, FAST_PIECE, start=checkpoint.offset)
        try:
            while closed <= last:
                try:
                    piece = feed.next_piece()
                except SourceEnded:
                    if complete:  # else the inference in progress goes on beyond what is written
                        delta = decoder.finish()
                        state.fold(delta, decoder, ())
                        closed += len(delta.inferences)
                    break
                delta = decoder.feed(piece.data, piece.lost_before)
                state.fold(delta, decoder, ())
                closed += len(delta.inferences)
        finally:
            feed.close()
        records = state.ring.items()
        ring_first = closed - len(records)  # the position of records[0]
        lo, hi = first - ring_first, last - ring_first + 1
        if not complete:
            hi = min(hi, len(records))
        if lo < 0 or hi > len(records) or hi <= ordinal - ring_first:
            return None
        whole = Stretch(records, state.events.view(state.isr_slices), "loaded", ring_first)
        return narrowed(whole, lo, hi, "loaded")
