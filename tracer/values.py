"""Values read from input become typed, range-checked values here, and nowhere else.

Every reader of a file or stream tracer did not write (capture notes and metadata, firmware
records, text logs, budgets, ELF images, ETDumps, datasets) turns what it read into numbers,
lists and sizes through these functions. Each one checks the type, the size and the range (ASCII
digits only: ``str.isdigit()`` accepts ``'²'``, which ``int()`` refuses; 64-bit bounds: numpy
refuses more), and raises :class:`tracer.limits.InputError` saying what was found and what was
expected, so the reader can add where (byte offset, line) and turn it into the error of its exit
code (``docs/limits.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tracer.limits import MAX_NUMBER_DIGITS, MIB, InputError

U32 = 2**32 - 1
U64 = 2**64 - 1
I64 = 2**63 - 1
MAX_INFLATED_BYTES = 256 * MIB  # a section or blob decompressed: at most the largest file we read

_ASCII_DIGITS = frozenset("0123456789")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def show(value: Any) -> str:
    """A value for a message, short (an input may hold anything)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_ascii_digits(text: str) -> bool:
    """True for a non-empty run of the digits 0-9 and nothing else (not ``'²'``, not ``'٣'``)."""
    return bool(text) and all(c in _ASCII_DIGITS for c in text)


def ascii_int(text: str, what: str, low: int = 0, high: int = U64) -> int:
    """A whole number written in ASCII (an optional sign, decimal digits or ``0x`` and hex digits),
    from ``low`` to ``high``.

    Raises:
        InputError: Anything else, with what was found and what was expected.
    """
    body = text.strip()
    sign = -1 if body.startswith("-") else 1
    digits = body[1:] if body[:1] in "+-" else body
    hexadecimal = digits[:2].lower() == "0x"
    ok = bool(digits[2:]) and all(c in _HEX_DIGITS for c in digits[2:]) if hexadecimal else is_ascii_digits(digits)
    if not ok:
        raise InputError(f"{what} is {show(text)}: expected a whole number in ASCII digits")
    if len(digits) > MAX_NUMBER_DIGITS:
        raise InputError(f"{what} has {len(digits)} digits: expected at most {MAX_NUMBER_DIGITS}")
    value = sign * int(digits, 16 if hexadecimal else 10)
    return _in_range(value, what, low, high)


def whole(value: Any, what: str, low: int = 0, high: int = U64) -> int:
    """A whole number from parsed JSON or TOML (not a bool, not a float), from ``low`` to ``high``.

    Raises:
        InputError: Of another type or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} is {show(value)}: expected a whole number from {low:,} to {high:,}")
    return _in_range(value, what, low, high)


def real(value: Any, what: str, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite number from parsed JSON or TOML (a whole number counts), from ``low`` to ``high``.

    Raises:
        InputError: Not a number, not finite, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{what} is {show(value)}: expected a number")
    number = float(value) if abs(value) < 2**1000 else math.inf
    if not math.isfinite(number) or not low <= number <= high:
        raise InputError(f"{what} is {show(value)}: expected a finite number from {low:g} to {high:g}")
    return number


def items(value: Any, what: str, length: int | None = None, max_length: int | None = None) -> list[Any]:
    """A JSON list, of ``length`` items when given, of at most ``max_length`` items when given.

    Raises:
        InputError: Not a list, or of another length.
    """
    if not isinstance(value, list):
        raise InputError(f"{what} is {show(value)}: expected a list")
    if length is not None and len(value) != length:
        raise InputError(f"{what} has {len(value):,} items: expected {length:,}, one per sample")
    if max_length is not None and len(value) > max_length:
        raise InputError(f"{what} has {len(value):,} items: expected at most {max_length:,}")
    return value


def whole_list(
    value: Any, what: str, low: int = 0, high: int = U64, length: int | None = None, optional: bool = False
) -> list[Any]:
    """A list of whole numbers from ``low`` to ``high`` (and ``None`` items when ``optional``).

    Raises:
        InputError: Not a list, of another length, or an item of another type or out of range.
    """
    out = items(value, what, length)
    for k, item in enumerate(out):
        if not (optional and item is None):
            whole(item, f"{what}[{k}]", low, high)
    return out


def each(value: Any, what: str, check: Callable[[Any, str], Any], length: int | None = None) -> list[Any]:
    """A list whose every item passes ``check(item, name)`` (which raises :class:`InputError`)."""
    out = items(value, what, length)
    for k, item in enumerate(out):
        check(item, f"{what}[{k}]")
    return out


def size(count: int, what: str, limit: int) -> int:
    """A count or size taken from the input, checked before anything of that size is allocated.

    Args:
        count: The size the input asks for.
        what: What it is the size of, for the message.
        limit: The largest the input can justify (its own length, a bound of docs/limits.md).

    Raises:
        InputError: Negative or larger than ``limit``.
    """
    if count < 0 or count > limit:
        raise InputError(f"{what} is {count:,}: expected at most {limit:,}")
    return count


def _in_range(value: int, what: str, low: int, high: int) -> int:
    if not low <= value <= high:
        raise InputError(f"{what} is {show(value)}: expected a whole number from {low:,} to {high:,}")
    return value
