"""One entry point for every input ``report``, ``check`` and ``export`` read: ``load_timeline``.

What a file is comes from its content, never its name:

* a tracer capture (``.trace``, starts with the capture magic) whose stream is ITM packets, or
  another tool's raw ITM/SWO file: decoded by the telemetry decoder;
* a plain text log (a UART dump, an FVP's stdout; see :func:`~tracer.telemetry.logs.is_text_log`),
  or a capture whose stream is text (a UART recorded by ``tracer record``): read by the log readers.

Text the firmware writes on ITM port 0 next to its telemetry records (console lines) also goes
through the log readers, so MLEK, TFLite Micro or ethos-u-core-software lines it prints add their
numbers. How the two merge (:func:`merge_console`): the telemetry records are measured with
timestamps and win wherever both say the same kind of thing; the text adds what records do not
carry (allocation failures, counter summaries, per-inference PMU totals, the model's operator list,
the clock when the records give none, errors); when the capture holds no telemetry record at all,
the text is the timeline.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

from tracer.capture.reader import open_capture
from tracer.limits import CLOCK_RANGE, valid_clock_hz
from tracer.telemetry.capture import decode_capture
from tracer.telemetry.logs import LogReader, is_text_log, read_log
from tracer.telemetry.logs.sniff import SNIFF_BYTES
from tracer.telemetry.model import InferenceTimeline

CAPTURE = "capture"
RAW_ITM = "raw-itm"
TEXT_LOG = "text-log"
CAPTURE_TEXT = "capture-text"


@dataclasses.dataclass
class SourceFacts:
    """What is known about the input itself (for the report's ``capture`` section).

    Attributes:
        kind: ``capture`` (a .trace of ITM packets), ``raw-itm`` (another tool's raw trace file),
            ``text-log`` (a plain text log) or ``capture-text`` (a .trace whose stream is text).
        source: The source URL it was recorded from, else the path.
        path: The file.
        bytes: Stream bytes (the whole file for raw files and logs).
        host_seconds: Host arrival time from first to last chunk, when the capture has it.
        warnings: Damage found while reading, with positions.
        records: Telemetry records accepted (text lines for logs).
        console_lines: Lines of port-0 text that went through the log readers (captures).
        trace_doubt: Why an ITM input does not look like trace (the decoder's measure), or None.
    """

    kind: str
    source: str
    path: str
    bytes: int
    host_seconds: float | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    records: int = 0
    console_lines: int = 0
    trace_doubt: str | None = None


def load_timeline(
    path: str | os.PathLike[str],
    on_progress: Callable[[int], None] | None = None,
    clock_hz: int | None = None,
) -> tuple[InferenceTimeline, SourceFacts]:
    """Read a capture, a raw ITM file or a text log into a timeline.

    Args:
        path: The file.
        on_progress: Called with the stream bytes read so far (captures).
        clock_hz: The clock the input's cycles count, used when the input does not say
            (``--clock``); a clock the input gives wins.

    Raises:
        CaptureError: The file is missing or unreadable (exit code 3).
    """
    label = str(path)
    with open_capture(path) as reader:
        meta = reader.metadata
        is_capture = reader.is_capture
        head = _stream_head(reader)
        stream_size = reader.size
    text = meta.encoding == "text" or is_text_log(head)
    if text and not is_capture:
        timeline = read_log(path, name=label)
        facts = SourceFacts(TEXT_LOG, label, label, stream_size, records=int(timeline.extra.get("lines", 0) or 0))
        _warnings_of_log(timeline, label, facts.warnings)
    elif text:
        timeline, facts = _capture_text(path, label)
    else:
        decoded = decode_capture(path, on_progress=on_progress)
        timeline = decoded.timeline
        facts = SourceFacts(
            CAPTURE if is_capture else RAW_ITM, decoded.metadata.source or label, label, decoded.stream_bytes,
            decoded.host_seconds, list(decoded.warnings), decoded.records, trace_doubt=decoded.trace_doubt,
        )  # fmt: skip
        if timeline.console:
            facts.console_lines = len(timeline.console)
            timeline = merge_console(timeline, facts.warnings)
    if timeline.clock_hz is not None and not valid_clock_hz(timeline.clock_hz):
        facts.warnings.append(
            f"{label}: the {timeline.clock_source} gives a clock of {timeline.clock_hz} Hz, not {CLOCK_RANGE}; "
            "clock unknown (give --clock)"
        )
        timeline.clock_hz, timeline.clock_source = None, "unknown"
    if timeline.clock_hz is None and clock_hz:
        timeline.clock_hz = clock_hz
        timeline.clock_source = "given (--clock)"
    return timeline, facts


def _stream_head(reader: Any) -> bytes:
    """The first stream bytes (up to the sniffing size), across chunks."""
    head = bytearray()
    for chunk in reader.chunks():
        head += chunk.data
        if len(head) >= SNIFF_BYTES:
            break
    return bytes(head[:SNIFF_BYTES])


def _capture_text(path: str | os.PathLike[str], label: str) -> tuple[InferenceTimeline, SourceFacts]:
    """A .trace capture of a text stream (a UART log recorded by ``tracer record``)."""
    reader = LogReader(label)
    total = 0
    first_ns = last_ns = None
    with open_capture(path) as capture:
        for chunk in capture.chunks():
            reader.feed_bytes(chunk.data)
            total += len(chunk.data)
            if chunk.host_ns is not None:
                first_ns = chunk.host_ns if first_ns is None else first_ns
                last_ns = chunk.host_ns
        warnings = [str(w) for w in capture.warnings]
        source = capture.metadata.source or label
    timeline = reader.finish()
    host = (last_ns - first_ns) / 1e9 if first_ns is not None and last_ns is not None else None
    facts = SourceFacts(CAPTURE_TEXT, source, label, total, host, warnings, int(timeline.extra.get("lines", 0) or 0))
    _warnings_of_log(timeline, label, facts.warnings)
    if warnings:
        # Bytes lost in the capture: the text around them may be cut (counted, never hidden).
        timeline.loss.gaps += len(warnings)
    return timeline, facts


def _warnings_of_log(timeline: InferenceTimeline, label: str, out: list[str]) -> None:
    for warning in timeline.extra.get("warnings", []) or []:
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
        _warnings_of_log(text, "ITM port 0 text", warnings)
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
    text.extra = {**capture.extra, "console_log": _log_facts(text.extra)}
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
    facts = _log_facts(text.extra)
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
        timeline.extra = {**timeline.extra, "console_log": facts}


def _log_facts(extra: dict[str, Any]) -> dict[str, Any]:
    """The log's own facts worth carrying into the report (everything but bookkeeping)."""
    return {k: v for k, v in extra.items() if k not in ("lines",) and v not in (None, {}, [])}

