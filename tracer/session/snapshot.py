"""What a front end reads from a session: one immutable snapshot per screen refresh."""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from tracer.analysis.settings import DEFAULT_TOLERANCE_PCT
from tracer.analysis.statistics import CycleSummary
from tracer.base.timeline import LayerInfo, LossCounters
from tracer.session.findings import Diagnosis
from tracer.session.held import Stretch
from tracer.session.memory import MemoryInfo
from tracer.session.ring import InferenceRecord
from tracer.session.window import EventView, InferenceEvents

if TYPE_CHECKING:
    from tracer.analysis.findings import Finding
    from tracer.session.energy import EnergyState


@dataclasses.dataclass(frozen=True)
class LayerRow:
    """One layer as the layers table shows it.

    Attributes:
        info: Index, name, op, engine.
        cycles: Statistics of its complete executions (None before the first).
        excluded: Executions left out because their inference lost data.
        predicted: Predicted cycles in the capture's clock (None without a budget estimate).
        tolerance_pct: Over-budget tolerance.
        planned_engine: Engine the budget planned, if it says.
        isr_hits: Executions an interrupt landed in.
        pmu_mean: Mean NPU PMU counter values over its complete executions.
        note: The budget matcher's note.
        findings: (flag word, severity) of each kind of the gate's findings about this layer.
        calibrated: The calibrated prediction, capture clock (None: no calibration, or its type
            is not calibrated).
        calibration_status: The calibration's status for it (``calibrated``, ``outside`` ...; empty:
            no calibration given).
    """

    info: LayerInfo
    cycles: CycleSummary | None
    excluded: int = 0
    predicted: float | None = None
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT
    planned_engine: str | None = None
    isr_hits: int = 0
    pmu_mean: dict[str, float] = dataclasses.field(default_factory=dict)
    note: str = ""
    findings: tuple[tuple[str, str], ...] = ()
    calibrated: float | None = None
    calibration_status: str = ""

    @property
    def index(self) -> int:
        """The layer index."""
        return self.info.index

    @property
    def ratio(self) -> float | None:
        """Measured p50 over predicted."""
        if self.cycles is None or not self.predicted:
            return None
        return self.cycles.p50 / self.predicted

    @property
    def severity(self) -> str | None:
        """The worst severity among the findings about this layer (None: none)."""
        ranks = {"info": 0, "warning": 1, "error": 2}
        return max((sev for _, sev in self.findings), key=ranks.__getitem__, default=None)

    @property
    def flags(self) -> tuple[str, ...]:
        """Short words for the table's flags column: the findings about it, then what the screen counts."""
        out = [word for word, _ in self.findings]
        if self.excluded:
            out.append(f"lost {self.excluded}")
        if self.isr_hits:
            out.append(f"isr {self.isr_hits}")
        return tuple(out)


@dataclasses.dataclass(frozen=True)
class StatusInfo:
    """The status line.

    Attributes:
        mode: ``"live"`` or ``"replay"``.
        source: The source URL or capture path.
        state: ``"starting"``, ``"connected"``, ``"lost"``, ``"reconnecting"``, ``"playing"``,
            ``"paused"`` or ``"ended"``.
        message: Why (loss reason, end of stream, an error).
        bytes: Stream bytes fed so far.
        packets: ITM packets decoded so far.
        records: Telemetry records accepted.
        bytes_per_s, packets_per_s: Over the last seconds (None until measurable or when ended).
        loss: Loss counters.
        firmware_dropped: Records the firmware said it could not send.
        recording: The capture being written (live), or None.
        recording_bytes: Its size on disk.
        position: Fraction of the capture fed (replay).
        media_seconds: Time into the capture on the pacing clock (replay).
        duration_seconds: The capture's length on that clock, when known (replay).
        speed: Replay speed factor (None: as fast as possible).
        timebase: What paces the replay: ``"host arrival"``, ``"target time"`` or ``"byte rate"``.
        paused: True while paused (replay: feeding stops; live: the screen holds still).
        clock_hz: The clock of the cycle counts, when known.
        clock_source: Where the target's time comes from.
        labels: Provenance labels (``{"cycles": "emulated ...", "npu_pmu": "simulated"}``).
        reconnects: Times the source came back after a loss.
        warnings: Stream problems, newest last.
    """

    mode: str
    source: str
    state: str
    message: str = ""
    bytes: int = 0
    packets: int = 0
    records: int = 0
    bytes_per_s: float | None = None
    packets_per_s: float | None = None
    loss: LossCounters = dataclasses.field(default_factory=LossCounters)
    firmware_dropped: int = 0
    recording: str | None = None
    recording_bytes: int | None = None
    position: float | None = None
    media_seconds: float | None = None
    duration_seconds: float | None = None
    speed: float | None = 1.0
    timebase: str = ""
    paused: bool = False
    clock_hz: int | None = None
    clock_source: str = "unknown"
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    reconnects: int = 0
    warnings: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class LatencyInfo:
    """Recent inference latencies for the plot.

    Attributes:
        numbers: Inference numbers, oldest first.
        cycles: Latency of each (-1 when unknown).
        complete: Whether each is complete.
        stats: Statistics over complete inferences (exact count/min/max/mean/std; p50/p99 windowed).
        budget_cycles: Predicted inference cycles (capture clock), if a budget says.
    """

    numbers: np.ndarray
    cycles: np.ndarray
    complete: np.ndarray
    stats: CycleSummary | None
    budget_cycles: float | None


@dataclasses.dataclass(frozen=True)
class SessionSnapshot:
    """Everything a screen shows, consistent at one moment.

    Attributes:
        version: Increases whenever anything changed.
        status: The status line.
        latency: Recent latencies and their statistics.
        layers: One row per layer, by index.
        memory: Arena and stacks.
        diagnosis: The CI gate's findings on the session's window, and what they cover.
        ring: The most recent inferences, oldest first, with their spans.
        events: What happened around them: interrupts, NPU jobs, cache operations, marks.
        inferences: Inferences seen (complete or not).
        complete_inferences: Of those, complete.
        spans: Layer executions seen.
        console_seq: Sequence number after the newest console line.
        budget_name: The budget's model name ("" without a budget).
        extra: Other facts (marker cost, NPU kind).
        cut_at_end: Inferences incomplete only because the stream ended while they ran (not loss).
        cut_records: Records cut short by the end of the stream (counted damaged by the decoder).
        stretches: Inferences held besides the ring: pinned ones, and ones read again from the
            capture (:mod:`tracer.session.held`).
        file_inferences: Inferences in the replayed capture, once its index is complete (None:
            live, or not indexed yet).
        indexed: Inferences of the capture indexed so far (replay).
        baseline: Per layer, the baseline's p50 cycles (``--baseline``; empty without one).
        baseline_name: What the baseline is ("" without one).
        energy: The power recording's attribution (``--power``; None without one).
    """

    version: int
    status: StatusInfo
    latency: LatencyInfo
    layers: tuple[LayerRow, ...]
    memory: MemoryInfo
    diagnosis: Diagnosis
    ring: tuple[InferenceRecord, ...]
    events: EventView
    inferences: int
    complete_inferences: int
    spans: int
    console_seq: int
    budget_name: str = ""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    cut_at_end: int = 0
    cut_records: int = 0
    stretches: tuple[Stretch, ...] = ()
    file_inferences: int | None = None
    indexed: int = 0
    baseline: dict[int, int] = dataclasses.field(default_factory=dict)
    baseline_name: str = ""
    energy: EnergyState | None = None

    @functools.cached_property
    def ring_stretch(self) -> Stretch:
        """The ring as a stretch (the newest inferences and everything around them)."""
        first = self.inferences - len(self.ring) if self.inferences >= len(self.ring) else None
        return Stretch(self.ring, self.events, "ring", first)

    def locate(self, number: int | None = None, ordinal: int | None = None) -> tuple[Stretch, InferenceRecord] | None:
        """Where an inference is held, by number or by position in the stream (the ring first)."""
        for stretch in (self.ring_stretch, *reversed(self.stretches)):
            record = (
                stretch.record(number)
                if number is not None
                else (stretch.at_ordinal(ordinal) if ordinal is not None else None)
            )
            if record is not None:
                return stretch, record
        return None

    def ordinal_of(self, number: int) -> int | None:
        """The position in the stream of inference ``number``, if it is held."""
        found = self.locate(number)
        if found is None:
            return None
        stretch, record = found
        return stretch.ordinal(stretch.records.index(record))

    def layer(self, index: int) -> LayerRow | None:
        """The row of layer ``index``."""
        return next((row for row in self.layers if row.index == index), None)

    @property
    def measuring(self) -> bool:
        """The rules last ran before the first inference, and inferences came since.

        Their findings (``nothing could be measured``) no longer hold; the next run, within a
        second, replaces them.
        """
        diagnosis = self.diagnosis
        return diagnosis.ran and diagnosis.inferences == 0 and self.inferences > 0

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The gate's findings, worst first (none while :attr:`measuring`)."""
        return () if self.measuring else self.diagnosis.findings

    def events_of(self, record: InferenceRecord) -> InferenceEvents:
        """The interrupts, NPU jobs, cache operations and marks of an inference in the ring."""
        return self.events.of(record)
