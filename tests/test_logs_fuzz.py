"""Any text into the log readers: a timeline, or a CaptureError that names a line; nothing else."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from timeline_views import inference_view

from tracer.errors import CaptureError
from tracer.telemetry.logs import LogReader, read_log

LOGS = Path(__file__).parent / "data" / "logs"
FIXTURE_LINES = sorted(
    {ln for p in LOGS.rglob("*") if p.suffix in (".log", ".txt") for ln in p.read_text().splitlines()}
)
NUMBER = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["", "x", "1.5", "1.5.9", "0x1F", "-0", "999999999999999999999", "9" * 400, "nan", "inf"]),
)


def _check(blob: bytes) -> None:
    try:
        timeline = read_log(io.BytesIO(blob), name="fuzz.log")
    except CaptureError as exc:
        assert re.search(r"line \d+", str(exc)), str(exc)
        return
    assert timeline.log["lines"] == len(timeline.console)
    # Everything found is plain JSON (no NaN or infinity), ready for the report.
    json.dumps(
        [
            timeline.log,
            timeline.pmu_totals,
            timeline.pmu_units,
            [vars(f) if hasattr(f, "__dict__") else repr(f) for f in timeline.allocation_failures],
        ],
        allow_nan=False,
    )
    for i in range(len(timeline.inferences)):
        inference_view(timeline, i)  # every view can be built


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_any_bytes(blob: bytes) -> None:
    _check(blob)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=30))
def test_any_lines(lines: list[str]) -> None:
    reader = LogReader()
    for line in lines:
        reader.feed_line(line)
    reader.finish()
    _check("\n".join(lines).encode("utf-8", "replace"))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(FIXTURE_LINES), NUMBER, st.integers(0, 5), st.booleans()), min_size=1, max_size=40
    )
)
def test_real_lines_with_numbers_replaced(picks: list[tuple[str, str, int, bool]]) -> None:
    """Lines of every format, shuffled, with one of their numbers swapped for an odd one (huge,
    negative, empty, not a number), cut short or not."""
    lines = []
    for line, number, which, cut in picks:
        found = list(re.finditer(r"\d+", line))
        if found:
            m = found[which % len(found)]
            line = line[: m.start()] + number + line[m.end() :]
        lines.append(line[: len(line) // 2] if cut else line)
    _check("\r\n".join(lines).encode())


def test_huge_numbers_are_damage_not_overflow() -> None:
    blob = b"CONV_2D took 99999999999999999999999 ticks (0 ms).\nADD took 5 ticks (0 ms).\nInference runtime: 99999999999999999999999 cycles\n"
    timeline = read_log(io.BytesIO(blob))
    assert timeline.loss.damaged_records == 2
    assert timeline.spans.cycles.tolist() == [5]


def test_a_line_of_one_format_inside_another_formats_block() -> None:
    """Found by the fuzzer: a garbled mismatch line inside the FVP statistics block."""
    text = "--- FVP_MPS3_Corstone_SSE_300 statistics: -----\nNPU config mismatch: npu.macs_per_cc= optimizer.macs_per_cc=7\n"
    timeline = read_log(io.BytesIO(text.encode()))
    assert timeline.log["fvp"]["npu_config_mismatch"] == "npu.macs_per_cc= optimizer.macs_per_cc=7"
    assert "npu_config_mismatch" not in timeline.log
