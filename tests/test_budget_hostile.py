"""Budgets that must be refused, each with the file, the line and what was expected (exit 2), so that
``tracer budget`` never accepts what ``tracer check`` then crashes on or passes by mistake
(docs/limits.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
DEMO_BUDGET = (ROOT / "captures" / "demo_budget.toml").read_text()
VELA = Path(__file__).resolve().parent / "data" / "vela" / "out_u55-128_regor"
GLOW = Path(__file__).resolve().parent / "data" / "logs" / "glow_bundle_mobilenet_v1_glow_cm7.h"
BIG = "9" * 5000


def _demo_with(old: str, new: str) -> str:
    assert old in DEMO_BUDGET
    return DEMO_BUDGET.replace(old, new, 1)


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


TOML_CASES = {
    "clock of 0.4 Hz": (
        _demo_with("clock_hz = 32000000", "clock_hz = 0.4"),
        "clock_hz = 0.4",
        "'clock_hz': expected a frequency",
    ),
    "clock text rounding to 0 Hz": (
        _demo_with("clock_hz = 32000000", 'clock_hz = "0.4"'),
        'clock_hz = "0.4"',
        "'clock_hz': expected a frequency",
    ),
    "clock of 100 GHz": (
        _demo_with("clock_hz = 32000000", 'clock_hz = "100G"'),
        'clock_hz = "100G"',
        "'clock_hz': expected a frequency",
    ),
    "tolerance of 1e308": (
        _demo_with("tolerance_pct = 15 ", "tolerance_pct = 1e308 "),
        "tolerance_pct = 1e308",
        "'tolerance_pct': expected a percentage from 0 to 10000",
    ),
    "cycles of 1e308": (
        _demo_with("cycles = 33291", "cycles = 1e308"),
        "cycles = 1e308",
        "'cycles': expected a number of cycles from 0 to 2**48",
    ),
    "cycles of 2**64": (
        _demo_with("cycles = 33291", f"cycles = {2**64}"),
        f"cycles = {2**64}",
        "'cycles': expected a number of cycles from 0 to 2**48",
    ),
    "cycles of 5000 digits": (
        _demo_with("cycles = 33291", f"cycles = {BIG}"),
        f"cycles = {BIG}",
        "a number of 5000 digits (at most 100)",
    ),
    "cycles of 5000 hex digits": (
        _demo_with("cycles = 33291", f"cycles = 0x{'f' * 5000}"),
        "cycles = 0x",
        "a number of 5002 digits (at most 100)",
    ),
    "arena of 2**50 bytes": (
        _demo_with("arena_bytes = 13312", f"arena_bytes = {2**50}"),
        f"arena_bytes = {2**50}",
        "'arena_bytes': expected a whole number of bytes from 0 to 2**40",
    ),
    "index of 2**40": (
        _demo_with("index = 0", f"index = {2**40}"),
        f"index = {2**40}",
        "'index': expected a layer index",
    ),
    "nested 100,000 deep": (
        '[model]\nname = "x"\nnote = ' + "[" * 100_000,
        "note = ",
        "nested more than 64 levels deep",
    ),
}


@pytest.mark.parametrize("case", list(TOML_CASES))
def test_toml_budget_refused_by_budget_and_check_alike(case: str, tmp_path: Path, run_cli) -> None:
    text, at, message = TOML_CASES[case]
    path = tmp_path / "b.toml"
    path.write_text(text)
    line = _line_of(text, at)
    for argv in (["budget", path], ["check", DEMO, "--budget", path], ["report", DEMO, "--budget", path]):
        result = run_cli(*argv)
        assert result.code == 2, (argv, result.err)
        assert "Traceback" not in result.err
        assert f"{path}:{line}: " in result.err and message in result.err, result.err


JSON_CASES = {
    "a number of 5000 digits": (
        '{"model": {"name": "x",\n "cycles_total": ' + BIG + "}}",
        2,
        "a number of 5000 characters",
    ),
    "nested 100,000 deep": ('{"model":\n ' + "[" * 100_000 + "]" * 100_000 + "}", 2, "nested more than 64 levels deep"),
    "compiler config a string": (
        '{"model": {"name": "x",\n "compiler": {"name": "v", "config": "abc"}}, "layers": []}',
        2,
        "'config': expected an object of text values",
    ),
    "compiler config a list": (
        '{"model": {"name": "x",\n "compiler": {"name": "v", "config": [1, 2]}}, "layers": []}',
        2,
        "'config': expected an object of text values",
    ),
    "compiler a number": (
        '{"model": {"name": "x",\n "compiler": 5}, "layers": []}',
        2,
        "'compiler': expected an object",
    ),
    "compiler version a list": (
        '{"model": {"name": "x",\n "compiler": {"name": "v", "version": ["a"]}}}',
        2,
        "'version': expected text",
    ),
    "memory of 1e30": (
        '{"model": {"name": "x",\n "memory": {"sram": 1000000000000000000000000000000}}}',
        2,
        "'sram': expected a whole number of bytes from 0 to 2**40",
    ),
    "part of 1e308 cycles": (
        '{"model": {"name": "x"}, "layers": [{"name": "a", "cycles": 1,\n "parts": [{"cycles": 1e308}]}]}',
        2,
        "'cycles': expected a number of cycles from 0 to 2**48",
    ),
    "infinity": ('{"model": {"name": "x",\n "cycles_total": Infinity}}', 2, "Infinity is not a number JSON allows"),
}


@pytest.mark.parametrize("case", list(JSON_CASES))
def test_json_budget_refused_with_the_line(case: str, tmp_path: Path, run_cli) -> None:
    text, line, message = JSON_CASES[case]
    path = tmp_path / "b.json"
    path.write_text(text)
    for argv in (["budget", path], ["check", DEMO, "--budget", path]):
        result = run_cli(*argv)
        assert result.code == 2, (argv, result.err)
        assert "Traceback" not in result.err
        assert f"{path}:{line}: " in result.err and message in result.err, result.err


def _vela_csv(column: str, value: str, tmp_path: Path) -> Path:
    text = (VELA / "tiny_int8_per-layer.csv").read_text().splitlines()
    header = text[0].split(",")
    row = text[1].split(",")
    row[header.index(column)] = value
    text[1] = ",".join(row)
    path = tmp_path / "tiny_int8_per-layer.csv"
    path.write_text("\n".join(text) + "\n")
    return path


@pytest.mark.parametrize("column", ["NPU", "SRAM AC", "MAC Count", "Util% (MAC)", "Network% (cycles)", "Staging Usage"])
def test_vela_per_layer_negative_columns_refused(column: str, tmp_path: Path, run_cli) -> None:
    path = _vela_csv(column, "-5", tmp_path)
    result = run_cli("budget", path)
    assert result.code == 2, result.err
    assert f"{path}:2: column '{column}': expected a number from 0 to 2**" in result.err, result.err


def _vela_summary(column: str, value: str, tmp_path: Path) -> Path:
    source = next(VELA.glob("*summary*.csv")).read_text().splitlines()
    header = source[0].split(",")
    row = source[1].split(",")
    row[header.index(column)] = value
    path = tmp_path / "tiny_int8_summary_x.csv"
    path.write_text(source[0] + "\n" + ",".join(row) + "\n")
    return path


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("inference_time", "-0.5", "column 'inference_time': expected seconds from 0 to 1e+06"),
        ("inference_time", "1e300", "column 'inference_time': expected seconds from 0 to 1e+06"),
        ("core_clock", "0.4", "column 'core_clock': expected a clock in Hz"),
        ("core_clock", "1e30", "column 'core_clock': expected a clock in Hz"),
        ("cycles_total", "1e30", "column 'cycles_total': expected a number of cycles from 0 to 2**48"),
        ("nn_macs", "-1", "column 'nn_macs': expected a number from 0 to 2**53"),
        ("sram_memory_used", "1e30", "column 'sram_memory_used': expected a size in KiB"),
    ],
)
def test_vela_summary_out_of_range_refused(column: str, value: str, message: str, tmp_path: Path, run_cli) -> None:
    path = _vela_summary(column, value, tmp_path)
    result = run_cli("budget", path)
    assert result.code == 2, result.err
    assert f"{path}:2: {message}" in result.err, result.err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1000000000000000000000000000000", "expected a size in bytes from 0 to 2**40"),
        (BIG, "expected a size in bytes from 0 to 2**40"),
        ("0x" + "f" * 5000, "expected a size in bytes from 0 to 2**40"),
    ],
)
def test_glow_header_sizes_out_of_range_refused(value: str, message: str, tmp_path: Path, run_cli) -> None:
    text = GLOW.read_text()
    m = re.search(r"^#define (\w+_CONSTANT_MEM_SIZE)\s+(\S+)", text, re.MULTILINE)
    assert m is not None
    line = _line_of(text, m.group(0))
    path = tmp_path / "bundle.h"
    path.write_text(text.replace(m.group(0), f"#define {m.group(1)} {value}", 1))
    result = run_cli("budget", path)
    assert result.code == 2, result.err
    assert f"{path}:{line}: {m.group(1)}: {message}" in result.err, result.err
    assert "Traceback" not in result.err


def test_budget_of_dev_zero_is_refused_without_reading_it_all(run_cli) -> None:
    result = run_cli("budget", "/dev/zero")
    assert result.code == 2
    assert "/dev/zero: more than 67,108,864 bytes: too large for a budget file" in result.err


def test_the_demo_budget_still_reads() -> None:
    """The bounds leave real budgets alone (every real Vela output is read by the other tests too)."""
    from tracer.budget import load_budget

    budget = load_budget([ROOT / "captures" / "demo_budget.toml"])
    assert budget.model.clock_hz == 32_000_000 and len(budget.layers) == 10


def test_vela_debug_database_with_a_field_past_the_csv_limit_is_refused(tmp_path: Path, run_cli) -> None:
    """Found by the fuzzing campaign: csv's own field limit (131072) raised out of the reader."""
    source = VELA / "tiny_int8_debug.xml"
    text = source.read_text()
    at = text.index('<table name="source">')
    path = tmp_path / "tiny_int8_debug.xml"
    path.write_text(text[:at] + text[at:].replace("\n", "\n" + "x" * 200_000, 2))
    result = run_cli("budget", VELA / "tiny_int8_per-layer.csv", path)
    assert result.code == 2, result.err
    assert f"{path}:" in result.err and "table 'source'" in result.err and "Traceback" not in result.err


def test_vela_debug_database_ids_are_bounded(tmp_path: Path, run_cli) -> None:
    text = (VELA / "tiny_int8_debug.xml").read_text()
    m = re.search(r"<table name=\"source\">\s*<!\[CDATA\[\s*([^\n]*)\n([0-9]+),", text)
    assert m is not None, "the source table's first row"
    path = tmp_path / "tiny_int8_debug.xml"
    path.write_text(text[: m.start(2)] + "9" * 4000 + text[m.end(2) :])
    result = run_cli("budget", VELA / "tiny_int8_per-layer.csv", path)
    assert result.code == 2 and "expected an integer 'id' from 0 to 2**31" in result.err, result.err


SPACES = " " * 165_000


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "bundle.h",
            GLOW.read_text().replace("_MUTABLE_MEM_SIZE      53184", "_MUTABLE_MEM_SIZE 3" + SPACES + "53184", 1),
        ),
        ("b.toml", '[model]\nname = """\n[' + SPACES + 'x\n"""\n'),
        ("b.toml", "\n" * 200_000 + "x = 1\n"),
    ],
    ids=["glow define", "toml header", "blank lines"],
)
def test_long_runs_of_white_space_do_not_stall_the_budget_readers(
    name: str, text: str, tmp_path: Path, run_cli
) -> None:
    """Found by the fuzzing campaign: patterns that took the spaces around a value were quadratic
    (cubic for a TOML table header) in a long run of them. The alarm turns a stall into a failure."""
    import signal

    path = tmp_path / name
    path.write_text(text)

    def stalled(signum: int, frame: object) -> None:
        raise TimeoutError("a budget reader stalled")

    previous = signal.signal(signal.SIGALRM, stalled)
    signal.alarm(30)
    try:
        result = run_cli("budget", path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert result.code in (0, 2), result.err
    assert "Traceback" not in result.err
