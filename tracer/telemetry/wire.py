"""The telemetry wire format of ``firmware_snippets`` (the reference is its README).

The firmware emits *records* as ITM software (SWIT) packets, through the ITM stimulus ports (SWO)
or a software encoder writing the same packet bytes to a UART or RTT:

- port 0 (:data:`PORT_TEXT`): console text, 1, 2 or 4 characters per packet;
- port 24 (:data:`PORT_HEADER`): one 32-bit header per record::

      bits 0-5    type            (:class:`RecordType`)
      bits 6-11   payload words that follow on the data port (1..63)
      bits 12-19  sequence number (previous record's + 1, modulo 256)
      bits 20-31  check           (:func:`check_value` over bits 0-19 and the payload)

- port 25 (:data:`PORT_DATA`): the payload words, 4-byte packets. Word 0 of every record is the
  low 32 bits of the target's cycle counter; the host unwraps it to 64 bits, and the records that
  carry the high word (target info, time sync, inference begin) re-anchor it.

A record is accepted only with the announced number of words, a matching check and a
known shape; a sequence gap counts the records lost in between. Nothing damaged becomes a number.
"""

from __future__ import annotations

import enum

PORT_TEXT = 0
PORT_HEADER = 24
PORT_DATA = 25

WIRE_VERSION = 1
MAX_WORDS = 63

# Header byte of a 4-byte SWIT packet on the header and data ports (port << 3 | size code 3).
HEADER_PACKET_BYTE = (PORT_HEADER << 3) | 3
DATA_PACKET_BYTE = (PORT_DATA << 3) | 3

# What the software transport sends before each inference: 9 zeros and 0x80. Even after lost
# bytes have the decoder misread up to four zeros as a payload, five remain: an ITM sync packet.
SYNC_BYTES = bytes(9) + b"\x80"

LAYER_CALIBRATION = 0xFFFF  # layer index of trc_measure_marker_cost(): not a layer of the model
MARKER_COST_UNKNOWN = 0xFFFFFFFF
MARK_RESERVED = 0xFFFFFF00  # mark ids from here on are the library's


class RecordType(enum.IntEnum):
    """Record types (``enum trc_record_type`` in ``trc.h``), 6 bits; 0 is never valid."""

    TARGET_INFO = 0x01
    TIME_SYNC = 0x02
    DROPPED = 0x03
    INFERENCE_BEGIN = 0x08
    INFERENCE_END = 0x09
    LAYER_BEGIN = 0x0A
    LAYER_END = 0x0B
    LAYER_INFO = 0x0C
    PMU_CONFIG = 0x10
    PMU_SNAPSHOT = 0x11
    NPU_JOB_BEGIN = 0x12
    NPU_JOB_END = 0x13
    ARENA = 0x18
    STACK = 0x19
    CACHE_OP = 0x1A
    BUFFER_CRC = 0x1B
    MARK = 0x20
    VALUE = 0x21
    ISR_ENTER = 0x28  # an interrupt handler started: exception number
    ISR_EXIT = 0x29  # it returns: exception number
    CPU_WRITE = 0x2A  # the CPU finished writing a buffer: address, length
    ISR_INFO = 0x2B  # an exception number's name: exception | name length << 16, name
    NPU_BUFFER = 0x2C  # an NPU job reads (role 0) or writes (role 1) a buffer: job, role, address, length
    # (roles: tracer.base.firmware_marks.NPU_READS, NPU_WRITES)
    CPU_READ = 0x2D  # the CPU starts reading a buffer: address, length
    WORK = 0x30  # the open layer's work count: layer index, amount
    CPU_COUNTERS = 0x31  # CPU counter changes over a layer: index | source << 16 | n << 24, n values
    CPU_COUNTER_CONFIG = 0x32  # what they count: source | n << 8, event numbers (16 bits, two per word)
    TASK_SWITCH = 0x33  # an RTOS task was switched in: task id
    TASK_INFO = 0x34  # a task's name: task id, priority | name length << 16, name
    TASK_DELETE = 0x35  # a task was deleted (its id may be reused): task id
    # Sampling from a periodic interrupt (firmware_snippets/include/trc_sampler.h); decoded from
    # the kept records by tracer.telemetry.samples.
    NPU_SAMPLE = 0x38  # QREAD, STATUS, QBASE, QSIZE, flags | PMCCNTR high << 16, [PMCCNTR low], counters
    PC_SAMPLE = 0x39  # the interrupted code's PC, exception number | flags
    SAMPLER_INFO = 0x3A  # what is sampled, period, dither, cost per interrupt (1/16 ticks)
    # A sync pin the power meter records was set (trc_sync_pin; kept, read by tracer.power.sync).
    SYNC_PIN = 0x3B  # level (bit 0) | meter input << 8; mark number


# Payload words each type needs at least (word 0, the time, included). More words than this are
# accepted and ignored (room for later versions); fewer make the record damaged.
MIN_WORDS: dict[RecordType, int] = {
    RecordType.TARGET_INFO: 7,
    RecordType.TIME_SYNC: 2,
    RecordType.DROPPED: 2,
    RecordType.INFERENCE_BEGIN: 3,
    RecordType.INFERENCE_END: 3,
    RecordType.LAYER_BEGIN: 2,
    RecordType.LAYER_END: 2,
    RecordType.LAYER_INFO: 3,
    RecordType.PMU_CONFIG: 2,
    RecordType.PMU_SNAPSHOT: 4,
    RecordType.NPU_JOB_BEGIN: 2,
    RecordType.NPU_JOB_END: 3,
    RecordType.ARENA: 3,
    RecordType.STACK: 4,
    RecordType.CACHE_OP: 4,
    RecordType.BUFFER_CRC: 4,
    RecordType.MARK: 2,
    RecordType.VALUE: 3,
    RecordType.ISR_ENTER: 2,
    RecordType.ISR_EXIT: 2,
    RecordType.CPU_WRITE: 3,
    RecordType.ISR_INFO: 2,
    RecordType.NPU_BUFFER: 5,
    RecordType.CPU_READ: 3,
    RecordType.WORK: 3,
    RecordType.CPU_COUNTERS: 2,
    RecordType.CPU_COUNTER_CONFIG: 2,
    RecordType.TASK_SWITCH: 2,
    RecordType.TASK_INFO: 3,
    RecordType.TASK_DELETE: 2,
    RecordType.NPU_SAMPLE: 6,
    RecordType.PC_SAMPLE: 3,
    RecordType.SAMPLER_INFO: 5,
    RecordType.SYNC_PIN: 3,
}


class TimeSource(enum.IntEnum):
    """Where the target's timestamps come from (TARGET_INFO word 3, bits 0-7)."""

    UNKNOWN = 0
    DWT = 1
    SYSTICK = 2
    SYSCOUNTER = 3
    PMU = 4
    USER = 5

    @property
    def label(self) -> str:
        """The ``clock_source`` string of the report."""
        return {
            TimeSource.UNKNOWN: "unknown",
            TimeSource.DWT: "dwt",
            TimeSource.SYSTICK: "systick",
            TimeSource.SYSCOUNTER: "syscounter",
            TimeSource.PMU: "pmu",
            TimeSource.USER: "user",
        }[self]


INFO_NPU_PMU_SIMULATED = 1 << 8
INFO_EMULATED = 1 << 9

PMU_CONFIG_SIMULATED = 1  # PMU_CONFIG word 1 bits 16-23
PMU_SINCE_RESET = 1  # PMU_SNAPSHOT word 1 bits 8-15

ENGINE_CPU = 0
ENGINE_NPU = 1

BUFFER_INPUT = 0
BUFFER_OUTPUT = 1

COUNTERS_PMU = 1  # CPU_COUNTERS sources: the Armv8.1-M PMU (values: counts over the layer)
COUNTERS_DWT = 2  # the DWT profiling counters (values: 8-bit counter at begin | at end << 8)
DWT_COUNTER_NAMES = {1: "DWT_CPI", 2: "DWT_EXC", 3: "DWT_SLEEP", 4: "DWT_LSU", 5: "DWT_FOLD"}
NPU_SAMPLE_COUNTERS_MASK = 0xF  # NPU_SAMPLE word 5 (word 0 is the time): event counters that follow
NPU_SAMPLE_CYCLES = 0x10  # ... the PMU cycle counter's low word follows (its bits 32-47 in bits 16-31)
SAMPLE_CALIBRATION = 0x100  # ... taken to measure the cost, not a sample
PC_SAMPLE_CALIBRATION = 1 << 16  # PC_SAMPLE word 2: exception number bits 0-8 | this flag
SAMPLER_NPU = 1  # SAMPLER_INFO word 1: NPU samples are taken
SAMPLER_PC = 2  # ... PC samples are taken
SAMPLER_TIMER = 1 << 8  # ... from a timer interrupt
SAMPLER_PROBE = 2 << 8  # ... from a probe reading the NPU (records made on the host)
SAMPLER_DWT = 3 << 8  # ... from the DWT's periodic PC sampling over SWO (records made on the host)
SAMPLER_HOW_SHIFT = 8  # bits 8-15 of word 1: how the samples are taken


def _crc16_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        table.append(c & 0xFFFF)
    return tuple(table)


CRC16_TABLE = _crc16_table()  # CRC-16/CCITT, polynomial 0x1021


def check_value(head20: int, words: list[int] | tuple[int, ...]) -> int:
    """The header's 12-bit check.

    A rotate-left-5-and-xor accumulator over header bits 0-19 and each payload word, folded by
    CRC-16/CCITT (initial value 0xFFFF) over its four little-endian bytes; the low 12 bits.

    Args:
        head20: Header bits 0-19 (type, count, sequence).
        words: The payload words.
    """
    acc = head20 & 0xFFFFF
    for word in words:
        acc = (((acc << 5) | (acc >> 27)) & 0xFFFFFFFF) ^ (word & 0xFFFFFFFF)
    crc = 0xFFFF
    for i in range(4):
        crc = ((crc << 8) ^ CRC16_TABLE[((crc >> 8) ^ (acc >> (8 * i))) & 0xFF]) & 0xFFFF
    return crc & 0xFFF


def header_word(record_type: int, sequence: int, words: list[int] | tuple[int, ...]) -> int:
    """The full 32-bit header of a record."""
    head20 = (record_type & 0x3F) | ((len(words) & 0x3F) << 6) | ((sequence & 0xFF) << 12)
    return head20 | (check_value(head20, words) << 20)
