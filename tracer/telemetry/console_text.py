"""Text the firmware printed next to its telemetry records (ITM port 0), read by the log readers.

MLEK, TFLite Micro or ethos-u-core-software lines a firmware prints add their numbers to a decoded
capture. The telemetry records are measured with timestamps and win wherever both say the same
kind of thing; the text adds what records do not carry (allocation failures, counter summaries,
per-inference PMU totals, the model's operator list, the clock when the records give none,
errors); when the capture holds no telemetry record at all, the text is the timeline.
"""

from __future__ import annotations

from typing import Any

from tracer.base.timeline import InferenceTimeline
from tracer.telemetry.logs import LogReader
from tracer.telemetry.logs.log_facts import log_facts


def log_warnings(timeline: InferenceTimeline, label: str, out: list[str]) -> None:
    """Append the warnings a log reader noted (``log["warnings"]``) to ``out``, as text lines."""
    for warning in timeline.log.get("warnings", []) or []:
        if isinstance(warning, dict):
            out.append(f"{label}: line {warning.get('line')}: {warning.get('text')}")


def merge_console(timeline: InferenceTimeline, warnings: list[str] | None = None) -> InferenceTimeline:
    """Put the numbers of the port-0 text (``timeline.console``) into a decoded capture's timeline.

    The records win where both say the same kind of thing; the text adds the rest (see the module
    docstring). Returns the merged timeline (``timeline`` itself, changed, or the text's timeline
    when the capture has no telemetry record).
    """
    reader = LogReader(f"{timeline.source} (ITM port 0 text)")
    for line in timeline.console:
        reader.feed_line(line.text, line.cycle)
    text = reader.finish()
    if warnings is not None:
        log_warnings(text, "ITM port 0 text", warnings)
    has_records = len(timeline.inferences) > 0 or len(timeline.spans) > 0
    if not has_records and (len(text.inferences) or len(text.spans) or text.pmu_totals):
        return _text_wins(timeline, text)
    _add_text(timeline, text)
    return timeline


def _text_wins(capture: InferenceTimeline, text: InferenceTimeline) -> InferenceTimeline:
    """No telemetry records: the text's layers and inferences, with the capture's loss and console."""
    text.console = capture.console
    text.source = capture.source
    text.loss.overflows += capture.loss.overflows
    text.loss.gaps += capture.loss.gaps
    text.loss.desyncs += capture.loss.desyncs
    text.loss.lost_records += capture.loss.lost_records
    text.loss.orphan_packets += capture.loss.orphan_packets
    if text.clock_hz is None and capture.clock_hz is not None:
        text.clock_hz, text.clock_source = capture.clock_hz, capture.clock_source
    text.labels = {**capture.labels, **text.labels}
    text.target, text.stream, text.npu = capture.target, capture.stream, capture.npu
    text.isr_sources, text.data_trace = capture.isr_sources, capture.data_trace
    text.log = _log_facts(text.log)
    text.log_facts = log_facts(text.log)
    return text


def _add_text(timeline: InferenceTimeline, text: InferenceTimeline) -> None:
    """Records present: the text only adds what they do not carry."""
    timeline.allocation_failures = list(timeline.allocation_failures) + list(text.allocation_failures)
    for name, stat in text.pmu_stats.items():
        timeline.pmu_stats.setdefault(name, stat)
    for name, unit in text.pmu_units.items():
        timeline.pmu_units.setdefault(name, unit)
    if text.loss.damaged_records:
        timeline.loss.damaged_records += text.loss.damaged_records
    if timeline.clock_hz is None and text.clock_hz is not None:
        timeline.clock_hz, timeline.clock_source = text.clock_hz, "log"
    for key, label in text.labels.items():
        if key != "time":  # the text's layers are not used, so neither is their reconstructed time
            timeline.labels.setdefault(key, label)
    if not timeline.arena and text.arena:
        timeline.arena = list(text.arena)
    facts = _log_facts(text.log)
    if text.pmu_totals and not timeline.pmu_totals:
        numbers = timeline.inferences.number.tolist()
        if len(text.pmu_totals) == len(numbers):
            # The firmware printed one profile per inference: the k-th profile is the k-th inference.
            timeline.pmu_totals = {int(n): dict(text.pmu_totals[k]) for k, n in zip(sorted(text.pmu_totals), numbers)}
        else:
            facts["pmu_totals"] = {str(k): v for k, v in text.pmu_totals.items()}
            facts["pmu_totals_note"] = (
                f"{len(text.pmu_totals)} profile(s) printed for {len(numbers)} inference(s): not matched to inferences"
            )
    if len(text.spans):
        facts["layers_from_text"] = len(text.spans)  # records give the layers; the text's are only counted
    if facts:
        timeline.log = facts
        timeline.log_facts = log_facts(facts)


def _log_facts(log: dict[str, Any]) -> dict[str, Any]:
    """The log's own facts worth carrying into the report (everything but bookkeeping)."""
    return {k: v for k, v in log.items() if k not in ("lines",) and v not in (None, {}, [])}
