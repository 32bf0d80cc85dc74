"""The trc C library built for the host: the exact bytes it emits, and what the decoder makes of them.

``firmware_snippets`` is compiled with the host gcc (``make host``) and linked with the harness
programs in ``tests/firmware_harness`` (a transport that captures the bytes, a scripted clock).
The expected bytes come from the Python encoder written from the wire-format reference. The
TFLite Micro adapter is compiled with g++ against a minimal declaration of TFLM's
``MicroProfilerInterface`` (the real TFLM sources are not available here) and driven the way the
interpreter drives it.
"""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest
from firmware_host import FIRMWARE, HARNESS, link_harness, printed_facts, run
from telemetry_encoder import TelemetryEncoder
from telemetry_streams import decode

from tracer.base.timeline import Engine
from tracer.telemetry.wire import INFO_NPU_PMU_SIMULATED, TimeSource

CLOCK_START = 0xFFFF0000
CLOCK_STEP = 0x1000
EVENTS = [35, 130, 135, 386]

TFLM_INTERFACE = """\
// Minimal declaration of TensorFlow Lite Micro's profiler interface, as in
// tensorflow/lite/micro/micro_profiler_interface.h (for compile-checking the adapter only).
#ifndef TENSORFLOW_LITE_MICRO_MICRO_PROFILER_INTERFACE_H_
#define TENSORFLOW_LITE_MICRO_MICRO_PROFILER_INTERFACE_H_
#include <cstdint>
namespace tflite {
class MicroProfilerInterface {
 public:
  virtual ~MicroProfilerInterface() {}
  virtual uint32_t BeginEvent(const char* tag) = 0;
  virtual void EndEvent(uint32_t event_handle) = 0;
};
}  // namespace tflite
#endif
"""


@pytest.fixture(scope="module")
def harness_run(host_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, str]]:
    """Build and run harness.c: (captured bytes, key=value facts it printed)."""
    tmp = tmp_path_factory.mktemp("harness")
    exe = link_harness(host_lib, tmp / "harness", HARNESS / "harness.c", FIRMWARE / "src" / "trc_ethosu_hooks.c")
    out = tmp / "out.bin"
    done = run([str(exe), str(out)])
    facts = printed_facts(done.stdout)
    return out.read_bytes(), facts


class Clock:
    """The harness's scripted clock: each read advances it by CLOCK_STEP."""

    def __init__(self) -> None:
        self.now = CLOCK_START

    def __call__(self) -> int:
        self.now += CLOCK_STEP
        return self.now


def expected_stream() -> tuple[bytes, int]:
    """What harness.c must emit, record by record, per the wire-format reference."""
    clock = Clock()
    enc = TelemetryEncoder()
    clock()  # trc_set_time reads the clock once
    enc.text("hello\n")
    enc.target_info(clock(), 480_000_000, TimeSource.DWT, INFO_NPU_PMU_SIMULATED, 0x123, 3, 0x410FD220)
    enc.pmu_config(clock(), 55, EVENTS, simulated=True)
    enc.layer_info(clock(), 0, 1, "CONV_2D", "conv0")
    enc.layer_info(clock(), 1, 0, "DEPTHWISE_CONV_2D_WITH_A_VERY_LONG_NAME"[:31])
    enc.layer_info(clock(), 1, 0, "IGNORED", "ignored")
    enc.arena(clock(), 1000, 2000)
    refused_at = None
    for n in range(3):
        if n == 2:
            enc.sync()
            enc.dropped(clock(), 1)
            enc.inference_begin(clock(), sync=False)
        else:
            enc.inference_begin(clock())
        enc.buffer_crc(clock(), 0, zlib.crc32(b"0123456789abcdef"), 16)
        enc.layer_begin(clock(), 0, 1)
        enc.cache_op(clock(), 1, 0x31000000, 64)
        enc.npu_job_begin(clock(), n)
        enc.pmu_snapshot(clock(), 0x123456789 + n, [100 + n, 200, 300, 400])
        enc.npu_job_end(clock(), n)
        enc.layer_end(clock(), 0)
        enc.layer_begin(clock(), 1, 0)
        enc.mark(clock(), 7)
        enc.value(clock(), 8, 99 + n)
        before = len(enc.out)
        enc.layer_end(clock(), 1)
        if n == 1:  # the transport refused it: sequence number and clock read used, no bytes
            refused_at = before
            del enc.out[before:]
        enc.buffer_crc(clock(), 1, zlib.crc32(b"89abcdef"), 8)
        enc.inference_end(clock(), 5 if n == 2 else 0)
    enc.time_sync(clock())
    name = int.from_bytes(b"work", "little"), int.from_bytes(b"er", "little")
    enc.record(0x19, clock(), [2 | (1 << 8) | (6 << 16), 256, 64, *name])  # STACK
    enc.text("123456789")
    enc.text("\nbye")
    enc.inference_begin(clock())
    enc.layer_begin(clock(), 0, 1)
    enc.npu_job_begin(clock(), 0)
    enc.pmu_snapshot(clock(), 0x234589ABCDEF, [1000, 1001, 1002, 1003])
    enc.npu_job_end(clock(), 0)
    enc.layer_end(clock(), 0)
    enc.inference_end(clock())
    assert refused_at is not None
    return bytes(enc.out), clock.now


def test_host_library_emits_the_exact_bytes_of_the_wire_format(harness_run: tuple[bytes, dict[str, str]]) -> None:
    """Every record, sync and text packet the C library wrote equals the reference encoding."""
    data, facts = harness_run
    expected, clock = expected_stream()
    assert len(data) == len(expected)
    first_difference = next((i for i, (a, b) in enumerate(zip(data, expected)) if a != b), None)
    assert first_difference is None, f"first difference at byte {first_difference}"
    assert int(facts["clock"]) == clock  # same number of clock reads as the reference
    assert facts["dropped"] == "1"


def test_host_library_helpers(harness_run: tuple[bytes, dict[str, str]]) -> None:
    """CRC-32 equals zlib's; stack scan and canary; Ethos-U PMU register access (U55 and U85)."""
    _, facts = harness_run
    assert int(facts["crc32_check"], 16) == zlib.crc32(b"123456789")
    assert facts["high_water"] == "64"
    assert facts["canary_after_overwrite"] == "0"
    assert facts["high_water_after_overwrite"] == "256"
    assert facts["u55_pmcr"] == "7"  # counting on, both counter resets
    assert facts["u55_cntenset"] == "8000000f"  # 4 event counters and the cycle counter
    assert facts["u55_evtype"] == "35,130,135,386"
    assert facts["u55_cycles"] == "234589abcdef"  # 48 bits: the high register's upper half ignored
    assert facts["u55_count"] == "4"  # U55 has 4 counters however many are asked for
    assert facts["u55_counters"] == "1000,1001,1002,1003"
    assert facts["u55_cntenclr"] == "800000ff"
    assert facts["u85_cycles"] == "77" and facts["u85_count"] == "8" and facts["u85_counter7"] == "8888"


def test_decoder_reads_what_the_host_library_wrote(harness_run: tuple[bytes, dict[str, str]]) -> None:
    """The decoded timeline has the values the harness passed, and the refused write shows."""
    data, _ = harness_run
    tl = decode(data)
    assert tl.clock_hz == 480_000_000 and tl.clock_source == "dwt"
    assert tl.labels["npu_pmu"] == "simulated"
    assert tl.target.marker_cost_cycles == 0x123 / 16 and tl.target.scenario == 3
    assert tl.layers[0].op == "CONV_2D" and tl.layers[0].name == "conv0" and tl.layers[0].engine is Engine.NPU
    assert tl.layers[1].op == "IGNORED"  # described again by trc_layer_info_once: the last description wins
    inf = tl.inferences
    assert inf.number.tolist() == [0, 1, 2, 3]
    assert inf.complete.tolist() == [True, False, False, True]
    assert "1 record(s) lost (sequence gap)" in inf.problems[1]
    assert "the firmware reported status 5" in inf.problems[2]
    assert tl.loss.lost_records == 1 and tl.stream.firmware_dropped_records == 1
    assert inf.input_crc[0] == zlib.crc32(b"0123456789abcdef") and inf.output_crc[0] == zlib.crc32(b"89abcdef")
    # Every record is one clock step apart, so spans have exact lengths (across the 2^32 wrap).
    spans = tl.spans
    layer0 = spans.where((spans.layer == 0) & (spans.inference == 0))
    assert layer0.cycles.tolist() == [5 * CLOCK_STEP]
    assert dict(zip(spans.pmu_names, layer0.pmu[0].tolist())) == {
        "PMU_CYCLES": 0x123456789,
        "NPU_ACTIVE": 100,
        "AXI0_RD_DATA_BEAT_RECEIVED": 200,
        "AXI0_WR_DATA_BEAT_WRITTEN": 300,
        "AXI1_RD_DATA_BEAT_RECEIVED": 400,
    }
    assert spans.start.min() < (1 << 32) < spans.end.max()  # the run crossed the 32-bit wrap
    assert [len(tl.npu_jobs), len(tl.cache_ops), len(tl.marks)] == [4, 3, 6]
    assert tl.npu_jobs[3].end - tl.npu_jobs[3].start == 2 * CLOCK_STEP
    assert tl.stacks[0].stack == "worker" and tl.stacks[0].high_water == 64 and tl.stacks[0].canary_ok
    assert [line.text for line in tl.console] == ["hello", "123456789", "bye"]


def test_tflm_adapter_emits_one_layer_per_operator(host_lib: Path, tmp_path: Path) -> None:
    """g++ compiles the adapter against TFLM's interface; each operator becomes a layer.

    The nested operator (ADD inside WHILE) is counted in its parent; "ethos-u" is an NPU layer.
    """
    assert shutil.which("g++"), "g++ is not installed (./.ci/run installs it)"
    stub = tmp_path / "stub" / "tensorflow" / "lite" / "micro"
    stub.mkdir(parents=True)
    (stub / "micro_profiler_interface.h").write_text(TFLM_INTERFACE)
    exe = tmp_path / "tflm"
    run(
        [
            "g++",
            "-std=c++11",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{tmp_path / 'stub'}",
            f"-I{FIRMWARE / 'include'}",
            str(HARNESS / "tflm_harness.cc"),
            str(FIRMWARE / "src" / "trc_tflm_profiler.cc"),
            str(host_lib),
            "-o",
            str(exe),
        ]
    )
    out = tmp_path / "out.bin"
    run([str(exe), str(out)])
    tl = decode(out.read_bytes())
    assert tl.inferences.complete.tolist() == [True, True]
    assert [(i.op, i.engine) for i in tl.layers.values()] == [
        ("CONV_2D", Engine.CPU),
        ("ethos-u", Engine.NPU),
        ("WHILE", Engine.CPU),
        ("SOFTMAX", Engine.CPU),
    ]
    assert tl.spans.layer.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    # Clock steps of 10 per record: WHILE spans its own begin/end only (ADD was not emitted).
    assert np.all(tl.spans.cycles == 10)
