"""Sampler records for streams built with the reference encoder (tests only).

The reference encoder (``TelemetryEncoder``) writes any record with ``record(type, t, words)``;
these helpers lay out the sampler's records (``NPU_SAMPLE``, ``PC_SAMPLE``, ``SAMPLER_INFO``) and
the DWT's periodic PC-sample packet as the wire-format reference (``firmware_snippets/README.md``)
describes them, independently of the decoder in ``tracer.telemetry.samples``.
"""

from __future__ import annotations

from collections.abc import Sequence

from telemetry_encoder import TelemetryEncoder

from tracer.analysis.npu_operators import NpuOperatorProfile
from tracer.analysis.sampling import sampling_analysis
from tracer.base.timeline import InferenceTimeline
from tracer.budget.command_stream import CommandStream
from tracer.budget.model import Budget, ModelBudget
from tracer.telemetry.wire import RecordType

__all__ = ["TelemetryEncoder", "dwt_pc_sample", "npu_sample", "pc_sample", "sampler_info"]


def npu_sample(
    enc: TelemetryEncoder,
    t: int,
    qread: int,
    status: int,
    qbase: int,
    qsize: int,
    pmu_cycles: int | None = None,
    counters: Sequence[int] = (),
    calibration: bool = False,
) -> None:
    """NPU_SAMPLE: QREAD, STATUS, QBASE, QSIZE, flags | PMCCNTR high, [PMCCNTR low], counters."""
    flags = len(counters[:8]) | (0x100 if calibration else 0)
    words = [qread, status, qbase, qsize, flags]
    if pmu_cycles is not None:
        words[4] |= 0x10 | (((pmu_cycles >> 32) & 0xFFFF) << 16)
        words.append(pmu_cycles & 0xFFFFFFFF)
    enc.record(RecordType.NPU_SAMPLE, t, words + list(counters[:8]))


def pc_sample(enc: TelemetryEncoder, t: int, pc: int, exception: int = 0, calibration: bool = False) -> None:
    """PC_SAMPLE: the interrupted PC, the exception active then."""
    enc.record(RecordType.PC_SAMPLE, t, [pc, (exception & 0x1FF) | ((1 << 16) if calibration else 0)])


def sampler_info(enc: TelemetryEncoder, t: int, what: int, period: int, dither: int, cost_q4: int = 0xFFFFFFFF) -> None:
    """SAMPLER_INFO: what is sampled (bits), period and dither in ticks, cost in 1/16 ticks."""
    enc.record(RecordType.SAMPLER_INFO, t, [what, period, dither, cost_q4])


def dwt_pc_sample(enc: TelemetryEncoder, pc: int | None) -> None:
    """The DWT's periodic PC sample: hardware packet, discriminator 2, 4 bytes (``None``: the core
    was sleeping, a 1-byte packet)."""
    if pc is None:
        enc.out += bytes([(2 << 3) | 0x04 | 1, 0])
    else:
        enc.out += bytes([(2 << 3) | 0x04 | 3]) + (pc & 0xFFFFFFFF).to_bytes(4, "little")


def npu_profile(
    timeline: InferenceTimeline, streams: Sequence[CommandStream], budget_clock_hz: int | None = None
) -> NpuOperatorProfile | None:
    """The per-operator NPU profile the sampling analysis makes of ``timeline``, against a budget
    of Vela's command streams ``streams`` (and its NPU clock) only; None without NPU samples."""
    budget = Budget(ModelBudget(clock_hz=budget_clock_hz), command_streams=tuple(streams))
    sampling = sampling_analysis(timeline, budget)
    return sampling.npu if sampling is not None else None
