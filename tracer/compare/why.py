"""Where a layer's change comes from: own time against interrupt time, PMU counters, engine."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from tracer.analysis.samples import LayerSamples
from tracer.analysis.statistics import nearest_rank

# PMU counters by what they count (Ethos-U event names as tracer.telemetry.pmu_events gives them).
MEMORY_COUNTER_MARKS = ("AXI", "BEAT", "SRAM", "EXT_", "DMA")
COMPUTE_COUNTER_MARKS = ("MAC", "NPU_ACTIVE", "ACTIVE")


@dataclasses.dataclass(frozen=True)
class CounterChange:
    """A PMU counter's mean per execution in both builds.

    Attributes:
        name: The counter.
        kind: ``memory``, ``compute`` or ``other``.
        base, new: The means (None: not measured on that side).
    """

    name: str
    kind: str
    base: float | None
    new: float | None

    @property
    def pct(self) -> float | None:
        """The change in percent of the base."""
        if self.base is None or self.new is None or not self.base:
            return None
        return 100.0 * (self.new - self.base) / self.base


@dataclasses.dataclass(frozen=True)
class Why:
    """Where a layer's change comes from.

    Attributes:
        own: Median own cycles (without interrupts) of both builds.
        interrupts: Mean interrupt cycles per execution of both builds.
        counters: Every PMU counter measured on either side.
        moved: The counters whose mean moved by more than the threshold.
        bound: ``memory``, ``compute`` or None: what the moved counters point at.
        engine: (base engine, new engine) when the layer changed engine, else None.
    """

    own: tuple[int, int]
    interrupts: tuple[float, float]
    counters: tuple[CounterChange, ...]
    moved: tuple[CounterChange, ...]
    bound: str | None
    engine: tuple[str, str] | None


def why(base: LayerSamples, new: LayerSamples, threshold: float, engines: tuple[str, str] | None) -> Why:
    """Where a layer's change comes from (counters that moved by more than ``threshold`` percent)."""
    own = (nearest_rank(base.own_cycles, 0.5), nearest_rank(new.own_cycles, 0.5))
    interrupts = (_mean(base.isr_cycles), _mean(new.isr_cycles))
    counters = []
    for name in sorted({*base.pmu, *new.pmu}):
        counters.append(CounterChange(name, counter_kind(name), base.pmu_mean(name), new.pmu_mean(name)))
    moved = tuple(c for c in counters if c.pct is not None and abs(c.pct) > threshold)
    return Why(own, interrupts, tuple(counters), moved, _bound(moved), engines)


def counter_kind(name: str) -> str:
    """``memory`` (AXI beats, SRAM and external memory traffic), ``compute`` (MAC, NPU active) or ``other``."""
    upper = name.upper()
    if any(mark in upper for mark in MEMORY_COUNTER_MARKS):
        return "memory"
    if any(mark in upper for mark in COMPUTE_COUNTER_MARKS):
        return "compute"
    return "other"


def _bound(moved: Sequence[CounterChange]) -> str | None:
    """What grew most among the counters that moved up: memory traffic or compute."""
    grew = [c for c in moved if (c.pct or 0) > 0 and c.kind in ("memory", "compute")]
    if not grew:
        return None
    return max(grew, key=lambda c: c.pct or 0).kind


def _mean(values: np.ndarray | None) -> float:
    return float(values.mean()) if values is not None and len(values) else 0.0
