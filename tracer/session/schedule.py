"""When the session runs the CI gate's findings rules, and on what (see :mod:`tracer.session.findings`).

:class:`FindingsSchedule` runs them in the worker thread at most once a second (:data:`INTERVAL_S`
of the session's clock), only when something new arrived and never while the screen is answering a
key; and once more when the stream ends. On the window while it is the whole stream; at the end of
a stream that outgrew its window, on the whole capture file, read again (a replay's, or a live
session's recording). A rule that fails does
not stop the session: the failure becomes a warning on screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tracer.session.findings import INTERVAL_S, Diagnosis, capture_analysis, describe_scope, window_analysis

if TYPE_CHECKING:
    from tracer.base.facts import InputFacts
    from tracer.base.timeline import InferenceTimeline
    from tracer.budget.model import Budget


class Stopped(Exception):
    """The session was asked to stop during a long piece of work."""


class FindingsSchedule:
    """The latest :class:`Diagnosis` and when the next one is due.

    Args:
        clock: The session's monotonic clock.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.diagnosis = Diagnosis()
        self._analysed: tuple[int, ...] | None = None
        self._analysed_at = float("-inf")
        self.runs = 0  # times the rules ran (tests, benchmarks)

    def due(self, key: tuple[int, ...], final: bool, ui_hold_until: float) -> bool:
        """Whether to run now for the state ``key`` (:attr:`StreamState.analysis_key`); if so, noted as run."""
        now = self._clock()
        if not final and (
            key in (self._analysed, (0, 0)) or now - self._analysed_at < INTERVAL_S or time.monotonic() < ui_hold_until
        ):
            return False
        self._analysed, self._analysed_at = key, now
        self.runs += 1
        return True

    def run(
        self,
        window: Callable[[], InferenceTimeline],
        facts: Callable[[], InputFacts],
        budget: Budget | None,
        numbers: Sequence[int],
        whole: bool,
        inferences: int,
        capture: str | None = None,
        on_progress: Callable[[int], None] | None = None,
    ) -> Diagnosis:
        """Run the rules on the window (or, given ``capture``, on that whole file).

        Args:
            window: Builds the window's timeline.
            facts: The input's facts.
            budget: The budget, or None.
            numbers: The numbers of the inferences in the window, oldest first.
            whole: The window holds everything the stream brought.
            inferences: Inferences the session has seen.
            capture: Read this capture file again instead (the end of a long replay or recording).
            on_progress: Called while reading ``capture`` (raises :class:`Stopped` to give up).

        Raises:
            Stopped: ``on_progress`` gave up.
            Exception: A rule failed (the caller shows it as a warning).
        """
        if capture is not None:
            analysis = capture_analysis(capture, budget, on_progress)
            return Diagnosis.of(analysis, "the whole capture", True, inferences)
        analysis = window_analysis(window(), facts(), budget)
        return Diagnosis.of(analysis, describe_scope(numbers, whole), whole, inferences)
