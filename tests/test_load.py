"""``load_timeline``: capture, raw ITM and text log told apart by content (never by name), and text
on ITM port 0 merged into a capture's records."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from check_streams import LayerSpec, encode_model, write_capture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.errors import CaptureError
from tracer.pipeline.load import load_timeline

LOGS = Path(__file__).resolve().parent / "data" / "logs"
MODEL = [LayerSpec("conv", "CONV_2D", True, 900), LayerSpec("add", "ADD", False, 100)]
PROFILE = (
    "INFO - Profile for Inference:\nINFO - NPU ACTIVE cycles: {a}\nINFO - NPU IDLE cycles: 10\n"
    "INFO - NPU TOTAL cycles: {t}\n"
)


def test_capture_raw_and_log_by_content(tmp_path: Path) -> None:
    """The same ITM bytes as a .trace and as a raw file give the same timeline; a log named .trace is
    a log; a capture named .log is a capture."""
    data = bytes(encode_model(MODEL, inferences=3).out)
    capture = write_capture(tmp_path / "run.log", data)  # a capture, whatever its name
    raw = tmp_path / "run.trace"
    raw.write_bytes(data)  # raw ITM bytes, whatever their name
    a, fa = load_timeline(capture)
    b, fb = load_timeline(raw)
    assert (fa.kind, fb.kind) == ("capture", "raw-itm")
    assert fa.records == fb.records > 0 and fa.bytes == fb.bytes == len(data)
    assert a.spans.cycles.tolist() == b.spans.cycles.tolist() == [900, 100] * 3
    log = tmp_path / "uart.trace"
    shutil.copyfile(LOGS / "mlek_inference_runner_fvp_profile.log", log)
    c, fc = load_timeline(log)
    assert fc.kind == "text-log" and c.pmu_totals[0]["NPU_ACTIVE"] == 33145


def test_capture_of_a_text_stream(tmp_path: Path) -> None:
    """A UART log recorded by ``tracer record`` (a .trace whose stream is text) is read as a log."""
    path = tmp_path / "uart.trace"
    with CaptureWriter(path, CaptureMetadata(source="serial:///dev/ttyUSB0", tpiu=False), flush_bytes=64) as w:
        w.write((LOGS / "tflm_generic_benchmark_corstone300_fvp.log").read_bytes())
    timeline, facts = load_timeline(path)
    assert facts.kind == "capture-text" and facts.source == "serial:///dev/ttyUSB0"
    assert len(timeline.spans) == 31 and timeline.spans.cycles.tolist()[0] == 224622


def test_port_zero_profiles_join_the_inferences(tmp_path: Path) -> None:
    """One MLEK profile printed per inference: the k-th profile is the k-th inference's PMU totals."""
    enc = encode_model(MODEL, inferences=2, text_after=PROFILE.format(a=800, t=810) + PROFILE.format(a=700, t=710))
    timeline, facts = load_timeline(write_capture(tmp_path / "c.trace", bytes(enc.out)))
    assert facts.console_lines == 8
    assert timeline.pmu_totals == {
        0: {"NPU_ACTIVE": 800, "NPU_IDLE": 10, "CYCLE": 810},
        1: {"NPU_ACTIVE": 700, "NPU_IDLE": 10, "CYCLE": 710},
    }
    assert len(timeline.spans) == 4  # the records' layers, not the text's


def test_port_zero_profiles_that_do_not_pair_are_kept_aside(tmp_path: Path) -> None:
    """Three inferences, one profile: not matched, kept in the log facts with a note."""
    enc = encode_model(MODEL, inferences=3, text_after=PROFILE.format(a=800, t=810))
    timeline, _ = load_timeline(write_capture(tmp_path / "c.trace", bytes(enc.out)))
    assert timeline.pmu_totals == {}
    facts = timeline.log
    assert facts["pmu_totals"] == {"0": {"NPU_ACTIVE": 800, "NPU_IDLE": 10, "CYCLE": 810}}
    assert "not matched" in facts["pmu_totals_note"]


def test_port_zero_text_alone_is_the_timeline(tmp_path: Path) -> None:
    """A firmware that only prints TFLM's profiler lines over ITM: the text gives the layers."""
    from telemetry_encoder import TelemetryEncoder

    enc = TelemetryEncoder()
    enc.text("CONV_2D took 1200 ticks (1 ms).\nADD took 30 ticks (0 ms).\n" * 2 + "done\n")
    timeline, facts = load_timeline(write_capture(tmp_path / "t.trace", bytes(enc.out)))
    assert facts.kind == "capture" and facts.records == 0
    assert len(timeline.inferences) == 2 and timeline.spans.cycles.tolist() == [1200, 30, 1200, 30]
    assert [timeline.layer(i).op for i in (0, 1)] == ["CONV_2D", "ADD"]


def test_clock_option_only_fills_an_unknown_clock(tmp_path: Path) -> None:
    """--clock is used when the input does not say its clock; the input's own clock wins."""
    log, _ = load_timeline(LOGS / "tflm_generic_benchmark_corstone300_fvp.log", clock_hz=400_000_000)
    assert (log.clock_hz, log.clock_source) == (400_000_000, "given (--clock)")
    capture = write_capture(tmp_path / "c.trace", bytes(encode_model(MODEL, clock_hz=50_000_000).out))
    timeline, _ = load_timeline(capture, clock_hz=400_000_000)
    assert timeline.clock_hz == 50_000_000


def test_missing_and_directory_are_capture_errors(tmp_path: Path) -> None:
    """Exit code 3 material, with the path in the message."""
    with pytest.raises(CaptureError, match="no such file"):
        load_timeline(tmp_path / "nope.trace")
    with pytest.raises(CaptureError, match="directory"):
        load_timeline(tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.one_of(st.binary(max_size=3000), st.text(max_size=3000).map(str.encode)))
def test_any_bytes_load_analyse_and_export(tmp_path: Path, blob: bytes) -> None:
    """Whatever the file holds: a timeline, findings, checks and every export, never an exception."""
    import io

    from tracer.analysis.analyze import analyze
    from tracer.analysis.checks import run_checks
    from tracer.export.chrome_json import chrome_trace
    from tracer.export.csv_export import write_csv
    from tracer.export.perfetto import write_perfetto

    path = tmp_path / "any.bin"
    path.write_bytes(blob)
    timeline, facts = load_timeline(path)
    analysis = analyze(timeline, facts)
    run_checks(analysis)
    write_perfetto(io.BytesIO(), analysis)
    chrome_trace(analysis)
    write_csv(io.StringIO(), analysis)


STREAM = bytes(encode_model(MODEL, inferences=4, text_after=PROFILE.format(a=800, t=810)).out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.tuples(st.integers(0, len(STREAM)), st.integers(1, 40)), max_size=4))
def test_damaged_captures_still_give_valid_traces(tmp_path: Path, cuts: list[tuple[int, int]]) -> None:
    """Bytes cut anywhere: the Perfetto trace still parses against Perfetto's schema with every slice
    paired, and the report counts what was lost instead of failing."""
    import io

    from perfetto_reader import read_trace

    from tracer.analysis.analyze import analyze
    from tracer.export.perfetto import write_perfetto
    from tracer.export.report_json import report_object

    data = STREAM
    for at, length in sorted(cuts, reverse=True):
        data = data[:at] + data[at + length :]
    path = tmp_path / "cut.trace"
    path.unlink(missing_ok=True)
    timeline, facts = load_timeline(write_capture(path, data))
    analysis = analyze(timeline, facts)
    report = report_object(analysis)
    assert report["inferences"]["complete"] <= 4
    out = io.BytesIO()
    write_perfetto(out, analysis)
    trace = read_trace(out.getvalue())
    assert len(trace.slices_on("NPU")) + len(trace.slices_on("CPU")) <= len(timeline.spans)
