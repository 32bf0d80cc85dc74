"""ITM/DWT packets as columns of numpy arrays, the shape every later stage consumes.

A :class:`PacketBatch` holds many packets at once (struct of arrays), because the decoder emits
millions per second and per-packet Python objects would cost more than decoding. The meaning of
the generic columns depends on the packet kind (table in :data:`FIELDS`). :meth:`PacketBatch.record`
turns one packet into the JSON object of the ``tracer decode --format ndjson`` contract.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator
from typing import Any

import numpy as np


class PacketKind(enum.IntEnum):
    """Packet types; the numbers are internal, the names are the contract's ``type`` strings."""

    SYNC = 0
    OVERFLOW = 1
    LTS = 2
    GTS1 = 3
    GTS2 = 4
    EXTENSION = 5
    SWIT = 6
    DWT_EVENT = 7
    EXCEPTION = 8
    PC_SAMPLE = 9
    PC_SLEEP = 10
    DATA_PC = 11
    DATA_ADDR = 12
    DATA_VALUE = 13
    DATA_MATCH = 14
    PMU_OVERFLOW = 15
    RESERVED = 16
    GAP = 17  # not an ITM packet: capture bytes lost (damaged chunk) before this point

    @property
    def type_name(self) -> str:
        """The ``type`` string of the JSON contract."""
        return self.name.lower()


KIND_COUNT = len(PacketKind)

# Flag bits of the ``flags`` column.
FLAG_WRITE = 1  # data_value: a write access
FLAG_WRAP = 2  # gts1: Wrap
FLAG_CLKCH = 4  # gts1: ClkCh
FLAG_PAGE = 8  # extension: sets the stimulus-port page
FLAG_PROHIBITED = 16  # pc_sleep: sample prohibited (payload 0xFF)
FLAG_GLOBAL_VALID = 32  # gts1/gts2: column ``b`` holds the merged global timestamp
FLAG_MALFORMED = 64  # reserved: an over-long continuation, not a reserved header

EXCEPTION_ACTIONS = {0: "reserved", 1: "enter", 2: "exit", 3: "return"}

# Which column holds what, per kind: a = main value, b = second value, c = size in bytes.
FIELDS: dict[PacketKind, str] = {
    PacketKind.SYNC: "-",
    PacketKind.OVERFLOW: "-",
    PacketKind.LTS: "a=delta b=tc",
    PacketKind.GTS1: "a=value b=global (FLAG_GLOBAL_VALID) flags=wrap,clkch",
    PacketKind.GTS2: "a=value b=global (FLAG_GLOBAL_VALID)",
    PacketKind.EXTENSION: "a=ex b=sh flags=page",
    PacketKind.SWIT: "a=value b=port c=size",
    PacketKind.DWT_EVENT: "a=counters",
    PacketKind.EXCEPTION: "a=number b=action",
    PacketKind.PC_SAMPLE: "a=pc",
    PacketKind.PC_SLEEP: "flags=prohibited",
    PacketKind.DATA_PC: "a=pc b=comparator c=size",
    PacketKind.DATA_ADDR: "a=address b=comparator c=size",
    PacketKind.DATA_VALUE: "a=value b=comparator c=size flags=write",
    PacketKind.DATA_MATCH: "b=comparator",
    PacketKind.PMU_OVERFLOW: "a=counters",
    PacketKind.RESERVED: "a=header flags=malformed",
    PacketKind.GAP: "a=bytes lost (0 if unknown)",
}

NO_TS = -1


@dataclasses.dataclass(slots=True)
class PacketBatch:
    """Packets in stream order, one array element per packet.

    Attributes:
        offset: Byte offset of the packet's header in the ITM stream.
        kind: :class:`PacketKind` value.
        a: Main value (see :data:`FIELDS`).
        b: Second value.
        c: Payload size in bytes where the contract has ``size``.
        flags: ``FLAG_*`` bits.
        ts: Accumulated local-timestamp ticks that stamp the packet, or ``NO_TS``.
    """

    offset: np.ndarray
    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    flags: np.ndarray
    ts: np.ndarray

    @classmethod
    def empty(cls, capacity: int = 0) -> PacketBatch:
        """Return a batch with room for ``capacity`` packets (uninitialised)."""
        return cls(
            offset=np.empty(capacity, np.int64),
            kind=np.empty(capacity, np.uint8),
            a=np.empty(capacity, np.uint64),
            b=np.empty(capacity, np.uint64),
            c=np.empty(capacity, np.uint8),
            flags=np.empty(capacity, np.uint8),
            ts=np.empty(capacity, np.int64),
        )

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All columns, in field order."""
        return (self.offset, self.kind, self.a, self.b, self.c, self.flags, self.ts)

    def is_kind(self, kind: PacketKind) -> np.ndarray:
        """Where the packets are of ``kind`` (compared as a plain int: numpy compares an array with
        an IntEnum member several times slower, and this runs over every packet of a stream).
        """
        return self.kind == int(kind)

    def slice(self, start: int, stop: int | None = None) -> PacketBatch:
        """Return packets ``start:stop`` (views, no copy)."""
        return PacketBatch(*(col[start:stop] for col in self.columns()))

    def select(self, mask: np.ndarray) -> PacketBatch:
        """Return the packets where ``mask`` is true (copies)."""
        return PacketBatch(*(col[mask] for col in self.columns()))

    def copy(self) -> PacketBatch:
        """Return a batch that owns its arrays."""
        return PacketBatch(*(col.copy() for col in self.columns()))

    @staticmethod
    def concat(batches: list[PacketBatch]) -> PacketBatch:
        """Join batches in order."""
        if not batches:
            return PacketBatch.empty()
        if len(batches) == 1:
            return batches[0]
        cols = zip(*(b.columns() for b in batches))
        return PacketBatch(*(np.concatenate(c) for c in cols))

    def counts(self) -> np.ndarray:
        """Packets per kind, indexed by :class:`PacketKind` value."""
        return np.bincount(self.kind, minlength=KIND_COUNT)

    def record(self, i: int) -> dict[str, Any]:
        """Return packet ``i`` as the contract's JSON object."""
        return packet_record(
            int(self.offset[i]),
            int(self.kind[i]),
            int(self.a[i]),
            int(self.b[i]),
            int(self.c[i]),
            int(self.flags[i]),
            int(self.ts[i]),
        )

    def records(self) -> Iterator[dict[str, Any]]:
        """Yield every packet as the contract's JSON object."""
        cols = [col.tolist() for col in self.columns()]
        for offset, kind, a, b, c, flags, ts in zip(*cols):
            yield packet_record(offset, kind, a, b, c, flags, ts)


def packet_record(offset: int, kind: int, a: int, b: int, c: int, flags: int, ts: int) -> dict[str, Any]:
    """Build the contract's JSON object of one packet from its columns."""
    k = PacketKind(kind)
    rec: dict[str, Any] = {"offset": offset, "type": k.type_name, "ts": None if ts == NO_TS else ts}
    if k is PacketKind.LTS:
        rec.update(delta=a, tc=b)
    elif k is PacketKind.GTS1:
        rec.update(value=a, wrap=bool(flags & FLAG_WRAP), clkch=bool(flags & FLAG_CLKCH))
        rec["global"] = b if flags & FLAG_GLOBAL_VALID else None
    elif k is PacketKind.GTS2:
        rec["value"] = a
        rec["global"] = b if flags & FLAG_GLOBAL_VALID else None
    elif k is PacketKind.EXTENSION:
        rec.update(sh=b, ex=a)
        if flags & FLAG_PAGE:
            rec["page"] = a
    elif k is PacketKind.SWIT:
        rec.update(port=b, size=c, value=a)
    elif k in (PacketKind.DWT_EVENT, PacketKind.PMU_OVERFLOW):
        rec["counters"] = a
    elif k is PacketKind.EXCEPTION:
        rec.update(number=a, action=EXCEPTION_ACTIONS[b])
    elif k is PacketKind.PC_SAMPLE:
        rec["pc"] = a
    elif k is PacketKind.PC_SLEEP:
        rec["prohibited"] = bool(flags & FLAG_PROHIBITED)
    elif k is PacketKind.DATA_PC:
        rec.update(comparator=b, pc=a, size=c)
    elif k is PacketKind.DATA_ADDR:
        rec.update(comparator=b, address=a, size=c)
    elif k is PacketKind.DATA_VALUE:
        rec.update(comparator=b, value=a, write=bool(flags & FLAG_WRITE), size=c)
    elif k is PacketKind.DATA_MATCH:
        rec["comparator"] = b
    elif k is PacketKind.RESERVED:
        rec["header"] = a
        if flags & FLAG_MALFORMED:
            rec["malformed"] = True
    elif k is PacketKind.GAP:
        rec["lost_bytes"] = a
    return rec
