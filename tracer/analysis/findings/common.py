"""How several rule modules say things the same way: a layer's description, numbers and times."""

from __future__ import annotations

from tracer.base.timeline import InferenceTimeline

FVP_CPU_NOTE = (
    "CPU cycles from an FVP are a model estimate (the FVP is not cycle-accurate for the CPU): confirm on hardware"
)


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
