"""The report: one JSON-ready object per capture, in the shape PRODUCT.md gives (``tracer report``).

The text rendering (:mod:`tracer.export.report_text`) is made from this same object, so both
carry the same content. A budget and findings are optional inputs: the budget must already be
matched to the capture's layers and converted to the capture's clock (:class:`BudgetView`), and
findings come as JSON objects (``id``, ``severity``, ``layer``, ``message``, ``evidence``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

import numpy as np

from tracer.analysis.isr import isr_section
from tracer.analysis.jitter import jitter_section
from tracer.analysis.layer_stats import LayerStats, latency, per_layer
from tracer.analysis.log_facts import log_facts
from tracer.analysis.pmu_summary import pmu_section
from tracer.telemetry.columns import LazyRecords
from tracer.telemetry.model import InferenceTimeline, StackSample

if TYPE_CHECKING:
    from tracer.telemetry.load import SourceFacts

SCHEMA_VERSION = 1


@dataclasses.dataclass
class CaptureFacts:
    """What the report says about the capture itself.

    Attributes:
        source: The source URL it was recorded from (or the file).
        bytes: Trace-stream bytes.
        host_seconds: Host arrival time from first to last byte, if known.
        warnings: Damage found while reading (with positions).
        path: The capture file.
    """

    source: str
    bytes: int
    host_seconds: float | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    path: str | None = None

    @classmethod
    def of(cls, read: SourceFacts) -> CaptureFacts:
        """The facts of an input :func:`tracer.telemetry.load.load_timeline` read."""
        return cls(read.source, read.bytes, read.host_seconds, read.warnings, read.path)


@dataclasses.dataclass
class BudgetView:
    """What the report needs of a budget, already matched and in capture cycles.

    Attributes:
        layer_cycles: Predicted cycles per layer index, in the capture's clock.
        arena_bytes: The planned tensor arena, if the budget gives it.
        name: The model's name in the budget.
        layers: Per layer index, how it was matched and its limit (the layer's ``budget`` object).
        memory: Planned SRAM figures (``planned_peak``, ``available``) for the report's ``memory.sram``.
        summary: The report's ``budget`` section (sources, clock conversion, unmatched layers).
    """

    layer_cycles: Mapping[int, float]
    arena_bytes: int | None = None
    name: str = ""
    layers: Mapping[int, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    memory: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    summary: Mapping[str, Any] | None = None


class Finding(Protocol):
    """Anything that renders itself as a finding JSON object."""

    def to_json(self) -> dict[str, Any]:
        """``{id, severity, layer, message, evidence}``."""


def build_report(
    timeline: InferenceTimeline,
    capture: CaptureFacts,
    budget: BudgetView | None = None,
    findings: Sequence[Finding | Mapping[str, Any]] = (),
    per_inference: bool = False,
) -> dict[str, Any]:
    """Build the report object.

    Args:
        timeline: The decoded capture.
        capture: Facts about the capture file.
        budget: Predicted cycles and arena, matched to this capture (None: no budget).
        findings: Findings to include, in order.
        per_inference: Also list every inference with every layer span (``per_inference``).
    """
    stats = per_layer(timeline.spans)
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "capture": _capture(timeline, capture),
        "inferences": _inferences(timeline),
        "layers": _layers(timeline, stats, budget),
        "memory": _memory(timeline, budget),
        "pmu": pmu_section(timeline),
        "findings": [f.to_json() if hasattr(f, "to_json") else dict(f) for f in findings],  # type: ignore[union-attr]
    }
    interrupts = isr_section(timeline)
    if interrupts:
        report["interrupts"] = interrupts
    jitter = jitter_section(timeline)
    if jitter:
        report["jitter"] = jitter
    if budget is not None and budget.summary is not None:
        report["budget"] = dict(budget.summary)
    log = log_facts(timeline)
    if log:
        report["log"] = log
    if per_inference:
        report["per_inference"] = inference_listing(timeline)
    return report


def _capture(timeline: InferenceTimeline, capture: CaptureFacts) -> dict[str, Any]:
    first, last = _time_span(timeline)
    cycles = last - first if first is not None and last is not None else None
    duration: float | None = None
    duration_source = None
    if cycles is not None and timeline.clock_hz:
        duration, duration_source = cycles / timeline.clock_hz, "target"
    elif capture.host_seconds is not None:
        duration, duration_source = capture.host_seconds, "host"
    out: dict[str, Any] = {
        "source": capture.source,
        "path": capture.path,
        "bytes": capture.bytes,
        "duration": None if duration is None else round(duration, 6),
        "duration_source": duration_source,
        "duration_cycles": cycles,
        "clock_hz": timeline.clock_hz,
        "clock_source": timeline.clock_source,
        "labels": dict(timeline.labels),
        "loss": timeline.loss.to_json(),
        "warnings": list(capture.warnings),
    }
    for key in ("marker_cost_cycles", "npu", "records", "firmware_dropped_records"):
        if key in timeline.extra:
            out[key] = timeline.extra[key]
    return out


def _time_span(timeline: InferenceTimeline) -> tuple[int | None, int | None]:
    starts = [timeline.spans.start, timeline.inferences.start]
    ends = [timeline.spans.end, timeline.inferences.end]
    lo = [int(a[a >= 0].min()) for a in starts if (a >= 0).any()]
    hi = [int(a[a >= 0].max()) for a in ends if (a >= 0).any()]
    return (min(lo) if lo else None), (max(hi) if hi else None)


def _inferences(timeline: InferenceTimeline) -> dict[str, Any]:
    inf = timeline.inferences
    lat = latency(inf)
    incomplete = np.flatnonzero(~inf.complete)
    return {
        "count": len(inf),
        "complete": int(inf.complete.sum()),
        "latency_cycles": None if lat is None else {"min": lat.min, "p50": lat.p50, "p99": lat.p99, "max": lat.max,
                                                    "mean": round(lat.mean, 3), "std": round(lat.std, 3)},
        "incomplete": [{"number": int(inf.number[i]), "problems": list(inf.problems[i])} for i in incomplete.tolist()],
    }  # fmt: skip


def _layers(timeline: InferenceTimeline, stats: dict[int, LayerStats], budget: BudgetView | None) -> list[dict[str, Any]]:
    rows = []
    for index in sorted(set(timeline.layers) | set(stats)):
        info = timeline.layer(index)
        st = stats.get(index)
        cycles = st.cycles if st else None
        predicted = budget.layer_cycles.get(index) if budget else None
        ratio = round(cycles.p50 / predicted, 4) if cycles and predicted else None
        row: dict[str, Any] = {
            "index": index,
            "name": info.name,
            "op": info.op,
            "engine": info.engine.value,
            "count": cycles.count if cycles else 0,
            "excluded": st.excluded if st else 0,
            "cycles": cycles.to_json() if cycles else None,
            "predicted_cycles": predicted,
            "ratio": ratio,
        }
        if st and st.pmu_mean:
            row["pmu_mean"] = {name: round(value, 3) for name, value in st.pmu_mean.items()}
        if budget is not None and index in budget.layers:
            row["budget"] = dict(budget.layers[index])
        rows.append(row)
    return rows


def _memory(timeline: InferenceTimeline, budget: BudgetView | None) -> dict[str, Any]:
    arena = timeline.arena
    used = max((a.used for a in arena), default=None)
    size = next((a.size for a in reversed(arena) if a.size is not None), None)
    out: dict[str, Any] = {
        "arena": {"used": used, "size": size, "planned": budget.arena_bytes if budget else None},
        "stacks": _stacks(timeline.stacks),
    }
    if budget is not None and budget.memory:
        out["sram"] = dict(budget.memory)
    if timeline.allocation_failures:
        out["allocation_failures"] = [dataclasses.asdict(f) for f in timeline.allocation_failures]
    return out


def _stacks(samples: Sequence[StackSample]) -> list[dict[str, Any]]:
    """Per stack: the highest high-water mark, the last size, whether the canary always held."""
    if isinstance(samples, LazyRecords):  # columns: no object per sample
        ids, high, size, ok = (samples.column(i) for i in (1, 2, 3, 4))
        out = []
        for stack_id in dict.fromkeys(ids.tolist()):
            mine = ids == stack_id
            first = samples[int(np.flatnonzero(mine)[0])]
            out.append({"name": first.stack, "high_water": int(high[mine].max()), "size": int(size[mine][-1]),
                        "canary_ok": bool(ok[mine].all())})  # fmt: skip
        return out
    stacks: dict[str, dict[str, Any]] = {}
    for sample in samples:
        row = stacks.setdefault(sample.stack, {"name": sample.stack, "high_water": 0, "size": sample.size,
                                               "canary_ok": True})  # fmt: skip
        row["high_water"] = max(row["high_water"], sample.high_water)
        row["size"] = sample.size
        row["canary_ok"] = row["canary_ok"] and sample.canary_ok
    return list(stacks.values())


def inference_listing(timeline: InferenceTimeline) -> list[dict[str, Any]]:
    """Every inference with every layer span, in order (the ``per_inference`` section)."""
    spans = timeline.spans
    order = np.lexsort((spans.start, spans.inference))
    numbers = spans.inference[order]
    inf = timeline.inferences
    bounds_lo = np.searchsorted(numbers, inf.number, "left")
    bounds_hi = np.searchsorted(numbers, inf.number, "right")
    layer = spans.layer[order].tolist()
    start = spans.start[order].tolist()
    cycles = spans.cycles[order].tolist()
    pmu = spans.pmu[order] if spans.pmu.shape[1] else None

    def opt(value: np.int64) -> int | None:
        return None if value < 0 else int(value)

    out = []
    for i in range(len(inf)):
        rows = []
        for r in range(int(bounds_lo[i]), int(bounds_hi[i])):
            row: dict[str, Any] = {"index": layer[r], "start": start[r], "cycles": cycles[r]}
            if pmu is not None:
                values = {n: int(v) for n, v in zip(spans.pmu_names, pmu[r].tolist()) if v >= 0}
                if values:
                    row["pmu"] = values
            rows.append(row)
        s, e = opt(inf.start[i]), opt(inf.end[i])
        out.append({
            "number": int(inf.number[i]),
            "complete": bool(inf.complete[i]),
            "problems": list(inf.problems[i]),
            "start": s,
            "end": e,
            "latency_cycles": e - s if s is not None and e is not None else None,
            "input_crc": opt(inf.input_crc[i]),
            "output_crc": opt(inf.output_crc[i]),
            "layers": rows,
        })  # fmt: skip
    return out
