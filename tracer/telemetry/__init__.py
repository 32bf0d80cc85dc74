"""Telemetry: records from the firmware snippets and text logs, assembled into inferences and layers."""

from tracer.telemetry.model import (
    ArenaSample,
    CacheOp,
    ConsoleLine,
    Engine,
    Inference,
    Inferences,
    InferenceTimeline,
    IsrSlice,
    LayerInfo,
    LayerSpan,
    LayerSpans,
    LossCounters,
    Mark,
    NpuJob,
    StackSample,
    TimelineBuilder,
)

__all__ = [
    "ArenaSample",
    "CacheOp",
    "ConsoleLine",
    "Engine",
    "Inference",
    "InferenceTimeline",
    "Inferences",
    "IsrSlice",
    "LayerInfo",
    "LayerSpan",
    "LayerSpans",
    "LossCounters",
    "Mark",
    "NpuJob",
    "StackSample",
    "TimelineBuilder",
]
