"""What looks wrong now, in words an engineer acts on, with the numbers that show it.

These are the live session's checks over its running statistics, with the ids and severities of
the CI gate's rules (:mod:`tracer.analysis.findings`, which need a whole capture): a layer over
budget, an operator planned for the NPU that ran on the CPU, the operators on the CPU, arena
headroom below 10%, arena above plan, a stack above 75% of its size or with its canary
overwritten, and data lost on the way. The exported report runs the CI gate's own rules.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Sequence

from tracer.session.memory import ALARM_FRACTION, WARN_FRACTION, MemoryInfo
from tracer.telemetry.model import LossCounters

if TYPE_CHECKING:
    from tracer.session.snapshot import LayerRow

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclasses.dataclass(frozen=True)
class LiveFinding:
    """One finding.

    Attributes:
        id: What kind (``layer-over-budget``, ``cpu-fallback``, ``arena-headroom`` ...).
        severity: ``info``, ``warning`` or ``error``.
        layer: The layer index it concerns, or None.
        message: One sentence.
        evidence: The numbers behind it.
        fix: What the field does about it, when known.
    """

    id: str
    severity: str
    layer: int | None
    message: str
    evidence: dict[str, Any]
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        """As in the report contract (``id``, ``severity``, ``layer``, ``message``, ``evidence``, ``fix``)."""
        return dataclasses.asdict(self)


def live_findings(
    layers: Sequence[LayerRow],
    memory: MemoryInfo,
    loss: LossCounters,
    inferences: int,
    complete: int,
    firmware_dropped: int = 0,
) -> list[LiveFinding]:
    """Every finding, most severe first."""
    out: list[LiveFinding] = []
    out += _layer_findings(layers)
    out += _memory_findings(memory)
    out += _loss_findings(loss, inferences, complete, firmware_dropped)
    return sorted(out, key=lambda f: (SEVERITY_ORDER.get(f.severity, 3), f.layer if f.layer is not None else -1))


def _layer_findings(layers: Sequence[LayerRow]) -> list[LiveFinding]:
    out = []
    cpu = []
    for row in layers:
        label = row.info.label
        if row.over_budget and row.cycles is not None and row.predicted:
            ratio = row.cycles.p50 / row.predicted
            out.append(LiveFinding(
                "layer-over-budget", "error", row.index,
                f"{label} takes {ratio:.2f}x its predicted cycles (p50 {row.cycles.p50:,} vs "
                f"{row.predicted:,.0f} predicted; tolerance {row.tolerance_pct:g}%)",
                {"p50": row.cycles.p50, "p99": row.cycles.p99, "max": row.cycles.max, "predicted": round(row.predicted),
                 "ratio": round(ratio, 4), "tolerance_pct": row.tolerance_pct, "count": row.cycles.count},
            ))  # fmt: skip
        if row.fallback:
            out.append(LiveFinding(
                "cpu-fallback", "error", row.index,
                f"{label} ({row.info.op or 'operator'}) was planned for the NPU but ran on the CPU",
                {"planned": "npu", "measured": "cpu", "p50": row.cycles.p50 if row.cycles else None},
                "the NPU compiler could not map it: check its operator and parameters against Vela's "
                "supported-operator list (vela --supported-ops-report)",
            ))  # fmt: skip
        elif row.info.engine.value == "cpu":
            cpu.append(row)
    if cpu:
        total = sum(r.cycles.p50 for r in layers if r.cycles)
        on_cpu = sum(r.cycles.p50 for r in cpu if r.cycles)
        share = on_cpu / total if total else 0.0
        names = ", ".join(r.info.label for r in cpu)
        out.append(LiveFinding(
            "cpu-operators", "info", None,
            f"{len(cpu)} operator(s) run on the CPU ({names}): {share:.1%} of the inference's layer cycles",
            {"layers": [r.index for r in cpu], "cpu_cycles_p50": on_cpu, "layer_cycles_p50": total},
        ))  # fmt: skip
    return out


def _memory_findings(memory: MemoryInfo) -> list[LiveFinding]:
    out = []
    frac = memory.arena_fraction
    if frac is not None and frac > ALARM_FRACTION and memory.arena_peak is not None and memory.arena_size:
        out.append(LiveFinding(
            "arena-headroom", "warning", None,
            f"tensor arena {frac:.0%} used ({memory.arena_peak:,} of {memory.arena_size:,} bytes): less than "
            f"{1 - ALARM_FRACTION:.0%} headroom",
            {"peak": memory.arena_peak, "size": memory.arena_size, "fraction": round(frac, 4)},
            "grow the arena by 10-15% over the measured peak, or the next model change fails with "
            "'Failed to resize buffer'",
        ))  # fmt: skip
    planned = memory.arena_planned
    if planned and memory.arena_peak is not None and memory.arena_peak > planned:
        out.append(LiveFinding(
            "arena-over-plan", "info", None,
            f"tensor arena peak {memory.arena_peak:,} bytes is above the planned {planned:,} bytes",
            {"peak": memory.arena_peak, "planned": planned},
        ))  # fmt: skip
    for stack in memory.stacks:
        if not stack.canary_ok:
            out.append(LiveFinding(
                "stack-canary", "error", None,
                f"stack '{stack.name}' overflowed: its canary was overwritten",
                {"stack": stack.name, "size": stack.size, "high_water": stack.high_water},
                "enlarge the stack (linker script or RTOS task size) and look for deep recursion or large "
                "locals in the layer that runs last before the report",
            ))  # fmt: skip
        elif stack.fraction is not None and stack.fraction > WARN_FRACTION:
            out.append(LiveFinding(
                "stack-high-water", "warning", None,
                f"stack '{stack.name}' reached {stack.fraction:.0%} of its size ({stack.high_water:,} of "
                f"{stack.size:,} bytes)",
                {"stack": stack.name, "size": stack.size, "high_water": stack.high_water,
                 "fraction": round(stack.fraction, 4)},
                "keep stacks below 75% of their size: enlarge it",
            ))  # fmt: skip
    return out


def _loss_findings(loss: LossCounters, inferences: int, complete: int, dropped: int) -> list[LiveFinding]:
    incomplete = inferences - complete
    if not (loss.any or incomplete or dropped):
        return []
    parts = [f"{name.replace('_', ' ')} {value}" for name, value in loss.to_json().items() if value]
    if dropped:
        parts.append(f"firmware dropped {dropped}")
    return [LiveFinding(
        "capture-loss", "error" if inferences and complete == 0 else "warning", None,
        f"{incomplete} of {inferences} inference(s) incomplete: data was lost on the way "
        f"({', '.join(parts) or 'records missing'}); their numbers are left out of the statistics",
        {**loss.to_json(), "incomplete_inferences": incomplete, "inferences": inferences,
         "firmware_dropped_records": dropped},
        "lower the trace rate (fewer markers, a faster SWO clock or UART baud) or enlarge the transport buffer",
    )]  # fmt: skip
