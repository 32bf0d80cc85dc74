"""What the firmware marked besides its layers: the buffers each NPU job reads and writes, the
CPU's reads and writes of buffers, and a power meter's sync pin.

The telemetry decoder turns the records of ``trc_npu_buffer``, ``trc_cpu_write``,
``trc_cpu_read`` and ``trc_sync_pin`` into these (:mod:`tracer.telemetry.record_facts`) and puts
them on the timeline; the coherency checks and the power meter's alignment read them there.
"""

from __future__ import annotations

import dataclasses

NPU_READS = 0  # NpuBuffer.role: the NPU job reads the buffer (an input)
NPU_WRITES = 1  # ... the NPU job writes it (an output)


@dataclasses.dataclass(frozen=True, slots=True)
class NpuBuffer:
    """A buffer an NPU job said it reads or writes (``trc_npu_buffer``).

    Attributes:
        cycle: When the firmware said so (before the job begins).
        job: The firmware's id of the job.
        role: :data:`NPU_READS` or :data:`NPU_WRITES`.
        address: The buffer's first byte.
        length: Its length in bytes.
    """

    cycle: int
    job: int
    role: int
    address: int
    length: int


@dataclasses.dataclass(frozen=True, slots=True)
class CpuAccess:
    """The CPU finished writing a buffer (``trc_cpu_write``) or starts reading one (``trc_cpu_read``).

    Attributes:
        cycle: When.
        address: The buffer's first byte.
        length: Its length in bytes.
        write: True for a write, False for a read.
    """

    cycle: int
    address: int
    length: int
    write: bool


@dataclasses.dataclass(frozen=True, slots=True)
class SyncPin:
    """The firmware set a sync pin a power meter records (``trc_sync_pin``).

    Attributes:
        cycle: When (right after the pin changed).
        level: The pin's new level (0 or 1).
        meter_input: The meter's digital input the pin is wired to.
        mark: The firmware's mark number.
    """

    cycle: int
    level: int
    meter_input: int
    mark: int
