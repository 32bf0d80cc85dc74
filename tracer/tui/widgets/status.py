"""The status bar: where the data comes from, its state and rate, what was lost, where it is recorded."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from tracer.session.pacing import speed_label
from tracer.session.snapshot import SessionSnapshot, StatusInfo
from tracer.tui import format as fmt
from tracer.tui import palette as pal
from tracer.tui.fit import Piece, fit
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View

STATE_LOOK = {
    "connected": ("●", pal.GOOD),
    "playing": ("▶", pal.GOOD),
    "paused": ("❚❚", pal.WARN),
    "reconnecting": ("◌", pal.WARN),
    "starting": ("◌", pal.MUTED),
    "lost": ("●", pal.BAD),
    "error": ("✖", pal.BAD),
    "ended": ("■", pal.MUTED),
}


class StatusBar(View, Static):
    """Two lines at the top: source and state; clock, labels and loss. Never wraps: what does not
    fit goes, least important first (the source's path is shortened before anything goes).
    """

    interval = 0.2

    DEFAULT_CSS = """
    StatusBar { height: 2; background: $panel; padding: 0 1; }
    """

    layout_axes = ("width",)  # two lines whatever its height

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the status of ``snapshot``."""
        s = snapshot.status
        width = max(20, self.content_size.width)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append_text(fit(_first_line(s, snapshot), width))
        text.append("\n")
        text.append_text(fit(_second_line(s, snapshot), width))
        self.update_if_changed(text)


def short_label(key: str, label: str) -> str:
    """``cycles emulated (QEMU)``, ``NPU PMU simulated``, ``cycles: model estimate``."""
    name = {"cycles": "cycles", "npu_pmu": "NPU PMU"}.get(key, key)
    if "emulated" in label:
        return f"{name} emulated (QEMU instructions)"
    return f"{name} {label}"


def _first_line(s: StatusInfo, snapshot: SessionSnapshot) -> list[Piece]:
    head = Text()
    head.append(f" {s.mode.upper()} ", style=f"bold {pal.BRIGHT} on {pal.NPU[1] if s.mode == 'replay' else '#1E7A46'}")
    head.append(" ")
    state = "paused" if s.paused and s.state in ("playing", "connected") else s.state
    glyph, colour = STATE_LOOK.get(state, ("?", pal.MUTED))
    head.append(f"{glyph} {state}", style=f"bold {colour}")
    if s.mode == "replay":
        head.append(f" {speed_label(s.speed)}", style="bold")
    if s.message and (state in ("lost", "reconnecting", "error") or (state == "ended" and s.mode == "live")):
        head.append(f" ({s.message})", style=colour)
    pieces: list[Piece] = [Piece(0, head)]
    if s.mode == "replay":
        pieces.append(Piece(1, _position(s), _position(s, short=True)))
    rate = Text()
    if s.bytes_per_s is not None:
        rate.append(fmt.rate(s.bytes_per_s), style="bold")
        rate.append(" · ", style=pal.MUTED)
        rate.append(fmt.rate(s.packets_per_s, "pkt"), style="bold")
    else:
        rate.append(f"{fmt.size(s.bytes)} · {s.packets:,} packets · {s.records:,} records", style=pal.TEXT)
    pieces.append(Piece(3, rate))
    if s.mode == "live":
        rec = Text()
        if s.recording and s.state in ("ended", "error"):  # nothing is being recorded any more
            rec.append("recorded ", style=pal.MUTED)
            rec.append(fmt.size(s.recording_bytes), style="bold")
        elif s.recording:
            rec.append("● REC ", style=f"bold {pal.BAD}")
            rec.append(fmt.size(s.recording_bytes), style="bold")
        else:
            rec.append("not recording (--no-record)", style=pal.MUTED)
        if s.reconnects:
            rec.append(f"  reconnected {s.reconnects}×", style=pal.WARN)
        pieces.append(Piece(1, rec))
        if s.recording:
            pieces.append(Piece(4, Text(s.recording, style=pal.TEXT), Text(Path(s.recording).name, style=pal.TEXT)))
    pieces.insert(1, Piece(2, Text(s.source, style=pal.TEXT), Text(Path(s.source).name, style=pal.TEXT)))
    return pieces


def _position(s: StatusInfo, short: bool = False) -> Text:
    text = Text()
    width = 6 if short else 12
    frac = s.position or 0.0
    filled = round(frac * width)
    text.append("━" * filled, style=pal.INFO)
    text.append("━" * (width - filled), style=pal.BAR_EMPTY)
    text.append(f" {fmt.percent(frac) if s.position is not None else '-'}", style="bold")
    if s.media_seconds is not None and not short:
        total = f" / {fmt.duration(s.duration_seconds)}" if s.duration_seconds is not None else ""
        text.append(f"  {fmt.duration(s.media_seconds) if s.media_seconds else '0 s'}{total}", style=pal.TEXT)
    if s.timebase and not short:
        text.append(f" ({s.timebase})", style=pal.MUTED)
    return text


def _second_line(s: StatusInfo, snapshot: SessionSnapshot) -> list[Piece]:
    clock = Text()
    clock.append(" clock ", style=pal.MUTED)
    clock.append(fmt.frequency(s.clock_hz), style="bold")
    if s.clock_source != "unknown":
        clock.append(f" ({s.clock_source})", style=pal.MUTED)
    short_clock = Text(f" {fmt.frequency(s.clock_hz)}", style="bold")
    pieces: list[Piece] = [Piece(0, clock, short_clock)]
    labels, short_labels = Text(), Text()
    for n, (key, label) in enumerate(sorted(s.labels.items())):
        labels.append(" · " if n else "", style=pal.MUTED)
        labels.append(short_label(key, label), style=pal.WARN)
        short_labels.append(" · " if n else "", style=pal.MUTED)
        short_labels.append(tiny_label(key, label), style=pal.WARN)
    if s.labels:
        pieces.append(Piece(0, labels, short_labels))
    pieces.append(Piece(0, _loss(s, snapshot), _loss(s, snapshot, short=True)))
    count = Text(f"{snapshot.inferences:,} inferences", style=pal.TEXT)
    if snapshot.inferences != snapshot.complete_inferences:
        count.append(f" ({snapshot.complete_inferences:,} complete)", style=pal.WARN)
    pieces.append(Piece(2, count, Text(f"{snapshot.inferences:,} inf", style=pal.TEXT)))
    if snapshot.budget_name:
        budget = Text("budget ", style=pal.MUTED)
        budget.append(snapshot.budget_name, style="bold")
        name = snapshot.budget_name
        short = name if len(name) <= 16 else name[:15] + "…"  # cut, it says so
        pieces.append(Piece(3, budget, Text(short, style="bold")))
    if s.warnings:
        pieces.append(Piece(5, Text(s.warnings[-1], style=pal.WARN)))
    return pieces


def tiny_label(key: str, label: str) -> str:
    """``emulated``, ``PMU simulated``, ``model estimate``: the labels where room is scarce."""
    if "emulated" in label:
        return "emulated"
    return f"PMU {label}" if key == "npu_pmu" else label


def _loss(s: StatusInfo, snapshot: SessionSnapshot, short: bool = False) -> Text:
    """What was lost; an inference cut by the end of the stream is not loss and is said apart."""
    text = Text()
    loss = s.loss
    cut = snapshot.cut_at_end
    incomplete = snapshot.inferences - snapshot.complete_inferences - cut
    parts = [
        (loss.overflows, "overflows"),
        (loss.gaps, "gaps"),
        (loss.lost_records, "lost records"),
        (loss.damaged_records - snapshot.cut_records, "damaged"),
        (loss.desyncs, "desyncs"),
        (s.firmware_dropped, "dropped by firmware"),
    ]
    lost = [f"{n:,} {what}" for n, what in parts if n]
    text.append("loss ", style=pal.MUTED)
    if lost or incomplete:
        text.append(" · ".join(lost[:1] if short else lost) or "records", style=f"bold {pal.BAD}")
        what = "incomplete" if short else f"of {snapshot.inferences:,} inferences incomplete"
        text.append(f" · {incomplete:,} {what}", style=pal.WARN)
    else:
        text.append("none", style=pal.GOOD)
    if cut:
        what = "last cut by the end" if short else "the last inference cut by the end (not loss)"
        text.append(f" · {what}{'' if cut == 1 else f' ({cut})'}", style=pal.MUTED)
    return text
