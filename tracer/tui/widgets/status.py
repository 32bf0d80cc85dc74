"""The status bar: where the data comes from, its state and rate, what was lost, where it is recorded."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tracer.session.pacing import speed_label
from tracer.session.snapshot import SessionSnapshot, StatusInfo
from tracer.tui import format as fmt
from tracer.tui import palette as pal
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
    """Two lines at the top: source and state; clock, labels and loss."""

    interval = 0.2

    DEFAULT_CSS = """
    StatusBar { height: 2; background: $panel; padding: 0 1; }
    """

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the status of ``snapshot``."""
        s = snapshot.status
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append_text(_first_line(s, snapshot))
        text.append("\n")
        text.append_text(_second_line(s, snapshot))
        self.update_if_changed(text)


def short_label(key: str, label: str) -> str:
    """``cycles emulated (QEMU)``, ``NPU PMU simulated``, ``cycles: model estimate``."""
    name = {"cycles": "cycles", "npu_pmu": "NPU PMU"}.get(key, key)
    if "emulated" in label:
        return f"{name} emulated (QEMU instructions)"
    return f"{name} {label}"


def _sep(text: Text) -> None:
    text.append("  │  ", style=pal.MUTED)


def _first_line(s: StatusInfo, snapshot: SessionSnapshot) -> Text:
    text = Text()
    text.append(f" {s.mode.upper()} ", style=f"bold {pal.BRIGHT} on {pal.NPU[1] if s.mode == 'replay' else '#1E7A46'}")
    text.append(" ")
    state = "paused" if s.paused and s.state in ("playing", "connected") else s.state
    glyph, colour = STATE_LOOK.get(state, ("?", pal.MUTED))
    text.append(f"{glyph} {state}", style=f"bold {colour}")
    if s.mode == "replay":
        text.append(f" {speed_label(s.speed)}", style="bold")
    if s.message and state in ("lost", "reconnecting", "error"):
        text.append(f" ({s.message})", style=colour)
    _sep(text)
    text.append(s.source, style=pal.TEXT)
    _sep(text)
    if s.mode == "replay":
        _position(text, s)
        _sep(text)
    if s.bytes_per_s is not None:
        text.append(fmt.rate(s.bytes_per_s), style="bold")
        text.append(" · ", style=pal.MUTED)
        text.append(fmt.rate(s.packets_per_s, "pkt"), style="bold")
    else:
        text.append(f"{fmt.size(s.bytes)} · {s.packets:,} packets · {s.records:,} records", style=pal.TEXT)
    if s.mode == "live":
        _sep(text)
        if s.recording:
            text.append("● REC ", style=f"bold {pal.BAD}")
            text.append(f"{s.recording} {fmt.size(s.recording_bytes)}", style=pal.TEXT)
        else:
            text.append("not recording (--no-record)", style=pal.MUTED)
        if s.reconnects:
            text.append(f"  reconnected {s.reconnects}×", style=pal.WARN)
    return text


def _position(text: Text, s: StatusInfo) -> None:
    width = 12
    frac = s.position or 0.0
    filled = round(frac * width)
    text.append("━" * filled, style=pal.INFO)
    text.append("━" * (width - filled), style=pal.BAR_EMPTY)
    text.append(f" {fmt.percent(frac) if s.position is not None else '-'}", style="bold")
    if s.media_seconds is not None:
        total = f" / {fmt.duration(s.duration_seconds)}" if s.duration_seconds is not None else ""
        text.append(f"  {fmt.duration(s.media_seconds) if s.media_seconds else '0 s'}{total}", style=pal.TEXT)
    if s.timebase:
        text.append(f" ({s.timebase})", style=pal.MUTED)


def _second_line(s: StatusInfo, snapshot: SessionSnapshot) -> Text:
    text = Text()
    text.append(" clock ", style=pal.MUTED)
    text.append(fmt.frequency(s.clock_hz), style="bold")
    if s.clock_source != "unknown":
        text.append(f" ({s.clock_source})", style=pal.MUTED)
    for key, label in sorted(s.labels.items()):
        text.append(" · ", style=pal.MUTED)
        text.append(short_label(key, label), style=pal.WARN)
    _sep(text)
    loss = s.loss
    incomplete = snapshot.inferences - snapshot.complete_inferences
    parts = [
        (loss.overflows, "overflows"), (loss.gaps, "gaps"), (loss.lost_records, "lost records"),
        (loss.damaged_records, "damaged"), (loss.desyncs, "desyncs"), (s.firmware_dropped, "dropped by firmware"),
    ]  # fmt: skip
    lost = [f"{n:,} {what}" for n, what in parts if n]
    text.append("loss ", style=pal.MUTED)
    if lost or incomplete:
        text.append(" · ".join(lost) or "records", style=f"bold {pal.BAD}")
        text.append(f" · {incomplete:,} of {snapshot.inferences:,} inferences incomplete", style=pal.WARN)
    else:
        text.append("none", style=pal.GOOD)
    _sep(text)
    text.append(f"{snapshot.inferences:,} inferences", style=pal.TEXT)
    if snapshot.inferences != snapshot.complete_inferences:
        text.append(f" ({snapshot.complete_inferences:,} complete)", style=pal.WARN)
    if snapshot.budget_name:
        _sep(text)
        text.append("budget ", style=pal.MUTED)
        text.append(snapshot.budget_name, style="bold")
    if s.warnings:
        _sep(text)
        text.append(s.warnings[-1], style=pal.WARN)
    return text
