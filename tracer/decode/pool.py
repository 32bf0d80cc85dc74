"""Packet batch buffers lent to the ITM decoder and given back when their packets have been read.

Decoding a capture makes a batch of a few hundred thousand packets per MiB fed; a fresh batch per
feed is fresh memory (page faults on every batch while a few are alive at once on two threads) and
a copy out of the decoder's scratch. A caller that says when it is done with each batch lets the
decoder write the next ones straight into the same buffers: after the first few batches, no fresh
memory and no copy (docs/decoder.md, "Threads").

A batch given back must not be read again by anyone: its buffer is lent for a later batch.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from tracer.decode.packets import PacketBatch

SLACK = 4096  # packets of room beyond what is asked: feeds of about one size reuse a buffer
KEEP = 8  # buffers kept for reuse at most (a producer a few batches ahead needs about six)


class BatchPool:
    """Buffers of packet columns, lent and given back (from any thread).

    Only buffers given back are lent again; a batch never given back is garbage collected as
    any other (the pool holds lent buffers weakly).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[PacketBatch] = []
        # The ``kind`` column of each buffer lent, by its id: a batch given back is a slice of one.
        self._lent: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()

    def lend(self, packets: int) -> PacketBatch:
        """A buffer with room for at least ``packets`` packets (its contents are undefined)."""
        with self._lock:
            while self._free:
                buffer = self._free.pop()
                if len(buffer) >= packets:
                    break
            else:  # (buffers too small are dropped: feeds do not shrink for long)
                buffer = PacketBatch.empty(packets + SLACK)
            self._lent[id(buffer.kind)] = buffer.kind
        return buffer

    def give_back(self, batch: PacketBatch) -> bool:
        """Say that ``batch`` (packets of a lent buffer: a slice of it) will not be read again.

        Returns:
            Whether its buffer is now free to lend again (False for a batch that is no slice of a
            lent buffer, such as one joined from several: nothing to do).
        """
        whole = PacketBatch(*(column if column.base is None else column.base for column in batch.columns()))
        with self._lock:
            if self._lent.get(id(whole.kind)) is not whole.kind:
                return False
            del self._lent[id(whole.kind)]
            if len(self._free) < KEEP:
                self._free.append(whole)
            return True

    @property
    def lent(self) -> int:
        """Buffers lent and not given back."""
        return len(self._lent)

    @property
    def free(self) -> int:
        """Buffers ready to lend again."""
        return len(self._free)
