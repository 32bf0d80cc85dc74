"""What several rule modules look up the same way: layer statistics, the budget comparison, and
how numbers are written in messages (a firmware log's facts: :func:`tracer.analysis.log_facts.log_extra`)."""

from __future__ import annotations

from tracer.analysis.budget_view import BudgetComparison, compare_budget
from tracer.analysis.findings.base import AnalysisContext
from tracer.analysis.layer_stats import LayerStats, per_layer
from tracer.telemetry.model import InferenceTimeline

FVP_CPU_NOTE = "CPU cycles from an FVP are a model estimate (the FVP is not cycle-accurate for the CPU): confirm on hardware"


def layer_stats(context: AnalysisContext) -> dict[int, LayerStats]:
    """Per-layer statistics of the context's timeline (computed once per context)."""
    cached = context.options.get("layer_stats")
    if cached is None:
        cached = per_layer(context.timeline.spans)
        context.options["layer_stats"] = cached
    return cached


def comparison(context: AnalysisContext) -> BudgetComparison | None:
    """The budget lined up with the capture, or None without a budget."""
    if context.budget is None:
        return None
    found = context.options.get("budget_comparison")
    if found is None:
        found = compare_budget(
            context.timeline, context.budget, context.options.get("tolerance_option", context.tolerance_pct)
        )
        context.options["budget_comparison"] = found
    return found


def describe(timeline: InferenceTimeline, index: int) -> str:
    """``dw3 (DEPTHWISE_CONV_2D on the NPU)`` for messages."""
    info = timeline.layer(index)
    what = info.op or "operator"
    return f"layer {index} {info.label} ({what} on the {info.engine.value.upper()})"


def n(value: float | int | None) -> str:
    """A count with thousands separators."""
    if value is None:
        return "-"
    return f"{round(value):,}"


def fvp_cpu(timeline: InferenceTimeline) -> bool:
    """True when the timeline's CPU cycles come from an FVP (a model estimate)."""
    return "model estimate" in timeline.labels.get("cpu_cycles", "") or timeline.clock_source == "model estimate"


def clock_text(timeline: InferenceTimeline, cycles: float | int | None) -> str:
    """`` (1.234 ms)`` when the clock is known, else empty."""
    if cycles is None or not timeline.clock_hz:
        return ""
    ms = 1e3 * cycles / timeline.clock_hz
    return f" ({ms:.3f} ms)" if ms >= 0.1 else f" ({1e3 * ms:.1f} us)"
