"""The log reader on the formats' variants: repeated inferences, CSV blocks, full statistics,
per-operator PMU lines, incremental text, and telling text logs from binary captures."""

from __future__ import annotations

import base64
import io
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from timeline_views import inference_view, inference_views

from tracer.base.timeline import CounterStat, Engine, InferenceTimeline
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.errors import CaptureError
from tracer.telemetry.logs import LogReader, is_text_log, read_log, split_inferences
from tracer.telemetry.logs.lines import LineSplitter, strip_prefix

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "corpus"


def _read(text: str) -> InferenceTimeline:
    return read_log(io.BytesIO(text.encode()), name="test.log")


def _ops(timeline: InferenceTimeline, number: int) -> list[tuple[str, int]]:
    return [(timeline.layers[s.layer].op, s.cycles) for s in inference_view(timeline, number).layers]


MODEL_RUN = [
    "CONV_2D took 100 ticks (0 ms).",
    "DEPTHWISE_CONV_2D took 80 ticks (0 ms).",
    "ADD took 20 ticks (0 ms).",
    "SOFTMAX took 5 ticks (0 ms).",
]


def test_repeated_inferences_in_one_log_run() -> None:
    """MicroProfiler not cleared between invokes: Log() prints all events; the repeats are split."""
    timeline = _read("\n".join(MODEL_RUN * 3 + MODEL_RUN[:2]) + "\n")
    assert len(timeline.inferences) == 4
    assert [i.complete for i in inference_views(timeline)] == [True, True, True, False]
    assert inference_view(timeline, 3).problems == ("only 2 of 4 layers logged (lines 13-14)",)
    assert _ops(timeline, 1) == [("CONV_2D", 100), ("DEPTHWISE_CONV_2D", 80), ("ADD", 20), ("SOFTMAX", 5)]
    # Spans are laid end to end: inference 1 starts where inference 0 ended.
    assert inference_view(timeline, 1).layers[0].start == 205
    assert timeline.labels["time"].startswith("reconstructed")


def test_runs_separated_by_other_lines_are_separate_inferences() -> None:
    text = "\n".join(["Invoke 0", *MODEL_RUN, "Invoke 1", "INFO - Input CRC32: 0x0000BEEF", *MODEL_RUN]) + "\n"
    timeline = _read(text)
    assert len(timeline.inferences) == 2 and inference_view(timeline, 1).input_crc == 0xBEEF
    assert inference_view(timeline, 0).input_crc is None


def test_the_models_operator_list_decides_the_period() -> None:
    """[CONV_2D, CONV_2D] twice: without the model's list it looks like four one-layer inferences."""
    run = ["CONV_2D took 10 ticks (0 ms).", "CONV_2D took 20 ticks (0 ms)."] * 2
    assert len(_read("\n".join(run)).inferences) == 4
    header = ["INFO - Number of operators: 2", "INFO -  Operator 0: CONV_2D", "INFO -  Operator 1: CONV_2D"]
    timeline = _read("\n".join(header + run))
    assert len(timeline.inferences) == 2 and _ops(timeline, 1) == [("CONV_2D", 10), ("CONV_2D", 20)]


def test_split_inferences() -> None:
    assert split_inferences(["a", "b", "a", "b", "a"], None) == [(0, 2, True), (2, 4, True), (4, 5, False)]
    assert split_inferences(["a", "a", "b"], None) == [(0, 3, True)]
    assert split_inferences(["x"], None) == [(0, 1, True)]
    assert split_inferences(["a", "b"], ["a", "b", "c"]) == [(0, 2, False)]  # the model's start: cut short
    assert split_inferences(["b", "a"], ["a", "b", "c"]) == [(0, 2, True)]  # not the known model


def test_log_csv_blocks() -> None:
    rows = ['"Event","Tag","Ticks"'] + [f"{i},{op},{t}" for i, (op, t) in enumerate([("CONV_2D", 7), ("ADD", 3)] * 2)]
    rows += ["", '"Event","Tag","Ticks"', "0,CONV_2D,8", "1,ADD,4"]
    timeline = _read("\n".join(rows))
    assert len(timeline.inferences) == 3
    assert _ops(timeline, 2) == [("CONV_2D", 8), ("ADD", 4)]


def test_negative_csv_ticks_are_damage_not_numbers() -> None:
    timeline = _read('"Event","Tag","Ticks"\n0,CONV_2D,-5\n1,ADD,3\n')
    assert timeline.loss.damaged_records == 1
    assert timeline.log["warnings"] == [{"line": 2, "text": "negative tick count -5 for CONV_2D"}]
    assert _ops(timeline, 0) == [("ADD", 3)]
    assert inference_view(timeline, 0).problems == ("damaged operator line(s) 2: a layer is missing",)


def test_mlek_current_default_and_full_statistics() -> None:
    text = """INFO - Profile for Inference:
INFO - NPU ACTIVE: 33145 cycles
INFO - NPU IDLE: 1033 cycles
INFO - NPU TOTAL: 34178 cycles
INFO - Profile for Inference:
INFO - Number of samples: 3
INFO - Total / Avg./ Min / Max
INFO - NPU ACTIVE cycles: 99435/ 33145 / 33100 / 33190
INFO - NPU TOTAL cycles: 102534/ 34178 / 34100 / 34250
INFO - Profile for pre-processing:
INFO - CPU TOTAL cycles: 5000
"""
    timeline = _read(text)
    assert timeline.pmu_totals == {0: {"NPU_ACTIVE": 33145, "NPU_IDLE": 1033, "CYCLE": 34178}}
    assert timeline.pmu_stats == {
        "NPU_ACTIVE": CounterStat("NPU_ACTIVE", "cycles", 3, 99435, 33145.0, 33100, 33190),
        "CYCLE": CounterStat("CYCLE", "cycles", 3, 102534, 34178.0, 34100, 34250),
    }
    assert timeline.log["profiles"] == {"pre-processing": {"CPU_TOTAL": 5000}}


def test_two_profile_blocks_are_two_inferences_and_case_is_ignored() -> None:
    text = "Profile for Inference:\nNPU ACTIVE cycles: 10\nNPU total cycles: 12\nProfile for Inference :\nNPU ACTIVE cycles: 11\nNPU total cycles: 13\n"
    timeline = _read(text)
    assert timeline.pmu_totals == {0: {"NPU_ACTIVE": 10, "CYCLE": 12}, 1: {"NPU_ACTIVE": 11, "CYCLE": 13}}


def test_metrics_with_several_samples_and_u85_names() -> None:
    payload = [
        {
            "profiling_group": "Inference",
            "count": 2,
            "samples": [
                {"name": "NPU ACTIVE", "value": [100, 110]},
                {"name": "NPU ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED", "value": [7, 8]},
            ],
        }
    ]
    line = "<metrics>" + base64.b64encode(json.dumps(payload).encode()).decode() + "</metrics>"
    timeline = _read(f"boot\n{line}\n")
    assert timeline.pmu_totals == {
        0: {"NPU_ACTIVE": 100, "SRAM_RD_DATA_BEAT_RECEIVED": 7},
        1: {"NPU_ACTIVE": 110, "SRAM_RD_DATA_BEAT_RECEIVED": 8},
    }
    assert timeline.pmu_units["SRAM_RD_DATA_BEAT_RECEIVED"] == "beats"


def test_damaged_metrics_line_is_counted_with_its_line() -> None:
    timeline = _read("a\nb\n<metrics>not base64!</metrics>\n")
    assert timeline.loss.damaged_records == 1 and timeline.log["warnings"][0]["line"] == 3
    assert len(timeline.inferences) == 0


def test_layer_by_layer_profiler_with_pmu_per_operator() -> None:
    """ethos-u-core-software: one cycle_cnt line per operator, PMU counters after NPU ones."""
    block = [
        "Running inference job: job0",
        "ethos-u : cycle_cnt : 1200 cycles",
        "ethos-u : ethosu_pmu_cntr0 : 900",
        "ethos-u : ethosu_pmu_cntr1 : 44",
        "L2_NORMALIZATION : cycle_cnt : 300 cycles",
        "ethos-u : cycle_cnt : 400 cycles",
        "ethos-u : ethosu_pmu_cntr0 : 350",
        "arena_used_bytes : 51824",
        "Inference runtime: 2100 cycles",
        "Finished running job: job0",
    ]
    timeline = _read("\n".join(block * 2))
    assert len(timeline.inferences) == 2
    first = inference_view(timeline, 0)
    assert [(s.cycles, s.pmu) for s in first.layers] == [
        (1200, {"PMU_CNTR0": 900, "PMU_CNTR1": 44}),
        (300, {}),
        (400, {"PMU_CNTR0": 350}),
    ]
    assert (first.start, first.end) == (0, 2100)
    assert inference_view(timeline, 1).start == 2100  # after the first inference's runtime
    assert [timeline.layers[i].engine for i in range(3)] == [Engine.NPU, Engine.CPU, Engine.NPU]
    assert [s.used for s in timeline.arena] == [51824, 51824]
    assert timeline.spans.pmu_names == ("PMU_CNTR0", "PMU_CNTR1")


def test_allocation_failure_variants() -> None:
    timeline = _read(
        "Failed to resize buffer. Requested: 6081600, available: 2088896\nFailed to allocate temp memory. Requested: 64, available 16, missing: 48\n"
    )
    assert [(f.kind, f.requested, f.available, f.missing) for f in timeline.allocation_failures] == [
        ("resize buffer", 6081600, 2088896, 6081600 - 2088896),
        ("temp memory", 64, 16, 48),
    ]


def test_newer_executorch_suffixes_and_prefixes() -> None:
    text = (
        "\r\n".join(
            [
                "I [executorch:arm_perf_monitor.cpp:120] NPU Inferences : 2 (1.00 per inference)",
                "I [executorch:arm_perf_monitor.cpp:125] ethos-u : cycle_cnt : 1000 cycles (500.00 per inference)",
                "I [executorch:arm_perf_monitor.cpp:168] ethosu_pmu_cycle_cntr : 900 (450.00 per inference)",
                "I [executorch:arm_perf_monitor.cpp:171] ethosu_pmu_cntr0 : 10",
                "I [executorch:arm_perf_monitor.cpp:178] Ethos-U PMU Events:[ETHOSU_PMU_NPU_ACTIVE]",
                "E [executorch:arm_executor_runner.cpp:99] Something broke",
            ]
        )
        + "\r\n"
    )
    timeline = _read(text)
    assert timeline.pmu_totals == {0: {"CYCLE": 900, "NPU_ACTIVE": 10}}
    assert _ops(timeline, 0) == [("ethos-u", 1000)]
    assert timeline.log["errors"] == [{"line": 6, "text": "Something broke"}]


def test_feed_line_keeps_the_itm_cycle() -> None:
    reader = LogReader("itm port 0")
    reader.feed_line("arena_used_bytes : 1000", cycle=12345)
    reader.feed_line("Failed to resize buffer. Requested: 10, available 4, missing: 6", cycle=12400)
    timeline = reader.finish()
    assert timeline.arena[0].cycle == 12345 and timeline.allocation_failures[0].cycle == 12400
    assert [c.cycle for c in timeline.console] == [12345, 12400]


FIXTURE = (DATA / "logs" / "tflm_generic_benchmark_corstone300_fvp.log").read_text()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, len(FIXTURE)), max_size=12))
def test_any_split_of_the_text_gives_the_same_timeline(cuts: list[int]) -> None:
    reader = LogReader()
    points = [0, *sorted(cuts), len(FIXTURE)]
    for a, b in itertools.pairwise(points):
        reader.feed_text(FIXTURE[a:b])
    split = reader.finish()
    whole = read_log(DATA / "logs" / "tflm_generic_benchmark_corstone300_fvp.log")
    assert [c.text for c in split.console] == [c.text for c in whole.console]
    assert split.spans.cycles.tolist() == whole.spans.cycles.tolist()
    assert split.log["arena"] == whole.log["arena"]


def test_text_and_binary_streams() -> None:
    text = "INFO - Profile for Inference:\nINFO - NPU ACTIVE cycles: 5\n"
    assert read_log(io.StringIO(text)).pmu_totals == {0: {"NPU_ACTIVE": 5}}
    assert read_log(io.BytesIO(text.encode())).pmu_totals == {0: {"NPU_ACTIVE": 5}}
    assert len(read_log(io.BytesIO(b"")).inferences) == 0


# -- text or binary ------------------------------------------------------------------------------


CORPUS_CAPTURES = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".trace", ".bin", ".sr"))


def test_the_corpus_is_there() -> None:
    assert len(CORPUS_CAPTURES) >= 13


@pytest.mark.parametrize("path", CORPUS_CAPTURES, ids=lambda p: p.name)
def test_binary_captures_are_not_text(path: Path) -> None:
    assert not is_text_log(path.read_bytes()[:65536])
    with pytest.raises(CaptureError, match=r"line \d+: not a text log"):
        read_log(path)


def _itm_text(text: bytes, size: int) -> bytes:
    """``text`` written to ITM stimulus port 0 with ``size``-byte writes (header byte + payload)."""
    header = {1: 0x01, 2: 0x02, 4: 0x03}[size]
    out = bytearray()
    for i in range(0, len(text), size):
        out.append(header)
        out += text[i : i + size].ljust(size, b"\0" if size > 1 else b" ")
    return bytes(out)


@pytest.mark.parametrize("size", [1, 2, 4])
def test_text_on_itm_port_0_is_still_binary(size: int) -> None:
    text = FIXTURE.encode()[:8000].replace(b"\0", b" ")
    assert is_text_log(text)
    assert not is_text_log(_itm_text(text, size))


def test_trace_capture_file_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "log.trace"
    with CaptureWriter(path, CaptureMetadata(source="serial:///dev/ttyACM0", encoding="text")) as writer:
        writer.write(FIXTURE.encode())
    assert not is_text_log(path.read_bytes()[:65536])


def test_sniffing_edge_cases() -> None:
    assert not is_text_log(b"")
    assert not is_text_log(b"CONV_2D took 5 ticks\x00\n")
    assert is_text_log(b"\xff\xfe" + FIXTURE.encode()[:4000])  # a little boot noise
    assert is_text_log("Température: 20 °C\n".encode())
    assert not is_text_log(bytes(range(256)) * 4)
    assert not is_text_log(b"A" * 2000)  # no line break in 2000 characters
    assert is_text_log(FIXTURE.encode()[:65537][:-1] + "é".encode()[:1])  # a character cut at the end


def test_line_splitter_line_ends() -> None:
    splitter = LineSplitter()
    got = splitter.feed("a\r") + splitter.feed("\nb\rc\n\nd\r") + splitter.feed("\r\ne") + splitter.finish()
    assert got == ["a", "b", "c", "", "d", "", "e"]


@pytest.mark.parametrize(
    ("line", "level", "text"),
    [
        ("INFO - NPU ACTIVE cycles: 5", "", "NPU ACTIVE cycles: 5"),
        ("ERROR - Invoke failed.", "error", "Invoke failed."),
        ("W [executorch:runner.cpp:12] careful", "warning", "careful"),
        ("[00:00:01.234,567] <err> app: Failed", "error", "Failed"),
        ("[   12.345] arena_used_bytes : 10", "", "arena_used_bytes : 10"),
        ("  plain text  ", "", "plain text"),
    ],
)
def test_prefixes(line: str, level: str, text: str) -> None:
    assert strip_prefix(line) == (level, text)


def test_feed_bytes_split_inside_a_character() -> None:
    """ITM port 0 delivers 1-4 bytes at a time: a UTF-8 character may be cut between writes."""
    data = "Température\narena_used_bytes : 77\n".encode()
    reader = LogReader()
    for i in range(len(data)):
        reader.feed_bytes(data[i : i + 1], cycle=i)
    timeline = reader.finish()
    assert [c.text for c in timeline.console] == ["Température", "arena_used_bytes : 77"]
    assert timeline.arena[0].used == 77 and timeline.arena[0].cycle == len(data) - 1


def test_the_same_events_printed_by_log_and_log_csv_count_once() -> None:
    log = ["CONV_2D took 7 ticks (0 ms).", "ADD took 3 ticks (0 ms)."]
    csv = ['"Event","Tag","Ticks"', "0,CONV_2D,7", "1,ADD,3"]
    timeline = _read("\n".join(log + csv + log))
    assert len(timeline.inferences) == 2  # Log(), LogCsv() of the same events, then the next Log()
    assert timeline.log["reprinted_runs"] == [{"line": 4, "style": "csv"}]
