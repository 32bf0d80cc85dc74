"""Parsing of frequencies and sizes the way embedded tools write them."""

from __future__ import annotations

import re

from tracer.errors import UsageError
from tracer.limits import CLOCK_RANGE, MAX_CLOCK_HZ, valid_clock_hz

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
    match = _FREQ.match(text) if len(text) <= 40 else None
    if not match:
        raise UsageError(f"not a frequency: {text[:40]!r} (expected e.g. 32000000, 400k, 4M, 1MHz)")
    value = float(match.group(1)) * _SCALE[match.group(2).lower()]
    if not 1 <= round(value) <= 1000 * MAX_CLOCK_HZ:
        raise UsageError(f"not a frequency tracer can count with: {text!r} (1 Hz to 10 THz)")
    return int(round(value))


def parse_clock(text: str) -> int:
    """Parse a clock (``--clock``, ``--cpu-hz``, ``--swo-hz``, a budget's ``clock_hz``) like
    :func:`parse_frequency`, and check it is one: a whole number of Hz from 1 kHz to 10 GHz.

    Raises:
        UsageError: Not a frequency, or out of that range.
    """
    value = parse_frequency(text)
    if not valid_clock_hz(value):
        raise UsageError(f"not a clock: {text!r} is {value} Hz (expected {CLOCK_RANGE})")
    return value
