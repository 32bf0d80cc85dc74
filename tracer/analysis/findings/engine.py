"""Findings about where operators ran: the field's rule is zero CPU fallbacks on an NPU system.

* ``cpu-fallback`` (error): a layer the budget planned for the NPU was measured on the CPU;
* ``cpu-fallback`` (warning): the compiler itself left an operator on the CPU (a Vela budget's CPU
  row, i.e. an operator Vela could not map to the NPU) and it ran there;
* ``cpu-operators`` (info): on a system with NPU layers, the layers that ran on the CPU where a
  hand-written plan also put them, with their share of the layer cycles.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tracer.analysis.findings.base import Finding, Severity
from tracer.analysis.findings.common import describe, n
from tracer.base.timeline import Engine

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis

KINDS = ("cpu-fallback", "cpu-operators")

UNPLANNED_FIX = (
    "Zero fallbacks is the rule: run the Vela-compiled model (<model>_vela.tflite) and register the "
    "Ethos-U operator in the firmware's op resolver (MicroMutableOpResolver::AddEthosU); if the layer "
    "is in the compiled model's ethos-u operator, check how the firmware marks its engine."
)
COMPILER_FIX = (
    "Zero fallbacks is the rule: see why Vela did not map it (vela --supported-ops-report lists the "
    "constraints; --verbose-operators prints each operator's placement), then change the operator or "
    "its parameters (int8, shapes, strides, fused activation) to one the NPU supports, or replace it "
    "in the model before conversion."
)


def cpu_fallback(analysis: Analysis) -> Iterable[Finding]:
    """``cpu-fallback`` and ``cpu-operators`` (see the module docstring)."""
    timeline = analysis.timeline
    stats = analysis.layers
    budget = analysis.comparison
    compiler = budget.budget.model.compiler.name if budget and budget.budget.model.compiler else ""
    budget_has_npu = budget is not None and any(b.engine is Engine.NPU for b in budget.budget.layers)
    has_npu = budget_has_npu or any(la.engine is Engine.NPU for la in timeline.layers.values())
    planned_cpu: list[int] = []
    for index, info in sorted(timeline.layers.items()):
        if info.engine is not Engine.CPU or index not in stats:
            continue
        plan = budget.plans.get(index) if budget else None
        st = stats[index]
        p50 = st.cycles.p50 if st.cycles else None
        evidence = {
            "planned": plan.planned_engine if plan else None,
            "measured": "cpu",
            "op": info.op,
            "p50": p50,
            "budget_layers": list(plan.budget_layers) if plan else [],
        }
        if plan is not None and plan.planned_engine == Engine.NPU.value:
            yield Finding(
                "cpu-fallback",
                Severity.ERROR,
                index,
                f"{describe(timeline, index)} was planned for the NPU ({', '.join(plan.budget_layers)} in the "
                f"budget) but ran on the CPU: {n(p50)} cycles at p50",
                evidence,
                UNPLANNED_FIX,
            )
        elif plan is not None and plan.planned_engine == Engine.CPU.value and compiler == "vela":
            yield Finding(
                "cpu-fallback",
                Severity.WARNING,
                index,
                f"{describe(timeline, index)} falls back to the CPU: Vela could not map it to the NPU "
                f"({n(p50)} cycles at p50, no NPU estimate)",
                evidence,
                COMPILER_FIX,
            )
        elif has_npu and budget is not None:
            planned_cpu.append(index)
    if planned_cpu:
        total = sum(st.cycles.p50 for st in stats.values() if st.cycles)
        on_cpu = sum(cycles.p50 for i in planned_cpu if (cycles := stats[i].cycles))
        share = on_cpu / total if total else 0.0
        names = ", ".join(f"{timeline.layer(i).label} ({timeline.layer(i).op or '?'})" for i in planned_cpu)
        yield Finding(
            "cpu-operators",
            Severity.INFO,
            None,
            f"{len(planned_cpu)} layer(s) run on the CPU as planned ({names}): {share:.1%} of the layer cycles at p50",
            {"layers": planned_cpu, "cpu_cycles_p50": on_cpu, "layer_cycles_p50": total, "share": round(share, 4)},
        )


RULES = (cpu_fallback,)
