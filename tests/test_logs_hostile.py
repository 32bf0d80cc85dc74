"""Text logs nobody should have to trust: numbers of thousands of digits, an NPU configuration that
asks for 2**999999999 MACs, clocks out of any range, one endless line (docs/limits.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracer.limits import MAX_LOG_LINE_CHARS
from tracer.telemetry.logs.lines import LineSplitter

BIG = "9" * 5000

LINES = {
    "tflm ticks": f"CONV_2D took {BIG} ticks (3 ms).",
    "runtime": f"Inference runtime: {BIG} cycles",
    "cycle_cnt": f"conv : cycle_cnt : {BIG} cycles",
    "pmu counter": f"ethosu_pmu_cntr0 : {BIG}",
    "clock": f"MPS3 core clock has been set to: {BIG} Hz",
    "arena": f"arena_used_bytes : {BIG}",
    "alloc failure": f"Failed to resize buffer. Requested: {BIG}, available {BIG}, missing: {BIG}",
    "allocator": f"[RecordingMicroAllocator] Arena allocation total {BIG} bytes",
    "npu mismatch digits": f"NPU config mismatch: npu.macs_per_cc={BIG} optimizer.macs_per_cc=7",
}


@pytest.mark.parametrize("case", list(LINES))
def test_numbers_of_5000_digits_are_damage_not_a_traceback(case: str, tmp_path: Path, run_cli) -> None:
    path = tmp_path / "run.log"
    path.write_text("INFO - start\n" + LINES[case] + "\nINFO - done\n")
    for verb in (["report"], ["report", "--format", "json"], ["check"]):
        result = run_cli(*verb, path)
        assert result.code in (0, 1), (verb, result.err)
        assert "Traceback" not in result.err
        assert BIG not in result.out  # never shown as a number


def test_npu_config_mismatch_with_an_absurd_log2_is_bounded(tmp_path: Path, run_cli) -> None:
    """The driver prints log2 of the MACs per cycle; 999999999 is no NPU (2**999999999 once ran for 20 s)."""
    path = tmp_path / "run.log"
    path.write_text("NPU config mismatch: npu.macs_per_cc=999999999 optimizer.macs_per_cc=7\n")
    result = run_cli("report", path, "--format", "json")
    assert result.code == 0, result.err
    assert "npu-config-mismatch" in result.out
    assert "MACs/cycle" not in result.out  # no size is named for a log2 nobody can have
    sane = tmp_path / "sane.log"
    sane.write_text("NPU config mismatch: npu.macs_per_cc=8 optimizer.macs_per_cc=7\n")
    result = run_cli("report", sane, "--format", "json")
    assert "compiled for 128 MACs/cycle, the NPU has 256" in result.out


@pytest.mark.parametrize("clock", ["999999999999999", "0"])
def test_a_log_clock_out_of_range_is_ignored_with_a_warning(clock: str, tmp_path: Path, run_cli) -> None:
    path = tmp_path / "run.log"
    path.write_text(f"INFO - MPS3 core clock has been set to: {clock} Hz\nCONV_2D took 100 ticks (1 ms).\n")
    result = run_cli("report", path, "--format", "json")
    assert result.code == 0, result.err
    assert '"clock_hz": null' in result.out
    if clock != "0":
        assert "clock" in result.err and "1 kHz to 10 GHz" in result.err


@pytest.mark.parametrize("value", ["2", "0.4", "1e3", "20G"])
def test_clock_option_out_of_range_is_a_usage_error(value: str, tmp_path: Path, run_cli) -> None:
    path = tmp_path / "run.log"
    path.write_text("CONV_2D took 100 ticks (1 ms).\n")
    for verb in (["report"], ["export", "--format", "perfetto", "-o", tmp_path / "x.pftrace"]):
        result = run_cli(*verb, path, "--clock", value)
        assert result.code == 2, result.err
        assert "Traceback" not in result.err


def test_line_splitter_gives_the_same_lines_for_any_split() -> None:
    text = "a\r\nbb\rccc\n\ndddd\r\r\neee"
    expected = ["a", "bb", "ccc", "", "dddd", "", "eee"]
    for size in range(1, len(text) + 1):
        splitter = LineSplitter()
        lines = []
        for at in range(0, len(text), size):
            lines += splitter.feed(text[at : at + size])
        lines += splitter.finish()
        assert lines == expected, size


def test_line_splitter_bounds_one_endless_line_and_counts_the_rest() -> None:
    splitter = LineSplitter()
    piece = "x" * 65536
    lines: list[str] = []
    for _ in range(48):  # 3 MiB without a line break
        lines += splitter.feed(piece)
    lines += splitter.feed("\nnext\n")
    assert [len(line) for line in lines] == [MAX_LOG_LINE_CHARS, 4]
    assert splitter.dropped_chars == 48 * 65536 - MAX_LOG_LINE_CHARS
    assert splitter.cut_lines == 1


def test_console_text_of_a_log_of_millions_of_lines_is_bounded() -> None:
    """Every line is read (and counted), but only the first MAX_CONSOLE_LINES are kept as text."""
    from tracer.telemetry.logs.reader import MAX_CONSOLE_LINES, LogReader

    reader = LogReader("many.log")
    total = MAX_CONSOLE_LINES + 5_000
    reader.feed_text("x\n" * total)
    timeline = reader.finish()
    assert len(timeline.console) == MAX_CONSOLE_LINES
    assert reader.line_no == total
    texts = [w["text"] for w in timeline.log["warnings"]]
    assert (
        f"only the first {MAX_CONSOLE_LINES:,} of {total:,} lines kept as console text (every line was read)" in texts
    )


def test_a_long_run_of_spaces_does_not_stall_the_readers() -> None:
    """Found by the fuzzing campaign: 'Profile for <100,000 spaces> Inference :' held a reader's
    pattern for minutes. The readers parse a bounded view of each line (the console keeps it whole);
    the alarm turns a stall into a failure instead of a hang."""
    import signal

    from tracer.telemetry.logs.lines import MAX_PARSED_CHARS, MAX_SPACE_RUN, parse_view
    from tracer.telemetry.logs.reader import LogReader

    line = "INFO - Profile for" + " " * 100_000 + "Inference :"
    view = parse_view(line)
    assert len(view) <= MAX_PARSED_CHARS and " " * (MAX_SPACE_RUN + 1) not in view
    assert parse_view("NPU ACTIVE cycles:     1234") == "NPU ACTIVE cycles:     1234"  # alignment kept

    def stalled(signum: int, frame: object) -> None:
        raise TimeoutError("the reader stalled on one line")

    previous = signal.signal(signal.SIGALRM, stalled)
    signal.alarm(30)
    try:
        reader = LogReader("spaces.log")
        reader.feed_text("INFO - Profile for Inference :\n" + line + "\nINFO - NPU ACTIVE cycles: 1234\n")
        timeline = reader.finish()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert timeline.console[1].text == line
