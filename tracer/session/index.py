"""Any inference of a replayed capture: an index built on load, and reading an inference again.

The replay's ring holds the most recent inferences only. :class:`CaptureIndex` reads the capture
once more in a background thread when the replay opens and keeps, with bounded memory:

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

CHECKPOINT_BYTES = 1 << 20  # stream bytes between checkpoints, to begin with
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
    """

    def __init__(
        self,
        path: str,
        setup: StreamSetup,
        window: int = 64,
        spacing: int = CHECKPOINT_BYTES,
        most: int = MAX_CHECKPOINTS,
    ) -> None:
        self.path = path
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

    # -- building --------------------------------------------------------------------------------
    def build(self, stopped: Callable[[], bool] = lambda: False, give_way: Callable[[], None] = lambda: None) -> None:
        """Read the whole capture once (a background thread); ``stopped`` ends it early."""
        try:
            feed = CaptureFeed(self.path, FAST_PIECE)
        except Exception as exc:  # noqa: BLE001 - the replay itself says why the file cannot be read
            self.error = str(exc)
            return
        decoder = RollingDecoder(self.setup)
        next_at = self.spacing
        try:
            while not stopped():
                give_way()
                try:
                    piece = feed.next_piece()
                except SourceEnded:
                    self._add(decoder.finish().inferences.number)
                    with self._lock:
                        self._all = np.concatenate(self._numbers) if self._numbers else np.zeros(0, np.int64)
                        self._numbers = [self._all]
                        self.ready = True
                    return
                if piece.offset >= next_at and self.picklable:
                    self._checkpoint(piece.offset, decoder)
                    next_at = piece.offset + self.spacing
                self._add(decoder.feed(piece.data, piece.lost_before).inferences.number)
                self.bytes_read = piece.offset + len(piece.data)
        except Exception as exc:  # noqa: BLE001 - a damaged file ends the index where the replay would stop
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            feed.close()

    def _add(self, numbers: np.ndarray) -> None:
        if len(numbers):
            with self._lock:
                self._numbers.append(numbers.astype(np.int64, copy=True))
                self._count += len(numbers)

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

    def load(self, ordinal: int, around: int = AROUND) -> Stretch | None:
        """Inference ``ordinal`` with ``around`` neighbours each side, read again from the capture.

        Returns:
            The stretch (its ``first_ordinal`` set), or None when that inference is not indexed.
        """
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
        if lo < 0 or hi > len(records):
            return None
        whole = Stretch(records, state.events.view(state.isr_slices), "loaded", ring_first)
        return narrowed(whole, lo, hi, "loaded")
