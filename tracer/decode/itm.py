"""Incremental ITM/DWT packet decoder: feed it bytes in any split, get the same packets."""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.decode import itm_kernel
from tracer.decode.packets import KIND_COUNT, NO_TS, PacketBatch, PacketKind
from tracer.decode.pool import BatchPool

# Packets waiting for the local timestamp that will stamp them are held back, so every packet
# leaves the decoder with its final ``ts``. A stream with timestamps disabled would hold
# everything; past this many, held packets are released with no ``ts`` and counted.
MAX_HELD_PACKETS = 1 << 20


@dataclasses.dataclass
class ItmStats:
    """Counters of one decoded ITM stream (``tracer decode --format stats``)."""

    bytes: int = 0
    packets: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(KIND_COUNT, np.int64))
    padding: int = 0  # 0x00 bytes that did not form a sync packet
    resyncs: int = 0  # sync packets that followed damage (reserved/malformed packet, gap)
    truncated_bytes: int = 0  # bytes of a packet cut off by the end of the stream or a gap
    released_unstamped: int = 0  # packets released without waiting for their timestamp
    gaps: int = 0
    lost_bytes: int = 0

    @property
    def overflows(self) -> int:
        """ITM overflow packets: the target dropped data."""
        return int(self.packets[PacketKind.OVERFLOW])

    @property
    def reserved(self) -> int:
        """Reserved or malformed headers."""
        return int(self.packets[PacketKind.RESERVED])

    def packet_counts(self) -> dict[str, int]:
        """Packets per contract type name, types never seen left out."""
        return {PacketKind(k).type_name: int(v) for k, v in enumerate(self.packets) if v}


class ItmDecoder:
    """Decodes an ITM/DWT byte stream incrementally.

    It starts synced at byte 0 (most SWO streams carry no sync packet), treats a sync packet as a
    fresh start (stimulus page 0, global timestamp unknown), and emits reserved headers as packets
    without stopping.

    Args:
        hold_timestamps: Hold packets until the local timestamp after them arrives, so their ``ts``
            is final. Pass False to get packets as soon as they are whole (``ts`` may be -1).
        packets: Build packet batches. False only counts them (``--format stats``): ``feed``
            then returns empty batches and :attr:`stats` is all there is.
        pool: Decode each batch straight into a buffer of this pool (no copy, no fresh memory
            once the caller gives batches back with :meth:`give_back`); None: into a scratch
            buffer, each batch copied out of it (the caller keeps batches as long as it likes).
    """

    def __init__(self, hold_timestamps: bool = True, *, packets: bool = True, pool: BatchPool | None = None) -> None:
        self._state = itm_kernel.new_state()
        self._tail = b""
        self._tail_offset = 0
        self._next_offset = 0
        self._hold = hold_timestamps and packets
        self._emit = packets
        self._held: list[PacketBatch] = []
        self._held_count = 0
        self._scratch = PacketBatch.empty(0)
        self._pool = pool
        self._joined = np.empty(0, np.uint8)  # the tail and the next bytes, reused: see feed
        self._truncated_at: int | None = None
        self.stats = ItmStats()

    def give_back(self, batch: PacketBatch) -> None:
        """Say that ``batch``, which this decoder returned, will not be read again (by anyone):
        with a pool, its buffer takes a later batch. Without one, nothing to do.
        """
        if self._pool is not None:
            self._pool.give_back(batch)

    def join(self, parts: list[PacketBatch]) -> PacketBatch:
        """``parts`` (batches this decoder returned) joined in order; parts copied into a new
        batch are given back.
        """
        joined = PacketBatch.concat(parts)
        if len(parts) > 1:
            for part in parts:
                self.give_back(part)
        return joined

    @property
    def offset(self) -> int:
        """Stream offset of the next byte expected."""
        return self._next_offset

    def feed(self, data: bytes | bytearray | memoryview | np.ndarray, offset: int | None = None) -> PacketBatch:
        """Decode the next bytes of the stream.

        Args:
            data: The bytes.
            offset: Their stream offset, if the caller knows it (a jump forward means bytes were
                lost, see :meth:`gap`).

        Returns:
            The packets whose timestamps are now final, in stream order.
        """
        parts: list[PacketBatch] = []
        if offset is not None and offset != self._next_offset:
            if offset > self._next_offset:
                parts.append(self.gap(offset - self._next_offset))
            self._next_offset = offset
        chunk = data if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
        self.stats.bytes += chunk.shape[0]
        if self._tail:
            # Joined in the same memory each time (read only by _decode): a fresh array per feed
            # would be fresh pages per feed.
            size = len(self._tail) + chunk.shape[0]
            if self._joined.shape[0] < size:
                self._joined = np.empty(size + (size >> 4), np.uint8)
            buf = self._joined[:size]
            buf[: len(self._tail)] = np.frombuffer(self._tail, np.uint8)
            buf[len(self._tail) :] = chunk
            base = self._tail_offset
        else:
            buf = chunk
            base = self._next_offset
        self._next_offset += chunk.shape[0]
        parts.append(self._decode(buf, base, final=False))
        return self.join(parts)

    def gap(self, lost_bytes: int | None) -> PacketBatch:
        """Say that stream bytes were lost here (a damaged capture chunk, a dropped connection).

        A packet cut by the gap is dropped; decoding restarts at the next byte, as after a sync
        (stimulus page 0, global timestamp unknown). Returns the held packets, released without
        timestamps, and a ``gap`` packet.
        """
        parts = [self._drain(at_end=False)]
        parts.append(self._flush_held())
        self._settle_zeros()
        state = self._state
        state[itm_kernel.S_PAGE] = 0
        state[itm_kernel.S_GTS_HI_VALID] = 0
        state[itm_kernel.S_GTS_LO_BITS] = 0
        state[itm_kernel.S_DAMAGED] = 1
        self.stats.gaps += 1
        self.stats.lost_bytes += lost_bytes or 0
        self.stats.packets[PacketKind.GAP] += 1
        if self._emit:
            marker = PacketBatch.empty(1)
            values = (self._next_offset, PacketKind.GAP, lost_bytes or 0, 0, 0, 0, NO_TS)
            for col, value in zip(marker.columns(), values, strict=True):
                col[0] = value
            parts.append(marker)
        return self.join(parts)

    def finish(self) -> PacketBatch:
        """End of stream: decode what waited for more bytes, release held packets, account the tail."""
        parts = [self._drain(at_end=True)]
        self._settle_zeros()
        parts.append(self._flush_held())
        return self.join(parts)

    @property
    def truncated_at(self) -> int | None:
        """Stream offset of a packet cut by the end of the stream, if any (after :meth:`finish`)."""
        return self._truncated_at

    @property
    def accumulated_ts(self) -> int:
        """Local-timestamp ticks accumulated so far."""
        return int(self._state[itm_kernel.S_TS])

    # -- internals -------------------------------------------------------------------------------
    def _decode(self, buf: np.ndarray, base: int, final: bool) -> PacketBatch:
        if buf.shape[0] == 0:
            return PacketBatch.empty()
        # Room for one packet per byte.
        if self._pool is not None and self._emit:
            out = self._pool.lend(buf.shape[0])
        else:
            if len(self._scratch) < buf.shape[0]:
                # Callers feed chunks of about the same size (the tail carried over is a few
                # bytes), so a little slack avoids regrowing on every call.
                self._scratch = PacketBatch.empty(buf.shape[0] + 4096)
            out = self._scratch
        n, used, unstamped, first_stamp = itm_kernel.decode_itm(
            buf, base, self._state, self.stats.packets, final, *out.columns()
        )
        self._tail = bytes(buf[used:])
        self._tail_offset = base + used
        self.stats.padding = int(self._state[itm_kernel.S_PADDING])
        self.stats.resyncs = int(self._state[itm_kernel.S_RESYNCS])
        if not self._emit:
            return PacketBatch.empty()
        batch = out.slice(0, n) if out is not self._scratch else out.slice(0, n).copy()
        return self._release(batch, unstamped, first_stamp)

    def _drain(self, at_end: bool) -> PacketBatch:
        """No more bytes follow the tail (end or gap): decode it for good, drop a cut packet."""
        out = PacketBatch.empty()
        if self._tail:
            out = self._decode(np.frombuffer(self._tail, np.uint8), self._tail_offset, final=True)
        if self._tail:
            self.stats.truncated_bytes += len(self._tail)
            if at_end:
                self._truncated_at = self._tail_offset
            self._tail = b""
        return out

    def _settle_zeros(self) -> None:
        """Zeros pending at a gap or the end can no longer become a sync packet: they are padding."""
        self._state[itm_kernel.S_PADDING] += self._state[itm_kernel.S_ZEROS]
        self._state[itm_kernel.S_ZEROS] = 0
        self.stats.padding = int(self._state[itm_kernel.S_PADDING])

    def _release(self, batch: PacketBatch, unstamped: int, first_stamp: int) -> PacketBatch:
        if not self._hold:
            return batch
        parts: list[PacketBatch] = []
        if self._held and first_stamp >= 0:
            for held in self._held:
                held.ts[:] = first_stamp
            parts.extend(self._held)
            self._held = []
            self._held_count = 0
        if self._held:  # nothing in this batch stamped the held packets
            self._held.append(batch)
            self._held_count += len(batch)
            if self._held_count > MAX_HELD_PACKETS:
                self.stats.released_unstamped += self._held_count
                return self._flush_held()
            return PacketBatch.empty()
        parts.append(batch.slice(0, unstamped))
        if unstamped < len(batch):
            pending = batch.slice(unstamped).copy()
            self._held.append(pending)
            self._held_count = len(pending)
        return self.join(parts)

    def _flush_held(self) -> PacketBatch:
        held = self.join(self._held)
        self._held = []
        self._held_count = 0
        return held


def decode_bytes(data: bytes) -> PacketBatch:
    """Decode a whole ITM stream held in memory (tests, small files)."""
    decoder = ItmDecoder()
    return PacketBatch.concat([decoder.feed(data), decoder.finish()])
