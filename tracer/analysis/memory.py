"""Memory of a timeline: the tensor arena's peak, each stack's high-water mark and canary, the plan.

One summary per timeline (the report's ``memory`` section, the memory findings and the gate's
memory checks read the same numbers). A stack's canary that broke is placed in time (its first
report with the canary overwritten) and, when that moment falls inside a layer execution, on that
layer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from tracer.analysis.isr import span_of
from tracer.base.columns import LazyRecords
from tracer.base.timeline import AllocationFailure, InferenceTimeline, StackSample


@dataclasses.dataclass(frozen=True)
class StackSummary:
    """One stack over the capture.

    Attributes:
        name: The stack (``main``, a task's name).
        high_water: The highest high-water mark reported, in bytes.
        size: Its size (the last reported).
        canary_ok: True while every report found the canary intact.
        first_broken_cycle: When a report first found the canary overwritten (None: never, or
            no time).
        first_broken_layer: The layer running at that moment, if any.
        first_broken_inference: The inference in progress at that moment, if any.
    """

    name: str
    high_water: int
    size: int
    canary_ok: bool
    first_broken_cycle: int | None = None
    first_broken_layer: int | None = None
    first_broken_inference: int | None = None

    def to_json(self) -> dict[str, Any]:
        """As in the report's ``memory.stacks``."""
        return {"name": self.name, "high_water": self.high_water, "size": self.size, "canary_ok": self.canary_ok}


@dataclasses.dataclass(frozen=True)
class MemorySummary:
    """The arena, the stacks and the plan.

    Attributes:
        arena_used: The arena's peak use, in bytes (None: never reported).
        arena_size: The arena's size (the last reported).
        arena_planned: The planned arena (the budget's), if any.
        stacks: Per stack, in the order first reported.
        allocation_failures: Memory plans that did not fit.
        sram_planned_peak: The compiler's SRAM peak (the budget's), if any.
        sram_available: The SRAM on the part (the budget's), if any.
        has_budget_memory: A budget was given (the report then carries the ``sram`` line).
    """

    arena_used: int | None
    arena_size: int | None
    arena_planned: int | None
    stacks: tuple[StackSummary, ...]
    allocation_failures: tuple[AllocationFailure, ...]
    sram_planned_peak: int | None = None
    sram_available: int | None = None
    has_budget_memory: bool = False

    def to_json(self) -> dict[str, Any]:
        """The report's ``memory`` section."""
        out: dict[str, Any] = {
            "arena": {"used": self.arena_used, "size": self.arena_size, "planned": self.arena_planned},
            "stacks": [s.to_json() for s in self.stacks],
        }
        if self.has_budget_memory:
            out["sram"] = {"planned_peak": self.sram_planned_peak, "available": self.sram_available}
        if self.allocation_failures:
            out["allocation_failures"] = [dataclasses.asdict(f) for f in self.allocation_failures]
        return out


def summarize_memory(
    timeline: InferenceTimeline,
    arena_planned: int | None = None,
    sram: tuple[int | None, int | None] | None = None,
) -> MemorySummary:
    """The memory summary of ``timeline``.

    Args:
        timeline: The capture or log.
        arena_planned: The budget's planned arena, if any.
        sram: The budget's (planned peak, available) SRAM when a budget is given, else None.
    """
    arena = timeline.arena
    used = max((a.used for a in arena), default=None)
    size = next((a.size for a in reversed(arena) if a.size is not None), None)
    stacks = tuple(_place(timeline, s) for s in _stacks(timeline.stacks))
    peak, available = sram if sram is not None else (None, None)
    return MemorySummary(
        used, size, arena_planned, stacks, tuple(timeline.allocation_failures), peak, available, sram is not None
    )


def merge_memory(parts: Sequence[MemorySummary]) -> MemorySummary:
    """The memory of a capture from the summaries of its windows, in order (the same as the
    capture's own summary: peaks are maxima, sizes the last reported, a canary broken in any
    window is broken, placed where it first broke; the plan and the allocation failures are the
    last window's, which carries the input's facts).
    """
    stacks: dict[str, StackSummary] = {}
    for part in parts:
        for stack in part.stacks:
            old = stacks.get(stack.name)
            if old is None:
                stacks[stack.name] = stack
                continue
            broke = old if not old.canary_ok else stack
            stacks[stack.name] = dataclasses.replace(
                broke,
                high_water=max(old.high_water, stack.high_water),
                size=stack.size,
                canary_ok=old.canary_ok and stack.canary_ok,
            )
    used = [p.arena_used for p in parts if p.arena_used is not None]
    size = next((p.arena_size for p in reversed(parts) if p.arena_size is not None), None)
    last = parts[-1]
    return dataclasses.replace(
        last, arena_used=max(used) if used else None, arena_size=size, stacks=tuple(stacks.values())
    )  # allocation failures are facts of the whole input: every window carries them all


def _stacks(samples: Sequence[StackSample]) -> list[StackSummary]:
    """Per stack: the highest high-water mark, the last size, whether the canary always held, when it broke."""
    if isinstance(samples, LazyRecords):  # columns: no object per sample
        cycle, ids, high, size, ok = (samples.column(i) for i in range(5))
        out = []
        for stack_id in dict.fromkeys(ids.tolist()):
            mine = np.flatnonzero(ids == stack_id)
            broken = mine[~ok[mine].astype(bool)]
            first = int(cycle[broken[0]]) if len(broken) and cycle[broken[0]] >= 0 else None
            out.append(
                StackSummary(
                    samples[int(mine[0])].stack, int(high[mine].max()), int(size[mine][-1]), not len(broken), first
                )
            )
        return out
    rows: dict[str, dict[str, Any]] = {}
    for sample in samples:
        row = rows.setdefault(
            sample.stack,
            {"name": sample.stack, "high_water": 0, "size": sample.size, "canary_ok": True, "first_broken_cycle": None},
        )
        row["high_water"] = max(row["high_water"], sample.high_water)
        row["size"] = sample.size
        if not sample.canary_ok and row["canary_ok"]:
            row["canary_ok"] = False
            row["first_broken_cycle"] = sample.cycle
    return [StackSummary(**row) for row in rows.values()]


def _place(timeline: InferenceTimeline, stack: StackSummary) -> StackSummary:
    """The layer and inference running when the canary was first found broken."""
    if stack.first_broken_cycle is None:
        return stack
    row = int(span_of(timeline, np.array([stack.first_broken_cycle], np.int64))[0])
    if row >= 0:
        spans = timeline.spans
        return dataclasses.replace(
            stack, first_broken_layer=int(spans.layer[row]), first_broken_inference=int(spans.inference[row])
        )
    inf = timeline.inferences
    inside = np.flatnonzero(
        (inf.start >= 0)
        & (inf.start <= stack.first_broken_cycle)
        & ((inf.end < 0) | (stack.first_broken_cycle <= inf.end))
    )
    if len(inside):
        return dataclasses.replace(stack, first_broken_inference=int(inf.number[inside[-1]]))
    return stack
