"""The console text of a capture read in windows, merged once into the capture's facts.

The window reader leaves each window's console text as lines (:mod:`tracer.pipeline.windows`);
read whole, the telemetry decoder merges the text into the timeline
(:func:`~tracer.telemetry.console_text.merge_console`). :class:`WindowText` keeps the lines of
every window and merges them once, as for the capture read whole, into the capture's facts that
:meth:`~tracer.analysis.accumulate.AnalysisAccumulator.finish` takes.
"""

from __future__ import annotations

import dataclasses

from tracer.base.facts import InputFacts
from tracer.base.timeline import ConsoleLine, InferenceTimeline
from tracer.limits import GIVEN_CLOCK
from tracer.pipeline.load import settle_clock
from tracer.telemetry.console_text import merge_console


class WindowText:
    """The console lines of every window, and whether any window had records or arena reports."""

    def __init__(self) -> None:
        self.console: list[ConsoleLine] = []
        self.has_records = False
        self.has_arena = False

    def add(self, window: InferenceTimeline) -> None:
        """Keep the next window's console lines."""
        self.console += window.console
        self.has_records = self.has_records or len(window.inferences) > 0 or len(window.spans) > 0
        self.has_arena = self.has_arena or len(window.arena) > 0

    @property
    def text_only(self) -> bool:
        """The capture has console text and no telemetry record: the text is the timeline."""
        return bool(self.console) and not self.has_records

    def merged(self, capture: InferenceTimeline, facts: InputFacts) -> tuple[InferenceTimeline, InputFacts]:
        """The capture's facts with the numbers of its console text merged in, as for the capture
        read whole (:func:`~tracer.telemetry.console_text.merge_console` on every line, then the
        clock settled); ``capture`` has every inference.
        """
        if not self.console:
            return capture, facts
        facts = dataclasses.replace(facts, warnings=list(facts.warnings))
        given = capture.clock_hz if capture.clock_source == GIVEN_CLOCK else None
        if given is not None:  # read whole, the text's clock comes before --clock
            capture.clock_hz, capture.clock_source = None, "unknown"
        capture = merge_console(dataclasses.replace(capture, console=list(self.console)), facts.warnings)
        if self.has_arena:  # the records' arena reports win over the text's
            capture.arena = []
        # The clock settled as for the capture read whole (a clock the records gave was settled
        # window by window already, and the text gives one only where they gave none).
        settle_clock(capture, facts, facts.path or facts.source, given)
        return capture, facts
