"""The whole chain on a running target: firmware built by arm-none-eabi-gcc, run by QEMU
mps3-an547 (Cortex-M55) under -icount shift=0, UART recorded through pyserial socket:// into a
capture, decoded, reported.

Runs are kept short (a few inferences). CI installs the cross compiler and QEMU (``.ci/run``).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from demo_runs import port0_text, record_demo, run_to_exit

from tracer.base.timeline import Engine
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.pipeline.capture import DecodedCapture, decode_capture
from tracer.pipeline.record import record
from tracer.sources import qemu
from tracer.sources.qemu import CPU_HZ, QemuDemoSource

pytestmark = pytest.mark.qemu

LAYERS = ["conv0", "dw1", "pw2", "dw3", "pw4", "add5", "pool6", "conv7", "gap8", "fc9"]


@pytest.fixture(scope="module")
def demo_elf(qemu_build: Path) -> Path:
    """The demo firmware (built once per session)."""
    return qemu_build / "demo" / "tracer_demo.elf"


def run_demo(elf: Path, inferences: int, capture: Path) -> tuple[DecodedCapture, int | None]:
    """Run the demo on QEMU, record it, decode it; returns (decoded capture, QEMU exit status)."""
    status = record_demo(elf, inferences, "clean", capture)
    return decode_capture(capture), status


def test_host_work_never_counts_against_the_ready_timeout(demo_elf: Path, tmp_path: Path, monkeypatch) -> None:
    """Setting up the decoder (2 s) and decoding the first bytes (5 s) are slow here, as a JIT
    compile of the kernels once was: the READY timeout (4 s) counts only the wait for QEMU."""
    init, feed = qemu._ReadyWatcher.__init__, qemu._ReadyWatcher.feed
    slow_calls: list[str] = []

    def slow_init(self: qemu._ReadyWatcher) -> None:
        slow_calls.append("init")
        time.sleep(2)
        init(self)

    def slow_feed(self: qemu._ReadyWatcher, data: bytes) -> None:
        if "feed" not in slow_calls:
            slow_calls.append("feed")
            time.sleep(5)
        feed(self, data)

    monkeypatch.setattr(qemu._ReadyWatcher, "__init__", slow_init)
    monkeypatch.setattr(qemu._ReadyWatcher, "feed", slow_feed)
    source = QemuDemoSource(demo_elf, 1, ready_timeout=4.0)
    source.open()
    try:
        with CaptureWriter(tmp_path / "slow.trace", CaptureMetadata.from_json(source.metadata())) as writer:
            result = record(source, writer, duration=60)
    finally:
        source.close()
    assert slow_calls == ["init", "feed"]
    assert result.ended == "end of stream" and source.exit_code == 0


def firmware_totals(decoded: DecodedCapture) -> dict[int, tuple[int, int]]:
    """The firmware's own per-layer totals: layer -> (count, cycles), from its console lines."""
    totals = {}
    for line in decoded.timeline.console:
        match = re.fullmatch(r"TOTAL layer=(\d+) count=(\d+) cycles=(\d+)", line.text)
        if match:
            layer, count, cycles = map(int, match.groups())
            totals[layer] = (count, cycles)
    return totals


def test_two_runs_are_cycle_identical_and_match_the_firmware_totals(demo_elf: Path, tmp_path: Path) -> None:
    """Per-layer cycles of every span are the same in two runs, and the host's per-layer sums
    equal the totals the firmware computed itself and printed at exit."""
    first, status1 = run_demo(demo_elf, 3, tmp_path / "a.trace")
    second, status2 = run_demo(demo_elf, 3, tmp_path / "b.trace")
    assert status1 == 0 and status2 == 0
    for run in (first, second):
        tl = run.timeline
        assert not tl.loss.any and tl.inferences.complete.all() and len(tl.inferences) == 3
        assert len(tl.spans) == 30 and tl.spans.complete.all()
    a, b = first.timeline.spans, second.timeline.spans
    for column in ("inference", "layer", "start", "end", "pmu"):
        assert np.array_equal(getattr(a, column), getattr(b, column)), column
    totals = firmware_totals(first)
    assert sorted(totals) == list(range(10))
    for layer, (count, cycles) in totals.items():
        mine = a.cycles[a.layer == layer]
        assert (len(mine), int(mine.sum())) == (count, cycles), layer
    assert all(cycles > 0 for _, cycles in totals.values())


def test_the_capture_says_what_the_target_is(demo_elf: Path, tmp_path: Path) -> None:
    """Clock, time source, simulated NPU PMU, emulated cycles, layers, memory, CRCs, jobs."""
    decoded, status = run_demo(demo_elf, 2, tmp_path / "c.trace")
    assert status == 0
    tl = decoded.timeline
    assert tl.clock_hz == CPU_HZ and tl.clock_source == "systick"
    assert tl.labels["npu_pmu"] == "simulated" and "emulated" in tl.labels["cycles"]
    assert decoded.metadata.tpiu is False and decoded.metadata.source.startswith("qemu://mps3-an547")
    assert [tl.layers[i].name for i in range(10)] == LAYERS
    assert {tl.layers[i].engine for i in (0, 1, 2, 3, 4, 7)} == {Engine.NPU}
    assert tl.layers[9].op == "FULLY_CONNECTED" and tl.layers[9].engine is Engine.CPU
    assert tl.arena[0].used == 13312 and tl.arena[0].size == 16384
    assert {s.stack for s in tl.stacks} == {"main", "handler"} and all(s.canary_ok for s in tl.stacks)
    assert all(0 < s.high_water < s.size for s in tl.stacks)
    assert len(tl.npu_jobs) == 2 * 6 and len(tl.cache_ops) == 2 * 12
    assert (tl.inferences.input_crc >= 0).all() and (tl.inferences.output_crc >= 0).all()
    assert tl.inferences.input_crc[0] != tl.inferences.input_crc[1]  # different input images
    npu = tl.spans.where(tl.spans.layer == 0)
    assert (npu.pmu[:, 1] > 0).all()  # NPU_ACTIVE (simulated)
    assert tl.target.marker_cost_cycles > 0 and tl.stream.calibration_pairs == 256
    assert "EXIT 0" in [c.text for c in tl.console]


def test_tracer_demo_then_tracer_report(demo_elf: Path, tmp_path: Path, run_cli, monkeypatch) -> None:
    """The commands as a user runs them: demo records and reports; report shows every layer of
    every inference."""
    build = demo_elf.parent.parent  # the session's build folder: make finds it up to date
    capture = tmp_path / "demo.trace"
    done = run_cli("demo", "--inferences", "2", "-o", capture, "--format", "json", "--build-dir", build)
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["inferences"]["count"] == 2 and report["inferences"]["complete"] == 2
    assert [layer["name"] for layer in report["layers"]] == LAYERS
    assert "QEMU exit status 0" in done.err
    text = run_cli("report", capture, "--per-inference")
    assert text.code == 0, text.err
    for name in LAYERS:
        assert name in text.out
    assert "SIMULATED" in text.out
    rows = [line for line in text.out.splitlines() if re.match(r"\s+\d+\s+ok\s", line)]
    assert len(rows) == 2 and all(len(row.split()) == 3 + 10 for row in rows)


def test_marker_cost_firmware(qemu_build: Path) -> None:
    """The marker-cost firmware runs and measures each transport; the UART transport costs more
    than the library alone, which costs more than an empty loop."""
    elf = qemu_build / "demo" / "marker_cost.elf"
    done = run_to_exit(elf)
    assert done.returncode == 0, done.stderr
    text = port0_text(done.stdout)
    costs = {m[0]: int(m[2]) / int(m[1]) for m in re.findall(r"COST (\w+) pairs=(\d+) ticks=(\d+)", text)}
    assert set(costs) == {"loop", "null", "uart", "itm", "deferred", "flush"}
    assert costs["loop"] < costs["itm"] < costs["uart"] and costs["loop"] < costs["null"] < costs["uart"]
    # A deferred drain takes the send out of the markers: cheaper than sending on emit, and the
    # drain done later costs something of its own.
    assert costs["loop"] < costs["deferred"] < costs["null"] and costs["flush"] > 0
