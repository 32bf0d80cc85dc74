"""The FVP launcher against a stand-in FVP, and the FVP Ethos-U PMU trace joined with Vela's
debug database.

No Arm FVP can be installed in CI, so ``tests/data/fvp/fake_fvp.py`` plays one: it prints the
FVP's telnet banner and serves the announced port, or writes its UART to standard output with
``-C mps3_board.uart0.out_file=-``, and writes a PMU trace at exit when asked. The debug
databases are Vela 5.2.0's real output for the tiny_int8 model; the PMU trace is synthetic (see
tests/data/fvp/README.md) with a schedule written by ``make_pmu_trace.py`` beside it.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from timeline_views import inference_view

from tracer.base.timeline import Engine
from tracer.capture.reader import open_capture
from tracer.errors import CaptureError, SourceUnavailable, UsageError
from tracer.sources.base import SourceEnded
from tracer.sources.fvp import BANNER, FvpSource, pmu_trace_path, uses_stdout_uart
from tracer.telemetry.fvp_pmu_trace import (
    npu_operations,
    npu_timeline,
    parse_trace_events,
    pmu_trace_from_notes,
    read_debug_db,
    read_pmu_trace,
)

DATA = Path(__file__).parent / "data" / "fvp"
FAKE = [sys.executable, str(DATA / "fake_fvp.py")]
REGOR_DB = DATA / "tiny_int8_regor_debug.xml"
LEGACY_DB = DATA / "tiny_int8_legacy_debug.xml"
TRACE = DATA / "tiny_int8_pmu_trace.json"
EXPECTED = DATA / "tiny_int8_pmu_trace.expected.json"


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "app.bin"
    path.write_bytes(os.urandom(40_000) + bytes(range(256)) * 8)  # 0xFF bytes included
    return path


def test_banner_fixture_is_what_the_launcher_parses() -> None:
    lines = (DATA / "fvp_telnet_banner.log").read_bytes().splitlines()
    found = [BANNER.search(line) for line in lines]
    assert [(int(m.group(1)), int(m.group(2))) for m in found if m] == [(0, 5000), (1, 5001), (2, 5002), (5, 5003)]


def test_command_line_facts() -> None:
    cmd = [
        "FVP_Corstone_SSE-300_Ethos-U55",
        "-C",
        "mps3_board.uart0.out_file=-",
        "-C",
        "ethosu.extra_args=--pmu-trace out/npu.json",
    ]
    assert uses_stdout_uart(cmd) and pmu_trace_path(cmd) == Path("out/npu.json")
    assert uses_stdout_uart(["x", "-C", "mps4_board.uart0.out_file='-'"])
    assert not uses_stdout_uart(["x", "-C", "mps3_board.uart0.out_file=uart.log"])
    assert pmu_trace_path(["x", "-C", "mps4_board.subsystem.ethosu.extra_args=--pmu-trace=t.json"]) == Path("t.json")


def test_record_through_the_telnet_port(run_cli, tmp_path: Path, app: Path) -> None:
    out = tmp_path / "fvp.trace"
    done = run_cli("record", "fvp", "-o", out, "--", *FAKE, "-a", app, "-C", "ethosu.num_macs=256")
    assert done.code == 0, done.err
    with open_capture(out) as reader:
        assert reader.read_stream() == app.read_bytes()
        meta = reader.metadata.to_json()
        notes = [e for _o, e in reader.events]
    assert meta["launcher"] == "fvp" and meta["fvp_uart"].startswith("telnet:")
    assert "model estimate" in meta["cpu_timing"]
    assert "ethosu.num_macs=256" in meta["fvp_command"]
    assert any("Simulation is stopping" in n.get("line", "") for n in notes)  # FVP output kept as notes


def test_record_through_stdout(run_cli, tmp_path: Path, app: Path) -> None:
    out = tmp_path / "fvp.trace"
    done = run_cli(
        "record", "fvp", "-o", out, "--", *FAKE, "-a", app, "-C", "mps3_board.uart0.out_file=-", "-C", "fake.chunk=333"
    )
    assert done.code == 0, done.err
    with open_capture(out) as reader:
        assert reader.read_stream() == app.read_bytes()
        assert reader.metadata.extra["fvp_uart"] == "stdout"


def test_pmu_trace_is_kept_and_mapped(run_cli, tmp_path: Path, app: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "fvp.trace"
    done = run_cli(
        "record",
        "fvp",
        "-o",
        out,
        "--debug-db",
        REGOR_DB,
        "--",
        *FAKE,
        "-a",
        app,
        "-C",
        "ethosu.extra_args=--pmu-trace npu.json",
        "-C",
        f"fake.pmu_trace_template={TRACE}",
    )
    assert done.code == 0, done.err
    assert "3 inferences, 6 NPU jobs" in done.err
    assert "l2norm" in done.err and "model estimate" in done.err
    with open_capture(out) as reader:
        assert reader.read_stream() == app.read_bytes()
        notes = [e for _o, e in reader.events]
        assert reader.metadata.extra["fvp_pmu_trace"] == "npu.json"
        assert reader.metadata.extra["vela_debug_db"] == str(REGOR_DB)
    stored = pmu_trace_from_notes(notes)
    assert stored is not None
    assert stored.qread == read_pmu_trace(TRACE).qread  # the capture alone replays the NPU timeline


def test_fvp_failing_before_the_banner(run_cli, tmp_path: Path) -> None:
    done = run_cli("record", "fvp", "-o", tmp_path / "x.trace", "--", *FAKE, "-C", "fake.fail=1")
    assert done.code == 4
    assert "exited with status 1 before opening its UART" in done.err and "cpu0.bogus" in done.err


def test_fvp_not_installed(run_cli, tmp_path: Path) -> None:
    done = run_cli(
        "record", "fvp", "-o", tmp_path / "x.trace", "--", "FVP_Corstone_SSE-300_Ethos-U55_absent", "-a", "x"
    )
    assert done.code == 4 and "not found" in done.err


def test_fvp_needs_a_command(run_cli, tmp_path: Path) -> None:
    done = run_cli("record", "fvp", "-o", tmp_path / "x.trace")
    assert done.code == 2 and "command line after --" in done.err
    done = run_cli("record", "fvp://?terminal=x", "-o", tmp_path / "x.trace", "--", "FVP")
    assert done.code == 2


def test_other_terminal_and_telnet_stripping(tmp_path: Path) -> None:
    src = FvpSource("fvp://?terminal=1", [*FAKE, "-a", str(tmp_path / "none")], connect_timeout=0.5)
    with pytest.raises(SourceUnavailable):
        src.open()  # the stand-in serves terminal 0 only and opens no app: it fails
    src.close()
    stripping = FvpSource("fvp://?telnet=strip", ["x"])
    assert stripping._telnet(b"A\xff\xfb\x01B\xff\xffC\xff\xfa\x18\x01\xff\xf0D") == b"AB\xffCD"


def test_help_shows_the_fvp_example(run_cli) -> None:
    done = run_cli("record", "--help")
    assert done.code == 0
    for example in (
        "fvp -- FVP_Corstone",
        "jlink://",
        "pyocd://",
        "tcp://localhost:3443",
        "tcp://localhost:2332",
        "socket://",
        "serial://",
        "orbflow://",
    ):
        assert example in done.out, example


# -- PMU trace + debug database ---------------------------------------------------------------
def test_operations_match_the_generated_schedule() -> None:
    ops, problems = npu_operations(read_pmu_trace(TRACE), read_debug_db(REGOR_DB))
    expected = json.loads(EXPECTED.read_text())
    assert problems == []
    assert [(o.inference, o.cmdstream, o.offset, o.start, o.end) for o in ops] == [
        (e["inference"], e["stream"], e["offset"], e["start"], e["end"]) for e in expected
    ]
    assert all(o.complete for o in ops)


def test_timeline_layers_engines_and_labels() -> None:
    timeline = npu_timeline(read_pmu_trace(TRACE), read_debug_db(REGOR_DB), clock_hz=500_000_000)
    assert len(timeline.inferences) == 3 and bool(timeline.inferences.complete.all())
    assert timeline.labels["cpu"] == "model estimate" and "measured" in timeline.labels["npu"]
    first = inference_view(timeline, 0)
    assert [s.layer for s in first.layers] == [0, 1, 2, 3, 4, 5, 7, 8]
    assert timeline.layer(0).name == "conv/Relu" and timeline.layer(0).engine is Engine.NPU
    assert timeline.layer(4).op == "L2Norm" and timeline.layer(4).engine is Engine.CPU
    expected = json.loads(EXPECTED.read_text())
    stream1, stream2 = ([e for e in expected if e["inference"] == 0 and e["stream"] == s] for s in (1, 2))
    l2norm = next(s for s in first.layers if s.layer == 4)
    # The CPU gap the schedule left between the two command streams.
    assert l2norm.cycles == stream2[0]["start"] - stream1[-1]["end"]
    conv = stream1[0]
    assert first.layers[0].start == conv["start"] and first.layers[0].pmu["axi_enabled_cycles"] == conv["axi"]
    assert [(j.job, j.inference) for j in timeline.npu_jobs] == [(1, 0), (2, 0), (1, 1), (2, 1), (1, 2), (2, 2)]


def test_hand_computed_case_and_string_numbers() -> None:
    """Two operations at offsets 8 and 16 of one stream: kicks at 110 and 150, stop read at 200."""
    db = read_debug_db(REGOR_DB)
    db.streams = {1: db.streams[1][:2]}
    first, second = db.streams[1][0].offset, db.streams[1][1].offset
    events = [
        {"ph": "C", "tid": "qread", "ts": "100", "args": {"qread": "0"}},
        {"ph": "C", "tid": "qread", "ts": "110", "args": {"qread": str(first // 4)}},
        {"ph": "C", "tid": "qread", "ts": 150.0, "args": {"qread": second // 4}},
        {"ph": "C", "tid": "qread", "ts": "200", "args": {"qread": str(second // 4 + 1)}},
        {"ph": "X", "tid": "x", "name": "mac_active", "ts": "120", "dur": "7"},
        {"ph": "X", "tid": "x", "name": "mac_active", "ts": "160", "dur": "9"},
        {"ph": "M", "name": "thread_name"},
        {"ph": "X", "ts": "not a number"},
    ]
    trace = parse_trace_events(events)
    assert trace.skipped == 1
    ops, problems = npu_operations(trace, db)
    assert [(o.start, o.end) for o in ops] == [(100, 150), (150, 200)] and problems == []
    timeline = npu_timeline(trace, db)
    assert [s.pmu for s in inference_view(timeline, 0).layers] == [{"mac_active": 7}, {"mac_active": 9}]


def test_gzip_and_legacy_database(tmp_path: Path) -> None:
    gz = tmp_path / "npu.json.gz"
    gz.write_bytes(gzip.compress(TRACE.read_bytes()))
    assert read_pmu_trace(gz).qread == read_pmu_trace(TRACE).qread
    legacy = read_debug_db(LEGACY_DB)
    assert list(legacy.streams) == [0, 1] and legacy.npu_layers == {0, 1, 2, 3, 5, 7, 8}
    # The regor trace against the legacy database: offsets differ, and the problem is said.
    _ops, problems = npu_operations(read_pmu_trace(TRACE), legacy)
    assert problems and "same compilation" in " ".join(problems)


def test_truncated_trace_marks_the_last_inference_incomplete() -> None:
    raw = json.loads(TRACE.read_text())["traceEvents"]
    cut = raw[: len(raw) - 40]
    timeline = npu_timeline(parse_trace_events(cut), read_debug_db(REGOR_DB))
    assert list(timeline.inferences.complete) == [True, True, False]
    assert timeline.log["fvp_pmu_trace"]["problems"]


def test_bad_inputs_are_capture_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CaptureError, match="not a JSON trace"):
        read_pmu_trace(bad)
    bad.write_text('{"events": []}')
    with pytest.raises(CaptureError, match="traceEvents"):
        read_pmu_trace(bad)
    with pytest.raises(CaptureError, match="no such file"):
        read_pmu_trace(tmp_path / "missing.json")
    xml = tmp_path / "db.xml"
    xml.write_text("<debug><table name='source'><![CDATA[\"id\"\n1\n]]></table></debug>")
    with pytest.raises(CaptureError, match="enable-debug-db"):
        read_debug_db(xml)
    xml.write_text("<debug")
    with pytest.raises(CaptureError, match="not Vela debug database"):
        read_debug_db(xml)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "tid": st.sampled_from(["qread", "x"]),
                "ts": st.one_of(st.integers(0, 10**6), st.text(max_size=5)),
                "args": st.fixed_dictionaries({"qread": st.integers(0, 800)}),
                "dur": st.integers(-5, 100),
                "ph": st.sampled_from(["X", "C"]),
            }
        ),
        max_size=60,
    )
)
def test_any_trace_joins_without_crashing(events: list[dict[str, object]]) -> None:
    timeline = npu_timeline(parse_trace_events(events), read_debug_db(REGOR_DB))
    # Whatever the trace, every layer span lies inside the inference it names.
    inf, spans = timeline.inferences, timeline.spans
    bounds = {n: (s, e) for n, s, e in zip(inf.number.tolist(), inf.start.tolist(), inf.end.tolist())}
    for number, start, end in zip(spans.inference.tolist(), spans.start.tolist(), spans.end.tolist()):
        assert number in bounds
        assert bounds[number][0] <= start <= end <= bounds[number][1]


def test_unopened_stdout_source_ends(tmp_path: Path, app: Path) -> None:
    src = FvpSource("fvp", [*FAKE, "-a", str(app), "-C", "mps3_board.uart0.out_file=-"])
    src.open()
    got = b""
    with pytest.raises(SourceEnded, match="status 0"):
        while True:
            got += src.read(65536, 1.0)
    src.close()
    assert got == app.read_bytes()
    with pytest.raises(UsageError):
        FvpSource("fvp", [])


def test_fvp_failure_status_is_reported(run_cli, tmp_path: Path, app: Path) -> None:
    done = run_cli("record", "fvp", "-o", tmp_path / "x.trace", "--", *FAKE, "-a", app, "-C", "fake.exit_code=3")
    assert done.code == 0  # every byte was recorded; the status is a warning
    assert "exited with status 3" in done.err
