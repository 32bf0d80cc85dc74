"""Samples taken by a periodic interrupt (``trc_sampler.h``), decoded into columns.

The firmware's sampler emits three record types (wire format: ``firmware_snippets/README.md``):

- ``NPU_SAMPLE``: the Ethos-U's QREAD (byte offset of the command under execution), STATUS (bit 0
  running), QBASE and QSIZE (which command stream, how long), flags (event counters that follow,
  PMCCNTR present, calibration) with PMCCNTR bits 32-47, then PMCCNTR bits 0-31 and the counters;
- ``PC_SAMPLE``: the interrupted code's PC and the exception that was active (0: thread mode);
- ``SAMPLER_INFO``: what is sampled, the nominal period and its dither, the cost per interrupt.

The telemetry decoder keeps records of types it does not assemble itself as
:class:`~tracer.base.timeline.TelemetryRecord` (checked, in stream order); this module turns
those into the columns of :mod:`tracer.base.samples`, which the timeline carries
(:mod:`tracer.telemetry.record_facts`). Samples a firmware took to measure its own cost are
flagged "calibration" on the wire and are counted here, never returned as samples.
"""

from __future__ import annotations

from collections.abc import Iterable

from tracer.base.samples import MAX_COUNTERS, NO_VALUE, NpuSamples, PcSamples, SamplerInfo, Samples
from tracer.base.timeline import TelemetryRecord
from tracer.telemetry.wire import (
    MARKER_COST_UNKNOWN,
    NPU_SAMPLE_COUNTERS_MASK,
    NPU_SAMPLE_CYCLES,
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

SOURCE_NAMES = {
    SAMPLER_TIMER >> SAMPLER_HOW_SHIFT: "timer interrupt",
    SAMPLER_PROBE >> SAMPLER_HOW_SHIFT: "probe",
    SAMPLER_DWT >> SAMPLER_HOW_SHIFT: "DWT PC sampling (SWO)",
}


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
