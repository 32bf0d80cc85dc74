"""The normalized budget: what a planner or compiler predicted for a model, whatever wrote it.

Every reader (Vela CSVs, Glow bundle headers, the user's TOML or JSON file) produces the same
:class:`Budget`. Cycles are counted at ``ModelBudget.clock_hz`` (Vela: the NPU core clock of the
system configuration; ``None``: the capture's own clock). Sizes are bytes.

One :class:`BudgetLayer` is one operator of the model as the user thinks of it. Vela splits an
operator into several NPU operations (a softmax into ~30); those are kept as the layer's
:class:`BudgetPart` list, and the layer's predicted cycles are their sum.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tracer.base.timeline import Engine
from tracer.budget.command_stream import CommandStream


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetPart:
    """One operation the compiler scheduled (a row of Vela's per-layer CSV).

    Attributes:
        op: The compiler's operation (Vela's ``NNG Operator``: ``Conv2D``, ``Relu``, ``LUT`` ...).
        name: Its output tensor name (Vela's ``Name``).
        engine: NPU or CPU (Vela's ``Target``; the legacy core lists NPU operations only).
        cycles: Estimated cycles (Vela's ``Op Cycles``: the bottleneck of compute and memory).
        sram_bytes: Fast memory live during the operation (``Staging Usage`` / ``SRAM Usage``).
        detail: Every other number of the row (``npu_cycles``, ``sram_access_cycles``, ``mac_count``
            ...), by a snake_case name.
        origin: ``file:line`` it came from.
    """

    op: str
    name: str
    engine: Engine
    cycles: float
    sram_bytes: int | None
    detail: Mapping[str, float]
    origin: str

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "op": self.op,
            "name": self.name,
            "engine": self.engine.value,
            "cycles": json_number(self.cycles),
            "sram_bytes": self.sram_bytes,
            **{k: json_number(v) for k, v in self.detail.items()},
            "origin": self.origin,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetLayer:
    """The prediction for one model operator.

    Attributes:
        position: Order in the budget, from 0.
        index: The operator's index in the model, when the file says it (TOML ``index``; Vela's
            debug database ``ext_key``); None when only the order is known.
        name: Layer name (Vela: the output tensor of the operator's last operation).
        op: The operator type as the file writes it (``Conv2D``, ``CONV_2D`` ...).
        engine: NPU or CPU; None when the file does not say.
        predicted_cycles: Predicted cycles at the budget's clock; None when the file gives no
            estimate (Vela does not model CPU operators).
        sram_bytes: Predicted fast-memory use (the peak over its parts).
        tolerance_pct: The layer's own tolerance, when the user's file sets one.
        data_dependent: The user's file says the layer's work depends on its input (a detection
            post-process): its spread is expected, its jitter is information.
        npu_subgraph: Which NPU command stream the layer runs in (0, 1, ...: the n-th ``ethos-u``
            operator of the compiled model); None for CPU layers and non-Vela budgets.
        parts: The compiler's operations making up the layer (empty for TOML layers).
        aliases: Other names the layer is known by (its parts' tensor names).
        origin: ``file:line`` of its first row or table.
        energy_uj: The layer's energy budget per execution in microjoules (the user's file),
            held against a power recording (``--power``, docs/energy.md).
    """

    position: int
    index: int | None
    name: str
    op: str
    engine: Engine | None
    predicted_cycles: float | None
    sram_bytes: int | None = None
    tolerance_pct: float | None = None
    data_dependent: bool = False
    npu_subgraph: int | None = None
    parts: tuple[BudgetPart, ...] = ()
    aliases: tuple[str, ...] = ()
    origin: str = ""
    energy_uj: float | None = None

    @property
    def label(self) -> str:
        """A short name for messages: the name, else ``op#index``, else ``op@position``."""
        if self.name:
            return self.name
        if self.index is not None:
            return f"{self.op or 'layer'}#{self.index}"
        return f"{self.op or 'layer'}@{self.position}"

    def to_json(self, parts: bool = True) -> dict[str, Any]:
        """As a JSON object (``parts`` adds the compiler's operations)."""
        out: dict[str, Any] = {
            "index": self.index,
            "name": self.name,
            "op": self.op,
            "engine": self.engine.value if self.engine else None,
            "predicted_cycles": json_number(self.predicted_cycles),
            "sram_bytes": self.sram_bytes,
        }
        if self.tolerance_pct is not None:
            out["tolerance_pct"] = json_number(self.tolerance_pct)
        if self.data_dependent:
            out["data_dependent"] = True
        if self.npu_subgraph is not None:
            out["npu_subgraph"] = self.npu_subgraph
        if self.energy_uj is not None:
            out["energy_uj"] = json_number(self.energy_uj)
        if parts and self.parts:
            out["parts"] = [p.to_json() for p in self.parts]
        out["origin"] = self.origin
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class Compiler:
    """Who made the prediction.

    Attributes:
        name: ``vela``, ``glow`` or what the user's file says.
        version: The version when the file says it.
        config: Settings that shape the numbers (accelerator, system config, memory mode, core).
    """

    name: str
    version: str | None = None
    config: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {"name": self.name, "version": self.version, "config": dict(self.config)}


@dataclasses.dataclass(frozen=True, slots=True)
class ModelBudget:
    """Model-level prediction and limits.

    Attributes:
        name: The model (network) name.
        clock_hz: The clock the budget's cycles count; None means "the capture's clock".
        cycles_total: Predicted cycles of one inference (Vela's ``cycles_total``).
        sram_bytes: Predicted SRAM peak (Vela ``Total SRAM used``; Glow mutable + activations).
        arena_bytes: Planned tensor arena (Vela Shared_Sram/Sram_Only: the SRAM peak; Glow: the
            activations buffer; TOML: as written). None when the planner does not say.
        flash_bytes: Read-only data in flash (Vela on- plus off-chip flash; Glow constant weights).
        dram_bytes: Data in DRAM (Vela Dedicated_Sram: the arena and constants).
        sram_available_bytes: SRAM on the part (a limit, from the user's file).
        tolerance_pct: Default per-layer tolerance (from the user's file).
        jitter_threshold_pct: Excess over a layer's median that makes a run an outlier (from the
            user's file; the command line's ``--jitter-threshold`` wins).
        jitter_min_share_pct: Share of the inference under which a layer's jitter is information
            (from the user's file; ``--jitter-min-share`` wins).
        memory: Every other size the files gave, in bytes, by name.
        details: Every other model-level number (cycles per memory, MACs, inference time ...).
        compiler: Who made the prediction.
        energy_uj: The energy budget of one inference in microjoules (the user's file).
    """

    name: str = ""
    clock_hz: int | None = None
    cycles_total: float | None = None
    sram_bytes: int | None = None
    arena_bytes: int | None = None
    flash_bytes: int | None = None
    dram_bytes: int | None = None
    sram_available_bytes: int | None = None
    tolerance_pct: float | None = None
    jitter_threshold_pct: float | None = None
    jitter_min_share_pct: float | None = None
    memory: Mapping[str, int] = dataclasses.field(default_factory=dict)
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    compiler: Compiler | None = None
    energy_uj: float | None = None

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            **({"energy_uj": json_number(self.energy_uj)} if self.energy_uj is not None else {}),
            "name": self.name,
            "clock_hz": self.clock_hz,
            "cycles_total": json_number(self.cycles_total),
            "sram_bytes": self.sram_bytes,
            "arena_bytes": self.arena_bytes,
            "flash_bytes": self.flash_bytes,
            "dram_bytes": self.dram_bytes,
            "sram_available_bytes": self.sram_available_bytes,
            "tolerance_pct": json_number(self.tolerance_pct),
            "jitter_threshold_pct": json_number(self.jitter_threshold_pct),
            "jitter_min_share_pct": json_number(self.jitter_min_share_pct),
            "memory": dict(self.memory),
            "details": {k: json_number(v) if isinstance(v, float) else v for k, v in self.details.items()},
            "compiler": self.compiler.to_json() if self.compiler else None,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Budget:
    """A normalized budget: the model, its layers in execution order, and where they came from.

    Attributes:
        model: Model-level prediction and limits.
        layers: One entry per model operator, in execution order.
        sources: The files read, in the order given.
        notes: What the user should know about how the files were understood.
        command_streams: Vela's command streams with their operations' kernel-command offsets
            (from a debug database): what maps sampled NPU QREAD values to operations.
    """

    model: ModelBudget
    layers: tuple[BudgetLayer, ...] = ()
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    command_streams: tuple[CommandStream, ...] = ()

    @property
    def layer_cycles_total(self) -> float | None:
        """Sum of the layers' predicted cycles (None if no layer has an estimate)."""
        values = [la.predicted_cycles for la in self.layers if la.predicted_cycles is not None]
        return sum(values) if values else None

    def to_json(self, parts: bool = True) -> dict[str, Any]:
        """The JSON printed by ``tracer budget --format json`` (also readable back as a budget)."""
        return {
            "model": self.model.to_json(),
            "layers": [la.to_json(parts) for la in self.layers],
            "sources": list(self.sources),
            "notes": list(self.notes),
        }


def json_number(value: float | int | None) -> float | int | None:
    """An integral float as an int (``14283`` rather than ``14283.0``), else unchanged."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value
