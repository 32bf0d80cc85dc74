"""The typed facts telemetry decodes from the records a timeline keeps (``tracer.telemetry.record_facts``).

The analysis reads only these fields, never record words, so every record kind it needs must land
in its field with the values the wire format gives (``firmware_snippets/README.md``), and records
joining a timeline later (a probe's NPU samples, SWO PC samples) must give what decoding them all
at once gives.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.base.firmware_marks import NPU_READS, NPU_WRITES, CpuAccess, NpuBuffer, SyncPin
from tracer.base.timeline import InferenceTimeline, TelemetryRecord
from tracer.telemetry.record_facts import add_records, attach_record_facts, record_facts
from tracer.telemetry.wire import NPU_SAMPLE_CYCLES, SAMPLE_CALIBRATION, SAMPLER_NPU, SAMPLER_TIMER, RecordType


def _records() -> list[TelemetryRecord]:
    r = TelemetryRecord
    return [
        r(RecordType.SAMPLER_INFO, 5, None, (SAMPLER_NPU | SAMPLER_TIMER, 1000, 100, 32)),
        r(RecordType.NPU_BUFFER, 10, 0, (7, NPU_READS, 0x3000_0000, 4096)),
        r(RecordType.NPU_BUFFER, 11, 0, (7, NPU_WRITES, 0x3000_1000, 2048)),
        r(RecordType.CPU_WRITE, 12, 0, (0x3000_0000, 4096)),
        r(RecordType.SYNC_PIN, 13, 0, (1 | 2 << 8, 0)),
        r(RecordType.NPU_SAMPLE, 20, 0, (0x40, 1, 0x1234, 0x800, NPU_SAMPLE_CYCLES | 3 << 16, 99)),
        r(RecordType.NPU_SAMPLE, 25, 0, (0, 0, 0, 0, SAMPLE_CALIBRATION)),
        r(RecordType.CPU_READ, 30, 0, (0x3000_1000, 2048)),
        r(RecordType.PC_SAMPLE, 31, 0, (0x0800_0100, 15)),
        r(RecordType.SYNC_PIN, 40, None, (0 | 2 << 8, 1)),
        r(RecordType.TASK_SWITCH, 41, None, (0x2000_0000,)),  # not the analysis's: no field
    ]


def test_each_record_kind_lands_in_its_field() -> None:
    facts = record_facts(_records())
    assert facts.npu_buffers == [
        NpuBuffer(10, 7, NPU_READS, 0x3000_0000, 4096),
        NpuBuffer(11, 7, NPU_WRITES, 0x3000_1000, 2048),
    ]
    assert facts.cpu_accesses == [CpuAccess(12, 0x3000_0000, 4096, True), CpuAccess(30, 0x3000_1000, 2048, False)]
    assert facts.sync_pins == [SyncPin(13, 1, 2, 0), SyncPin(40, 0, 2, 1)]
    samples = facts.samples
    assert samples.calibration == 1 and len(samples.npu) == 1 and len(samples.pc) == 1
    assert samples.npu.qread.tolist() == [0x40] and samples.npu.pmu_cycles.tolist() == [(3 << 32) | 99]
    assert samples.pc.pc.tolist() == [0x0800_0100] and samples.pc.exception.tolist() == [15]
    (info,) = samples.info
    assert info.npu and not info.pc and info.how == "timer interrupt" and info.cost_cycles == 2.0


def test_records_added_later_give_what_decoding_all_at_once_gives() -> None:
    """``add_records`` (a probe's and the SWO's records after the decoder's) equals one decode of all."""
    records = _records()
    whole = InferenceTimeline(records=records)
    attach_record_facts(whole)
    joined = InferenceTimeline(records=records[:6])
    attach_record_facts(joined)
    add_records(joined, records[6:])
    assert joined.records == records
    assert joined.npu_buffers == whole.npu_buffers and joined.cpu_accesses == whole.cpu_accesses
    assert joined.sync_pins == whole.sync_pins
    a, b = joined.samples, whole.samples
    assert (a.info, a.calibration) == (b.info, b.calibration) and len(a.npu) == 1 and len(a.pc) == 1
    for kind in ("npu", "pc"):
        for field in dataclasses.fields(getattr(a, kind)):
            assert np.array_equal(getattr(getattr(a, kind), field.name), getattr(getattr(b, kind), field.name))
