"""The bounds every reader of untrusted input uses (tracer/limits.py, docs/limits.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracer.errors import UsageError, reading_file
from tracer.limits import (
    MAX_JSON_DEPTH,
    InputError,
    bounded_numbers,
    parse_json,
    parse_toml,
    read_limited,
    valid_clock_hz,
)


def test_read_limited_stops_at_the_limit_even_on_an_endless_file() -> None:
    """/dev/zero never ends: the read stops one byte past the limit and refuses."""
    with pytest.raises(InputError, match="more than 1,024 bytes"):
        read_limited("/dev/zero", 1024, "a budget file")


def test_read_limited_reads_a_file_within_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.write_bytes(b"a" * 1024)
    assert read_limited(path, 1024, "x") == b"a" * 1024


def test_reading_file_says_too_large_in_words() -> None:
    with (
        pytest.raises(UsageError, match=r"^--elf /dev/zero: more than 1,024 bytes: too large for an ELF file"),
        reading_file("--elf /dev/zero", "an ELF file", UsageError),
    ):
        read_limited("/dev/zero", 1024, "an ELF file")


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested more than 64 levels deep", 1, 65),
        ('{"a":\n  ' + "9" * 5000 + "}", "a number of 5000 characters", 2, 3),
        ('{"a": 1e400}', "beyond the range", 1, 7),
        ('{"a": NaN}', "NaN is not a number JSON allows", 1, 7),
        ('{"a": [-Infinity]}', "-Infinity is not", 1, 8),
        ('{"a": }', "not valid JSON: Expecting value", 1, 7),
    ],
)
def test_parse_json_refuses_with_the_position(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(InputError) as info:
        parse_json(text)
    assert message in info.value.message
    assert (info.value.line, info.value.column) == (line, column)


def test_parse_json_counts_no_brackets_inside_strings() -> None:
    deep_in_string = json.dumps({"note": "[" * 1000, "x": [[[1]]]})
    assert parse_json(deep_in_string)["x"] == [[[1]]]
    exactly = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(exactly) is not None
    with pytest.raises(InputError):
        parse_json("[" + exactly + "]")


def test_parse_json_takes_bytes_and_says_where_they_are_not_utf8() -> None:
    assert parse_json(b'{"a": 1}') == {"a": 1}
    with pytest.raises(InputError, match="not UTF-8 text"):
        parse_json(b'{"a": "\xff"}')


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("a = " + "[" * 100_000, "nested more than 64 levels deep", 1),
        ("[model]\ncycles = " + "9" * 5000, "a number of 5000 digits", 2),
        ("[model]\ncycles = 0x" + "f" * 5000, "a number of 5002 digits", 2),
        ("[model]\nname = = 1", "not valid TOML", 2),
    ],
)
def test_parse_toml_refuses_with_the_line(text: str, message: str, line: int) -> None:
    with pytest.raises(InputError) as info:
        parse_toml(text)
    assert message in info.value.message
    assert info.value.line == line


def test_parse_toml_leaves_strings_and_comments_alone() -> None:
    text = 'a = "' + "9" * 5000 + '"  # ' + "[" * 100 + "\nb = '''" + "{" * 100 + "'''\n"
    data = parse_toml(text)
    assert data["a"] == "9" * 5000 and data["b"] == "{" * 100


def test_bounded_numbers() -> None:
    assert bounded_numbers("took 123 ticks") == "took 123 ticks"
    assert bounded_numbers("took " + "1" * 5000 + " ticks") == "took " + "9" * 41 + " ticks"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (32_000_000, True),
        (1_000, True),
        (10**10, True),
        (999, False),
        (1, False),
        (0, False),
        (-5, False),
        (1.5e8, False),
        (float("nan"), False),
        ("fast", False),
        (True, False),
        (10**10 + 1, False),
    ],
)
def test_valid_clock_hz(value: object, ok: bool) -> None:
    assert valid_clock_hz(value) is ok


def test_gunzip_limited_stops_a_bomb() -> None:
    import gzip

    from tracer.limits import gunzip_limited

    bomb = gzip.compress(b"\0" * 10_000_000)
    assert len(bomb) < 20_000
    with pytest.raises(InputError, match="more than 1,000,000 bytes once decompressed"):
        gunzip_limited(bomb, 1_000_000, "a PMU trace")
    assert gunzip_limited(gzip.compress(b"abc"), 10, "x") == b"abc"
    with pytest.raises(InputError, match="damaged gzip data"):
        gunzip_limited(b"\x1f\x8b" + b"\0" * 30, 10, "x")


def test_pmu_trace_nested_deep_is_a_capture_error() -> None:
    from tracer.errors import CaptureError
    from tracer.telemetry.fvp_pmu_trace import read_pmu_trace

    with pytest.raises(CaptureError, match="nested more than 64 levels deep"):
        read_pmu_trace(b'{"traceEvents": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "npu.json")
