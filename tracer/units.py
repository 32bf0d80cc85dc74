"""Parsing of frequencies and sizes the way embedded tools write them."""

from __future__ import annotations

import re

from tracer.errors import UsageError

_FREQ = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)(?:hz|Hz|HZ)?\s*$")
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}


def parse_frequency(text: str) -> int:
    """Parse a frequency such as ``"400k"``, ``"4M"``, ``"1MHz"`` or ``"32000000"``.

    Suffixes follow pyOCD: ``k`` and ``M`` are decimal (1e3, 1e6), case-insensitive.

    Args:
        text: The frequency as typed by the user.

    Returns:
        The frequency in Hz.

    Raises:
        UsageError: The text is not a frequency.
    """
    match = _FREQ.match(text)
    if not match:
        raise UsageError(f"not a frequency: {text!r} (expected e.g. 32000000, 400k, 4M, 1MHz)")
    value = float(match.group(1)) * _SCALE[match.group(2).lower()]
    if value <= 0:
        raise UsageError(f"frequency must be positive: {text!r}")
    return int(round(value))
