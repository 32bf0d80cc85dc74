"""The latency plot: one bar per recent inference, the budget as a line, the selected one marked."""

from __future__ import annotations

import functools
import math

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.events import Click
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from tracer.session.snapshot import LatencyInfo, SessionSnapshot
from tracer.tui import format as fmt
from tracer.tui import palette as pal
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View

EIGHTHS = " ▁▂▃▄▅▆▇█"
GUTTER = 8


class LatencyPlot(View, Widget):
    """Bars of inference latency (cycles), newest on the right."""

    interval = 0.25
    depends = frozenset({"inference"})

    DEFAULT_CSS = """
    LatencyPlot { border: round $primary-darken-2; border-title-color: $text; border-subtitle-color: $text-muted; }
    """

    class InferenceClicked(Message):
        """The user clicked the bar of an inference."""

        def __init__(self, number: int) -> None:
            super().__init__()
            self.number = number

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Inference latency"
        self._data: LatencyInfo | None = None
        self._selected: int | None = None
        self._clock_hz: int | None = None
        self._strips: list[Strip] = []
        self._columns: list[int] = []  # inference number per plot column
        self._built_size: tuple[int, int] = (-1, -1)  # the size the bars were laid out for

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the latencies of ``snapshot``."""
        lat = snapshot.latency
        self._data = lat
        self._clock_hz = snapshot.status.clock_hz
        ring = snapshot.ring
        self._selected = ui.inference if ui.inference is not None else (ring[-1].number if ring else None)
        st = lat.stats
        if st is None:
            ended = snapshot.status.state in ("ended", "error")
            self.border_subtitle = (
                "no complete inference in this capture" if ended else "waiting for a complete inference"
            )
        else:
            parts = [f"p50 {fmt.cycles(st.p50)}", f"p99 {fmt.cycles(st.p99)}", f"max {fmt.cycles(st.max)} cycles"]
            if self._clock_hz:
                parts.append(f"p50 {fmt.cycle_time(st.p50, self._clock_hz)}")
            if lat.budget_cycles:
                parts.append(f"budget {fmt.cycles(lat.budget_cycles)}")
            self.border_subtitle = " · ".join(parts)
        self._rebuild()
        self.refresh()

    def on_resize(self) -> None:
        """Lay the bars out again for a new size, and draw them (shown again at the same size: as drawn)."""
        if tuple(self.content_size) != self._built_size:
            self._rebuild()
            self.refresh()

    def _rebuild(self) -> None:
        width, height = self.content_size.width, self.content_size.height
        lat = self._data
        if lat is None or width <= GUTTER + 2 or height < 3:
            self._strips = [Strip.blank(width)] * max(height, 0)
            return
        rows = height - 1
        plot = width - GUTTER
        # Few inferences get wider bars (up to 4 cells, the last a gap), many get one cell each.
        bar = max(1, min(4, plot // max(1, len(lat.cycles))))
        count = plot // bar
        cycles = lat.cycles[-count:]
        numbers = lat.numbers[-count:]
        complete = lat.complete[-count:]
        self._columns = [int(n) for n in numbers.tolist() for _ in range(bar)]
        known = cycles[cycles >= 0]
        budget = lat.budget_cycles
        top = max(float(known.max()) if len(known) else 1.0, budget or 0.0) * 1.08 or 1.0
        eighths = np.where(cycles >= 0, np.round(cycles / top * rows * 8), -1).astype(np.int64)
        budget_row = None if not budget else rows - 1 - min(rows - 1, int(math.floor(budget / top * rows)))
        labels = {0: fmt.short_cycles(top), rows - 1: "0"}
        if budget_row is not None and budget:
            labels[budget_row] = fmt.short_cycles(budget)
        strips = []
        for r in range(rows):
            level = rows - 1 - r
            label = labels.get(r, "")
            colour = pal.WARN if r == budget_row and label else pal.MUTED
            segments = [
                Segment(f"{label:>{GUTTER - 2}} ", Style(color=colour)),
                Segment("┤" if label else "│", Style(color=pal.MUTED)),
            ]
            for c in range(len(cycles)):
                cell = _cell(
                    -1 if eighths[c] < 0 else max(0, min(8, int(eighths[c]) - level * 8)),
                    r == budget_row,
                    bool(complete[c]),
                    bool(budget and cycles[c] > budget),
                    int(numbers[c]) == self._selected,
                    r == rows - 1,
                )
                if bar >= 3:
                    segments.append(Segment(cell.text * (bar - 1), cell.style))
                    segments.append(Segment("─" if r == budget_row else " ", Style(color=pal.WARN)))
                else:
                    segments.append(Segment(cell.text * bar, cell.style))
            pad = plot - len(cycles) * bar
            if pad > 0:
                segments.append(Segment("─" * pad if r == budget_row else " " * pad, Style(color=pal.WARN)))
            strips.append(Strip(segments, width))
        strips.append(self._axis(numbers, width, bar))
        self._strips = strips
        self._built_size = (width, height)

    def _axis(self, numbers: np.ndarray, width: int, bar: int) -> Strip:
        plot = width - GUTTER
        line = [" "] * plot
        if len(numbers):
            left, right = f"#{numbers[0]}", f"#{numbers[-1]}"
            for i, ch in enumerate(left[:plot]):
                line[i] = ch
            start = max(len(left) + 1, len(numbers) * bar - len(right))
            for i, ch in enumerate(right):
                if start + i < plot:
                    line[start + i] = ch
        return Strip([Segment(" " * GUTTER, Style()), Segment("".join(line), Style(color=pal.MUTED))], width)

    def render_line(self, y: int) -> Strip:
        """One row of the plot."""
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.content_size.width)

    def on_click(self, event: Click) -> None:
        """Select the inference under the pointer."""
        column = event.x - GUTTER - self.styles.gutter.left
        if 0 <= column < len(self._columns):
            self.post_message(self.InferenceClicked(self._columns[column]))


@functools.lru_cache(maxsize=256)
def _cell(fill: int, budget_row: bool, complete: bool, over: bool, selected: bool, bottom: bool) -> Segment:
    """One cell of a bar: ``fill`` eighths of it (-1: no latency known), in the bar's colour.

    Cached: a plot has a few dozen kinds of cell, drawn thousands of times.
    """
    if fill < 0:
        return Segment("·" if bottom else ("─" if budget_row else " "), Style(color=pal.MUTED if bottom else pal.WARN))
    if not complete and bottom:
        return Segment("×", Style(color=pal.WARN, bold=True))
    if selected:
        colour = pal.SELECTED
    elif not complete:
        colour = pal.MUTED
    elif over:
        colour = pal.BAD
    else:
        colour = pal.INFO
    if fill == 0:
        return Segment("─" if budget_row else " ", Style(color=pal.WARN))
    return Segment(EIGHTHS[fill], Style(color=colour))
