"""One entry point for every input ``report``, ``check`` and ``export`` read: ``load_timeline``.

What a file is comes from its content, never its name:

* a tracer capture (``.trace``, starts with the capture magic) whose stream is ITM packets, or
  another tool's raw ITM/SWO file: decoded by the telemetry decoder;
* a plain text log (a UART dump, an FVP's stdout; see :func:`~tracer.telemetry.logs.is_text_log`),
  or a capture whose stream is text (a UART recorded by ``tracer record``): read by the log readers;
* an ExecuTorch ETDump (``.etdp``, flatbuffer identifier ``ED00``): read by
  :func:`~tracer.telemetry.etdump.read_etdump`.

Text the firmware writes on ITM port 0 next to its telemetry records (console lines) also goes
through the log readers, so MLEK, TFLite Micro or ethos-u-core-software lines it prints add their
numbers (how the two merge: :func:`tracer.telemetry.console_text.merge_console`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from tracer.base.facts import InputFacts
from tracer.base.timeline import InferenceTimeline
from tracer.capture.reader import CaptureReader, open_capture
from tracer.limits import CLOCK_RANGE, GIVEN_CLOCK, valid_clock_hz
from tracer.pipeline.capture import decode_capture
from tracer.telemetry.console_text import log_warnings, merge_console
from tracer.telemetry.etdump import is_etdump, read_etdump
from tracer.telemetry.logs import LogReader, is_text_log, read_log
from tracer.telemetry.logs.sniff import SNIFF_BYTES

CAPTURE = "capture"
RAW_ITM = "raw-itm"
TEXT_LOG = "text-log"
CAPTURE_TEXT = "capture-text"
ETDUMP = "etdump"


@dataclasses.dataclass(frozen=True)
class InputFile:
    """An input file as sniffed once (:func:`sniff_input`): what it is, and its stream's size.

    Attributes:
        path: The file, as given.
        kind: :data:`CAPTURE`, :data:`RAW_ITM`, :data:`CAPTURE_TEXT`, :data:`TEXT_LOG` or :data:`ETDUMP`.
        size: Bytes of its stream (a capture's data chunks; a raw file's length).
    """

    path: str
    kind: str
    size: int


def sniff_input(path: str | os.PathLike[str] | InputFile) -> InputFile:
    """What ``path`` is (its header, and its first stream bytes sniffed); an :class:`InputFile`
    is returned as it is, so a caller sniffs once and passes it on.

    Raises:
        CaptureError: The file is missing or unreadable (exit code 3).
    """
    if isinstance(path, InputFile):
        return path
    with open_capture(path) as reader:
        return InputFile(str(path), input_kind(reader), reader.size)


def load_timeline(
    path: str | os.PathLike[str] | InputFile,
    on_progress: Callable[[int], None] | None = None,
    clock_hz: int | None = None,
) -> tuple[InferenceTimeline, InputFacts]:
    """Read a capture, a raw ITM file or a text log into a timeline.

    Args:
        path: The file (or the file sniffed already).
        on_progress: Called with the stream bytes read so far (captures).
        clock_hz: The clock the input's cycles count, used when the input does not say
            (``--clock``); a clock the input gives wins.

    Raises:
        CaptureError: The file is missing or unreadable (exit code 3).
    """
    source = sniff_input(path)
    path, label, kind, stream_size = source.path, source.path, source.kind, source.size
    if kind == ETDUMP:
        timeline = read_etdump(path, name=label)
        facts = InputFacts(ETDUMP, label, label, stream_size, records=len(timeline.spans) + len(timeline.inferences))
    elif kind == TEXT_LOG:
        timeline = read_log(path, name=label)
        facts = InputFacts(TEXT_LOG, label, label, stream_size, records=int(timeline.log.get("lines", 0) or 0))
        log_warnings(timeline, label, facts.warnings)
    elif kind == CAPTURE_TEXT:
        timeline, facts = _capture_text(path, label)
    else:
        decoded = decode_capture(path, on_progress=on_progress)
        timeline = decoded.timeline
        facts = InputFacts(
            kind,
            decoded.metadata.source or label,
            label,
            decoded.stream_bytes,
            decoded.host_seconds,
            list(decoded.warnings),
            decoded.records,
            trace_doubt=decoded.trace_doubt,
        )
        if timeline.console:
            facts.console_lines = len(timeline.console)
            timeline = merge_console(timeline, facts.warnings)
    settle_clock(timeline, facts, label, clock_hz)
    return timeline, facts


def settle_clock(timeline: InferenceTimeline, facts: InputFacts, label: str, clock_hz: int | None) -> None:
    """Refuse a clock out of range (with a warning) and use ``clock_hz`` (``--clock``) when the
    input gives none.
    """
    if timeline.clock_hz is not None and not valid_clock_hz(timeline.clock_hz):
        facts.warnings.append(
            f"{label}: the {timeline.clock_source} gives a clock of {timeline.clock_hz} Hz, not {CLOCK_RANGE}; "
            "clock unknown (give --clock)"
        )
        timeline.clock_hz, timeline.clock_source = None, "unknown"
    if timeline.clock_hz is None and clock_hz:
        timeline.clock_hz = clock_hz
        timeline.clock_source = GIVEN_CLOCK


def input_kind(reader: CaptureReader) -> str:
    """What an open input is: :data:`CAPTURE`, :data:`RAW_ITM`, :data:`CAPTURE_TEXT`,
    :data:`TEXT_LOG` or :data:`ETDUMP` (its header, and its first stream bytes sniffed).
    """
    head = _stream_head(reader)
    if reader.metadata.encoding == "text" or is_text_log(head):
        return CAPTURE_TEXT if reader.is_capture else TEXT_LOG
    if reader.is_capture:
        return CAPTURE
    return ETDUMP if is_etdump(head) else RAW_ITM


def _stream_head(reader: CaptureReader) -> bytes:
    """The first stream bytes (up to the sniffing size), across chunks."""
    head = bytearray()
    for chunk in reader.chunks():
        head += chunk.data
        if len(head) >= SNIFF_BYTES:
            break
    return bytes(head[:SNIFF_BYTES])


def _capture_text(path: str | os.PathLike[str], label: str) -> tuple[InferenceTimeline, InputFacts]:
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
    facts = InputFacts(CAPTURE_TEXT, source, label, total, host, warnings, int(timeline.log.get("lines", 0) or 0))
    log_warnings(timeline, label, facts.warnings)
    if warnings:
        # Bytes lost in the capture: the text around them may be cut (counted, never hidden).
        timeline.loss.gaps += len(warnings)
    return timeline, facts
