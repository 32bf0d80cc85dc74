"""Memory: the tensor arena and each stack as bars, with the 75% and 90% thresholds marked on them."""

from __future__ import annotations

import textwrap

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from tracer.session.memory import ALARM_FRACTION, WARN_FRACTION
from tracer.session.snapshot import SessionSnapshot
from tracer.tui import format as fmt
from tracer.tui import palette as pal
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View

PARTIAL = " ▏▎▍▌▋▊▉"


def bar(fraction: float | None, width: int, marker: float | None = None) -> Text:
    """A bar ``width`` cells wide, filled to ``fraction``; ticks at 75% (amber) and 90% (red).

    ``marker`` puts a ``▼``-coloured tick (the budget's plan) at that fraction.
    """
    frac = 0.0 if fraction is None else max(0.0, min(1.0, fraction))
    colour = pal.fill_colour(fraction)
    filled = frac * width
    full = int(filled)
    ticks = {round(WARN_FRACTION * width): pal.WARN, round(ALARM_FRACTION * width): pal.BAD}
    if marker is not None and 0 <= marker <= 1:
        ticks[min(width - 1, round(marker * width))] = pal.INFO
    text = Text()
    for i in range(width):
        if i < full:
            background, char, fg = colour, " ", colour
        elif i == full and filled - full >= 1 / 16:
            background, char, fg = pal.BAR_EMPTY, PARTIAL[max(1, int((filled - full) * 8))], colour
        else:
            background, char, fg = pal.BAR_EMPTY, " ", pal.MUTED
        if i in ticks and char == " ":
            char, fg = "│", ticks[i] if i >= full else pal.BAR_TRACK
        text.append(char, style=Style(color=fg, bgcolor=background))
    return text


class MemoryView(View, Static):
    """Arena used/peak against its size and plan; every stack's high-water mark against its size."""

    interval = 1.0

    DEFAULT_CSS = """
    MemoryView { height: 100%; border: round $primary-darken-2; border-title-color: $text; border-subtitle-color: $text-muted;
                 padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Memory"
        self.border_subtitle = "ticks at 75% and 90%"

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the memory of ``snapshot`` (one line per bar when two do not fit)."""
        m = snapshot.memory
        width = max(20, self.content_size.width)
        name_width = min(max([7] + [len(s.name) + 1 for s in m.stacks]), 12)
        compact = self.content_size.height < 2 * (1 + max(1, len(m.stacks)))
        bar_width = max(6, width - name_width - (7 if compact else 22))
        ended = snapshot.status.state in ("ended", "error", "lost")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{'arena':<{name_width}}", style="bold")
        analysis = snapshot.diagnosis.analysis
        failures = analysis.memory.allocation_failures if analysis is not None else ()
        if failures:
            failed = failures[0]  # the arena did not fit: that says more than any bar
            said = f"allocation failed ({failed.kind}):"
            detail = f"requested {failed.requested:,} B, {failed.available:,} available"
            room = width - name_width
            # Wrapped rather than cut: what it asked for is the point.
            lines = textwrap.wrap(f"{said} {detail}", max(10, room))
            text.append(f"\n{' ' * name_width}".join(lines) + "\n", style=f"bold {pal.BAD}")
        elif m.arena_peak is None:
            text.append("no arena report in this capture\n" if ended else "no arena report yet\n", style=pal.MUTED)
        else:
            planned = m.arena_planned / m.arena_size if m.arena_planned and m.arena_size else None
            text.append_text(bar(m.arena_fraction, bar_width, planned))
            text.append(f" {fmt.percent(m.arena_fraction):>4}", style=f"bold {pal.fill_colour(m.arena_fraction)}")
            if not compact:
                text.append("\n" + " " * name_width)
                text.append(f"peak {m.arena_peak:,} of {fmt.cycles(m.arena_size)} B", style=pal.TEXT)
                if m.arena_used is not None and m.arena_used != m.arena_peak:
                    text.append(f" · now {m.arena_used:,}", style=pal.MUTED)
                if m.arena_planned:
                    text.append(f" · planned {m.arena_planned:,}", style=pal.INFO)
            text.append("\n")
        if not m.stacks:
            text.append(f"{'stacks':<{name_width}}", style="bold")
            said = "no stack report in this capture" if ended else "no stack report yet"
            if len(said) > width - name_width:
                said = "none reported" if ended else "none yet"
            text.append(said, style=pal.MUTED)
        for stack in m.stacks:
            text.append(f"{stack.name[: name_width - 1]:<{name_width}}", style="bold")
            broken = compact and not stack.canary_ok
            text.append_text(bar(stack.fraction, max(3, bar_width - 7) if broken else bar_width))
            text.append(f" {fmt.percent(stack.fraction):>4}", style=f"bold {pal.fill_colour(stack.fraction)}")
            if compact:
                if not stack.canary_ok:
                    text.append(" CANARY", style=f"bold {pal.BAD}")
            else:
                text.append("\n" + " " * name_width)
                water = f"high water {stack.high_water:,} of {stack.size:,} B"
                canary = "" if stack.canary_ok else "  CANARY OVERWRITTEN"
                if len(water) + len(canary) > width - name_width:  # the canary is what matters
                    water = f"{stack.high_water:,} of {stack.size:,} B"
                text.append(water, style=pal.TEXT)
                text.append(canary, style=f"bold {pal.BAD}")
            text.append("\n")
        self.update_if_changed(text)
