"""Colours with a meaning, used the same way in every view (tuned for Textual's dark theme).

Green is within budget, amber is near a limit, red is over it; blue is the NPU, violet the CPU,
orange an interrupt. Nothing else gets a colour of its own, so colour always says something.
"""

from __future__ import annotations

from tracer.session.memory import ALARM_FRACTION, WARN_FRACTION

GOOD = "#4EBF71"
WARN = "#FEA62B"
BAD = "#E5566C"
INFO = "#57A5E2"
MUTED = "#8A9099"
TEXT = "#E0E0E0"
BRIGHT = "#FFFFFF"
ACCENT = "#FEA62B"
NPU = ("#2F7FD0", "#235F9C")  # alternating shades, so neighbouring layers stay apart
CPU = ("#8A64D6", "#6A4CAA")
ISR = "#F08A24"
TASK = "#3E8E7E"
JOB = "#6EC1F0"
CLEAN = "#F4D03F"
INVALIDATE = "#48C9B0"
MARK = "#E0E0E0"
SELECTED = "#FEA62B"
BAR_EMPTY = "#2B333B"
BAR_TRACK = "#1B2127"
PANEL = "#242F38"

SEVERITY = {"error": BAD, "warning": WARN, "info": INFO}


def ratio_colour(ratio: float | None, tolerance_pct: float) -> str:
    """Green within budget, amber within the tolerance above it, red beyond; blue far under (check the budget)."""
    if ratio is None:
        return MUTED
    if ratio > 1 + tolerance_pct / 100:
        return BAD
    if ratio > 1:
        return WARN
    if ratio < 0.5:
        return INFO
    return GOOD


def fill_colour(fraction: float | None) -> str:
    """Memory bars: green below 75%, amber to 90%, red above."""
    if fraction is None:
        return MUTED
    if fraction > ALARM_FRACTION:
        return BAD
    if fraction > WARN_FRACTION:
        return WARN
    return GOOD
