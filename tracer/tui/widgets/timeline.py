"""The timeline: a Gantt across inferences, the line about the selected inference, a legend, and
the selected inference's layers.

The Gantt (:class:`TimelineView`) shows a view of continuous time around the selected inference
(lanes: :mod:`tracer.tui.widgets.gantt_lanes`): ``0`` fits the inference, ``]``/``[`` and the
wheel zoom around the cursor (or the pointer), ``,``/``.`` scroll into the inferences before and
after it. Stepping to another inference keeps the zoom and the place in it, so the same layer
stays in view. A click places the cursor and selects the layer (or inference) under it.

One module although over 400 lines: the Gantt, its header and its legend share one view of time
(the lanes themselves are in gantt_lanes.py).
"""

from __future__ import annotations

import math

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.events import Click, MouseScrollDown, MouseScrollUp
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from tracer.power.lane import PowerSteps
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
from tracer.tui.widgets.spans import compared

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


def power_lane(snapshot: SessionSnapshot) -> tuple[PowerSteps, float] | None:
    """The power lane's steps and scale, once a power recording is attributed (else None)."""
    state = snapshot.energy
    steps = state.power_steps if state is not None else None
    return (steps, state.peak_mw) if steps is not None and state is not None else None


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
            power=power_lane(snapshot),
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
    steps = snapshot.energy.power_steps if snapshot.energy is not None else None
    mw = steps.at(cursor) if steps is not None else None
    if mw is not None:
        text.append(f" · {fmt.energy(mw)} mW", style=pal.WARN)
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
        energy = _energy_text(snapshot, inf.number)
        if energy is not None:
            pieces.append(Piece(1, energy))
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


def _energy_text(snapshot: SessionSnapshot, number: int) -> Text | None:
    """``412 µJ (mean 405±3)``: the inference's energy, where the power recording measured it."""
    state = snapshot.energy
    if state is None:
        return None
    if state.analysis is None:
        said = {
            "recording": "energy: aligning the meter's samples …"
            if state.following
            else "energy: once the run ends (meter recording)",
            "reading": "energy: aligning the recording …",
        }.get(state.state, "energy: not aligned (see layers)")
        return Text(said, style=pal.MUTED)
    a = state.analysis
    uj = a.inference_uj.get(number)
    if uj is None:
        if state.live and state.upto is not None and number > state.upto:
            return Text(f"energy: not yet (measured to inference #{state.upto}, meter recording)", style=pal.MUTED)
        return Text("energy: not measured (incomplete, or outside the recording)", style=pal.MUTED)
    text = Text(f"{fmt.energy(uj)} µJ", style=f"bold {pal.WARN}")
    if a.inference_mean_uj is not None:
        spread = f"±{fmt.spread(a.inference_interval_uj)}" if a.inference_interval_uj is not None else ""
        text.append(f" (mean {fmt.energy(a.inference_mean_uj)}{spread})", style=pal.MUTED)
    return text


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


__all__ = ["GUTTER", "InferenceHeader", "Legend", "TimelineView", "extent_of", "math"]
