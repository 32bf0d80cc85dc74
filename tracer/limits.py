"""Bounds on everything tracer reads from files and streams it did not write (docs/limits.md).

Every reader of untrusted input goes through these: a file is read with :func:`read_limited`
(never more than its kind's size), JSON and TOML are parsed with :func:`parse_json` and
:func:`parse_toml` (nesting depth and the length of every number bounded, non-finite numbers
refused, the position of the problem in the error), and values that mean something physical are
checked against the ranges below with :func:`check_range` before anyone computes with them.
Values inside an input (a note's fields, a number in text) become typed values through
:mod:`tracer.values`, which builds on these bounds.

The ranges are far beyond anything a real part or a real compiler produces, and near enough to
keep every computation exact and quick: a number past them is a damaged or hostile file, never a
measurement.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from typing import Any

KIB = 1024
MIB = 1024 * KIB

# -- sizes of files, by kind ---------------------------------------------------------------------
MAX_BUDGET_FILE_BYTES = 64 * MIB  # Vela CSVs and debug databases, Glow headers, TOML/JSON budgets
MAX_TOML_BUDGET_CHARS = 1 * MIB  # a TOML budget: 8,000 layers; tomllib takes 3 s for 1 MiB of numbers
MAX_JSON_BUDGET_CHARS = 4 * MIB  # a JSON budget (`tracer budget --format json` of 10,000 layers)
MAX_BUDGET_LAYERS = 10_000  # layers of one budget: TFLite models have hundreds of operators
MAX_ELF_FILE_BYTES = 256 * MIB  # a firmware image with its debug information
MAX_ELF_SECTION_BYTES = 64 * MIB  # one ELF section once decompressed (a firmware's .debug_info: a few MiB)
MAX_PMU_TRACE_BYTES = 256 * MIB  # an FVP's --pmu-trace JSON (gzip or not)
MAX_LOG_LINE_CHARS = 1 * MIB  # one line of a text log; the rest of a longer line is dropped, counted

# -- structure of parsed text --------------------------------------------------------------------
MAX_JSON_DEPTH = 64  # tracer's own JSON is 5 levels deep at most
MAX_NUMBER_CHARS = 100  # a number literal in JSON or TOML (2**64 has 20 digits)
MAX_NUMBER_DIGITS = 40  # a run of digits in a log line that is read as a number

# -- physical ranges -----------------------------------------------------------------------------
MIN_CLOCK_HZ = 1_000  # below a kilohertz nothing is a core clock
MAX_CLOCK_HZ = 10_000_000_000  # 10 GHz
MAX_CYCLES = 2**48  # 78 hours at 1 GHz: more than any inference or layer
MAX_MEMORY_BYTES = 2**40  # 1 TiB: the Ethos-U's 40-bit AXI address space (a Cortex-M has 4 GiB)
MAX_SECONDS = 1e6  # 11.6 days: more than any inference
MAX_TOLERANCE_PCT = 10_000.0  # a layer may take at most 101 times its prediction


class InputError(ValueError):
    """Text that breaks a bound or does not parse, with where.

    Attributes:
        message: What is wrong and what was expected.
        line: 1-based line of the problem (1 when unknown).
        column: 1-based column (1 when unknown).
        offset: 0-based character offset in the text.
    """

    def __init__(self, message: str, line: int = 1, column: int = 1, offset: int = 0) -> None:
        super().__init__(f"{message} (line {line}, column {column})")
        self.message = message
        self.line = line
        self.column = column
        self.offset = offset


def read_limited(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """Read a whole file of at most ``limit`` bytes, never more (``/dev/zero`` ends too).

    Args:
        path: The file.
        limit: Largest size accepted, in bytes.
        what: What the file should be, for the message (``"an ELF file"``).

    Raises:
        OSError: The OS's errors opening or reading (callers turn them into words with
            :func:`tracer.errors.reading_file`).
        InputError: The file is larger than ``limit``.
    """
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"more than {limit:,} bytes: too large for {what} (at most {limit // MIB} MiB)")
    return data


def gunzip_limited(blob: bytes, limit: int, what: str) -> bytes:
    """Decompress gzip data to at most ``limit`` bytes (a small file may inflate a thousandfold).

    Raises:
        InputError: Damaged gzip data, or more than ``limit`` bytes once decompressed.
    """
    return inflate_limited(blob, limit, what, wbits=31)


def inflate_limited(blob: bytes, limit: int, what: str, wbits: int = 15) -> bytes:
    """Decompress zlib (``wbits`` 15), raw deflate (-15) or gzip (31) data to at most ``limit``
    bytes, stopping there: the output is capped before it inflates, never checked after.

    Raises:
        InputError: Damaged data, or more than ``limit`` bytes once decompressed.
    """
    import zlib

    kind = "gzip" if wbits > 15 else "compressed"
    inflater = zlib.decompressobj(wbits=wbits)
    try:
        data = inflater.decompress(blob, limit + 1)
    except zlib.error as exc:
        raise InputError(f"damaged {kind} data ({exc})") from None
    if len(data) > limit:
        raise InputError(f"more than {limit:,} bytes once decompressed: too large for {what}")
    return data


# -- JSON ----------------------------------------------------------------------------------------
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?')  # an unterminated one runs to the end
_JSON_TOKEN = re.compile(_JSON_STRING.pattern + r"|[\[\]{}]", re.DOTALL)


def parse_json(text: str | bytes, max_depth: int = MAX_JSON_DEPTH, nonfinite: bool = False) -> Any:
    """``json.loads`` with bounds: nesting depth, length of numbers, finite numbers only.

    Args:
        text: The JSON text (bytes are decoded as UTF-8).
        max_depth: Deepest nesting of arrays and objects accepted.
        nonfinite: Accept Python's ``NaN``, ``Infinity`` and numbers beyond a double (as NaN and
            infinities) for the caller to check: what ``json.dumps`` writes for them.

    Raises:
        InputError: Not JSON, nested deeper than ``max_depth``, a number longer than
            ``MAX_NUMBER_CHARS`` or out of the range of a double, ``NaN`` or ``Infinity``.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start})", offset=exc.start) from None
    if _json_depth(text) > max_depth:
        _raise_too_deep(text, max_depth)
    try:
        return json.loads(
            text,
            parse_int=_NumberHook(text, int, nonfinite),
            parse_float=_NumberHook(text, float, nonfinite),
            parse_constant=_NumberHook(text, None, nonfinite),
        )
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", exc.lineno, exc.colno, exc.pos) from None
    except RecursionError:  # not reached: the depth is checked above
        raise InputError(f"nested more than {max_depth} levels deep") from None


def _json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects, strings left out (C and numpy speed)."""
    opening = text.count("[") + text.count("{")
    if opening <= 1:
        return opening
    import numpy as np  # only for texts with nesting; keeps this module light

    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).encode("ascii")
    return int(np.cumsum(np.array(_BRACKET_STEP, np.int64)[np.frombuffer(brackets, np.uint8)]).max(initial=0))


_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = [0] * 256
for _c, _step in (("[", 1), ("{", 1), ("]", -1), ("}", -1)):
    _BRACKET_STEP[ord(_c)] = _step


def _raise_too_deep(text: str, max_depth: int) -> None:
    """Find where the nesting first passes ``max_depth`` (stops there) and raise."""
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        first = m.group()[0]
        if first in "[{":
            depth += 1
            if depth > max_depth:
                raise _at(text, m.start(), f"nested more than {max_depth} levels deep")
        elif first in "]}":
            depth -= 1
    raise InputError(f"nested more than {max_depth} levels deep")


class _NumberHook:
    """A ``json.loads`` number hook that refuses long, infinite and not-a-number literals."""

    def __init__(self, text: str, convert: Any, nonfinite: bool) -> None:
        self.text = text
        self.convert = convert
        self.nonfinite = nonfinite

    def __call__(self, token: str) -> Any:
        if self.convert is None:  # NaN, Infinity, -Infinity
            if self.nonfinite:
                return float(token)
            raise self._error(token, f"{token} is not a number JSON allows")
        if len(token) > MAX_NUMBER_CHARS:
            raise self._error(token, f"a number of {len(token)} characters (at most {MAX_NUMBER_CHARS})")
        value = self.convert(token)
        if isinstance(value, float) and not math.isfinite(value) and not self.nonfinite:
            raise self._error(token, f"{token} is beyond the range of a number (about 1.8e308)")
        return value

    def _error(self, token: str, message: str) -> InputError:
        at = self.text.find(token)
        return _at(self.text, max(at, 0), message)


# -- TOML ----------------------------------------------------------------------------------------
_TOML_TOKEN = re.compile(
    r'"""(?:[^\\]|\\.)*?"""'
    r"|'''.*?'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'[^'\n]*'"
    r"|#[^\n]*"
    r"|[\[\]{}]"
    r"|[0-9][0-9A-Za-z_]*",  # numbers (hex, octal, binary too), dates and bare keys: all short
    re.DOTALL,
)


def parse_toml(text: str, max_depth: int = MAX_JSON_DEPTH) -> dict[str, Any]:
    """``tomllib.loads`` with bounds: nesting of arrays and inline tables, length of numbers.

    Raises:
        InputError: Not TOML (with the line tomllib gives), nested deeper than ``max_depth``, or a
            run of digits longer than ``MAX_NUMBER_CHARS``.
    """
    depth = 0
    for m in _TOML_TOKEN.finditer(text):
        token = m.group()
        first = token[0]
        if first in "[{":
            depth += 1
            if depth > max_depth:
                raise _at(text, m.start(), f"nested more than {max_depth} levels deep")
        elif first in "]}":
            depth = max(0, depth - 1)
        elif first.isdigit() and len(token) > MAX_NUMBER_CHARS:
            raise _at(text, m.start(), f"a number of {len(token)} digits (at most {MAX_NUMBER_CHARS})")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"line (\d+), column (\d+)", str(exc))
        line, column = (int(where.group(1)), int(where.group(2))) if where else (1, 1)
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise InputError(f"not valid TOML: {message}", line, column) from None
    except (ValueError, RecursionError) as exc:  # the scan above should have caught it
        raise InputError(f"not valid TOML: {exc}") from None


def _at(text: str, offset: int, message: str) -> InputError:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return InputError(message, line, column, offset)


# -- numbers in text -----------------------------------------------------------------------------
# \d: any decimal digit, as the readers' patterns match them (int() takes '٣' too, and refuses
# 4,300 of them as it does 4,300 ASCII digits).
_LONG_DIGITS = re.compile(rf"\d{{{MAX_NUMBER_DIGITS + 1},}}")
_TOO_BIG = "9" * (MAX_NUMBER_DIGITS + 1)


def bounded_numbers(text: str) -> str:
    """``text`` with every run of more than ``MAX_NUMBER_DIGITS`` digits replaced by that many
    nines plus one: a number no reader takes as a reading (they check ranges), where ``int()`` of
    4,300 digits or more would raise. Readers parse this; the user is shown the original.
    """
    if len(text) <= MAX_NUMBER_DIGITS:
        return text
    return _LONG_DIGITS.sub(_TOO_BIG, text)


def check_range(value: Any, low: float, high: float, integer: bool = False) -> bool:
    """True if ``value`` is a number (not a bool) from ``low`` to ``high``, finite, and whole
    when ``integer``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if integer and not isinstance(value, int):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return low <= value <= high


def valid_clock_hz(value: Any) -> bool:
    """True for a clock tracer can count with: a whole number of Hz from 1 kHz to 10 GHz."""
    return check_range(value, MIN_CLOCK_HZ, MAX_CLOCK_HZ, integer=True)


CLOCK_RANGE = "a whole number of Hz from 1 kHz to 10 GHz"
GIVEN_CLOCK = "given (--clock)"  # the clock source of a clock the command line gave
