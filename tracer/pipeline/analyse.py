"""Any input file to its one :class:`~tracer.analysis.analyze.Analysis`: the one way every front
end analyses a file (``report``, ``check``, ``export``, ``compare``, ``ingest``, the session's
findings on the whole capture).

An input up to :data:`tracer.pipeline.windows.WHOLE_BYTES`, a text log or an ETDump is read whole
(:func:`~tracer.pipeline.load.load_timeline`) and analysed (:func:`~tracer.analysis.analyze.
analyze`: the one analysis, :class:`~tracer.analysis.accumulate.AnalysisAccumulator`, of one
window). A larger capture or raw trace is read in windows, in two passes (the second only where
needed), in bounded memory (:func:`analyse_windows`: the same accumulator, many windows), unless it
holds what is not read in windows yet (:class:`NotWindowable`): then it is read whole, and
:attr:`AnalysedFile.read_whole_because` says why.

What the window reader leaves out, with a warning in the capture's facts: DWT PC samples over SWO
and a probe's polled NPU samples (:mod:`tracer.pipeline.windows`). Where a task that ran before the
firmware named it (its TASK_INFO after its first switch-in) took time from an outlier, the windows
before its name came show it by its id (read whole, the later name applies throughout).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from tracer.analysis.accumulate import AnalysisAccumulator, Windows
from tracer.analysis.analyze import analyze
from tracer.analysis.result import Analysis
from tracer.analysis.settings import AnalysisSettings
from tracer.base.timeline import Inferences, LayerSpans
from tracer.pipeline.load import InputFile, load_timeline, sniff_input
from tracer.pipeline.window_text import WindowText
from tracer.pipeline.windows import is_windowed, read_windows
from tracer.telemetry.freertos_itm import TIME_LABEL as FREERTOS_TIME

if TYPE_CHECKING:
    from tracer.base.facts import InputFacts
    from tracer.base.timeline import InferenceTimeline
    from tracer.budget.model import Budget
    from tracer.elf.inlines import CodeLocator
    from tracer.power.recording import PowerRecording


class NotWindowable(Exception):
    """The input has something not read in windows yet (the message says what): read it whole."""


class ProgressBar(Protocol):
    """What a progress display takes: the stream bytes read so far."""

    def update(self, done: int) -> None:
        """Show ``done`` bytes read."""


Progress = Callable[[str], contextlib.AbstractContextManager[ProgressBar]]


@dataclasses.dataclass(frozen=True)
class AnalysedFile:
    """An input's analysis and how it was read.

    Attributes:
        analysis: The analysis.
        windowed: True when it was read in windows (its timeline then holds the input's facts and
            inferences, but no layer execution, event or interrupt slice).
        read_whole_because: Why a large input was read whole after all, or None.
    """

    analysis: Analysis
    windowed: bool
    read_whole_because: str | None = None


@dataclasses.dataclass
class _Calls:
    on_progress: Callable[[int], None] | None

    def update(self, done: int) -> None:
        if self.on_progress is not None:
            self.on_progress(done)


def reporting_to(on_progress: Callable[[int], None] | None) -> Progress:
    """A progress display that calls ``on_progress`` with the bytes read (None: shows nothing)."""

    @contextlib.contextmanager
    def progress(_label: str) -> Iterator[ProgressBar]:
        yield _Calls(on_progress)

    return progress


def analyse_file(
    path: str | os.PathLike[str],
    budget: Budget | None = None,
    settings: AnalysisSettings | None = None,
    *,
    locator: CodeLocator | None = None,
    clock_hz: int | None = None,
    whole: bool = False,
    on_window: Callable[[InferenceTimeline], None] | None = None,
    progress: Progress | None = None,
    power: PowerRecording | None = None,
    meter_input: int | None = None,
) -> AnalysedFile:
    """Read and analyse an input file.

    Args:
        path: A capture, raw ITM/SWO file, text log or ETDump.
        budget: The normalized budget, or None.
        settings: Thresholds.
        locator: The firmware ELF's symbols (``--elf``), for CPU hot spots.
        clock_hz: The clock the input's cycles count when it does not say (``--clock``).
        whole: Read it whole whatever its size (``--per-inference`` lists every execution).
        on_window: Called with every window of an input read in windows (not otherwise: the
            analysis's timeline is then the whole input).
        progress: Makes a progress display for a label (``decoding``, ``decoding in windows (pass
            1 of 2)``); none by default.
        power: A power-meter recording (``--power``) to attribute: the input is then read whole
            (energy is attributed on the whole timeline, :mod:`tracer.power`).
        meter_input: The meter's digital input the sync pin is on (default: what the firmware says).

    Raises:
        CaptureError: The file is missing, unreadable or undecodable (exit 3).
    """
    progress = progress or reporting_to(None)
    settings = settings or AnalysisSettings()
    source = sniff_input(path)  # once: what it is, and how large
    if not whole and power is None and is_windowed(source):
        passes = 0

        def windows() -> Iterator[tuple[InferenceTimeline, InputFacts]]:
            nonlocal passes
            passes += 1
            with progress(f"decoding in windows (pass {passes} of 2)") as bar:
                yield from read_windows(source, on_progress=bar.update, clock_hz=clock_hz)

        try:
            return AnalysedFile(analyse_windows(windows, budget, settings, on_window, locator), windowed=True)
        except NotWindowable as why:
            because = f"it has {why}, which is not analysed in windows yet"
            return dataclasses.replace(
                _whole(source, budget, settings, locator, clock_hz, progress), read_whole_because=because
            )
    return _whole(source, budget, settings, locator, clock_hz, progress, power, meter_input)


def _whole(
    source: InputFile,
    budget: Budget | None,
    settings: AnalysisSettings,
    locator: CodeLocator | None,
    clock_hz: int | None,
    progress: Progress,
    power: PowerRecording | None = None,
    meter_input: int | None = None,
) -> AnalysedFile:
    with progress("decoding") as bar:
        timeline, facts = load_timeline(source, on_progress=bar.update, clock_hz=clock_hz)
    return AnalysedFile(analyze(timeline, facts, budget, settings, locator, power, meter_input), windowed=False)


def analyse_windows(
    windows: Windows,
    budget: Budget | None = None,
    settings: AnalysisSettings | None = None,
    on_window: Callable[[InferenceTimeline], None] | None = None,
    locator: CodeLocator | None = None,
) -> Analysis:
    """The analysis of an input read in windows: the one accumulator
    (:class:`~tracer.analysis.accumulate.AnalysisAccumulator`) over every window, with the
    capture's console text merged once (:class:`~tracer.pipeline.window_text.WindowText`).

    Args:
        windows: Reads the input's windows (each window with the input's facts so far).
        budget: The normalized budget, or None.
        settings: Thresholds.
        on_window: Called with each window of the first pass.
        locator: The firmware ELF's symbols and inlined code (``--elf``), for CPU hot spots.

    Raises:
        NotWindowable: The input must be read whole: a FreeRTOS trace's task lane (its slices come
            from the decoder's own reader over the whole stream, not from records a window
            holds), or console text without any telemetry record (the text is the timeline, and
            it is one window anyway).
    """
    accumulator = AnalysisAccumulator(settings, budget, locator)
    text = WindowText()
    last: tuple[InferenceTimeline, InputFacts] | None = None
    for window, facts in windows():
        if window.labels.get("tasks") == FREERTOS_TIME:
            raise NotWindowable("a FreeRTOS trace's task lane")
        accumulator.add(window)
        text.add(window)
        if on_window is not None:
            on_window(window)
        last = (_facts_only(window), facts)  # the window's rows are not kept
    if last is None:
        raise NotWindowable("no window")
    if text.text_only:
        raise NotWindowable("console text and no telemetry record (the text is the timeline)")
    capture, facts = text.merged(dataclasses.replace(last[0], inferences=accumulator.every_inference()), last[1])
    return accumulator.finish(capture, facts, windows)


def _facts_only(timeline: InferenceTimeline) -> InferenceTimeline:
    """``timeline``'s facts (clock, labels, layers, loss ...) without its rows."""
    return dataclasses.replace(
        timeline,
        inferences=Inferences.concat([]),
        spans=LayerSpans.empty(timeline.spans.pmu_names),
        arena=[],
        stacks=[],
        cache_ops=[],
        npu_jobs=[],
        isrs=[],
        console=[],
        marks=[],
        crcs=[],
        records=[],
        data_trace=[],
        span_facts=None,
    )
