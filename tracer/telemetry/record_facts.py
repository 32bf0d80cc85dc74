"""The typed facts of the records a timeline keeps: samples, NPU buffers, CPU accesses, sync pins.

The telemetry decoder keeps records of types it does not assemble itself
(``InferenceTimeline.records``). Those the analysis needs are decoded here, once, into the
timeline's typed fields (``samples``, ``npu_buffers``, ``cpu_accesses``, ``sync_pins``), so that
no later stage reads record words: :func:`attach_record_facts` whenever a timeline's records are set (the
decoder's timeline, a window's, the session's), :func:`add_records` when records made on the host
(a probe's NPU samples, SWO PC samples) join a timeline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tracer.base.firmware_marks import CpuAccess, NpuBuffer, SyncPin
from tracer.base.samples import Samples
from tracer.base.timeline import InferenceTimeline, TelemetryRecord
from tracer.telemetry.samples import samples_from_records
from tracer.telemetry.wire import RecordType

_SAMPLER = frozenset(int(t) for t in (RecordType.NPU_SAMPLE, RecordType.PC_SAMPLE, RecordType.SAMPLER_INFO))


@dataclasses.dataclass(frozen=True)
class RecordFacts:
    """What a sequence of records says, typed (the timeline's fields of the same names)."""

    samples: Samples
    npu_buffers: list[NpuBuffer]
    cpu_accesses: list[CpuAccess]
    sync_pins: list[SyncPin]


def record_facts(records: Sequence[TelemetryRecord]) -> RecordFacts:
    """Decode the sampler, buffer, CPU access and sync pin records among ``records`` (in their order)."""
    sampler: list[TelemetryRecord] = []
    buffers: list[NpuBuffer] = []
    accesses: list[CpuAccess] = []
    pins: list[SyncPin] = []
    for r in records:
        kind, w = r.type, r.words
        if kind in _SAMPLER:
            sampler.append(r)
        elif kind == RecordType.NPU_BUFFER and len(w) >= 4:
            buffers.append(NpuBuffer(r.cycle, w[0], w[1], w[2], w[3]))
        elif kind in (RecordType.CPU_WRITE, RecordType.CPU_READ) and len(w) >= 2:
            accesses.append(CpuAccess(r.cycle, w[0], w[1], kind == RecordType.CPU_WRITE))
        elif kind == RecordType.SYNC_PIN and len(w) >= 2:
            pins.append(SyncPin(r.cycle, w[0] & 1, (w[0] >> 8) & 0xFF, w[1]))
    return RecordFacts(samples_from_records(sampler), buffers, accesses, pins)


def attach_record_facts(timeline: InferenceTimeline) -> None:
    """Set ``timeline``'s typed record facts from its ``records``."""
    _set(timeline, record_facts(timeline.records))


def add_records(timeline: InferenceTimeline, records: Sequence[TelemetryRecord]) -> None:
    """Append ``records`` to ``timeline.records``, and what they say to its typed facts."""
    if not records:
        return
    facts = record_facts(records)
    timeline.records = [*timeline.records, *records]
    _set(
        timeline,
        RecordFacts(
            Samples.concat([timeline.samples, facts.samples]),
            [*timeline.npu_buffers, *facts.npu_buffers],
            [*timeline.cpu_accesses, *facts.cpu_accesses],
            [*timeline.sync_pins, *facts.sync_pins],
        ),
    )


def _set(timeline: InferenceTimeline, facts: RecordFacts) -> None:
    timeline.samples = facts.samples
    timeline.npu_buffers = facts.npu_buffers
    timeline.cpu_accesses = facts.cpu_accesses
    timeline.sync_pins = facts.sync_pins
