"""Test-side interpreter of Novakov's FreeRTOS ITM trace-hook protocol (golden tests only).

The ten FreeRTOS captures in ``tests/data/corpus/novakov_rtos_trace`` were recorded from firmware
whose trace hooks write records to ITM stimulus ports; two of them come with the event lists that
the capture's author produced (``*.expected.txt``, the ``repr`` of a list of ``TimestampedEvent``).
This module turns OUR decoded packets into the same text, so the golden test can compare byte for
byte. Facts of the protocol (learned from the expected output and from the field tables of
Novakov/tracecompass-orbcode-trace-plugin, ``tool/src/orbcode/rtos_trace``; MIT): the code is ours.

Protocol:
    * Port 3 carries record delimiters: ``0xBEnn`` opens record type ``nn``, ``0xEFnn`` closes it.
      A close whose type differs from the open record drops the record (and the data after it until
      the next open). An open while a record is open starts over.
    * Port 2 carries the record's fields, one stimulus write each (any size). A string field is a
      length write followed by writes whose little-endian bytes are the UTF-8 text.
    * Exception-trace packets become records ``256 + action`` (1 entered, 2 exited, 3 returned).
    * Every record is stamped with the accumulated local-timestamp ticks of its closing packet.
    * Every event other than a task switch carries the task running at the time
      (``extra_information['current_task']``).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tracer.decode.packets import NO_TS, PacketBatch, PacketKind

RECORD_PORT = 3
DATA_PORT = 2
OPEN_MARK = 0xBE
CLOSE_MARK = 0xEF
EXCEPTION_BASE = 256


# -- references and enums: their repr is part of the expected text ------------------------------
class SymbolRef:
    """An address of a kernel object; the capture carries no names, so the name is the address."""

    field_name = "address"

    def __init__(self, address: int) -> None:
        self.address = address

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.field_name}=0x{self.address:08X}, name={self.address})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.address == self.address

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.address))


class TaskReference(SymbolRef):
    field_name = "tcb"


class QueueReference(SymbolRef):
    pass


class BinarySemaphoreReference(SymbolRef):
    pass


class CountingSemaphoreReference(SymbolRef):
    pass


class MutexReference(SymbolRef):
    pass


class TaskSwitchReason(enum.Enum):
    Preempted = 0
    Delayed = 1
    TaskNotifyWait = 3
    BlockedBinarySemaphoreUnlock = 0x10
    BlockedBinarySemaphoreLock = 0x11
    BlockedQueuePush = 0x20
    BlockedQueuePop = 0x21
    BlockedOnCountingSemaphoreGive = 0x30
    BlockedOnCountingSemaphoreTake = 0x31
    BlockedOnMutexLock = 0x40
    BlockedOnMutexUnlock = 0x41


class BlockedObject(enum.Enum):
    Nothing = 0
    BinarySemaphore = 1
    Queue = 2
    CountingSemaphore = 3
    Mutex = 4


_OPERATIONS = {
    BlockedObject.BinarySemaphore: ("Unlock", "Lock"),
    BlockedObject.Queue: ("Push", "Pop"),
    BlockedObject.CountingSemaphore: ("Give", "Take"),
    BlockedObject.Mutex: ("Lock", "Unlock"),
}


class BlockedOn:
    """What a switched-out task waits on: object type in bits 7:4, operation in bits 3:0."""

    def __init__(self, raw: int) -> None:
        self.object_type = BlockedObject((raw >> 4) & 0xF)
        self.operation = None if self.object_type is BlockedObject.Nothing else _OPERATIONS[self.object_type][raw & 0xF]

    def __repr__(self) -> str:
        return f"BlockedOn(object_type={self.object_type.name}, operation={self.operation})"


class TaskNotifyAction(enum.Enum):
    NoAction = 0
    SetBits = 1
    Increment = 2
    SetValueWithOverwrite = 3
    SetValueWithoutOverwrite = 4


# -- field readers: (index of the port-2 write, how to read it) ----------------------------------
Reader = Callable[[list[tuple[int, int]]], Any]


def bits(index: int, offset: int = 0, size: int = 32) -> Reader:
    """Bits ``offset..offset+size`` of field write ``index``."""
    return lambda data: (data[index][0] >> offset) & ((1 << size) - 1)


def flag(index: int, offset: int) -> Reader:
    """One bit of field write ``index`` as a bool."""
    return lambda data: bool((data[index][0] >> offset) & 1)


def text(index: int) -> Reader:
    """A string: a length write, then writes whose bytes (little-endian, their size) are UTF-8."""

    def read(data: list[tuple[int, int]]) -> str:
        length = data[index][0]
        raw = b""
        for value, size in data[index + 1 :]:
            raw += value.to_bytes(size, "little")
            if len(raw) >= length:
                break
        return raw[:length].decode("utf-8")

    return read


def as_type(kind: Callable[[Any], Any], reader: Reader) -> Reader:
    return lambda data: kind(reader(data))


TASK = as_type(TaskReference, bits(0))


@dataclasses.dataclass(frozen=True)
class RecordType:
    """One record type: its class name in the expected text and its fields in order."""

    name: str
    fields: tuple[tuple[str, Reader], ...]


def _ref(kind: type[SymbolRef], field: str) -> tuple[str, Reader]:
    return (field, as_type(kind, bits(0)))


RECORD_TYPES: dict[int, RecordType] = {
    1: RecordType("TaskSwitchedIn", (("task", TASK),)),
    2: RecordType(
        "TaskSwitchedOut",
        (
            ("task", TASK),
            ("switch_reason", as_type(TaskSwitchReason, bits(1, 0, 8))),
            ("blocked_on", as_type(BlockedOn, bits(1))),
            ("blocked_on_object", as_type(SymbolRef, bits(2))),
            ("still_ready", flag(3, 0)),
        ),
    ),
    3: RecordType("TaskCreated", (("task", TASK), ("name", text(1)))),
    4: RecordType("TaskReadied", (("task", TASK),)),
    5: RecordType("BinarySemaphoreCreated", (_ref(BinarySemaphoreReference, "semaphore"),)),
    **{
        code: RecordType(name, (_ref(BinarySemaphoreReference, "semaphore"), ("isr", flag(1, 0))))
        for code, name in (
            (6, "BinarySemaphoreLocked"),
            (7, "BinarySemaphoreUnlocked"),
            (8, "BinarySemaphoreLockFailed"),
            (9, "BinarySemaphoreUnlockFailed"),
        )
    },
    10: RecordType("QueueCreated", (_ref(QueueReference, "queue"), ("capacity", bits(1)))),
    11: RecordType("QueuePushed", (_ref(QueueReference, "queue"), ("updated_count", bits(1, 16)), ("isr", flag(1, 0)))),
    12: RecordType("QueuePopped", (_ref(QueueReference, "queue"), ("updated_count", bits(1, 16)), ("isr", flag(1, 0)))),
    13: RecordType("QueuePushFailed", (_ref(QueueReference, "queue"),)),
    14: RecordType("QueuePopFailed", (_ref(QueueReference, "queue"),)),
    15: RecordType(
        "CountingSemaphoreCreated",
        (
            _ref(CountingSemaphoreReference, "semaphore"),
            ("max_count", bits(1, 0, 16)),
            ("initial_count", bits(1, 16, 16)),
        ),
    ),
    16: RecordType(
        "CountingSemaphoreGiven",
        (_ref(CountingSemaphoreReference, "semaphore"), ("updated_count", bits(1, 16)), ("isr", flag(1, 0))),
    ),
    17: RecordType(
        "CountingSemaphoreTaken",
        (_ref(CountingSemaphoreReference, "semaphore"), ("updated_count", bits(1, 16)), ("isr", flag(1, 0))),
    ),
    18: RecordType("CountingSemaphoreGiveFailed", (_ref(CountingSemaphoreReference, "semaphore"), ("isr", flag(1, 0)))),
    19: RecordType("CountingSemaphoreTakeFailed", (_ref(CountingSemaphoreReference, "semaphore"), ("isr", flag(1, 0)))),
    20: RecordType(
        "TaskNotify",
        (
            ("task", TASK),
            ("index", bits(1, 0, 16)),
            ("action", as_type(TaskNotifyAction, bits(1, 16, 4))),
            ("isr", flag(1, 24)),
            ("updated_value", bits(2)),
        ),
    ),
    21: RecordType("TaskNotifyReceived", (("task", TASK), ("index", bits(1)), ("updated_value", bits(2)))),
    22: RecordType("MutexCreated", (_ref(MutexReference, "mutex"),)),
    **{
        code: RecordType(name, (_ref(MutexReference, "mutex"), ("isr", flag(1, 0))))
        for code, name in (
            (23, "MutexLocked"),
            (24, "MutexUnlocked"),
            (25, "MutexLockFailed"),
            (26, "MutexUnlockFailed"),
        )
    },
}

EXCEPTION_RECORDS = {1: "ExceptionEntered", 2: "ExceptionExited", 3: "ExceptionReturned"}


@dataclasses.dataclass
class RtosEvent:
    """One event of the expected list, and the index of the packet that completed it."""

    timestamp: int
    name: str
    fields: list[tuple[str, Any]]
    extra: dict[str, Any]
    index: int = -1

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.fields)
        return f"TimestampedEvent(timestamp={self.timestamp}, packet={self.name}({body}), extra_information={self.extra!r})"


@dataclasses.dataclass(frozen=True)
class Message:
    """A packet the protocol cares about, with the time that stamps it and its index."""

    index: int
    ts: int
    kind: int  # PacketKind.SWIT or PacketKind.EXCEPTION
    port_or_number: int
    value_or_action: int
    size: int


# -- timestamps -----------------------------------------------------------------------------------
def orbuculum_lts_bug(delta: int, payload_bytes: int) -> int:
    """The local-timestamp value Orbuculum decoded before orbcode/orbuculum#163.

    Its decoder took the second payload byte without masking the continuation bit, so a packet
    with three or more payload bytes had bit 14 ORed into its value.
    """
    return delta | (1 << 14) if payload_bytes >= 3 else delta


def restamp(batch: PacketBatch, delta_of: Callable[[int, int], int]) -> list[int]:
    """Recompute every packet's ``ts`` with local-timestamp values mapped by ``delta_of``.

    Same rule as the decoder (a local timestamp stamps the packets since the previous one, itself
    included); packets after the last one stay ``NO_TS``.
    """
    out = [NO_TS] * len(batch)
    kinds, deltas, sizes = batch.kind.tolist(), batch.a.tolist(), batch.c.tolist()
    acc, pending = 0, 0
    for i, kind in enumerate(kinds):
        if kind == PacketKind.LTS:
            acc += delta_of(deltas[i], sizes[i])
            for j in range(pending, i + 1):
                out[j] = acc
            pending = i + 1
    return out


def buggy_lts_packets(batch: PacketBatch) -> list[int]:
    """Indexes of the local timestamps whose value the Orbuculum bug changes."""
    return [
        i
        for i, (kind, delta, size) in enumerate(zip(batch.kind.tolist(), batch.a.tolist(), batch.c.tolist()))
        if kind == PacketKind.LTS and orbuculum_lts_bug(delta, size) != delta
    ]


def messages(batch: PacketBatch, stamps: list[int] | None = None) -> Iterator[Message]:
    """The SW and exception packets of ``batch``, with ``stamps`` (default: the decoded ``ts``)."""
    ts = batch.ts.tolist() if stamps is None else stamps
    kinds, a, b, c = batch.kind.tolist(), batch.a.tolist(), batch.b.tolist(), batch.c.tolist()
    for i, kind in enumerate(kinds):
        if kind == PacketKind.SWIT:
            yield Message(i, ts[i], kind, b[i], a[i], c[i])
        elif kind == PacketKind.EXCEPTION:
            yield Message(i, ts[i], kind, a[i], b[i], 0)


# -- the interpreter ------------------------------------------------------------------------------
@dataclasses.dataclass
class ProtocolStats:
    """How well the packets followed the protocol (a decoding error breaks it)."""

    records: int = 0
    mismatched_close: int = 0  # a close whose type is not the open record's
    reopened: int = 0  # an open while a record was open
    data_without_open: int = 0
    unknown_type: int = 0


def rtos_events(stream: Iterable[Message], stats: ProtocolStats | None = None) -> list[RtosEvent]:
    """Turn messages into the RTOS events of the expected list."""
    stats = stats if stats is not None else ProtocolStats()
    events: list[RtosEvent] = []
    open_type: int | None = None
    data: list[tuple[int, int]] = []
    for msg in stream:
        if msg.kind == PacketKind.EXCEPTION:
            name = EXCEPTION_RECORDS[msg.value_or_action]
            events.append(RtosEvent(msg.ts, name, [("exception_number", msg.port_or_number)], {}, msg.index))
            continue
        if msg.port_or_number == RECORD_PORT:
            mark, code = (msg.value_or_action >> 8) & 0xFF, msg.value_or_action & 0xFF
            if mark == OPEN_MARK:
                stats.reopened += open_type is not None
                open_type, data = code, []
            elif mark == CLOSE_MARK:
                if open_type != code:
                    stats.mismatched_close += 1
                    open_type, data = None, []
                    continue
                open_type = None
                record = RECORD_TYPES.get(code)
                if record is None:
                    stats.unknown_type += 1
                    continue
                fields = [(n, read(data)) for n, read in record.fields]
                events.append(RtosEvent(msg.ts, record.name, fields, {}, msg.index))
                stats.records += 1
        elif msg.port_or_number == DATA_PORT:
            if open_type is None:
                stats.data_without_open += 1
            else:
                data.append((msg.value_or_action, msg.size))
    _attach_current_task(events)
    return events


def _attach_current_task(events: list[RtosEvent]) -> None:
    current: TaskReference | None = None
    for event in events:
        if event.name == "TaskSwitchedIn":
            current = event.fields[0][1]
        elif event.name == "TaskSwitchedOut":
            current = None
        else:
            event.extra["current_task"] = current


def render(events: list[RtosEvent]) -> str:
    """The text of an ``*.expected.txt`` snapshot."""
    return "[\n" + "".join(f"{e!r},\n" for e in events) + "]"
