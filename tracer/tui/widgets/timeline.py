"""The timeline of one inference: a Gantt on Textual's line API, zoomable and scrollable.

Lanes: NPU layers, CPU layers, interrupts (the decoder's slices, named as the firmware names
them), NPU jobs, cache maintenance and marks. Bars are coloured by engine (alternating shades), red
when the layer runs over budget, amber when selected; a layer execution a finding names (a jitter
outlier, a job that missed its cache clean ...) is underlined and marked ``!``.
Only the visible part of each lane is cut from a cached full-width strip, so zooming to 1,000x
on a long inference costs no more than drawing the screen.
"""

from __future__ import annotations

import math

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click, MouseScrollDown, MouseScrollUp
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from tracer.analysis.settings import DEFAULT_TOLERANCE_PCT
from tracer.session.ring import InferenceRecord
from tracer.session.snapshot import LayerRow, SessionSnapshot
from tracer.session.window import InferenceEvents
from tracer.base.timeline import LayerSpan
from tracer.tui import format as fmt
from tracer.tui import palette as pal
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View
from tracer.tui.widgets.line_table import Column, LineTable

GUTTER = 7
LANES = ("time", "", "NPU", "CPU", "ISR", "jobs", "cache", "marks")
MAX_ZOOM = 4096
CACHE_GLYPH = {"clean": ("C", pal.CLEAN), "invalidate": ("I", pal.INVALIDATE), "clean_invalidate": ("X", pal.CLEAN)}


def inference_of(snapshot: SessionSnapshot, ui: UiState) -> InferenceRecord | None:
    """The inference the user looks at: the pinned one if still in the ring, else the newest."""
    ring = snapshot.ring
    if not ring:
        return None
    if ui.inference is not None:
        for record in reversed(ring):
            if record.number == ui.inference:
                return record
    return ring[-1]


def flagged_layers(snapshot: SessionSnapshot, number: int) -> dict[int, tuple[str, str]]:
    """Layers of inference ``number`` the findings name: layer -> (finding ids, worst severity)."""
    out: dict[int, tuple[str, str]] = {}
    for (inference, layer), findings in snapshot.diagnosis.instances.items():
        if inference == number:
            worst = max(findings, key=lambda f: f.severity.rank)
            out[layer] = (" ".join(dict.fromkeys(f.id for f in findings)), worst.severity.value)
    return out


def nice_step(span: float, cells: int, min_cells: int = 12) -> float:
    """A round tick step (1, 2, 5 x 10^n) at least ``min_cells`` apart."""
    if span <= 0 or cells <= 0:
        return 1.0
    raw = span * min_cells / cells
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * power >= raw:
            return m * power
    return 10 * power


class TimelineView(View, ScrollView, inherit_bindings=False):
    """The Gantt of one inference."""

    interval = 0.25
    depends = frozenset({"inference", "layer"})

    DEFAULT_CSS = """
    TimelineView { height: 11; scrollbar-size-horizontal: 1; scrollbar-size-vertical: 0; overflow-y: hidden; }
    """
    BINDINGS: list[Binding] = []

    class LayerClicked(Message):
        """The user clicked a layer's bar."""

        def __init__(self, layer: int) -> None:
            super().__init__()
            self.layer = layer

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.zoom = 1.0
        self._record: InferenceRecord | None = None
        self._events = InferenceEvents()
        self._flagged: dict[int, tuple[str, str]] = {}
        self._rows: dict[int, LayerRow] = {}
        self._selected: int | None = None
        self._clock: int | None = None
        self._key: tuple | None = None
        self._strips: list[Strip] = []
        self._t0 = 0
        self._span = 1

    # -- data ------------------------------------------------------------------------------------
    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the chosen inference of ``snapshot``."""
        record = inference_of(snapshot, ui)
        self._rows = {row.index: row for row in snapshot.layers}
        self._clock = snapshot.status.clock_hz
        self._selected = ui.layer
        self._record = record
        self._events = snapshot.events_of(record) if record is not None else InferenceEvents()
        self._flagged = flagged_layers(snapshot, record.number) if record is not None else {}
        self._layout()

    def _content_width(self) -> int:
        return max(1, int((self.size.width - GUTTER) * self.zoom))

    def _layout(self) -> None:
        record = self._record
        width = self._content_width()
        key = (record.number if record else None, width, self._selected, id(record), self.size.width,
               id(self._events), tuple(self._flagged.items()))  # fmt: skip
        if key != self._key:
            self._key = key
            self._strips = self._build(width)
            self.virtual_size = Size(GUTTER + width, len(LANES))
            self.refresh()

    def on_resize(self) -> None:
        """Fit the new width."""
        self._layout()

    # -- zoom and scroll -------------------------------------------------------------------------
    def set_zoom(self, zoom: float, focus_x: int | None = None) -> None:
        """Zoom keeping the time under column ``focus_x`` (default: the middle) where it is."""
        zoom = max(1.0, min(MAX_ZOOM, zoom))
        view = max(1, self.size.width - GUTTER)
        focus = view // 2 if focus_x is None else max(0, min(view, focus_x))
        old_width = self._content_width()
        fraction = (self.scroll_x + focus) / old_width
        self.zoom = zoom
        self._layout()
        self.scroll_to(x=max(0, fraction * self._content_width() - focus), animate=False, immediate=True)

    def zoom_in(self, focus_x: int | None = None) -> None:
        """Twice as much detail."""
        self.set_zoom(self.zoom * 2, focus_x)

    def zoom_out(self, focus_x: int | None = None) -> None:
        """Half as much."""
        self.set_zoom(self.zoom / 2, focus_x)

    def scroll_by_screens(self, screens: float) -> None:
        """Scroll by a fraction of the visible width."""
        view = max(1, self.size.width - GUTTER)
        self.scroll_to(x=max(0, self.scroll_x + screens * view), animate=False, immediate=True)

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        """Wheel up: zoom in around the pointer (shift: scroll)."""
        if not event.shift:
            event.prevent_default()
            event.stop()
            self.zoom_in(event.x - GUTTER)

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        """Wheel down: zoom out around the pointer (shift: scroll)."""
        if not event.shift:
            event.prevent_default()
            event.stop()
            self.zoom_out(event.x - GUTTER)

    def on_click(self, event: Click) -> None:
        """Select the layer whose bar is under the pointer."""
        record = self._record
        x = event.x - GUTTER + int(self.scroll_x)
        if record is None or event.x < GUTTER:
            return
        t = self._t0 + x * self._span / self._content_width()
        for span in record.inference.layers:
            if span.start <= t < span.end:
                self.post_message(self.LayerClicked(span.layer))
                return

    # -- drawing ---------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        """The gutter plus the visible part of lane ``y``."""
        width = self.size.width
        if not 0 <= y < len(LANES) or not self._strips:
            return Strip.blank(width)
        label = Segment(f"{LANES[y]:>{GUTTER - 2}} ", Style(color=pal.MUTED, bold=y in (2, 3)))
        edge = Segment("│" if y >= 2 else " ", Style(color=pal.BAR_EMPTY))
        x = int(self.scroll_x)
        body = self._strips[y].crop(x, x + width - GUTTER)
        return Strip([label, edge, *body], width).simplify()

    def _x(self, cycle: int, width: int) -> int:
        return int((cycle - self._t0) * width / self._span)

    def _build(self, width: int) -> list[Strip]:
        record = self._record
        blank = Strip([Segment(" " * width)], width)
        if record is None:
            return [Strip([Segment("waiting for an inference".ljust(width)[:width], Style(color=pal.MUTED))], width)] + [blank] * (len(LANES) - 1)
        inf = record.inference
        spans = inf.layers
        starts = [s.start for s in spans] + ([inf.start] if inf.start is not None else [])
        ends = [s.end for s in spans] + ([inf.end] if inf.end is not None else [])
        if not starts or not ends:
            return [blank] * len(LANES)
        self._t0, t1 = min(starts), max(ends)
        self._span = max(1, t1 - self._t0)
        lanes = [self._axis(width), self._ticks(width)]
        npu = [s for s in spans if self._engine(s) == "npu"]
        cpu = [s for s in spans if self._engine(s) != "npu"]
        lanes.append(self._bars(npu, width, pal.NPU))
        lanes.append(self._bars(cpu, width, pal.CPU))
        events = self._events
        lanes.append(self._intervals([(i.start, i.end, i.name, pal.ISR) for i in events.isrs], width))
        lanes.append(self._intervals([(j.start, j.end if j.end is not None else j.start, f"job {j.job}", pal.JOB)
                                      for j in events.npu_jobs], width, line=True))  # fmt: skip
        lanes.append(self._marks([(c.cycle, *CACHE_GLYPH.get(c.op, ("?", pal.MUTED))) for c in events.cache_ops], width))
        lanes.append(self._marks([(m.cycle, "◆", pal.MARK) for m in events.marks], width))
        return lanes

    def _engine(self, span: LayerSpan) -> str:
        row = self._rows.get(span.layer)
        return row.info.engine.value if row is not None else "cpu"

    def _step(self, width: int) -> float:
        """Tick step in cycles: round in time units when the clock is known."""
        if self._clock:
            return nice_step(self._span / self._clock, width) * self._clock
        return nice_step(self._span, width)

    def _axis(self, width: int) -> Strip:
        step = self._step(width)
        cells = [" "] * width
        t = 0.0
        while t <= self._span:
            x = self._x(int(self._t0 + t), width)
            label = fmt.duration(t / self._clock) if self._clock and t else fmt.short_cycles(t)
            label = label.replace(" ", "")
            if x + len(label) <= width:
                for i, ch in enumerate(label):
                    cells[x + i] = ch
            t += step
        return Strip([Segment("".join(cells), Style(color=pal.MUTED))], width)

    def _ticks(self, width: int) -> Strip:
        step = self._step(width)
        cells = ["─"] * width
        t = 0.0
        while t <= self._span:
            x = min(width - 1, self._x(int(self._t0 + t), width))
            cells[x] = "┬"
            t += step
        return Strip([Segment("".join(cells), Style(color=pal.MUTED, dim=True))], width)

    def _bars(self, spans: list[LayerSpan], width: int, shades: tuple[str, str]) -> Strip:
        segments: list[Segment] = []
        at = 0
        for n, span in enumerate(sorted(spans, key=lambda s: s.start)):
            x0 = max(at, self._x(span.start, width))
            x1 = max(x0 + 1, self._x(span.end, width))
            x1 = min(x1, width)
            if x0 >= width:
                break
            if x0 > at:
                segments.append(Segment(" " * (x0 - at)))
            row = self._rows.get(span.layer)
            background = shades[n % 2]
            if row is not None and row.predicted and span.cycles > row.predicted * (1 + row.tolerance_pct / 100):
                background = pal.BAD
            if not span.complete:
                background = pal.MUTED
            flagged = span.layer in self._flagged
            style = Style(color=pal.BRIGHT, bgcolor=background, underline=flagged, bold=flagged)
            if span.layer == self._selected:
                style = Style(color="#101010", bgcolor=pal.SELECTED, bold=True, underline=flagged)
            name = row.info.label if row is not None else f"#{span.layer}"
            segments.append(Segment(_fit("!" + name if flagged else name, x1 - x0), style))
            at = x1
        if at < width:
            segments.append(Segment(" " * (width - at)))
        return Strip(segments, width)

    def _intervals(self, items: list[tuple[int, int, str, str]], width: int, line: bool = False) -> Strip:
        cells: list[tuple[str, str]] = [(" ", "")] * width
        for start, end, name, colour in sorted(items):
            x0 = max(0, self._x(start, width))
            x1 = min(width, max(x0 + 1, self._x(end, width)))
            body = _fit(name, x1 - x0) if not line else ("═" * (x1 - x0))
            if line and x1 - x0 >= 2:
                body = "╞" + "═" * (x1 - x0 - 2) + "╡"
            for i in range(x0, x1):
                cells[i] = (body[i - x0], colour)
        return _strip(cells, width, filled=not line)

    def _marks(self, items: list[tuple[int, str, str]], width: int) -> Strip:
        cells: list[tuple[str, str]] = [(" ", "")] * width
        for cycle, glyph, colour in items:
            x = min(width - 1, max(0, self._x(cycle, width)))
            cells[x] = (glyph if cells[x][0] == " " else "+", colour)
        return _strip(cells, width)


def _fit(name: str, cells: int) -> str:
    """A label centred in ``cells`` (cut, or a thin bar when too narrow)."""
    if cells <= 0:
        return ""
    if cells < 3:
        return " " * cells
    label = name if len(name) <= cells - 2 else name[: cells - 3] + "…" if cells > 4 else ""
    return label.center(cells)


def _strip(cells: list[tuple[str, str]], width: int, filled: bool = False) -> Strip:
    segments = []
    for ch, colour in cells:
        if not colour:
            segments.append(Segment(ch))
        elif filled:
            segments.append(Segment(ch, Style(color=pal.BRIGHT, bgcolor=colour)))
        else:
            segments.append(Segment(ch, Style(color=colour, bold=True)))
    return Strip(segments, width).simplify()


class InferenceHeader(View, Static):
    """One line about the inference on the timeline."""

    interval = 0.25
    depends = frozenset({"inference"})

    DEFAULT_CSS = """
    InferenceHeader { height: 2; padding: 0 1; }
    """

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Describe the chosen inference."""
        record = inference_of(snapshot, ui)
        text = Text(no_wrap=True, overflow="ellipsis")
        if record is None:
            self.update_if_changed(Text("no inference yet", style=pal.MUTED))
            return
        inf = record.inference
        ring = snapshot.ring
        position = next((i for i, r in enumerate(ring) if r.number == record.number), len(ring) - 1)
        text.append(f"inference #{inf.number}", style="bold")
        if inf.complete:
            text.append("  complete", style=pal.GOOD)
        else:
            text.append("  incomplete: " + "; ".join(inf.problems), style=f"bold {pal.WARN}")
        clock = snapshot.status.clock_hz
        if inf.latency_cycles is not None:
            text.append(f"  {fmt.cycles(inf.latency_cycles)} cycles", style="bold")
            if clock:
                text.append(f" ({fmt.cycle_time(inf.latency_cycles, clock)})", style=pal.MUTED)
        events = snapshot.events_of(record)
        counts = ((len(inf.layers), "layer"), (len(events.isrs), "ISR"), (len(events.npu_jobs), "NPU job"),
                  (len(events.cache_ops), "cache op"))  # fmt: skip
        text.append("  · " + " · ".join(f"{n} {word}{'' if n == 1 else 's'}" for n, word in counts), style=pal.MUTED)
        flagged = flagged_layers(snapshot, inf.number)
        if flagged:
            rows = {row.index: row for row in snapshot.layers}
            text.append("  ! ", style=f"bold {pal.WARN}")
            for n, (layer, (ids, severity)) in enumerate(sorted(flagged.items())):
                label = rows[layer].info.label if layer in rows else f"#{layer}"
                first, *more = ids.split()
                shown = f"{label}: {first}" + (f" +{len(more)}" if more else "")
                text.append(("; " if n else "") + shown, style=pal.SEVERITY.get(severity, pal.WARN))
        text.append("\n")
        following = "following the newest" if ui.inference is None else "pinned (f: follow the newest)"
        text.append(f"{position + 1} of the last {len(ring)} kept · {following} · ← → inference  [ ] zoom  , . scroll  0 fit",
                    style=pal.MUTED)  # fmt: skip
        self.update_if_changed(text)


class SpansTable(View, LineTable):
    """The layers of the chosen inference, in time order; the cursor follows the selected layer."""

    interval = 0.5
    depends = frozenset({"inference", "layer"})
    COLUMNS = (
        Column("index", "#", right=True), Column("name", "layer", min_width=10), Column("engine", "engine"),
        Column("start", "start", right=True), Column("cycles", "cycles", right=True), Column("time", "time", right=True),
        Column("share", "share", right=True), Column("ratio", "ratio", right=True), Column("flags", "findings", min_width=8),
    )  # fmt: skip

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """List the spans of the chosen inference."""
        record = inference_of(snapshot, ui)
        if record is None:
            self.set_rows([])
            return
        inf = record.inference
        rows = {row.index: row for row in snapshot.layers}
        clock = snapshot.status.clock_hz
        total = inf.latency_cycles or sum(s.cycles for s in inf.layers) or 1
        t0 = inf.start if inf.start is not None else (inf.layers[0].start if inf.layers else 0)
        flagged = flagged_layers(snapshot, inf.number)
        out = []
        for span in inf.layers:
            ids, severity = flagged.get(span.layer, ("", ""))
            flags = " ".join(filter(None, ("" if span.complete else "lost", ids)))
            row = rows.get(span.layer)
            label = row.info.label if row else f"#{span.layer}"
            engine = row.info.engine.value if row else "cpu"
            ratio = span.cycles / row.predicted if row is not None and row.predicted else None
            tolerance = row.tolerance_pct if row else DEFAULT_TOLERANCE_PCT
            out.append((str(span.layer), (
                (str(span.layer), pal.MUTED), (label, "bold" if span.layer == ui.layer else pal.TEXT),
                (engine.upper(), f"bold {pal.NPU[0] if engine == 'npu' else pal.CPU[0]}"),
                (f"+{fmt.cycles(span.start - t0)}", pal.MUTED), (fmt.cycles(span.cycles), f"bold {pal.BRIGHT}"),
                (fmt.cycle_time(span.cycles, clock), pal.MUTED), (f"{span.cycles / total:.1%}", pal.TEXT),
                (f"{ratio:.2f}" if ratio is not None else "-", f"bold {pal.ratio_colour(ratio, tolerance)}"),
                (flags, pal.SEVERITY.get(severity, pal.WARN)),
            )))  # fmt: skip
        self.set_rows(out)
        if ui.layer is not None and str(ui.layer) in self.keys:
            self.move_cursor(self.keys.index(str(ui.layer)), announce=False)
