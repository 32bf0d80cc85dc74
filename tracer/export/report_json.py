"""The report object of an :class:`~tracer.analysis.analyze.Analysis` (``tracer report --format json``).

A view: every number comes from the analysis, nothing is computed again. The shape is the report
contract (``docs/report.md``): ``schema_version``, ``capture``, ``inferences``, ``layers``,
``memory``, ``pmu``, ``findings``, and when there is something to say ``interrupts``, ``tasks``,
``jitter``, ``budget``, ``log`` and (asked for) ``per_inference``. The text rendering
(:mod:`tracer.export.report_text`) is made from this same object, so both carry the same content.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import IO, Any

import numpy as np

from tracer.analysis.result import Analysis
from tracer.base.timeline import InferenceTimeline
from tracer.export.json_text import write_json

SCHEMA_VERSION = 1


def report_object(analysis: Analysis, per_inference: bool = False, streamed: bool = False) -> dict[str, Any]:
    """The report of an analysis.

    Args:
        analysis: The analysis.
        per_inference: Also list every inference with every layer span (``per_inference``).
        streamed: Sections with a row per inference are made as :func:`write_report_json` writes
            them (:class:`~tracer.base.columns.JsonRows`), not held: for :func:`write_report_json`
            and the text rendering only.
    """
    timeline = analysis.timeline
    comparison = analysis.comparison
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "capture": _capture(analysis),
        "inferences": _inferences(analysis),
        "layers": _layers(analysis),
        "memory": analysis.memory.to_json(),
        "pmu": analysis.pmu.to_json(streamed),
        "findings": [f.to_json() for f in analysis.findings],
    }
    interrupts = _interrupts(analysis)
    if interrupts:
        report["interrupts"] = interrupts
    if analysis.tasks is not None:
        report["tasks"] = analysis.tasks.to_json()
    if analysis.jitter.layers:
        report["jitter"] = {
            "threshold_pct": analysis.jitter.threshold_pct,
            "settings": analysis.jitter.settings.to_json(),
            "latency": analysis.jitter.latency,
            "layers": [layer.to_json(timeline.layer(layer.index).name) for layer in analysis.jitter.layers],
        }
    if comparison is not None:
        report["budget"] = comparison.to_json()
    log = jsonable(timeline.log)
    if log:
        report["log"] = log
    if per_inference:
        report["per_inference"] = inference_listing(timeline)
    if analysis.sampling is not None:
        report.update(analysis.sampling.report_sections(per_inference))
    if analysis.energy is not None:
        from tracer.power.attribute import energy_json

        report["energy"] = energy_json(analysis.energy, timeline)
    if analysis.energy_estimate is not None:
        from tracer.analysis.energy_model import estimate_json

        names = {i: timeline.layer(i).label for i in analysis.layers}
        report["energy_estimate"] = estimate_json(analysis.energy_estimate, names)
    return report


def write_report_json(report: dict[str, Any], out: IO[str]) -> None:
    """Write a report object as indented JSON with a final newline, the text ``json.dump(report,
    out, indent=2)`` writes (:mod:`tracer.export.json_text`; streamed rows made one at a time).
    """
    write_json(report, out)
    out.write("\n")


def _capture(analysis: Analysis) -> dict[str, Any]:
    timeline, facts = analysis.timeline, analysis.facts
    first, last = analysis.time_span
    cycles = last - first if first is not None and last is not None else None
    duration: float | None = None
    duration_source = None
    if cycles is not None and timeline.clock_hz:
        duration, duration_source = cycles / timeline.clock_hz, "target"
    elif facts.host_seconds is not None:
        duration, duration_source = facts.host_seconds, "host"
    out: dict[str, Any] = {
        "source": facts.source,
        "path": facts.path,
        "bytes": facts.bytes,
        "duration": None if duration is None else round(duration, 6),
        "duration_source": duration_source,
        "duration_cycles": cycles,
        "clock_hz": timeline.clock_hz,
        "clock_source": timeline.clock_source,
        "labels": dict(timeline.labels),
        "loss": timeline.loss.to_json(),
        "warnings": list(facts.warnings),
    }
    if timeline.target is not None:
        out["marker_cost_cycles"] = timeline.target.marker_cost_cycles
    if timeline.npu is not None:
        out["npu"] = timeline.npu
    if timeline.stream is not None:
        out["records"] = timeline.stream.records
        out["firmware_dropped_records"] = timeline.stream.firmware_dropped_records
        out["sessions"] = timeline.stream.sessions
        out["restarts"] = [r.to_json() for r in timeline.stream.restarts]
    return out


def _inferences(analysis: Analysis) -> dict[str, Any]:
    inf = analysis.timeline.inferences
    lat = analysis.latency
    incomplete = np.flatnonzero(~inf.complete)
    return {
        "count": len(inf),
        "complete": int(inf.complete.sum()),
        "latency_cycles": None if lat is None else lat.to_json(),
        "incomplete": [{"number": int(inf.number[i]), "problems": list(inf.problems[i])} for i in incomplete.tolist()],
    }


def _layers(analysis: Analysis) -> list[dict[str, Any]]:
    timeline = analysis.timeline
    stats = analysis.layers
    plans = analysis.comparison.plans if analysis.comparison is not None else {}
    rows = []
    for index in sorted(set(timeline.layers) | set(stats)):
        info = timeline.layer(index)
        st = stats.get(index)
        cycles = st.cycles if st else None
        plan = plans.get(index)
        predicted = plan.predicted_cycles if plan is not None else None
        row: dict[str, Any] = {
            "index": index,
            "name": info.name,
            "op": info.op,
            "engine": info.engine.value,
            "count": cycles.count if cycles else 0,
            "excluded": st.excluded if st else 0,
            "cycles": cycles.to_json() if cycles else None,
            "predicted_cycles": predicted,
            "ratio": round(cycles.p50 / predicted, 4) if cycles and predicted else None,
        }
        if st and st.pmu_mean:
            row["pmu_mean"] = {name: round(value, 3) for name, value in st.pmu_mean.items()}
        if plan is not None and plan.calibrated is not None:
            calibrated = plan.calibrated.cycles if plan.calibrated.usable else None
            row["calibrated_cycles"] = None if calibrated is None else round(calibrated, 3)
            row["calibrated_ratio"] = round(cycles.p50 / calibrated, 4) if cycles and calibrated else None
        if plan is not None:
            row["budget"] = plan.to_json()
        rows.append(row)
    return rows


def _interrupts(analysis: Analysis) -> dict[str, Any] | None:
    """The ``interrupts`` section, or None when the input has no interrupt at all."""
    timeline = analysis.timeline
    sources = timeline.isr_sources
    if not analysis.interrupts.slices and not sources:
        return None
    isrs = analysis.interrupts
    out: dict[str, Any] = {
        "count": isrs.slices,
        "time": timeline.labels.get("isr_time", "cycles"),
        "by_exception": [e.to_json() for e in isrs.by_exception],
        "by_layer": [h.to_json() for h in isrs.by_layer],
    }
    if sources:
        out["sources"] = sources.to_json()
    return out


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
        out.append(
            {
                "number": int(inf.number[i]),
                "complete": bool(inf.complete[i]),
                "problems": list(inf.problems[i]),
                "start": s,
                "end": e,
                "latency_cycles": e - s if s is not None and e is not None else None,
                "input_crc": opt(inf.input_crc[i]),
                "output_crc": opt(inf.output_crc[i]),
                "layers": rows,
            }
        )
    return out


def jsonable(value: Any) -> Any:
    """``value`` with tuples as lists, keys as strings, enums as values, non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
