"""What one recognised log line says, before it is put into a timeline.

The recognisers (``mlek``, ``tflm``, ``ethosu_sw``, ``executorch``, ``platform``) turn a line into
one of these; :class:`~tracer.telemetry.logs.reader.LogReader` assembles them into inferences.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any


class Mode(str, enum.Enum):
    """Multi-line blocks whose lines only mean something inside the block."""

    NONE = "none"
    MLEK_PROFILE = "mlek-profile"  # after "Profile for <group>:"
    NPU_VERSION = "npu-version"  # after "Ethos-U version info:"
    MODEL_INFO = "model-info"  # after "Model INPUT/OUTPUT tensors:"
    TFLM_CSV = "tflm-csv"  # after "Event","Tag","Ticks"
    TFLM_TAGS = "tflm-tags"  # after "Unique Tag","Total ticks ..."
    ARENA_TABLE = "arena-table"  # generic benchmark "[[ Table ]]: Arena"
    ALLOC_TABLE = "alloc-table"  # generic benchmark "[[ Table ]]: Allocations"
    FVP_STATS = "fvp-stats"  # "--- FVP_... statistics: ---"


@dataclasses.dataclass(frozen=True, slots=True)
class OpTicks:
    """One operator's duration (TFLM ``Log()``/``LogCsv()``, core-software ``cycle_cnt``)."""

    op: str
    ticks: int
    style: str  # "log", "csv", "cycle_cnt", "took_cycles"
    event: int | None = None  # LogCsv event number


@dataclasses.dataclass(frozen=True, slots=True)
class OpCounter:
    """A PMU counter of the operator just logged (``ethos-u : ethosu_pmu_cntr0 : N``)."""

    op: str
    counter: int
    value: int


@dataclasses.dataclass(frozen=True, slots=True)
class EnterMode:
    """A block starts (the header line itself carries no numbers)."""

    mode: Mode
    label: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Counter:
    """A named counter value (``NPU ACTIVE cycles: 33145``, ``ethosu_pmu_cycle_cntr : N``)."""

    name: str
    unit: str
    value: int


@dataclasses.dataclass(frozen=True, slots=True)
class CounterSummary:
    """MLEK full statistics: ``NPU ACTIVE cycles: total/ avg / min / max``."""

    name: str
    unit: str
    total: int
    mean: float
    min: int
    max: int


@dataclasses.dataclass(frozen=True, slots=True)
class SampleCount:
    """MLEK ``Number of samples: N`` (the profile summarises N inferences)."""

    samples: int


@dataclasses.dataclass(frozen=True, slots=True)
class Metrics:
    """MLEK 26.03 ``<metrics>BASE64(JSON)</metrics>``: profiling groups with per-sample values."""

    groups: list[dict[str, Any]]


@dataclasses.dataclass(frozen=True, slots=True)
class PmuEventNames:
    """The events the NPU counters 0..n count (ExecuTorch ``Ethos-U PMU Events:[...]``)."""

    names: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class TagTicks:
    """A ``LogTicksPerTagCsv()`` row: total ticks of all events with a tag."""

    tag: str
    ticks: int


@dataclasses.dataclass(frozen=True, slots=True)
class TagTotal:
    """The last ``LogTicksPerTagCsv()`` row: ``"total number of ticks", N``."""

    ticks: int


@dataclasses.dataclass(frozen=True, slots=True)
class ArenaPart:
    """Arena size by part: ``total``, ``head`` (non-persistent) or ``tail`` (persistent)."""

    part: str
    bytes: int


@dataclasses.dataclass(frozen=True, slots=True)
class Allocation:
    """Arena use of one allocation category (``RecordingMicroAllocator``, benchmark table)."""

    category: str
    used: int
    requested: int
    count: int
    unit: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class AllocFailure:
    """``Failed to resize buffer. Requested: R, available A, missing: M`` and its siblings."""

    kind: str
    requested: int
    available: int
    missing: int


@dataclasses.dataclass(frozen=True, slots=True)
class ArenaUsed:
    """Arena (or memory pool) use: ``arena_used_bytes``, MLEK's activation buffer, ExecuTorch's
    method allocator.
    """

    used: int
    size: int | None
    what: str


@dataclasses.dataclass(frozen=True, slots=True)
class Runtime:
    """Cycles of a whole inference (``Inference runtime: N cycles``)."""

    cycles: int


@dataclasses.dataclass(frozen=True, slots=True)
class Boundary:
    """A line that starts (``start=True``) or ends an inference.

    ``name``: what the line names (an ethos-u-core-software job), so an end can be matched to its
    start; ``""`` when the line names nothing of the kind.
    """

    label: str
    start: bool = True
    name: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class InferenceMark:
    """MLEK's ``Inference k/N``: inference ``k`` of a run of ``n`` starts."""

    k: int
    n: int


@dataclasses.dataclass(frozen=True, slots=True)
class ModelName:
    """A line naming the model the inferences that follow run (MLEK ``Running KWS inference on``)."""

    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class Crc:
    """``Input CRC32: 0x...`` or ``Output CRC32: 0x...``."""

    which: str  # "input" or "output"
    value: int


@dataclasses.dataclass(frozen=True, slots=True)
class Fact:
    """Anything else with a value, filed under ``extra[section][key]`` (``section=""``: top level)."""

    section: str
    key: str
    value: Any
    per_inference: bool = False  # also belongs to the current inference


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorLine:
    """An error the firmware printed."""

    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Neutral:
    """A recognised line that carries nothing (a table header inside a block)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Damaged:
    """A line in a recognised format whose content is unusable (bad base64, negative ticks).

    ``operator``: the line was one operator of a run (the inference it belongs to is incomplete).
    """

    reason: str
    operator: bool = False


Record = (
    OpTicks
    | OpCounter
    | EnterMode
    | Counter
    | CounterSummary
    | SampleCount
    | Metrics
    | PmuEventNames
    | TagTicks
    | TagTotal
    | ArenaPart
    | Allocation
    | AllocFailure
    | ArenaUsed
    | Runtime
    | Boundary
    | Crc
    | Fact
    | ErrorLine
    | Neutral
    | Damaged
    | InferenceMark
    | ModelName
)
