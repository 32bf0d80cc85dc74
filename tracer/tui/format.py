"""Numbers as the screen shows them: cycles with separators, times in a fitting unit, sizes, rates."""

from __future__ import annotations


def cycles(value: float | int | None) -> str:
    """``150,344``; ``-`` when unknown."""
    if value is None:
        return "-"
    return f"{round(value):,}"


def duration(seconds: float | None) -> str:
    """``4.698 ms``, ``62.5 µs``, ``1.23 s``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    magnitude = abs(seconds)
    if magnitude >= 1:
        return f"{seconds:.3g} s" if magnitude < 100 else f"{seconds:,.0f} s"
    if magnitude >= 1e-3:
        return f"{seconds * 1e3:.4g} ms"
    if magnitude >= 1e-6:
        return f"{seconds * 1e6:.4g} µs"
    return f"{seconds * 1e9:.3g} ns"


def cycle_time(value: float | int | None, clock_hz: int | None) -> str:
    """Cycles at ``clock_hz`` as a time; ``-`` when either is unknown."""
    if value is None or not clock_hz:
        return "-"
    return duration(value / clock_hz)


def size(nbytes: float | int | None) -> str:
    """``33.7 kB``, ``1.20 MB`` (SI units, as byte rates are usually given)."""
    if nbytes is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.3g} {unit}" if abs(nbytes) < 100 * scale else f"{nbytes / scale:,.0f} {unit}"
    return f"{nbytes:,.0f} B"


def rate(per_second: float | None, unit: str = "B") -> str:
    """``12.3 kB/s``, ``3.1 k pkt/s``."""
    if per_second is None:
        return "-"
    if unit == "B":
        return f"{size(per_second)}/s"
    for prefix, scale in (("M", 1e6), ("k", 1e3)):
        if per_second >= scale:
            return f"{per_second / scale:.3g} {prefix}{unit}/s"
    return f"{per_second:.0f} {unit}/s"


def frequency(hz: int | None) -> str:
    """``32 MHz``."""
    if not hz:
        return "clock unknown"
    for unit, scale in (("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3)):
        if hz >= scale:
            return f"{hz / scale:g} {unit}"
    return f"{hz} Hz"


def percent(fraction: float | None) -> str:
    """``81%``; ``-`` when unknown."""
    if fraction is None:
        return "-"
    return f"{fraction:.0%}" if fraction >= 0.1 or fraction == 0 else f"{fraction:.1%}"


def short_cycles(value: float) -> str:
    """Axis labels: ``150k``, ``1.2M``."""
    magnitude = abs(value)
    if magnitude >= 1e9:
        return f"{value / 1e9:.3g}G"
    if magnitude >= 1e6:
        return f"{value / 1e6:.3g}M"
    if magnitude >= 1e3:
        return f"{value / 1e3:.3g}k"
    return f"{value:.0f}"


def energy(microjoules: float | None) -> str:
    """``1,234`` / ``12.3`` / ``0.123``: three significant digits, microjoules or milliwatts."""
    if microjoules is None or microjoules != microjoules:  # None or NaN
        return "-"
    size = abs(microjoules)
    if size >= 100:
        return f"{microjoules:,.0f}"
    if size >= 10:
        return f"{microjoules:.1f}"
    if size >= 1:
        return f"{microjoules:.2f}"
    return f"{microjoules:.3f}"


def spread(value: float | None) -> str:
    """An interval's half-width to two significant digits (``0.11``, ``1.3``, ``42``)."""
    if value is None or value != value:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:.2g}"
