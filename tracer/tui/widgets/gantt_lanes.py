"""The timeline's lanes, drawn for one view of time: what the Gantt shows, cell by cell.

Time runs continuously across the inferences a :class:`~tracer.session.held.Stretch` holds:
the *inference* lane shows each inference and the gaps between them, the NPU and CPU lanes their
layers, the power a meter saw (``--power``: :mod:`tracer.tui.widgets.power_lane`), then the
interrupt handlers (inside inferences and between them), RTOS tasks when the firmware sends them, NPU jobs, cache maintenance and marks (with the broken stack canary, placed
at the cycle its report found it). Only what overlaps the view is looked at, so a long stretch
costs no more than a short one.

A bar cut by the edge of the view keeps its label, centred in the part that shows. The cursor is
a column drawn across every lane; the measured range (cursor to mark) is shaded.

One module although over 400 lines: every lane is drawn with the same viewport arithmetic (cycles
to cells, clipping, centred labels).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style

from tracer.power.lane import PowerSteps
from tracer.session.flags import FindingFlags
from tracer.session.held import Stretch
from tracer.session.ring import InferenceRecord
from tracer.session.snapshot import LayerRow
from tracer.session.window import InferenceEvents
from tracer.tui import format as fmt
from tracer.tui import palette as pal
from tracer.tui.widgets.power_lane import power_cells

CACHE_GLYPH = {"clean": ("C", pal.CLEAN), "invalidate": ("I", pal.INVALIDATE), "clean_invalidate": ("X", pal.CLEAN)}
CANARY = "▼"
MARK = "◆"
IDLE = "·"
RANGE_BG = "#2E3B4E"
CURSOR_BG = "#C8C8C8"

Cell = tuple[str, Style]
BLANK: Cell = (" ", Style())


@dataclasses.dataclass(frozen=True)
class Viewport:
    """The time shown: ``width`` cells from cycle ``t0``, ``cpc`` cycles per cell."""

    t0: float
    cpc: float
    width: int

    @property
    def t1(self) -> float:
        """The cycle at the right edge."""
        return self.t0 + self.cpc * self.width

    def x(self, cycle: float) -> float:
        """The (fractional) cell of ``cycle``."""
        return (cycle - self.t0) / self.cpc

    def t(self, x: float) -> float:
        """The cycle at cell ``x``."""
        return self.t0 + x * self.cpc

    def cells(self, start: float, end: float) -> tuple[int, int] | None:
        """The cells ``[x0, x1)`` an interval covers (at least one), or None when it is out of view."""
        x0, x1 = self.x(start), self.x(end)
        if x1 < 0 or x0 >= self.width:
            return None
        a = max(0, math.floor(x0))
        b = min(self.width, max(a + 1, math.ceil(x1)))
        return a, b


@dataclasses.dataclass(frozen=True)
class LaneInput:
    """What the lanes are drawn from.

    Attributes:
        stretch: The inferences held around the selected one.
        selected: The selected inference (None: none).
        layer: The selected layer.
        rows: Layer rows by index (names, engines, predictions).
        flags: Which inference and layer shows which finding.
        canaries: Broken stack canaries: (cycle, stack name).
        clock_hz: The cycles' clock, if known.
        reference: The cycle times are counted from (the selected inference's start).
        cursor: The cursor, in cycles.
        mark: The other end of the measured range.
        power: The power lane (``--power``): its steps (from each cycle on, the mean power in
            mW) and the scale (the highest); None without a recording.
    """

    stretch: Stretch
    selected: InferenceRecord | None
    layer: int | None
    rows: dict[int, LayerRow]
    flags: FindingFlags
    canaries: tuple[tuple[int, str], ...] = ()
    clock_hz: int | None = None
    reference: int = 0
    cursor: int | None = None
    mark: int | None = None
    power: tuple[PowerSteps, float] | None = None


@dataclasses.dataclass(frozen=True)
class Lane:
    """One row of the Gantt."""

    name: str
    cells: list[Cell]
    bold: bool = False


def lanes(data: LaneInput, vp: Viewport) -> list[Lane]:
    """Every lane with something to show (the time axis, inferences, NPU and CPU always)."""
    lo, hi = int(vp.t0) - 1, int(math.ceil(vp.t1)) + 1
    records = data.stretch.between(lo, hi)
    events = data.stretch.events.between(lo, hi)
    spans = [span for record in records for span in record.inference.layers]
    flagged = {r.number: data.flags.at(r.number) for r in records}
    out = [Lane("time", _axis(data, vp)), Lane("", _ticks(data, vp)), Lane("infer", _inferences(data, records, vp))]
    for engine, title in (("npu", "NPU"), ("cpu", "CPU")):
        mine = [s for s in spans if _engine(data.rows, s.layer) == engine]
        out.append(Lane(title, _bars(data, mine, flagged, vp), bold=True))
    if data.power is not None:
        out.append(Lane("mW", power_cells(*data.power, vp.t0, vp.cpc, vp.width)))
    held = data.stretch.events
    out.append(Lane("ISR", _intervals([(i.start, i.end, i.name, pal.ISR) for i in events.isrs], vp)))
    if len(held.tasks):
        out.append(
            Lane(
                "tasks",
                _intervals(
                    [(t.start, t.end, t.name or f"task {t.task:#x}", _task_colour(t)) for t in events.tasks], vp
                ),
            )
        )
    if any(len(c.npu_jobs) for c in held.chunks):
        out.append(Lane("jobs", _jobs(events, vp)))
    if any(len(c.cache_ops) for c in held.chunks):
        glyphs = [(c.cycle, *CACHE_GLYPH.get(c.op, ("?", pal.MUTED))) for c in events.cache_ops]
        out.append(Lane("cache", _marks(glyphs, vp)))
    canaries = [(cycle, CANARY, pal.BAD) for cycle, _ in data.canaries if lo <= cycle <= hi]
    if events.marks or canaries or any(c.marks for c in held.chunks) or data.canaries:
        out.append(
            Lane(
                "marks",
                _marks(
                    [(m.cycle, MARK, pal.MARK) for m in events.marks] + canaries,
                    vp,
                    labels={cycle: f"canary {name}" for cycle, name in data.canaries},
                ),
            )
        )
    _overlay(out, data, vp)
    return out


def _engine(rows: dict[int, LayerRow], layer: int) -> str:
    row = rows.get(layer)
    return row.info.engine.value if row is not None else "cpu"


def _task_colour(task: Any) -> str:
    return pal.TASK if getattr(task, "complete", True) else pal.MUTED


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


def _step(data: LaneInput, vp: Viewport) -> float:
    span = vp.cpc * vp.width
    if data.clock_hz:
        return nice_step(span / data.clock_hz, vp.width) * data.clock_hz
    return nice_step(span, vp.width)


def _tick_times(data: LaneInput, vp: Viewport) -> Iterable[float]:
    """Tick cycles (counted from the reference) in view."""
    step = _step(data, vp)
    k = math.ceil((vp.t0 - data.reference) / step)
    while data.reference + k * step <= vp.t1:
        yield k * step
        k += 1


def time_label(cycles: float, clock_hz: int | None) -> str:
    """``+1.2ms``, ``-350µs``, ``+12k`` (cycles without a clock)."""
    sign = "-" if cycles < 0 else "+" if cycles > 0 else ""
    if not clock_hz:
        text = fmt.short_cycles(abs(cycles))
    elif cycles:
        text = fmt.duration(abs(cycles) / clock_hz)
    else:
        text = "0"
    return sign + text.replace(" ", "")


def _axis(data: LaneInput, vp: Viewport) -> list[Cell]:
    cells = [BLANK] * vp.width
    style = Style(color=pal.MUTED)
    free = 0
    for rel in _tick_times(data, vp):
        x = int(vp.x(data.reference + rel))
        label = time_label(rel, data.clock_hz)
        if x >= free and x + len(label) <= vp.width:
            for i, ch in enumerate(label):
                cells[x + i] = (ch, style)
            free = x + len(label) + 1
    return cells


def _ticks(data: LaneInput, vp: Viewport) -> list[Cell]:
    style = Style(color=pal.MUTED, dim=True)
    cells = [("─", style)] * vp.width
    for rel in _tick_times(data, vp):
        x = int(vp.x(data.reference + rel))
        if 0 <= x < vp.width:
            cells[x] = ("┬", style)
    return cells


def _label(cells: list[Cell], a: int, b: int, text: str, style: Style) -> None:
    """Write ``text`` centred in cells ``a``..``b`` (cut with … when too long, left out when very short)."""
    room = b - a
    if room < 3:
        return
    label = text if len(text) <= room - 2 else (text[: room - 3] + "…" if room > 4 else "")
    at = a + (room - len(label)) // 2
    for i, ch in enumerate(label):
        cells[at + i] = (ch, style)


def _inferences(data: LaneInput, records: Sequence[InferenceRecord], vp: Viewport) -> list[Cell]:
    cells = [BLANK] * vp.width
    idle = Style(color=pal.MUTED, dim=True)
    previous_end: int | None = None
    for record in records:
        start, end = record.start, record.end
        inf = record.inference
        if start is None or end is None:
            starts = [s.start for s in inf.layers] + ([start] if start is not None else [])
            ends = [s.end for s in inf.layers] + ([end] if end is not None else [])
            if not starts or not ends:
                continue
            start, end = min(starts), max(ends)
        if previous_end is not None and start > previous_end:
            _gap(cells, previous_end, start, data.clock_hz, vp, idle)
        previous_end = end
        span = vp.cells(start, end)
        if span is None:
            continue
        selected = data.selected is not None and record.number == data.selected.number
        if selected:
            style = Style(color="#101010", bgcolor=pal.SELECTED, bold=True)
        elif not record.complete:
            style = Style(color=pal.BRIGHT, bgcolor=pal.MUTED)
        else:
            style = Style(color=pal.TEXT, bgcolor=pal.PANEL)
        a, b = span
        for i in range(a, b):
            cells[i] = (" ", style)
        flag = "!" if data.flags.at(record.number) else ""
        _label(cells, a, b, f"{flag}#{record.number}", style)
    return cells


def _gap(cells: list[Cell], start: int, end: int, clock_hz: int | None, vp: Viewport, style: Style) -> None:
    span = vp.cells(start, end)
    if span is None:
        return
    a, b = span
    for i in range(a, b):
        if cells[i] is BLANK:
            cells[i] = (IDLE, style)
    length = fmt.cycle_time(end - start, clock_hz) if clock_hz else f"{fmt.short_cycles(end - start)} cycles"
    _label(cells, a, b, f"idle {length.replace(' ', '')}", style)


def _bars(
    data: LaneInput, spans: list[Any], flagged: dict[int, dict[int | None, tuple[tuple[int, ...], str]]], vp: Viewport
) -> list[Cell]:
    cells = [BLANK] * vp.width
    for n, span in enumerate(sorted(spans, key=lambda s: s.start)):
        where = vp.cells(span.start, span.end)
        if where is None:
            continue
        a, b = where
        row = data.rows.get(span.layer)
        shades = pal.NPU if _engine(data.rows, span.layer) == "npu" else pal.CPU
        background = shades[n % 2]
        if row is not None and row.predicted and span.cycles > row.predicted * (1 + row.tolerance_pct / 100):
            background = pal.BAD
        if not span.complete:
            background = pal.MUTED
        flag = span.layer in flagged.get(span.inference, {})
        style = Style(color=pal.BRIGHT, bgcolor=background, underline=flag, bold=flag)
        if span.layer == data.layer:
            style = Style(color="#101010", bgcolor=pal.SELECTED, bold=True, underline=flag)
        for i in range(a, b):
            cells[i] = (" ", style)
        name = row.info.label if row is not None else f"#{span.layer}"
        _label(cells, a, b, ("!" if flag else "") + name, style)
    return cells


def _intervals(items: list[tuple[int, int, str, str]], vp: Viewport) -> list[Cell]:
    cells = [BLANK] * vp.width
    for start, end, name, colour in sorted(items):
        where = vp.cells(start, end)
        if where is None:
            continue
        a, b = where
        style = Style(color=pal.BRIGHT, bgcolor=colour)
        for i in range(a, b):
            cells[i] = (" ", style)
        _label(cells, a, b, name, style)
    return cells


def _jobs(events: InferenceEvents, vp: Viewport) -> list[Cell]:
    cells = [BLANK] * vp.width
    style = Style(color=pal.JOB, bold=True)
    for job in events.npu_jobs:
        where = vp.cells(job.start, job.end if job.end is not None else job.start)
        if where is None:
            continue
        a, b = where
        for i in range(a, b):
            cells[i] = ("═", style)
        if b - a >= 2:
            if vp.x(job.start) >= 0:
                cells[a] = ("╞", style)
            if job.end is not None and vp.x(job.end) <= vp.width:
                cells[b - 1] = ("╡", style)
        _label(cells, a, b, f"job {job.job}", style)
    return cells


def _marks(items: list[tuple[int, str, str]], vp: Viewport, labels: dict[int, str] | None = None) -> list[Cell]:
    cells = [BLANK] * vp.width
    for cycle, glyph, colour in items:
        x = int(vp.x(cycle))
        if not 0 <= x < vp.width:
            continue
        style = Style(color=colour, bold=True)
        cells[x] = (glyph if cells[x] is BLANK else "+", style)
        label = (labels or {}).get(cycle) if glyph == CANARY else None
        if label:
            for i, ch in enumerate(" " + label):
                if x + 1 + i < vp.width and cells[x + 1 + i] is BLANK:
                    cells[x + 1 + i] = (ch, style)
    return cells


def _overlay(out: list[Lane], data: LaneInput, vp: Viewport) -> None:
    """Shade the measured range and draw the cursor across the lanes below the axis."""
    if data.cursor is not None and data.mark is not None:
        lo, hi = sorted((data.cursor, data.mark))
        span = vp.cells(lo, hi)
        if span is not None:
            a, b = span
            for lane in out[1:]:
                for i in range(a, b):
                    ch, style = lane.cells[i]
                    lane.cells[i] = (ch, style + Style(bgcolor=RANGE_BG) if style.bgcolor is None else style)
    if data.cursor is not None:
        x = int(vp.x(data.cursor))
        if 0 <= x < vp.width:
            for lane in out[1:]:
                ch, style = lane.cells[x]
                lane.cells[x] = (
                    ("│", Style(color=CURSOR_BG, bold=True)) if ch in " ─·" else (ch, style + Style(reverse=True))
                )


def segments(cells: list[Cell]) -> list[Segment]:
    """Cells joined into as few segments as their styles allow."""
    out: list[Segment] = []
    text: list[str] = []
    current: Style | None = None
    for ch, style in cells:
        if style is not current and style != current and text:  # most cells share their style object
            out.append(Segment("".join(text), current))
            text = []
        current = style
        text.append(ch)
    if text:
        out.append(Segment("".join(text), current))
    return out


def edges(data: LaneInput, vp: Viewport) -> list[int]:
    """Cycles where something starts or ends in view (layers, inferences, handlers, jobs): where the
    cursor can jump to.
    """
    lo, hi = int(vp.t0) - 1, int(math.ceil(vp.t1)) + 1
    out: set[int] = set()
    for record in data.stretch.between(lo, hi):
        for span in record.inference.layers:
            out.update((span.start, span.end))
        out.update(t for t in (record.start, record.end) if t is not None)
    events = data.stretch.events.between(lo, hi)
    for isr in events.isrs:
        out.update((isr.start, isr.end))
    for job in events.npu_jobs:
        out.update(t for t in (job.start, job.end) if t is not None)
    return sorted(out)
