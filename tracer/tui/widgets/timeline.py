"""The timeline: a Gantt across inferences, the line about the selected inference, a legend, and
the selected inference's layers.

The Gantt (:class:`TimelineView`) shows a view of continuous time around the selected inference
(lanes: :mod:`tracer.tui.widgets.gantt_lanes`): ``0`` fits the inference, ``]``/``[`` and the
wheel zoom around the cursor (or the pointer), ``,``/``.`` scroll into the inferences before and
after it. Stepping to another inference keeps the zoom and the place in it, so the same layer
stays in view. A click places the cursor and selects the layer (or inference) under it.
"""

from __future__ import annotations

import math
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.events import Click, MouseScrollDown, MouseScrollUp
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from tracer.analysis.settings import DEFAULT_TOLERANCE_PCT
from tracer.session.held import Stretch
from tracer.session.ring import InferenceRecord
from tracer.session.snapshot import SessionSnapshot
from tracer.session.state import cut_by_end
from tracer.tui import format as fmt
from tracer.tui import palette as pal
from tracer.tui.fit import Piece, fit
from tracer.tui.navigation import finding_index, shown
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View
from tracer.tui.widgets.gantt_lanes import (
    CANARY,
    IDLE,
    MARK,
    LaneInput,
    Viewport,
    edges,
    lanes,
    segments,
    time_label,
)
from tracer.tui.widgets.line_table import Cell, Column, LineTable

GUTTER = 7
MARGIN = 0.03  # of the inference's length shown before and after it when it is fitted
MIN_ZOOM = 1 / 64
MIN_CELL_CYCLES = 0.25


def extent_of(record: InferenceRecord) -> tuple[int, int] | None:
    """Start and end of an inference (its layers' when the begin or end is missing)."""
    inf = record.inference
    starts = [s.start for s in inf.layers] + ([inf.start] if inf.start is not None else [])
    ends = [s.end for s in inf.layers] + ([inf.end] if inf.end is not None else [])
    if not starts or not ends:
        return None
    return min(starts), max(max(ends), min(starts) + 1)


def not_held_text(snapshot: SessionSnapshot, ui: UiState) -> str:
    """Why the pinned inference cannot be shown."""
    if ui.inference is None:
        return "waiting for an inference"
    if snapshot.status.mode == "replay":
        return f"reading inference #{ui.inference} from the capture ..."
    return (
        f"inference #{ui.inference} is no longer held: the screen keeps the last {len(snapshot.ring):,} "
        f"inferences (--ring) and the pinned ones · f: follow the newest"
    )


class TimelineView(View, Widget):
    """The Gantt of the time around the selected inference."""

    interval = 0.25
    depends = frozenset({"inference", "layer", "cursor", "finding"})

    DEFAULT_CSS = """
    TimelineView { height: 12; border: round $primary-darken-2; border-title-color: $text;
                   border-subtitle-color: $text-muted; }
    """

    class LayerClicked(Message):
        """The user clicked a layer's bar (of that inference)."""

        def __init__(self, layer: int, inference: int) -> None:
            super().__init__()
            self.layer = layer
            self.inference = inference

    class CursorPlaced(Message):
        """The user clicked the Gantt: the cursor goes to that cycle."""

        def __init__(self, cycle: int) -> None:
            super().__init__()
            self.cycle = cycle

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Timeline"
        self.zoom = 1.0
        self._offset: float | None = None  # view start minus the reference (None: fitted)
        self._data: LaneInput | None = None
        self._message = "waiting for an inference"
        self._extent: tuple[int, int] | None = None
        self._reveal: int | None = None  # a cycle to bring into view once the next inference is drawn
        self._strips: list[Strip] = []
        self._rows = 0  # the most lanes drawn so far: its height (see _layout)
        self._lane_names: list[str] = []

    # -- data ------------------------------------------------------------------------------------
    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the time around the selected inference of ``snapshot``."""
        found = shown(snapshot, ui)
        extent = extent_of(found[1]) if found is not None else None
        if found is None or extent is None:
            self._data, self._extent = None, None
            self._message = not_held_text(snapshot, ui)
            self._layout()
            return
        stretch, record = found
        diagnosis = snapshot.diagnosis
        self._extent = extent
        if self._reveal is not None and extent[0] <= self._reveal <= extent[1]:
            self._place(self._reveal)
            self._reveal = None
        self._data = LaneInput(
            stretch=stretch,
            selected=record,
            layer=ui.layer,
            rows={row.index: row for row in snapshot.layers},
            flags=diagnosis.flags,
            canaries=tuple((c, name) for c, name, _i, _l in diagnosis.canaries()),
            clock_hz=snapshot.status.clock_hz,
            reference=extent[0],
            cursor=ui.cursor,
            mark=ui.mark,
        )
        self._layout()

    layout_axes = ("width",)  # its height follows the lanes it draws

    @property
    def plot_width(self) -> int:
        """Cells of time (the width without the lane names)."""
        return max(1, self.content_size.width - GUTTER)

    def viewport(self) -> Viewport | None:
        """The time shown now (None: nothing to show)."""
        if self._extent is None:
            return None
        start, end = self._extent
        span = end - start
        width = self.plot_width
        cpc = max(MIN_CELL_CYCLES, span * (1 + 2 * MARGIN) / width / self.zoom)
        if self._offset is None:
            t0 = start - span * MARGIN if self.zoom <= 1 else start + span / 2 - cpc * width / 2
        else:
            t0 = start + self._offset
        return Viewport(t0, cpc, width)

    def _layout(self) -> None:
        width = self.content_size.width
        if width <= 0:
            return  # not laid out yet: drawn when it is (a new size redraws the view)
        vp = self.viewport()
        if vp is None or self._data is None:
            self._lane_names = []
            # Padded to the width: a shorter line left the axis drawn before beside the message.
            message = Strip([Segment(self._message[: max(0, width)], Style(color=pal.MUTED))])
            self._strips = [message.adjust_cell_length(width)]
            self.border_subtitle = ""
        else:
            drawn = lanes(self._data, vp)
            self._lane_names = [lane.name for lane in drawn]
            self._strips = [
                self._strip(lane.name, lane.bold, n, segments(lane.cells), width) for n, lane in enumerate(drawn)
            ]
            self.border_subtitle = self._subtitle(vp)
        # As tall as the most lanes it has drawn: an inference with a lane fewer (lanes come with
        # what its stretch holds: the ring's, a pinned one's) leaves that row empty instead of
        # shrinking the Gantt. A new height moved the table below and laid the pane out again
        # (a layout and a repaint of everything under the Gantt in the key's answer: 2 of 4
        # inference steps and every follow under bench_tui's load), and again when the lane came back.
        self._rows = max(self._rows, len(self._strips))
        # Blank: an edge without a lane read as a stray row.
        self._strips.extend(Strip.blank(width) for _ in range(len(self._strips), self._rows))
        height = self._rows + 2
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height
        self.refresh()

    @staticmethod
    def _strip(name: str, bold: bool, n: int, body: list[Segment], width: int) -> Strip:
        label = Segment(f"{name:>{GUTTER - 2}} ", Style(color=pal.MUTED, bold=bold))
        edge = Segment("│" if n >= 2 else " ", Style(color=pal.BAR_EMPTY))
        return Strip([label, edge, *body], width).simplify()

    def _subtitle(self, vp: Viewport) -> str:
        data = self._data
        assert data is not None
        left = time_label(vp.t0 - data.reference, data.clock_hz)
        right = time_label(vp.t1 - data.reference, data.clock_hz)
        zoom = f"×{self.zoom:g}" if self.zoom >= 1 else f"×1/{1 / self.zoom:g}"
        return f"{left} … {right} · zoom {zoom}"

    def render_line(self, y: int) -> Strip:
        """One lane."""
        return self._strips[y] if 0 <= y < len(self._strips) else Strip.blank(self.content_size.width)

    # -- zoom and scroll -------------------------------------------------------------------------
    def _anchor(self, focus_x: int | None, cursor: int | None) -> float:
        vp = self.viewport()
        if focus_x is not None or vp is None:
            return max(0, min(self.plot_width, focus_x if focus_x is not None else self.plot_width // 2))
        if cursor is not None and 0 <= vp.x(cursor) <= vp.width:
            return vp.x(cursor)
        return vp.width / 2

    def set_zoom(self, zoom: float, focus_x: int | None = None, cursor: int | None = None) -> None:
        """Zoom keeping the time under cell ``focus_x`` (default: the cursor if in view, else the
        middle) where it is; zoom 1 fits the inference.
        """
        vp = self.viewport()
        if vp is None or self._extent is None:
            self.zoom = max(MIN_ZOOM, zoom)
            return
        span = self._extent[1] - self._extent[0]
        most = max(1.0, span * (1 + 2 * MARGIN) / vp.width / MIN_CELL_CYCLES)
        zoom = max(MIN_ZOOM, min(most, zoom))
        if zoom == 1.0 and focus_x is None:
            self.zoom, self._offset = 1.0, None
        else:
            anchor = self._anchor(focus_x, cursor)
            at = vp.t(anchor)
            self.zoom = zoom
            new = self.viewport()
            assert new is not None
            self._offset = at - anchor * new.cpc - self._extent[0]
        self._layout()

    def zoom_in(self, focus_x: int | None = None, cursor: int | None = None) -> None:
        """Twice as much detail."""
        self.set_zoom(self.zoom * 2, focus_x, cursor)

    def zoom_out(self, focus_x: int | None = None, cursor: int | None = None) -> None:
        """Half as much."""
        self.set_zoom(self.zoom / 2, focus_x, cursor)

    def scroll_by_screens(self, screens: float) -> None:
        """Move the view by a fraction of its width (into the inferences before or after)."""
        vp = self.viewport()
        if vp is None or self._extent is None:
            return
        self._offset = vp.t0 + screens * vp.width * vp.cpc - self._extent[0]
        self._layout()

    def show_cycle(self, cycle: int) -> None:
        """Scroll so that ``cycle`` is in view (it stays where it is if it already is); a cycle of
        an inference not drawn yet is brought into view when it is.
        """
        if self._extent is None or not self._extent[0] <= cycle <= self._extent[1]:
            self._reveal = cycle
            return
        self._place(cycle)
        self._layout()

    def _place(self, cycle: int) -> None:
        vp = self.viewport()
        if vp is None or self._extent is None or 0 <= vp.x(cycle) < vp.width:
            return
        self._offset = cycle - vp.width * vp.cpc / 2 - self._extent[0]

    def cursor_step(self, cursor: int | None, cells: int) -> int | None:
        """The cursor moved by ``cells`` (from the middle of the view when it is not placed yet)."""
        vp = self.viewport()
        if vp is None:
            return cursor
        if cursor is None or not 0 <= vp.x(cursor) < vp.width:
            return int(vp.t(vp.width // 2))
        return int(round(cursor + cells * vp.cpc))

    def cursor_jump(self, cursor: int | None, direction: int) -> int | None:
        """The cursor at the next (or previous) edge of a layer, inference, handler or job in view."""
        vp = self.viewport()
        if vp is None or self._data is None:
            return cursor
        here = cursor if cursor is not None else int(vp.t(vp.width // 2))
        wide = Viewport(vp.t0 - vp.width * vp.cpc, vp.cpc, vp.width * 3)  # a screen either side
        found = edges(self._data, wide)
        after = [t for t in found if (t > here if direction > 0 else t < here)]
        if not after:
            return cursor
        return after[0] if direction > 0 else after[-1]

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        """Wheel up: zoom in around the pointer (shift: scroll)."""
        event.prevent_default()
        event.stop()
        if event.shift:
            self.scroll_by_screens(-0.1)
        else:
            self.zoom_in(event.x - GUTTER - 1)

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        """Wheel down: zoom out around the pointer (shift: scroll)."""
        event.prevent_default()
        event.stop()
        if event.shift:
            self.scroll_by_screens(0.1)
        else:
            self.zoom_out(event.x - GUTTER - 1)

    def on_click(self, event: Click) -> None:
        """Place the cursor there; on a layer's bar select the layer, on an inference that inference."""
        vp = self.viewport()
        data = self._data
        x = event.x - GUTTER - self.styles.gutter.left
        y = event.y - self.styles.gutter.top
        if vp is None or data is None or x < 0 or not 0 <= y < len(self._lane_names):
            return
        t = vp.t(x + 0.5)
        self.post_message(self.CursorPlaced(int(t)))
        lane = self._lane_names[y]
        for record in data.stretch.between(int(vp.t(x)), int(vp.t(x + 1))):
            if lane in ("NPU", "CPU"):
                for span in record.inference.layers:
                    if span.start <= t < span.end:
                        self.post_message(self.LayerClicked(span.layer, record.number))
                        return
            elif lane == "infer":
                self.post_message(self.LayerClicked(data.layer if data.layer is not None else -1, record.number))
                return


def cursor_text(snapshot: SessionSnapshot, ui: UiState, stretch: Stretch, reference: int) -> Text:
    """``cursor +1.23 ms in pw4 of #5 · range 23,049 cycles (720 µs)``."""
    clock = snapshot.status.clock_hz
    text = Text()
    cursor = ui.cursor
    if cursor is None:
        text.append(
            "h l cursor · H L edges · m mark a range · ] [ zoom · , . scroll · 0 fit · n N next finding",
            style=pal.MUTED,
        )
        return text
    text.append("cursor ", style=pal.MUTED)
    text.append(time_label(cursor - reference, clock), style="bold")
    text.append(f" (cycle {cursor:,})", style=pal.MUTED)
    rows = {row.index: row for row in snapshot.layers}
    inside = [
        (r.number, s.layer)
        for r in stretch.between(cursor, cursor)
        for s in r.inference.layers
        if s.start <= cursor < s.end
    ]
    if inside:
        number, layer = inside[0]
        label = rows[layer].info.label if layer in rows else f"#{layer}"
        text.append(f" in {label} of #{number}", style=pal.TEXT)
    if ui.mark is not None:
        length = abs(cursor - ui.mark)
        text.append(" · range ", style=pal.MUTED)
        text.append(f"{length:,} cycles", style=f"bold {pal.ACCENT}")
        if clock:
            text.append(f" ({fmt.cycle_time(length, clock)})", style=pal.ACCENT)
        lo, hi = sorted((cursor, ui.mark))
        text.append(f" {time_label(lo - reference, clock)} → {time_label(hi - reference, clock)}", style=pal.MUTED)
    else:
        text.append(" · m: mark a range from here", style=pal.MUTED)
    return text


class InferenceHeader(View, Static):
    """Two lines: the selected inference, then the cursor and the measured range."""

    interval = 0.25
    depends = frozenset({"inference", "cursor", "finding", "compare"})

    DEFAULT_CSS = """
    InferenceHeader { height: 2; padding: 0 1; }
    """

    layout_axes = ("width",)  # two lines whatever its height

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Describe the selected inference and the cursor."""
        found = shown(snapshot, ui)
        text = Text(no_wrap=True, overflow="ellipsis")
        if found is None:
            text.append(not_held_text(snapshot, ui), style=pal.WARN if ui.inference is not None else pal.MUTED)
            self.update_if_changed(text)
            return
        stretch, record = found
        inf = record.inference
        width = max(20, self.content_size.width)
        pieces = [Piece(0, Text(f"inference #{inf.number}", style="bold"))]
        ordinal = stretch.ordinal(stretch.records.index(record))
        total = snapshot.file_inferences
        if ordinal is not None and total:
            pieces.append(
                Piece(
                    3,
                    Text(f"{ordinal + 1:,} of {total:,} in the file", style=pal.MUTED),
                    Text(f"{ordinal + 1:,}/{total:,}", style=pal.MUTED),
                )
            )
        flags = _flag_text(snapshot, inf.number, finding_index(snapshot, ui))
        if flags is not None:
            pieces.append(Piece(0, flags))
        if inf.complete:
            pieces.append(Piece(2, Text("complete", style=pal.GOOD)))
        elif cut_by_end(inf.problems):
            pieces.append(
                Piece(
                    1,
                    Text("cut by the end of the capture (not loss)", style=pal.MUTED),
                    Text("cut by the end", style=pal.MUTED),
                )
            )
        else:
            pieces.append(
                Piece(
                    0,
                    Text("incomplete: " + "; ".join(inf.problems), style=f"bold {pal.WARN}"),
                    Text("incomplete", style=f"bold {pal.WARN}"),
                )
            )
        clock = snapshot.status.clock_hz
        if inf.latency_cycles is not None:
            latency = Text(f"{fmt.cycles(inf.latency_cycles)} cycles", style="bold")
            if clock:
                latency.append(f" ({fmt.cycle_time(inf.latency_cycles, clock)})", style=pal.MUTED)
            pieces.append(
                Piece(
                    1,
                    latency,
                    Text(
                        fmt.cycle_time(inf.latency_cycles, clock) if clock else fmt.cycles(inf.latency_cycles),
                        style="bold",
                    ),
                )
            )
        reference = compared(snapshot, ui, record)
        if reference is not None and inf.latency_cycles is not None and reference[1].inference.latency_cycles:
            delta = inf.latency_cycles - reference[1].inference.latency_cycles
            said = f"vs #{reference[1].number}: {delta:+,} cycles"
            pieces.append(Piece(0, Text(said, style=f"bold {pal.ACCENT}")))
        elif ui.compare is not None and reference is None and ui.compare[0] != inf.number:
            pieces.append(Piece(2, Text(f"#{ui.compare[0]} (compared) is no longer held", style=pal.WARN)))
        events = stretch.events.of(record)
        counts = (
            (len(inf.layers), "layer"),
            (len(events.isrs), "ISR"),
            (len(events.npu_jobs), "NPU job"),
            (len(events.cache_ops), "cache op"),
        )
        pieces.append(
            Piece(
                4,
                Text(
                    " · ".join(f"{n} {word}{'' if n == 1 else 's'}" for n, word in counts if n or word == "layer"),
                    style=pal.MUTED,
                ),
            )
        )
        text.append_text(fit(pieces, width, sep="  "))
        text.append("\n")
        extent = extent_of(record)
        text.append_text(cursor_text(snapshot, ui, stretch, extent[0] if extent else 0))
        self.update_if_changed(text)


def _flag_text(snapshot: SessionSnapshot, number: int, chosen: int | None = None) -> Text | None:
    """``! pw4: jitter-preemption +1`` (the findings that show in this inference), if any; the
    ``chosen`` finding (its index) first, when this inference shows it.
    """
    flags = snapshot.diagnosis.flags
    if not flags.covers(number) and snapshot.diagnosis.ran:
        return Text("(findings: not in their scope)", style=pal.MUTED)
    found = flags.at(number)
    if not found:
        return None
    rows = {row.index: row for row in snapshot.layers}
    findings = snapshot.findings
    text = Text("! ", style=f"bold {pal.WARN}")
    order = sorted(found.items(), key=lambda kv: (chosen not in kv[1][0], kv[0] is None, kv[0] or 0))
    for n, (layer, (indices, severity)) in enumerate(order):
        label = "inference" if layer is None else (rows[layer].info.label if layer in rows else f"#{layer}")
        first = sorted(indices, key=lambda i: i != chosen)
        ids = [findings[i].id for i in first if i < len(findings)]
        shown_ids = ids[0] + (f" +{len(ids) - 1}" if len(ids) > 1 else "") if ids else "?"
        text.append(("; " if n else "") + f"{label}: {shown_ids}", style=pal.SEVERITY.get(severity, pal.WARN))
    return text


LEGEND = (
    ("▇", pal.NPU[0], "NPU"),
    ("▇", pal.CPU[0], "CPU"),
    ("▇", pal.ISR, "ISR"),
    ("▇", pal.SELECTED, "selected"),
    ("▇", pal.BAD, "over budget"),
    ("═", pal.JOB, "NPU job"),
    ("C", pal.CLEAN, "clean"),
    ("I", pal.INVALIDATE, "invalidate"),
    ("X", pal.CLEAN, "both"),
    (MARK, pal.MARK, "mark"),
    ("+", pal.MUTED, "several in a cell"),
    (CANARY, pal.BAD, "canary broken"),
    ("!", pal.WARN, "finding"),
    (IDLE, pal.MUTED, "no inference"),
    ("│", pal.TEXT, "cursor"),
)


class Legend(Static):
    """One line saying what the timeline's colours and marks mean."""

    DEFAULT_CSS = """
    Legend { height: 1; padding: 0 1; color: $text-muted; }
    """

    def on_mount(self) -> None:
        """Written once."""
        text = Text(no_wrap=True, overflow="ellipsis")
        for n, (glyph, colour, what) in enumerate(LEGEND):
            text.append("  " if n else "")
            text.append(glyph, style=f"bold {colour}")
            text.append(f" {what}", style=pal.MUTED)
        self.update(text)


class SpansTable(View, LineTable):
    """The layers of the selected inference, in time order; the cursor row is the selected layer."""

    interval = 0.5
    depends = frozenset({"inference", "layer", "finding", "compare"})
    COLUMNS = (
        Column("index", "#", right=True, keep=True),
        Column("name", "layer", min_width=10, keep=True),
        Column("engine", "engine"),
        Column("start", "start", right=True),
        Column("cycles", "cycles", right=True, keep=True),
        Column("time", "time", right=True),
        Column("share", "share", right=True),
        Column("ratio", "ratio", right=True, keep=True),
        Column("flags", "findings", min_width=8, keep=True),
        Column("ref", "vs #", right=True),
        Column("delta", "Δ cycles", right=True),
        Column("why", "interrupts, tasks in it", min_width=8),
    )
    DROP = ("time", "start", "engine", "share")

    layout_axes = ()  # it arranges its columns for its size itself (``LineTable.on_resize``)

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """List the spans of the selected inference."""
        found = shown(snapshot, ui)
        if found is None:
            self.set_rows([])
            return
        record = found[1]
        inf = record.inference
        rows = {row.index: row for row in snapshot.layers}
        clock = snapshot.status.clock_hz
        total = inf.latency_cycles or sum(s.cycles for s in inf.layers) or 1
        t0 = inf.start if inf.start is not None else (inf.layers[0].start if inf.layers else 0)
        flagged = snapshot.diagnosis.flags.at(inf.number)
        findings = snapshot.findings
        reference = compared(snapshot, ui, record)
        ref_spans = {s.layer: s for s in reference[1].inference.layers} if reference is not None else {}
        here_events = found[0].events.of(record)
        ref_events = reference[0].events.of(reference[1]) if reference is not None else None
        self.set_headers(
            [
                f"vs #{reference[1].number}" if c.key == "ref" and reference is not None else c.header
                for c in self.COLUMNS
            ]
        )
        out = []
        for span in inf.layers:
            indices, severity = flagged.get(span.layer, ((), ""))
            ids = " ".join(dict.fromkeys(findings[i].id for i in indices if i < len(findings)))
            flags = " ".join(filter(None, ("" if span.complete else "lost", ids)))
            row = rows.get(span.layer)
            label = row.info.label if row else f"#{span.layer}"
            engine = row.info.engine.value if row else "cpu"
            ratio = span.cycles / row.predicted if row is not None and row.predicted else None
            tolerance = row.tolerance_pct if row else DEFAULT_TOLERANCE_PCT
            out.append(
                (
                    str(span.layer),
                    (
                        (str(span.layer), pal.MUTED),
                        (label, "bold" if span.layer == ui.layer else pal.TEXT),
                        (engine.upper(), f"bold {pal.NPU[0] if engine == 'npu' else pal.CPU[0]}"),
                        (f"+{fmt.cycles(span.start - t0)}", pal.MUTED),
                        (fmt.cycles(span.cycles), f"bold {pal.BRIGHT}"),
                        (fmt.cycle_time(span.cycles, clock), pal.MUTED),
                        (f"{span.cycles / total:.1%}", pal.TEXT),
                        (f"{ratio:.2f}" if ratio is not None else "-", f"bold {pal.ratio_colour(ratio, tolerance)}"),
                        (flags, pal.SEVERITY.get(severity, pal.WARN)),
                        *_compare_cells(
                            span, ref_spans.get(span.layer), here_events, ref_events, reference is not None
                        ),
                    ),
                )
            )
        self.set_rows(out)
        if ui.layer is not None and str(ui.layer) in self.keys:
            self.move_cursor(self.keys.index(str(ui.layer)), announce=False)


def compared(snapshot: SessionSnapshot, ui: UiState, record: InferenceRecord) -> tuple[Stretch, InferenceRecord] | None:
    """The inference marked to compare with (``c``), when it is held and not the one shown."""
    if ui.compare is None:
        return None
    number, ordinal = ui.compare
    found = snapshot.locate(ordinal=ordinal) if ordinal is not None else None
    if found is None or found[1].number != number:
        found = snapshot.locate(number=number)
    if found is None or found[1] is record:
        return None
    return found


def _inside(events: Any, start: int, end: int) -> dict[str, int]:
    """Cycles of each interrupt handler and task (by name) that ran inside [start, end)."""
    out: dict[str, int] = {}
    for isr in events.isrs:
        cycles = min(end, isr.end) - max(start, isr.start)
        if cycles > 0:
            out[isr.name] = out.get(isr.name, 0) + cycles
    for task in events.tasks:
        cycles = min(end, task.end) - max(start, task.start)
        name = task.name or f"task {task.task:#x}"
        if cycles > 0 and name != "inference":
            out[name] = out.get(name, 0) + cycles
    return out


def _compare_cells(span: Any, ref: Any, here: Any, there: Any, comparing: bool) -> tuple[Cell, Cell, Cell]:
    """``vs #N`` cycles, the difference, and what ran inside the layer in one and not the other."""
    if not comparing:
        return ("", ""), ("", ""), ("", "")
    if ref is None:
        return ("-", pal.MUTED), ("-", pal.MUTED), ("", "")
    delta = span.cycles - ref.cycles
    big = abs(delta) > 0.05 * max(1, ref.cycles)
    colour = (pal.BAD if delta > 0 else pal.GOOD) if big else pal.TEXT
    mine, theirs = _inside(here, span.start, span.end), _inside(there, ref.start, ref.end)
    why = []
    for name in sorted(set(mine) | set(theirs), key=lambda k: -abs(mine.get(k, 0) - theirs.get(k, 0))):
        more = mine.get(name, 0) - theirs.get(name, 0)
        if more:
            why.append(f"{'+' if more > 0 else '-'}{name} {fmt.cycles(abs(more))}")
    return (
        (fmt.cycles(ref.cycles), pal.MUTED),
        (f"{delta:+,}", f"bold {colour}"),
        (" ".join(why), pal.ISR if why else pal.MUTED),
    )


__all__ = ["GUTTER", "InferenceHeader", "Legend", "SpansTable", "TimelineView", "extent_of", "math"]
