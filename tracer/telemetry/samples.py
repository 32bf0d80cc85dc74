"""Samples taken by a periodic interrupt (``trc_sampler.h``), as columns.

The firmware's sampler emits three record types (wire format: ``firmware_snippets/README.md``):

- ``NPU_SAMPLE``: the Ethos-U's QREAD (byte offset of the command under execution), STATUS (bit 0
  running), QBASE and QSIZE (which command stream, how long), flags (event counters that follow,
  PMCCNTR present, calibration) with PMCCNTR bits 32-47, then PMCCNTR bits 0-31 and the counters;
- ``PC_SAMPLE``: the interrupted code's PC and the exception that was active (0: thread mode);
- ``SAMPLER_INFO``: what is sampled, the nominal period and its dither, the cost per interrupt.

The telemetry decoder keeps records of types it does not assemble itself as
:class:`~tracer.base.timeline.TelemetryRecord` (checked, in stream order); this module turns
those into numpy columns. Samples a firmware took to measure its own cost are flagged
"calibration" on the wire and are counted here, never returned as samples.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from tracer.base.timeline import InferenceTimeline, TelemetryRecord
from tracer.telemetry.wire import (
    MARKER_COST_UNKNOWN,
    NPU_SAMPLE_COUNTERS_MASK,
    NPU_SAMPLE_CYCLES,
    NPU_STATUS_RUNNING,
    PC_SAMPLE_CALIBRATION,
    SAMPLE_CALIBRATION,
    SAMPLER_DWT,
    SAMPLER_HOW_SHIFT,
    SAMPLER_NPU,
    SAMPLER_PC,
    SAMPLER_PROBE,
    SAMPLER_TIMER,
    RecordType,
)

NO_VALUE = -1
MAX_COUNTERS = 8
SOURCE_NAMES = {
    SAMPLER_TIMER >> SAMPLER_HOW_SHIFT: "timer interrupt",
    SAMPLER_PROBE >> SAMPLER_HOW_SHIFT: "probe",
    SAMPLER_DWT >> SAMPLER_HOW_SHIFT: "DWT PC sampling (SWO)",
}


@dataclasses.dataclass(frozen=True)
class NpuSamples:
    """NPU register samples, one row each, in time order.

    Attributes:
        cycle: When the sample was taken (target cycles; for a probe, the host's estimate).
        qread: QREAD: byte offset of the command the NPU was executing.
        status: STATUS (bit 0: running).
        qbase: Low 32 bits of QBASE (which command stream).
        qsize: QSIZE: the command stream's length in bytes.
        pmu_cycles: PMCCNTR (48 bits), -1 where not read.
        counters: PMU event counters, shape (rows, 8), -1 where not read.
        inference: The inference in progress, -1 outside any.
    """

    cycle: np.ndarray
    qread: np.ndarray
    status: np.ndarray
    qbase: np.ndarray
    qsize: np.ndarray
    pmu_cycles: np.ndarray
    counters: np.ndarray
    inference: np.ndarray

    def __len__(self) -> int:
        return int(self.cycle.shape[0])

    @property
    def running(self) -> np.ndarray:
        """True where STATUS said the NPU was running."""
        return (self.status & NPU_STATUS_RUNNING) != 0

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, int, int, int, int, int, tuple[int, ...], int]]) -> NpuSamples:
        """From (cycle, qread, status, qbase, qsize, pmu_cycles, counters, inference) tuples."""
        rows = list(rows)
        counters = np.full((len(rows), MAX_COUNTERS), NO_VALUE, np.int64)
        for i, row in enumerate(rows):
            values = row[6][:MAX_COUNTERS]
            counters[i, : len(values)] = values
        cycle, qread, status, qbase, qsize, pmu_cycles = (np.array([r[k] for r in rows], np.int64) for k in range(6))
        inference = np.array([r[7] for r in rows], np.int64)
        return cls(cycle, qread, status, qbase, qsize, pmu_cycles, counters, inference)

    def where(self, mask: np.ndarray) -> NpuSamples:
        """The rows where ``mask`` holds."""
        return NpuSamples(*(getattr(self, f.name)[mask] for f in dataclasses.fields(self)))


@dataclasses.dataclass(frozen=True)
class PcSamples:
    """Program-counter samples, one row each, in time order.

    Attributes:
        cycle: When the sample was taken (target cycles).
        pc: The interrupted (or sampled) program counter.
        exception: The exception active when the code was interrupted (0: thread mode; -1 unknown).
        inference: The inference in progress, -1 outside any.
    """

    cycle: np.ndarray
    pc: np.ndarray
    exception: np.ndarray
    inference: np.ndarray

    def __len__(self) -> int:
        return int(self.cycle.shape[0])

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, int, int, int]]) -> PcSamples:
        """From (cycle, pc, exception, inference) tuples."""
        rows = list(rows)
        return cls(*(np.array([r[k] for r in rows], np.int64) for k in range(4)))


@dataclasses.dataclass(frozen=True, slots=True)
class SamplerInfo:
    """What the firmware said about its sampling (SAMPLER_INFO).

    Attributes:
        cycle: When it said so.
        npu: NPU samples are taken.
        pc: PC samples are taken.
        how: ``"timer interrupt"``, ``"probe"`` or ``"source N"``.
        period_cycles: The nominal period in target cycles.
        dither_cycles: The period varies uniformly over ``period +- dither/2``.
        cost_cycles: What one interrupt's samples cost, in target cycles (None: not measured).
    """

    cycle: int
    npu: bool
    pc: bool
    how: str
    period_cycles: int
    dither_cycles: int
    cost_cycles: float | None

    def to_json(self) -> dict[str, object]:
        """As a JSON object."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Samples:
    """Everything a capture's sampler recorded.

    Attributes:
        npu: NPU register samples.
        pc: PC samples.
        info: The sampler's descriptions, in order (usually one).
        calibration: Records the firmware took to measure its cost (not samples).
    """

    npu: NpuSamples
    pc: PcSamples
    info: tuple[SamplerInfo, ...]
    calibration: int

    @property
    def empty(self) -> bool:
        """True when there is no sample at all."""
        return not len(self.npu) and not len(self.pc)


def read_samples(timeline: InferenceTimeline) -> Samples:
    """Decode the sampler's records among ``timeline.records``."""
    return samples_from_records(timeline.records)


def samples_from_records(records: Iterable[TelemetryRecord]) -> Samples:
    """Decode NPU_SAMPLE, PC_SAMPLE and SAMPLER_INFO records (others are skipped)."""
    npu: list[tuple[int, int, int, int, int, int, tuple[int, ...], int]] = []
    pc: list[tuple[int, int, int, int]] = []
    info: list[SamplerInfo] = []
    calibration = 0
    for record in records:
        w = record.words
        inference = NO_VALUE if record.inference is None else record.inference
        if record.type == RecordType.NPU_SAMPLE:
            flags = w[4]
            if flags & SAMPLE_CALIBRATION:
                calibration += 1
                continue
            at = 5
            pmu = NO_VALUE
            if flags & NPU_SAMPLE_CYCLES and len(w) > at:
                pmu = ((flags >> 16) << 32) | w[at]
                at += 1
            n = min(flags & NPU_SAMPLE_COUNTERS_MASK, MAX_COUNTERS, len(w) - at)
            npu.append((record.cycle, w[0], w[1], w[2], w[3], pmu, tuple(w[at : at + n]), inference))
        elif record.type == RecordType.PC_SAMPLE:
            if w[1] & PC_SAMPLE_CALIBRATION:
                calibration += 1
                continue
            pc.append((record.cycle, w[0], w[1] & 0x1FF, inference))
        elif record.type == RecordType.SAMPLER_INFO:
            how = (w[0] >> SAMPLER_HOW_SHIFT) & 0xFF
            info.append(
                SamplerInfo(
                    cycle=record.cycle,
                    npu=bool(w[0] & SAMPLER_NPU),
                    pc=bool(w[0] & SAMPLER_PC),
                    how=SOURCE_NAMES.get(how, f"source {how}"),
                    period_cycles=w[1],
                    dither_cycles=w[2],
                    cost_cycles=None if w[3] == MARKER_COST_UNKNOWN else w[3] / 16,
                )
            )
    return Samples(NpuSamples.from_rows(npu), PcSamples.from_rows(pc), tuple(info), calibration)
