"""Samples a periodic interrupt (or a probe, or the DWT over SWO) took, as columns.

The telemetry decoder turns the sampler's records into these (:mod:`tracer.telemetry.samples`)
and puts them on the timeline (``InferenceTimeline.samples``); the analysis reads them there
(per-operator NPU time, CPU hot spots). Samples a firmware took to measure its own cost are
counted, never kept as samples.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

NO_VALUE = -1
MAX_COUNTERS = 8  # PMU event counters an NPU sample carries at most
NPU_STATUS_RUNNING = 1  # Ethos-U STATUS bit 0


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

    @classmethod
    def concat(cls, parts: Sequence[NpuSamples]) -> NpuSamples:
        """The rows of ``parts`` one after another."""
        return cls(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(cls)))


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

    @classmethod
    def concat(cls, parts: Sequence[PcSamples]) -> PcSamples:
        """The rows of ``parts`` one after another."""
        return cls(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(cls)))


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

    @classmethod
    def none(cls) -> Samples:
        """No sample and no sampler description (a capture without a sampler)."""
        return cls(NpuSamples.from_rows([]), PcSamples.from_rows([]), (), 0)

    @staticmethod
    def concat(parts: Sequence[Samples]) -> Samples:
        """The samples of ``parts`` one after another (each kind in the parts' order)."""
        if not parts:
            return Samples.none()
        npu = NpuSamples.concat([p.npu for p in parts])
        pc = PcSamples.concat([p.pc for p in parts])
        return Samples(npu, pc, tuple(i for p in parts for i in p.info), sum(p.calibration for p in parts))
