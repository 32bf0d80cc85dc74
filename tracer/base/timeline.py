"""The data model every later stage reads: what ran, when, for how long, and with what memory.

Times are target cycles (64-bit, unwrapped) at ``InferenceTimeline.clock_hz``. Layer executions
and inferences are stored as columns of numpy arrays (:class:`LayerSpans`, :class:`Inferences`)
because a long capture holds millions of them and analysis is vectorised; :class:`LayerSpan` and
:class:`Inference` are small views built on demand for reports and the TUI. Rare things (memory
samples, cache operations, ISR slices, console lines) are plain lists of frozen dataclasses.

Loss is never silent: an inference touched by an overflow, a gap, a dropped or damaged record is
``complete=False`` with the reasons in ``problems``, and statistics leave it out unless asked.

One module although over 400 lines: every layer imports this vocabulary, and one leaf module keeps
it free of import cycles.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tracer.base.facts import DataAccess, IsrSources, StreamFacts, TargetFacts
from tracer.base.firmware_marks import CpuAccess, NpuBuffer, SyncPin
from tracer.base.log_facts import LogFacts
from tracer.base.samples import Samples
from tracer.base.span_facts import SpanFacts
from tracer.base.tasks import TaskSlice


class Engine(str, enum.Enum):
    """Where a layer ran."""

    CPU = "cpu"
    NPU = "npu"


@dataclasses.dataclass(frozen=True, slots=True)
class LayerInfo:
    """A layer as the firmware (or log) names it.

    Attributes:
        index: Position in the model's execution order, from 0.
        name: The layer or tensor name, or ``""`` if the firmware sent none.
        op: The operator (``CONV_2D``, ``DEPTHWISE_CONV_2D``, ``ethos-u`` ...).
        engine: CPU or NPU.
    """

    index: int
    name: str
    op: str
    engine: Engine

    @property
    def label(self) -> str:
        """A short name for tables: the name, else ``op#index``."""
        return self.name or f"{self.op or 'layer'}#{self.index}"


@dataclasses.dataclass(frozen=True, slots=True)
class LayerSpan:
    """One execution of one layer in one inference (a view of a :class:`LayerSpans` row)."""

    inference: int
    layer: int
    start: int
    end: int
    complete: bool
    isr_cycles: int = 0
    pmu: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def cycles(self) -> int:
        """Duration in cycles, ISR time included."""
        return self.end - self.start

    @property
    def own_cycles(self) -> int:
        """Duration without the time of interrupts that preempted the layer."""
        return self.cycles - self.isr_cycles


@dataclasses.dataclass(frozen=True, slots=True)
class Inference:
    """One inference (a view of an :class:`Inferences` row with its layers)."""

    number: int
    start: int | None
    end: int | None
    complete: bool
    problems: tuple[str, ...]
    layers: tuple[LayerSpan, ...]
    input_crc: int | None = None
    output_crc: int | None = None
    pmu: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def latency_cycles(self) -> int | None:
        """End minus start, or None if either is missing."""
        if self.start is None or self.end is None:
            return None
        return self.end - self.start


NO_VALUE = np.int64(-1)  # missing start/end/CRC in the integer columns


def _joined(parts: Sequence[Any], column: str) -> np.ndarray:
    """Column ``column`` of every part, end to end (for the columnar tables' ``concat``)."""
    return np.concatenate([getattr(p, column) for p in parts])


@dataclasses.dataclass
class LayerSpans:
    """All layer executions of a capture, one row each, in the order they ended.

    Attributes:
        inference: Inference number of each row.
        layer: Layer index.
        start: Start cycle.
        end: End cycle.
        complete: False if the row's data is damaged or partial.
        isr_cycles: Cycles spent in interrupts inside the span (0 when unknown).
        pmu: Counter deltas over the span, shape (rows, len(pmu_names)); -1 when not measured.
        pmu_names: Names of the PMU columns (``NPU_ACTIVE``, ``CYCLE`` ...).
    """

    inference: np.ndarray
    layer: np.ndarray
    start: np.ndarray
    end: np.ndarray
    complete: np.ndarray
    isr_cycles: np.ndarray
    pmu: np.ndarray
    pmu_names: tuple[str, ...] = ()

    @classmethod
    def empty(cls, pmu_names: Sequence[str] = ()) -> LayerSpans:
        """No rows."""
        return cls.from_rows([], pmu_names)

    @classmethod
    def from_rows(cls, rows: Sequence[LayerSpan], pmu_names: Sequence[str] = ()) -> LayerSpans:
        """Build the columns from views (small data: logs, tests)."""
        names = tuple(pmu_names)
        pmu = np.full((len(rows), len(names)), -1, np.int64)
        for i, row in enumerate(rows):
            for j, name in enumerate(names):
                if name in row.pmu:
                    pmu[i, j] = row.pmu[name]
        return cls(
            inference=np.array([r.inference for r in rows], np.int64),
            layer=np.array([r.layer for r in rows], np.int32),
            start=np.array([r.start for r in rows], np.int64),
            end=np.array([r.end for r in rows], np.int64),
            complete=np.array([r.complete for r in rows], bool),
            isr_cycles=np.array([r.isr_cycles for r in rows], np.int64),
            pmu=pmu,
            pmu_names=names,
        )

    def __len__(self) -> int:
        return int(self.layer.shape[0])

    @property
    def cycles(self) -> np.ndarray:
        """Duration of every row."""
        return self.end - self.start

    def row(self, i: int) -> LayerSpan:
        """Row ``i`` as a view."""
        pmu = {n: int(v) for n, v in zip(self.pmu_names, self.pmu[i]) if v >= 0}
        return LayerSpan(
            int(self.inference[i]),
            int(self.layer[i]),
            int(self.start[i]),
            int(self.end[i]),
            bool(self.complete[i]),
            int(self.isr_cycles[i]),
            pmu,
        )

    def where(self, mask: np.ndarray) -> LayerSpans:
        """The rows where ``mask`` holds."""
        return LayerSpans(
            self.inference[mask],
            self.layer[mask],
            self.start[mask],
            self.end[mask],
            self.complete[mask],
            self.isr_cycles[mask],
            self.pmu[mask],
            self.pmu_names,
        )

    @staticmethod
    def concat(parts: Sequence[LayerSpans]) -> LayerSpans:
        """Join parts that share their PMU names."""
        if not parts:
            return LayerSpans.empty()
        return LayerSpans(
            _joined(parts, "inference"),
            _joined(parts, "layer"),
            _joined(parts, "start"),
            _joined(parts, "end"),
            _joined(parts, "complete"),
            _joined(parts, "isr_cycles"),
            _joined(parts, "pmu"),
            parts[0].pmu_names,
        )


@dataclasses.dataclass
class Inferences:
    """All inferences of a capture, one row each, in order.

    ``start``/``end``/CRC columns hold -1 where the value is missing. ``problems`` lists, per row,
    why the row is incomplete (empty tuple when complete).
    """

    number: np.ndarray
    start: np.ndarray
    end: np.ndarray
    complete: np.ndarray
    input_crc: np.ndarray
    output_crc: np.ndarray
    problems: list[tuple[str, ...]]

    @classmethod
    def from_rows(cls, rows: Sequence[Inference]) -> Inferences:
        """Build the columns from views."""

        def col(values: list[int | None]) -> np.ndarray:
            return np.array([NO_VALUE if v is None else v for v in values], np.int64)

        return cls(
            number=np.array([r.number for r in rows], np.int64),
            start=col([r.start for r in rows]),
            end=col([r.end for r in rows]),
            complete=np.array([r.complete for r in rows], bool),
            input_crc=col([r.input_crc for r in rows]),
            output_crc=col([r.output_crc for r in rows]),
            problems=[r.problems for r in rows],
        )

    def __len__(self) -> int:
        return int(self.number.shape[0])

    @staticmethod
    def concat(parts: Sequence[Inferences]) -> Inferences:
        """Join parts, in order."""
        if not parts:
            return Inferences.from_rows([])
        return Inferences(
            _joined(parts, "number"),
            _joined(parts, "start"),
            _joined(parts, "end"),
            _joined(parts, "complete"),
            _joined(parts, "input_crc"),
            _joined(parts, "output_crc"),
            problems=[problem for p in parts for problem in p.problems],
        )

    @property
    def latency(self) -> np.ndarray:
        """End minus start per row; -1 where either is missing."""
        ok = (self.start >= 0) & (self.end >= 0)
        return np.where(ok, self.end - self.start, NO_VALUE)


@dataclasses.dataclass(frozen=True, slots=True)
class ArenaSample:
    """Tensor-arena use at a moment (TFLM ``arena_used_bytes()``)."""

    cycle: int | None
    used: int
    size: int | None
    inference: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class StackSample:
    """A stack's high-water mark (painted-stack scan) and canary state."""

    cycle: int | None
    stack: str
    high_water: int
    size: int
    canary_ok: bool = True


CACHE_OPS = {1: "clean", 2: "invalidate", 3: "clean_invalidate"}  # CacheOp.op by the firmware's code
NPU_PMU_LABEL = "npu_pmu"  # the label (InferenceTimeline.labels) of where the NPU PMU's counters come from
SIMULATED = "simulated"  # ... when an emulator makes them up: there is no real NPU


def simulated_npu(labels: Mapping[str, str]) -> bool:
    """Whether provenance ``labels`` say the NPU PMU's counters are simulated (no real NPU)."""
    return labels.get(NPU_PMU_LABEL) == SIMULATED


@dataclasses.dataclass(frozen=True, slots=True)
class CacheOp:
    """A cache maintenance operation the firmware reported (``op`` names its code: :data:`CACHE_OPS`)."""

    cycle: int
    op: str  # "clean", "invalidate" or "clean_invalidate"
    address: int
    length: int
    inference: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class NpuJob:
    """One NPU job (Ethos-U driver ``ethosu_inference_begin/end``)."""

    start: int
    end: int | None
    inference: int | None = None
    job: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class IsrSlice:
    """Time spent in one exception handler."""

    start: int
    end: int
    exception: int
    name: str = ""
    depth: int = 0
    repaired: bool = False  # the exit was lost (overflow) and inferred


@dataclasses.dataclass(frozen=True, slots=True)
class ConsoleLine:
    """A line of firmware text (ITM port 0 or UART text)."""

    cycle: int | None
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Mark:
    """A user mark or value the firmware emitted."""

    cycle: int
    id: int
    value: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class AllocationFailure:
    """The runtime could not fit its memory plan (TFLM: ``Failed to resize buffer. Requested: R,
    available A, missing: M``; also ``tail memory`` and ``temp memory``).

    Attributes:
        kind: ``"resize buffer"`` (the non-persistent plan did not fit), ``"tail memory"``
            (a persistent allocation failed) or ``"temp memory"``.
        requested: Bytes asked for (for ``resize buffer``: the whole non-persistent plan).
        available: Bytes that were left.
        missing: ``requested - available`` (as printed, else computed).
        cycle: When it happened, if the source has time.
        line: Line of the log, if the source is a text log.
    """

    kind: str
    requested: int
    available: int
    missing: int
    cycle: int | None = None
    line: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class CounterStat:
    """A counter summarised over several inferences, as the firmware printed it.

    Attributes:
        name: Counter name (``NPU_ACTIVE``, ``CYCLE`` ...).
        unit: Its unit (``cycles``, ``beats``).
        samples: Number of inferences summarised (None if not printed).
        total: Sum over the samples (None if not printed: MLEK's plain profile prints the mean only).
        mean, min, max: As printed (None if not printed).
    """

    name: str
    unit: str
    samples: int | None
    total: int | None
    mean: float | None = None
    min: int | None = None
    max: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class BufferCrc:
    """A CRC-32 of a buffer the firmware reported (besides an inference's input and output)."""

    cycle: int
    buffer: int  # 0 input, 1 output, 2.. the firmware's own ids
    crc: int
    length: int
    inference: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class TelemetryRecord:
    """A checked record the decoder keeps as it is (types it does not assemble itself, e.g. ISR marks)."""

    type: int
    cycle: int
    inference: int | None
    words: tuple[int, ...]  # payload after the time word


@dataclasses.dataclass
class LossCounters:
    """Everything that was lost or damaged on the way, counted."""

    overflows: int = 0  # ITM overflow packets
    gaps: int = 0  # capture gaps (damaged chunks, disconnects)
    lost_records: int = 0  # records known missing (sequence-number gaps)
    damaged_records: int = 0  # records that failed their check or were cut
    orphan_packets: int = 0  # telemetry packets outside any record
    desyncs: int = 0  # undecodable ITM packets (bytes lost or corrupted on the way)

    @property
    def any(self) -> bool:
        """True if anything at all was lost."""
        return any(dataclasses.astuple(self))

    def to_json(self) -> dict[str, int]:
        """As a JSON object."""
        return dataclasses.asdict(self)


@dataclasses.dataclass
class InferenceTimeline:
    """Everything a capture or log says about the network running on the target.

    Attributes:
        clock_hz: The clock the cycles count (None if unknown).
        clock_source: Where time came from: ``"dwt"``, ``"systick"``, ``"pmu"``, ``"log"``,
            ``"model estimate"`` (FVP) ...
        labels: Provenance labels shown with the numbers, e.g. ``{"npu_pmu": "simulated"}``.
        layers: Static layer descriptions by index.
        inferences: One row per inference.
        spans: One row per layer execution.
        arena, stacks, cache_ops, npu_jobs, isrs, console, marks: Rare events, in time order.
        pmu_events: Names of the NPU PMU counters as configured.
        pmu_totals: Per-inference PMU counters when only totals are known (logs), by inference.
        loss: Loss counters.
        source: Where the data came from (capture path, log path).
        target: What the firmware said about itself (records streams; None for logs).
        stream: What the telemetry decoder counted (records streams; None for logs).
        npu: The NPU the PMU configuration names (``Ethos-U55``), if any.
        isr_sources: Where the interrupt slices came from.
        data_trace: CPU accesses the DWT data trace saw, in order.
        log: Every fact a firmware text log or a tool's output file gave (the log's own, the port-0
            text of a capture, an FVP PMU trace), JSON-ready: ``lines``, ``model``, ``npu``,
            ``arena``, ``profiles``, ``errors``, ``warnings``, ``fvp_pmu_trace`` ... (the report's
            ``log`` section).
        log_facts: What of ``log`` the findings judge (errors, NPU configuration mismatches, the
            NPU), typed; set with ``log`` (:mod:`tracer.telemetry.logs.log_facts`).
        allocation_failures: Memory plans that did not fit (arena too small), in order.
        pmu_units: Unit of each counter in ``pmu_totals`` / ``pmu_stats`` (``cycles``, ``beats``).
        pmu_stats: Counters the firmware summarised over several inferences (totals, mean, min,
            max as printed), by name.
        crcs: Buffer CRCs other than an inference's input and output.
        records: Checked telemetry records no stage assembled (ISR marks ...), kept as they are.
        samples, npu_buffers, cpu_accesses, sync_pins: What the sampler's records and the
            firmware's buffer and sync-pin marks among ``records`` say, typed
            (:mod:`tracer.telemetry.record_facts` decodes them whenever ``records`` is set; the
            analysis reads these, never the records).
        tasks: RTOS task slices (the task lane), in time order; task_names: names by task id.
        span_facts: Work counts, CPU counters and task preemption per layer span, or None
            (:mod:`tracer.telemetry.span_facts`).
    """

    clock_hz: int | None = None
    clock_source: str = "unknown"
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    layers: dict[int, LayerInfo] = dataclasses.field(default_factory=dict)
    inferences: Inferences = dataclasses.field(default_factory=lambda: Inferences.from_rows([]))
    spans: LayerSpans = dataclasses.field(default_factory=LayerSpans.empty)
    arena: Sequence[ArenaSample] = dataclasses.field(default_factory=list)
    stacks: Sequence[StackSample] = dataclasses.field(default_factory=list)
    cache_ops: Sequence[CacheOp] = dataclasses.field(default_factory=list)
    npu_jobs: Sequence[NpuJob] = dataclasses.field(default_factory=list)
    isrs: Sequence[IsrSlice] = dataclasses.field(default_factory=list)
    console: list[ConsoleLine] = dataclasses.field(default_factory=list)
    marks: Sequence[Mark] = dataclasses.field(default_factory=list)
    pmu_events: tuple[str, ...] = ()
    pmu_totals: dict[int, dict[str, int]] = dataclasses.field(default_factory=dict)
    loss: LossCounters = dataclasses.field(default_factory=LossCounters)
    source: str = ""
    target: TargetFacts | None = None
    stream: StreamFacts | None = None
    npu: str | None = None
    isr_sources: IsrSources = dataclasses.field(default_factory=IsrSources)
    data_trace: list[DataAccess] = dataclasses.field(default_factory=list)
    log: dict[str, Any] = dataclasses.field(default_factory=dict)
    log_facts: LogFacts = dataclasses.field(default_factory=LogFacts)
    allocation_failures: list[AllocationFailure] = dataclasses.field(default_factory=list)
    pmu_units: dict[str, str] = dataclasses.field(default_factory=dict)
    pmu_stats: dict[str, CounterStat] = dataclasses.field(default_factory=dict)
    crcs: Sequence[BufferCrc] = dataclasses.field(default_factory=list)
    records: Sequence[TelemetryRecord] = dataclasses.field(default_factory=list)
    samples: Samples = dataclasses.field(default_factory=Samples.none)
    npu_buffers: Sequence[NpuBuffer] = dataclasses.field(default_factory=list)
    cpu_accesses: Sequence[CpuAccess] = dataclasses.field(default_factory=list)
    sync_pins: Sequence[SyncPin] = dataclasses.field(default_factory=list)
    tasks: list[TaskSlice] = dataclasses.field(default_factory=list)
    task_names: dict[int, str] = dataclasses.field(default_factory=dict)
    span_facts: SpanFacts | None = None

    def layer(self, index: int) -> LayerInfo:
        """The description of layer ``index`` (a placeholder if the firmware never named it)."""
        return self.layers.get(index, LayerInfo(index, "", "", Engine.CPU))


class TimelineBuilder:
    """Collects views one by one and freezes them into an :class:`InferenceTimeline`.

    For readers of small inputs (text logs, tests). High-rate decoders build columns directly.
    """

    def __init__(self, **fields: object) -> None:
        self.timeline = InferenceTimeline(**fields)  # type: ignore[arg-type]
        self.spans: list[LayerSpan] = []
        self.inferences: list[Inference] = []
        self.npu_jobs: list[NpuJob] = []

    def add_layer(self, info: LayerInfo) -> None:
        """Describe a layer."""
        self.timeline.layers[info.index] = info

    def add_span(self, span: LayerSpan) -> None:
        """Add a layer execution."""
        self.spans.append(span)

    def add_inference(self, inference: Inference) -> None:
        """Add an inference (its ``layers`` are ignored: add spans separately)."""
        self.inferences.append(inference)

    def add_npu_job(self, job: NpuJob) -> None:
        """Add an NPU job, in time order."""
        self.npu_jobs.append(job)

    def build(self) -> InferenceTimeline:
        """Freeze and return the timeline."""
        names: list[str] = []
        for span in self.spans:
            names.extend(n for n in span.pmu if n not in names)
        self.timeline.spans = LayerSpans.from_rows(self.spans, names)
        self.timeline.inferences = Inferences.from_rows(self.inferences)
        if self.npu_jobs:
            self.timeline.npu_jobs = [*self.timeline.npu_jobs, *self.npu_jobs]
        return self.timeline
