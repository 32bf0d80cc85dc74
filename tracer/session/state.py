"""The bounded state a session folds from its stream, and the timeline of its window.

:class:`StreamState` takes what each feed decoded (a :class:`~tracer.session.rolling.DecodedDelta`)
and keeps: a ring of recent inferences (:class:`~tracer.session.ring.InferenceRing`), the events
and interrupt slices around them (:class:`~tracer.session.window.EventWindow`), running per-layer
and latency statistics, memory, console lines, counters and stream warnings. Every record that
arrives is counted in the statistics; the ring only bounds how many whole inferences are kept
for viewing, and what happened before the ring's horizon is forgotten, so memory stays flat.

Not thread-safe by itself: the session folds and reads it under its lock.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence

from tracer.base.timeline import ConsoleLine, InferenceTimeline, IsrSlice
from tracer.session.latency import LatencyHistory
from tracer.session.layers import LayerFold
from tracer.session.memory import MemoryTracker
from tracer.session.ring import InferenceBlock, InferenceRing
from tracer.session.rolling import DecodedDelta, RollingDecoder
from tracer.session.tasks import TaskLane, with_facts
from tracer.session.window import EventView, EventWindow, window_timeline

CONSOLE_LINES = 2000
MAX_ISRS = 65_536  # interrupt slices kept at most when no inference closes to set a horizon
# The problem the decoder gives an inference that was still running when the stream ended: cut by
# the end of the capture (the user stopped it), not lost; with it come the consequences of the cut
# (the layer that was running never ends, the record being sent was cut short).
CUT_BY_END = "the capture ended during this inference"
CUT_CONSEQUENCES = {
    CUT_BY_END,
    "layer begin/end records do not pair up",
    "damaged record (wrong length, check byte or shape)",
}


class StreamState:
    """What the session holds of its stream (see the module docstring).

    Args:
        ring: Recent inferences kept whole.
        window: Values per layer the percentiles, history and distribution cover.
        latency_history: Recent inference latencies kept for the plot.
    """

    def __init__(self, ring: int, window: int, latency_history: int) -> None:
        self.ring = InferenceRing(ring)
        self.events = EventWindow()
        self.isr_slices: Sequence[IsrSlice] = ()
        self.isrs_forgotten = False
        self._isr_cap = MAX_ISRS
        self._horizon_applied: int | None = None
        self.memory = MemoryTracker()
        self.layers = LayerFold(window)
        self.latency = LatencyHistory(latency_history, window)
        self.inferences = 0
        self.complete = 0
        self.cut_at_end = 0
        self.cut_records = 0  # records cut short by the end of the stream (the decoder counts them damaged)
        self.spans = 0
        self.task_lane = TaskLane()
        self.console: collections.deque[tuple[int, ConsoleLine]] = collections.deque(maxlen=CONSOLE_LINES)
        self.console_seq = 0
        self.warnings: list[str] = []

    def fold(self, delta: DecodedDelta, decoder: RollingDecoder, warnings: Iterable[str]) -> None:
        """Apply what one feed produced (``warnings``: the stream's problems so far)."""
        self._fold_inferences(delta)
        self.events.add(delta.cache_ops, delta.npu_jobs, delta.marks, delta.crcs, delta.records)
        self.isr_slices = decoder.telemetry.isr_slices()
        self._forget_old(decoder)
        self.task_lane.add(delta.records, _newest(delta), self.ring.horizon)
        self.memory.add_arena(delta.arena)
        self.memory.add_stacks(delta.stacks)
        for line in delta.console:
            self.console.append((self.console_seq, line))
            self.console_seq += 1
        self.warn(warnings)

    def warn(self, warnings: Iterable[str]) -> bool:
        """Remember problems not said yet; True if there was one."""
        new = False
        for warning in warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)
                new = True
        return new

    def _fold_inferences(self, delta: DecodedDelta) -> None:
        inf = delta.inferences
        if not len(inf):
            return
        self.ring.add_block(InferenceBlock(inf, delta.spans, delta.span_first, delta.span_end))
        self.inferences += len(inf)
        self.complete += int(inf.complete.sum())
        self.cut_at_end += sum(1 for problems in inf.problems if cut_by_end(problems))
        self.latency.add(inf)
        self.spans += len(delta.spans)
        self.layers.add(delta.spans)

    def _forget_old(self, decoder: RollingDecoder) -> None:
        """Events and interrupt slices from before the ring's horizon go (memory stays flat)."""
        horizon = self.ring.horizon
        telemetry = decoder.telemetry
        if horizon is not None and horizon != self._horizon_applied:
            self._horizon_applied = horizon
            self.events.forget_before(horizon)
            if telemetry.discard_isrs(horizon):
                self.isrs_forgotten = True
                self.isr_slices = telemetry.isr_slices()
        if len(self.isr_slices) > self._isr_cap:  # no inference closes to set a horizon: keep the newest half
            oldest_kept = min(s.end for s in self.isr_slices[-MAX_ISRS // 2 :])
            if telemetry.discard_isrs(oldest_kept):
                self.isrs_forgotten = True
                self.isr_slices = telemetry.isr_slices()
            # Slices timed in timestamp ticks or byte offsets cannot be placed against cycles and stay.
            self._isr_cap = max(MAX_ISRS, len(self.isr_slices) + MAX_ISRS // 2)

    @property
    def whole(self) -> bool:
        """True while nothing the stream brought has left the window (its timeline is the whole stream's)."""
        return (
            self.ring.holds_everything
            and not self.events.forgot
            and not self.isrs_forgotten
            and self.console_seq <= CONSOLE_LINES
        )

    @property
    def analysis_key(self) -> tuple[int, ...]:
        """Changes when there is something new for the findings rules."""
        return (self.inferences,) if self.inferences else (self.console_seq, self.memory.reports)

    def view(self) -> EventView:
        """The events, interrupt and task slices held (immutable)."""
        return self.events.view(self.isr_slices, self.task_lane.slices)

    def window_parts(self) -> tuple:
        """What :func:`window_timeline` needs of the state, copied (call under the session's lock)."""
        return (
            self.ring.items(),
            self.view(),
            [line for _, line in self.console],
            self.memory.deciding_samples(),
            self.ring.horizon,
            self.task_lane.records(),
            self.task_lane.end,
        )

    def console_since(self, seq: int, until: int | None = None) -> tuple[list[ConsoleLine], int]:
        """Console lines numbered ``seq`` up to ``until`` (default: the newest), and the next number."""
        end = self.console_seq if until is None else min(until, self.console_seq)
        lines = [line for s, line in self.console if seq <= s < end]
        return lines, max(end, seq)


def cut_by_end(problems: Iterable[str]) -> bool:
    """True for an inference that is incomplete only because the stream ended while it ran."""
    found = set(problems)
    return CUT_BY_END in found and found <= CUT_CONSEQUENCES


def _newest(delta: DecodedDelta) -> int:
    """The newest cycle ``delta`` shows (-1: none): the running task's slice reaches it."""
    ends = [
        int(delta.inferences.end.max()) if len(delta.inferences) else -1,
        int(delta.spans.end.max()) if len(delta.spans) else -1,
    ]
    ends += [r.cycle for r in delta.records[-1:]]
    return max(ends)


def window_of(parts: tuple, decoder: RollingDecoder) -> InferenceTimeline:
    """The window as a timeline, from :meth:`StreamState.window_parts` (worker thread: it reads the decoder)."""
    from tracer.telemetry.console_text import merge_console
    from tracer.telemetry.record_facts import attach_record_facts

    records, view, console, memory, horizon, task_records, end = parts
    base = decoder.telemetry.timeline()
    timeline = with_facts(
        window_timeline(base, decoder.layers, records, view, horizon, memory, console), task_records, end
    )
    attach_record_facts(timeline)  # (the window's records, not the decoder's)
    # As `tracer report` reads a capture: the port-0 text adds what the records do not say.
    return merge_console(timeline) if timeline.console else timeline
