"""FreeRTOS task events in another firmware's ITM encoding, turned into task slices.

Some FreeRTOS firmware writes its trace-hook events straight to ITM stimulus ports (the
"orbcode" RTOS trace of Novakov's Trace Compass plugin, whose recordings are in the test corpus):

- port 3 frames a record: ``0xBEnn`` opens record type ``nn``, ``0xEFnn`` closes it (a close of
  another type drops the record; an open while one is open starts over);
- port 2 carries its fields, one stimulus write each;
- type 1 is *task switched in* (field 0: the TCB's address), type 2 *task switched out* (field 0:
  the TCB), type 3 *task created* (field 0: the TCB, field 1: the name's length, then writes
  whose little-endian bytes are the name); the other types (queues, semaphores, mutexes,
  notifications) are not needed for the task lane;
- a record's time is the ITM local timestamp that follows its closing packet (the local
  timestamps added up from the start of the stream).

The records carry no cycle counter, so slices are in local-timestamp ticks (the timestamp
prescaler's unit; the capture does not say the clock). An ITM overflow, a capture gap or an
undecodable packet inside a slice makes it incomplete: a switch may have been lost there.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.base.tasks import TaskSlice
from tracer.decode.packets import PacketBatch, PacketKind
from tracer.telemetry.tables import of_types

RECORD_PORT = 3
FIELD_PORT = 2
OPEN_MARK = 0xBE
CLOSE_MARK = 0xEF
SWITCHED_IN = 1
SWITCHED_OUT = 2
CREATED = 3
TIME_LABEL = "task times are ITM local-timestamp ticks (the FreeRTOS trace records carry no cycle counter)"

_LOSS = (int(PacketKind.OVERFLOW), int(PacketKind.GAP), int(PacketKind.RESERVED))


@dataclasses.dataclass(frozen=True, slots=True)
class _Event:
    ts: int
    kind: int  # SWITCHED_IN, SWITCHED_OUT, CREATED, or -1 for a loss
    task: int = 0
    name: str = ""


Picked = tuple[list[int], list[int], list[int], list[int]]  # kind, value, port and size of packets


def pick(batch: PacketBatch) -> Picked | None:
    """The packets of ``batch`` that :class:`FreeRtosItmReader` reads (None: none), as plain
    columns. It reads only the batch, so it may run on another thread, ahead of :meth:`FreeRtosItmReader.read`.
    """
    kind = batch.kind
    port = batch.b
    # Comparisons, not np.isin: this runs over every packet of every stream.
    wanted = batch.is_kind(PacketKind.SWIT) & ((port == RECORD_PORT) | (port == FIELD_PORT))
    wanted |= batch.is_kind(PacketKind.LTS)
    wanted |= of_types(kind, _LOSS)
    rows = np.flatnonzero(wanted)
    if not len(rows):
        return None
    return kind[rows].tolist(), batch.a[rows].tolist(), port[rows].tolist(), batch.c[rows].tolist()


class FreeRtosItmReader:
    """Reads the task events of the protocol above from packet batches, in stream order.

    Feed it every batch (any split gives the same result); :meth:`slices` at any time.
    """

    def __init__(self) -> None:
        self._ts = 0  # local timestamps added up so far
        self._open: int | None = None  # record type being read
        self._fields: list[tuple[int, int]] = []  # (value, size) of its field writes
        self._waiting: list[_Event] = []  # complete, waiting for the timestamp that stamps them
        self._events: list[_Event] = []
        self.records = 0  # well-formed records of any type

    def feed(self, batch: PacketBatch) -> None:
        """Read the records, timestamps and losses of ``batch``."""
        self.read(pick(batch))

    def read(self, picked: Picked | None) -> None:
        """Read the packets :func:`pick` picked from a batch (the batches in stream order)."""
        if picked is None:
            return
        for k, value, p, size in zip(*picked):
            if k == PacketKind.LTS:
                self._ts += int(value)
                self._events.extend(dataclasses.replace(e, ts=self._ts) for e in self._waiting)
                self._waiting.clear()
            elif k == PacketKind.SWIT and p == RECORD_PORT:
                self._frame(int(value) & 0xFFFFFFFF)
            elif k == PacketKind.SWIT:
                if self._open is not None:
                    self._fields.append((int(value) & 0xFFFFFFFF, int(size)))
            else:  # lost or undecodable bytes: the record being read is gone, a switch may be too
                self._open = None
                self._waiting.append(_Event(0, -1))

    def _frame(self, value: int) -> None:
        mark, code = (value >> 8) & 0xFF, value & 0xFF
        if mark == OPEN_MARK:
            self._open, self._fields = code, []
        elif mark == CLOSE_MARK:
            if self._open == code:
                self.records += 1
                event = self._event(code, self._fields)
                if event is not None:
                    self._waiting.append(event)
            self._open = None

    @staticmethod
    def _event(code: int, fields: list[tuple[int, int]]) -> _Event | None:
        if code not in (SWITCHED_IN, SWITCHED_OUT, CREATED) or not fields:
            return None
        task = fields[0][0]
        if code != CREATED:
            return _Event(0, code, task)
        name = b""
        length = fields[1][0] if len(fields) > 1 else 0
        for value, size in fields[2:]:
            name += value.to_bytes(size, "little")
        return _Event(0, CREATED, task, name[:length].decode("utf-8", "replace"))

    def slices(self) -> tuple[list[TaskSlice], dict[int, str]]:
        """The task slices so far (a task runs from its switch-in to its switch-out or the next
        switch-in) and the task names; events still waiting for their timestamp are left out.
        """
        names: dict[int, str] = {}
        out: list[TaskSlice] = []
        current: tuple[int, int] | None = None
        lost = False
        for e in self._events:
            if e.kind == CREATED:
                names[e.task] = e.name
            elif e.kind == -1:
                lost = current is not None
            elif e.kind == SWITCHED_IN:
                if current is not None:
                    out.append(TaskSlice(current[0], current[1], e.ts, complete=not lost))
                current, lost = (e.task, e.ts), False
            elif e.kind == SWITCHED_OUT and current is not None and current[0] == e.task:
                out.append(TaskSlice(current[0], current[1], e.ts, complete=not lost))
                current, lost = None, False
        return [dataclasses.replace(s, name=names.get(s.task, "")) for s in out], names
