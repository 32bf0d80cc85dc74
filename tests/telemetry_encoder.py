"""A host-side encoder of the telemetry wire format: the bytes the firmware's software transport sends.

Tests use it to state what the C library must emit and to build streams with known content (and
known damage); the pipeline benchmark uses :func:`encode_inferences` to make large streams fast.
It is written from the wire-format reference, independently of the decoder.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence

import numpy as np

from tracer.telemetry.wire import (
    CRC16_TABLE,
    DATA_PACKET_BYTE,
    HEADER_PACKET_BYTE,
    PORT_TEXT,
    SYNC_BYTES,
    WIRE_VERSION,
    RecordType,
    header_word,
)

_PACKET = struct.Struct("<BI")


def _pack_text(text: str | bytes) -> list[int]:
    data = text.encode() if isinstance(text, str) else text
    data += bytes(-len(data) % 4)
    return [int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data), 4)]


@dataclasses.dataclass
class EncodedRecord:
    """Where one record sits in the encoded stream (for tests that damage streams on purpose)."""

    type: int
    sequence: int
    offset: int  # byte offset of its header packet
    length: int  # bytes of its packets
    inference: int | None  # the inference it belongs to, if any


class TelemetryEncoder:
    """Builds a telemetry byte stream record by record, with explicit timestamps.

    Every method takes ``t``, the 64-bit target time of the record (its low word goes on the wire).
    """

    def __init__(self, sequence: int = 0) -> None:
        self.out = bytearray()
        self.sequence = sequence & 0xFF
        self.records: list[EncodedRecord] = []
        self.inference_number = 0
        self._open_inference: int | None = None

    def __bytes__(self) -> bytes:
        return bytes(self.out)

    # -- framing ---------------------------------------------------------------------------------
    def record(self, record_type: int, t: int, words: Sequence[int]) -> None:
        """Append a record: time low word, then ``words``."""
        payload = [t & 0xFFFFFFFF, *(w & 0xFFFFFFFF for w in words)]
        start = len(self.out)
        self.out += _PACKET.pack(HEADER_PACKET_BYTE, header_word(record_type, self.sequence, payload))
        for word in payload:
            self.out += _PACKET.pack(DATA_PACKET_BYTE, word)
        self.records.append(
            EncodedRecord(record_type, self.sequence, start, len(self.out) - start, self._open_inference)
        )
        self.sequence = (self.sequence + 1) & 0xFF

    def text(self, text: str | bytes) -> None:
        """Console text on port 0, four characters per packet, then 2 and 1 for the rest."""
        data = text.encode() if isinstance(text, str) else text
        i = 0
        while i < len(data):
            left = len(data) - i
            take = 4 if left >= 4 else (2 if left >= 2 else 1)
            code = 3 if take == 4 else take
            self.out.append((PORT_TEXT << 3) | code)
            self.out += data[i : i + take]
            i += take

    def sync(self) -> None:
        """The software transport's synchronisation bytes."""
        self.out += SYNC_BYTES

    # -- records ---------------------------------------------------------------------------------
    def target_info(
        self,
        t: int,
        clock_hz: int,
        source: int,
        flags: int = 0,
        marker_cost_q4: int = 0xFFFFFFFF,
        scenario: int = 0,
        cpuid: int = 0,
    ) -> None:
        """TARGET_INFO (with the 64-bit time)."""
        words = [
            t >> 32,
            clock_hz,
            (source & 0xFF) | (flags & 0xFFFFFF00),
            marker_cost_q4,
            WIRE_VERSION | ((scenario & 0xFF) << 8),
            cpuid,
        ]
        self.record(RecordType.TARGET_INFO, t, words)

    def time_sync(self, t: int) -> None:
        """TIME_SYNC."""
        self.record(RecordType.TIME_SYNC, t, [t >> 32])

    def dropped(self, t: int, total: int) -> None:
        """DROPPED: the firmware's count of records it could not send."""
        self.record(RecordType.DROPPED, t, [total])

    def inference_begin(self, t: int, number: int | None = None, sync: bool = True) -> int:
        """INFERENCE_BEGIN, preceded by sync bytes as the C library does."""
        if number is None:
            number = self.inference_number
        self.inference_number = number + 1
        if sync:
            self.sync()
        self._open_inference = number
        self.record(RecordType.INFERENCE_BEGIN, t, [t >> 32, number])
        return number

    def inference_end(self, t: int, status: int = 0, number: int | None = None) -> None:
        """INFERENCE_END."""
        if number is None:
            number = self.inference_number - 1
        self.record(RecordType.INFERENCE_END, t, [number, status])
        self._open_inference = None

    def layer_info(self, t: int, index: int, engine: int, op: str, name: str = "") -> None:
        """LAYER_INFO: op and name strings."""
        op_b, name_b = op.encode()[:31], name.encode()[:47]
        words = [(index & 0xFFFF) | ((engine & 0xF) << 16), len(op_b) | (len(name_b) << 8)]
        words += _pack_text(op_b) + _pack_text(name_b)
        self.record(RecordType.LAYER_INFO, t, words)

    def layer_begin(self, t: int, index: int, engine: int = 0) -> None:
        """LAYER_BEGIN."""
        self.record(RecordType.LAYER_BEGIN, t, [(index & 0xFFFF) | ((engine & 0xF) << 16)])

    def layer_end(self, t: int, index: int) -> None:
        """LAYER_END."""
        self.record(RecordType.LAYER_END, t, [index & 0xFFFF])

    def pmu_config(self, t: int, npu: int, events: Sequence[int], simulated: bool = False) -> None:
        """PMU_CONFIG: NPU kind and the hardware event number of each counter."""
        count = min(len(events), 8)
        words = [(npu & 0xFF) | (count << 8) | ((1 if simulated else 0) << 16)]
        packed = [0] * ((count + 1) // 2)
        for i, event in enumerate(events[:count]):
            packed[i // 2] |= (event & 0xFFFF) << (16 * (i & 1))
        self.record(RecordType.PMU_CONFIG, t, words + packed)

    def pmu_snapshot(self, t: int, cycles: int, counters: Sequence[int], since_reset: bool = True) -> None:
        """PMU_SNAPSHOT: the 48-bit cycle counter and the event counters."""
        count = min(len(counters), 8)
        words = [count | ((1 if since_reset else 0) << 8), cycles & 0xFFFFFFFF, (cycles >> 32) & 0xFFFF]
        self.record(RecordType.PMU_SNAPSHOT, t, words + list(counters[:count]))

    def npu_job_begin(self, t: int, job: int) -> None:
        """NPU_JOB_BEGIN."""
        self.record(RecordType.NPU_JOB_BEGIN, t, [job])

    def npu_job_end(self, t: int, job: int, status: int = 0) -> None:
        """NPU_JOB_END."""
        self.record(RecordType.NPU_JOB_END, t, [job, status])

    def arena(self, t: int, used: int, size: int) -> None:
        """ARENA."""
        self.record(RecordType.ARENA, t, [used, size])

    def stack(self, t: int, stack_id: int, name: str, size: int, high_water: int, canary_ok: bool = True) -> None:
        """STACK."""
        name_b = name.encode()[:15]
        words = [(stack_id & 0xFF) | ((1 if canary_ok else 0) << 8) | (len(name_b) << 16), size, high_water]
        self.record(RecordType.STACK, t, words + _pack_text(name_b))

    def cache_op(self, t: int, op: int, address: int, length: int) -> None:
        """CACHE_OP (1 clean, 2 invalidate, 3 both)."""
        self.record(RecordType.CACHE_OP, t, [op, address, length])

    def buffer_crc(self, t: int, which: int, crc: int, length: int) -> None:
        """BUFFER_CRC (0 input, 1 output)."""
        self.record(RecordType.BUFFER_CRC, t, [which, crc, length])

    def mark(self, t: int, mark_id: int) -> None:
        """MARK."""
        self.record(RecordType.MARK, t, [mark_id])

    def value(self, t: int, value_id: int, value: int) -> None:
        """VALUE."""
        self.record(RecordType.VALUE, t, [value_id, value])

    def work(self, t: int, index: int, amount: int) -> None:
        """WORK: the open layer's work count."""
        self.record(RecordType.WORK, t, [index, amount])

    def cpu_counter_config(self, t: int, source: int, events: Sequence[int]) -> None:
        """CPU_COUNTER_CONFIG: source | n << 8, then the event numbers, two 16-bit ones per word."""
        packed = [events[i] | ((events[i + 1] if i + 1 < len(events) else 0) << 16) for i in range(0, len(events), 2)]
        self.record(RecordType.CPU_COUNTER_CONFIG, t, [source | (len(events) << 8), *packed])

    def cpu_counters(self, t: int, index: int, source: int, values: Sequence[int]) -> None:
        """CPU_COUNTERS: layer index | source << 16 | n << 24, then the values."""
        self.record(RecordType.CPU_COUNTERS, t, [index | (source << 16) | (len(values) << 24), *values])

    def task_info(self, t: int, task: int, name: str, priority: int = 1) -> None:
        """TASK_INFO: task id, priority | name length << 16, the name."""
        data = name.encode()
        self.record(RecordType.TASK_INFO, t, [task, priority | (len(data) << 16), *_pack_text(data)])

    def task_switch(self, t: int, task: int) -> None:
        """TASK_SWITCH: ``task`` was switched in."""
        self.record(RecordType.TASK_SWITCH, t, [task])

    def isr_enter(self, t: int, exception: int) -> None:
        """ISR_ENTER: an interrupt handler started."""
        self.record(RecordType.ISR_ENTER, t, [exception])

    def isr_exit(self, t: int, exception: int) -> None:
        """ISR_EXIT: it returns."""
        self.record(RecordType.ISR_EXIT, t, [exception])

    def isr_info(self, t: int, exception: int, name: str) -> None:
        """ISR_INFO: the name of an exception number."""
        name_b = name.encode()[:31]
        self.record(RecordType.ISR_INFO, t, [(exception & 0x1FF) | (len(name_b) << 16), *_pack_text(name_b)])

    def npu_buffer(self, t: int, job: int, role: int, address: int, length: int) -> None:
        """NPU_BUFFER: job ``job`` reads (role 0) or writes (role 1) ``length`` bytes at ``address``."""
        self.record(RecordType.NPU_BUFFER, t, [job, role, address, length])

    def cpu_write(self, t: int, address: int, length: int) -> None:
        """CPU_WRITE: the CPU finished writing a buffer."""
        self.record(RecordType.CPU_WRITE, t, [address, length])

    def cpu_read(self, t: int, address: int, length: int) -> None:
        """CPU_READ: the CPU starts reading a buffer."""
        self.record(RecordType.CPU_READ, t, [address, length])

    # -- hardware (DWT) packets and timestamps, as a SWO stream carries them ---------------------
    def local_timestamp(self, delta: int, tc: int = 0) -> None:
        """A local timestamp (LTS1 format): ``delta`` ticks since the previous one."""
        if not 0 < delta < 1 << 28:
            raise ValueError(f"local timestamp delta {delta} is not in 1..2^28-1")
        groups = []
        rest = delta
        while True:
            groups.append(rest & 0x7F)
            rest >>= 7
            if not rest:
                break
        self.out.append(0xC0 | (tc & 3) << 4)
        self.out += bytes(g | (0x80 if i < len(groups) - 1 else 0) for i, g in enumerate(groups))

    def overflow(self) -> None:
        """An ITM overflow packet: the target dropped trace data here."""
        self.out.append(0x70)

    def exception(self, number: int, action: int) -> None:
        """DWT exception trace: ``action`` 1 entered, 2 exited, 3 returned to ``number``."""
        self._hardware(1, 2, (number & 0xFF) | ((number >> 8) & 1) << 8 | (action & 3) << 12)

    def data_address(self, comparator: int, address: int, size: int = 4) -> None:
        """DWT data trace address (size 2: the Armv7-M address offset, bits 15:0)."""
        self._hardware(8 | (comparator & 3) << 1 | 1, size, address)

    def data_pc(self, comparator: int, pc: int) -> None:
        """DWT data trace PC value."""
        self._hardware(8 | (comparator & 3) << 1, 4, pc)

    def data_value(self, comparator: int, value: int, write: bool, size: int = 4) -> None:
        """DWT data trace data value, read or write."""
        self._hardware(16 | (comparator & 3) << 1 | int(write), size, value)

    def _hardware(self, discriminator: int, size: int, payload: int) -> None:
        code = {1: 1, 2: 2, 4: 3}[size]
        self.out.append((discriminator << 3) | 0x04 | code)
        self.out += (payload & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


# -- bulk encoding (benchmarks, large test streams) ----------------------------------------------


@dataclasses.dataclass(frozen=True)
class SlotSpec:
    """One record of the per-inference template of :func:`encode_inferences`.

    Attributes:
        type: Record type.
        offset: Cycles after the inference start at which it is stamped.
        words: Payload words after the time word; the string ``"inference"`` is replaced by the
            inference number, ``"hi"`` by the time's high word.
        jitter: Extra cycles added per inference: ``(inference * 7919) % (jitter + 1)``.
    """

    type: int
    offset: int
    words: tuple[int | str, ...]
    jitter: int = 0


def encode_inferences(
    template: Sequence[SlotSpec],
    count: int,
    period: int,
    start: int = 0,
    first_number: int = 0,
    first_sequence: int = 0,
    sync: bool = True,
) -> bytes:
    """Encode ``count`` inferences that each follow ``template``, vectorised with numpy.

    Inference ``i`` starts at ``start + i * period``; slot times are ``start + offset + jitter``.
    Produces exactly the bytes :class:`TelemetryEncoder` would for the same records.
    """
    n = np.arange(count, dtype=np.uint64)
    numbers = (n + np.uint64(first_number)) & np.uint64(0xFFFFFFFF)
    base = np.uint64(start) + n * np.uint64(period)
    per_inference = len(template)
    table = np.array(CRC16_TABLE, np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    parts: list[np.ndarray] = []
    if sync:
        parts.append(np.broadcast_to(np.frombuffer(SYNC_BYTES, np.uint8), (count, len(SYNC_BYTES))))
    for s, slot in enumerate(template):
        jitter = (n * np.uint64(7919)) % np.uint64(slot.jitter + 1) if slot.jitter else np.uint64(0)
        t = base + np.uint64(slot.offset) + jitter
        words = [t & np.uint64(0xFFFFFFFF)]
        for w in slot.words:
            if w == "inference":
                words.append(numbers)
            elif w == "hi":
                words.append(t >> np.uint64(32))
            else:
                words.append(np.full(count, int(w) & 0xFFFFFFFF, np.uint64))
        seq = (np.uint64(first_sequence) + n * np.uint64(per_inference) + np.uint64(s)) & np.uint64(0xFF)
        head20 = np.uint64((slot.type & 0x3F) | (len(words) << 6)) | (seq << np.uint64(12))
        acc = head20.copy()
        for w in words:
            acc = (((acc << np.uint64(5)) | (acc >> np.uint64(27))) & mask) ^ (w & mask)
        crc = np.full(count, 0xFFFF, np.uint64)
        for i in range(4):
            index = ((crc >> np.uint64(8)) ^ (acc >> np.uint64(8 * i))) & np.uint64(0xFF)
            crc = ((crc << np.uint64(8)) ^ table[index.astype(np.intp)]) & np.uint64(0xFFFF)
        head = head20 | ((crc & np.uint64(0xFFF)) << np.uint64(20))
        block = np.empty((count, 5 * (len(words) + 1)), np.uint8)
        for k, value in enumerate([head, *words]):
            block[:, 5 * k] = HEADER_PACKET_BYTE if k == 0 else DATA_PACKET_BYTE
            v = value.astype("<u4")
            block[:, 5 * k + 1 : 5 * k + 5] = v.view(np.uint8).reshape(count, 4)
        parts.append(block)
        if sync and slot.type == RecordType.INFERENCE_BEGIN and s != 0:
            raise ValueError("with sync=True the template must start with INFERENCE_BEGIN")
    return np.concatenate(parts, axis=1).tobytes()
