"""``tracer report`` and ``tracer check`` of a capture read in windows (bounded memory) say exactly
what they say of the capture read whole.

Real streams from the reference encoders, written as .trace captures and read in windows of about
a hundred layer executions (``whole_bytes=0``): interrupts preempting a layer, a warm-up run, more
work, noisy cycles and PMU counters, a budget some layers exceed at p50 or only at p99. The report
JSON is compared section by section, then the CLI's JSON and text, and the gate's verdict. Inputs
whose analysis is not merged across windows yet are read whole, and say so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from check_streams import budget_toml
from fleet_streams import CLOCK_HZ, LAYERS, Build, encode_build
from jitter_streams import inst_retired, stream, task_in_layer, timer_in_layer, two_tasks, work_in_layer
from telemetry_encoder import TelemetryEncoder

import tracer.pipeline.capture as pipeline_capture
import tracer.pipeline.windows as windows
from tracer.analysis.analyze import analyze
from tracer.budget import load_budget
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.export.report_json import report_object
from tracer.pipeline.analyse import NotWindowable, analyse_windows
from tracer.pipeline.load import load_timeline
from tracer.pipeline.windows import read_windows
from tracer.telemetry.wire import NPU_READS, NPU_WRITES, TimeSource

INPUT, OUTPUT = 0x31000000, 0x31001000

DEMO = Path(__file__).resolve().parent.parent / "captures"
SPANS = 100  # layer executions per window


def write(path: Path, data: bytes, clock_hz: int | None = 100_000_000, chunk: int = 1 << 12) -> Path:
    """``data`` as a capture in chunks of ``chunk`` bytes, 4 KiB unless told (windows can close
    every few dozen executions); ``clock_hz=None``: the header gives no clock."""
    with CaptureWriter(
        path, CaptureMetadata(source="test://windows", tpiu=False, cpu_hz=clock_hz), flush_bytes=chunk
    ) as writer:
        for at in range(0, len(data), chunk):
            writer.write(data[at : at + chunk])
    return path


def warm_up(n: int, index: int, enc: object, t: int) -> int:
    """Layer 1 slow in the first 6 inferences (warm-up) and again in 30 to 59 (not warm-up: the
    run broke), across a window's end."""
    return 3000 if (n < 6 or 30 <= n < 60) and index == 1 else 0


def undescribed() -> bytes:
    """No layer descriptions and no PMU configuration (as the benchmark's captures): the layers'
    engines and the PMU columns are learned from the executions. The last 60 inferences run only
    the CPU layer, so the last windows never see the NPU layers or their counters."""
    enc = TelemetryEncoder()
    enc.target_info(0, 100_000_000, TimeSource.DWT)
    for n in range(240):
        t = 1000 + n * 50_000
        enc.inference_begin(t)
        for index, length in enumerate((4000, 6000, 3000)):
            if n >= 180 and index < 2:
                continue
            t += 100
            enc.layer_begin(t, index, int(index < 2))
            if index < 2:
                enc.pmu_snapshot(t + length - 20, length - 50, [600 + n % 7, 300])
            t += length + (2500 if index == 1 and n % 19 == 4 else 0)
            enc.layer_end(t, index)
        enc.inference_end(t + 100)
    return bytes(enc)


def console(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
    """Port-0 text as the demo firmware prints it (its start, a line now and then, its totals), and
    an allocation failure the records do not carry."""
    if index == 0 and n == 0:
        enc.text("tracer-demo READY\nrunning 240 inferences\n")
    if index == 2 and n % 50 == 7:
        enc.text(f"frame {n} done\n")
    if index == 2 and n == 239:
        enc.text("TOTALS firmware-measured cycles per layer\nTOTAL layer=0 count=240 cycles=960000\n")
        enc.text("Failed to resize buffer. Requested: 13312, available 12288, missing: 1024\nEXIT 0\n")
    return 0


def both_extras(*extras: Callable[[int, int, TelemetryEncoder, int], int]) -> Callable[..., int]:
    return lambda n, index, enc, t: sum(extra(n, index, enc, t) for extra in extras)


def lost_in(inference: int) -> Callable[[int, int, TelemetryEncoder, int], int]:
    """An ITM overflow inside ``inference``: it is incomplete, and task slices across it may hide a
    lost switch."""

    def extra(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        if n == inference and index == 1:
            enc.overflow()
        return 0

    return extra


def tasks_and_counters(enc: TelemetryEncoder, t: int) -> None:
    two_tasks(enc, t)
    inst_retired(enc, t + 3)


def coherency(inferences: int = 300) -> bytes:
    """An NPU job per inference with declared buffers, CPU write and read marks and cache
    maintenance: the clean of the input left out now and then (its output then differs for the
    same input), the invalidate of the output too, and in every third inference the output read
    only at the start of the next one, not invalidated (a check that looks into the next window), a
    2000-byte output
    (unaligned buffer and invalidate: reported once), DWT data-trace writes into the input while
    the job runs."""
    enc = TelemetryEncoder()
    enc.target_info(0, 100_000_000, TimeSource.DWT)
    enc.layer_info(1, 0, 1, "ethos-u", "npu0")
    enc.layer_info(2, 1, 0, "SOFTMAX", "softmax")
    for n in range(inferences):
        t = 1000 + n * 100_000
        if n % 3 == 1:
            enc.cpu_read(t - 50, OUTPUT, 2000)  # the previous inference's output, not invalidated
        enc.cpu_write(t, INPUT, 4096)
        enc.inference_begin(t + 100)
        enc.buffer_crc(t + 150, 0, 0xCAFE0001, 4096)
        enc.npu_buffer(t + 200, n % 7, NPU_READS, INPUT, 4096)
        enc.npu_buffer(t + 210, n % 7, NPU_WRITES, OUTPUT, 2000)
        enc.layer_begin(t + 300, 0, 1)
        if n % 9 != 4:
            enc.cache_op(t + 400, 1, INPUT, 4096)
        enc.npu_job_begin(t + 500, n % 7)
        if n % 17 == 3:
            enc.data_pc(0, 0x0800028C)
            enc.data_address(0, 0x0040, size=2)
            enc.data_value(0, 0x100, write=True)
        enc.npu_job_end(t + 5000, n % 7)
        if n % 11 != 5 and n % 3:
            enc.cache_op(t + 5100, 2, OUTPUT, 2000)
        enc.layer_end(t + 5200, 0)
        if n % 3:
            enc.cpu_read(t + 5300, OUTPUT, 2000)
        enc.layer_begin(t + 5400, 1, 0)
        enc.layer_end(t + 6000, 1)
        enc.buffer_crc(t + 6050, 1, 0x11 if n % 9 != 4 else 0x22 + n, 10)
        enc.inference_end(t + 6100)
    return bytes(enc)


STREAMS: dict[str, Callable[[], bytes]] = {
    "coherency": coherency,
    "task lane": lambda: stream(
        240, [4000, 6000, 3000], setup=two_tasks, extra=task_in_layer(1, tuple(range(3, 240, 7)), 3000)
    ),
    "task lane, a loss": lambda: stream(
        240,
        [4000, 6000, 3000],
        setup=two_tasks,
        extra=both_extras(task_in_layer(1, tuple(range(3, 240, 7)), 3000, isr=400), lost_in(100)),
    ),
    "cpu counters": lambda: stream(
        240,
        [4000, 6000, 3000],
        setup=inst_retired,
        extra=work_in_layer(2, lambda n: 10 + (15 if n % 13 == 2 else 0), 100, lambda n: 5000 + 400 * (n % 13 == 2)),
    ),
    "console text": lambda: stream(240, [4000, 6000, 3000], extra=both_extras(console, timer_in_layer(1, 7, 3, 2500))),
    "tasks, counters, text": lambda: stream(
        240,
        [4000, 6000, 3000],
        setup=tasks_and_counters,
        extra=both_extras(
            console,
            task_in_layer(0, tuple(range(1, 240, 5)), 2500),
            work_in_layer(2, lambda n: 10 + (15 if n % 13 == 2 else 0), 100, lambda n: 5000 + 400 * (n % 13 == 2)),
        ),
    ),
    "undescribed layers": undescribed,
    "interrupts": lambda: stream(240, [4000, 6000, 3000], extra=timer_in_layer(1, 7, 3, 2500)),
    "warm-up": lambda: stream(240, [4000, 6000, 3000], extra=warm_up),
    "more work": lambda: stream(
        240, [4000, 6000, 3000], extra=work_in_layer(0, lambda n: 10 + (15 if n % 13 == 2 else 0), 100)
    ),
}


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decode 4 KiB at a time, so that a window can close every hundred executions."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 1 << 12)


def fleet_capture(tmp_path: Path) -> tuple[Path, Path]:
    """A five-layer model with noisy cycles, an interrupt in pool3, PMU snapshots; and a budget that
    pool3 exceeds at p50 (its interrupt) and add2 only at p99 (its noise)."""
    path = write(tmp_path / "fleet.trace", encode_build(Build(isr=(3, 900), noise_pct=2.0), 300, seed=4), CLOCK_HZ)
    cycles = {"add2": 2800, "pool3": 2300}
    budget = budget_toml(
        tmp_path / "budget.toml",
        [(name, op, "npu" if npu else "cpu", cycles.get(name, base * 1.05)) for name, op, npu, base, _ in LAYERS],
        clock_hz=CLOCK_HZ,
    )
    return path, budget


def both(path: Path, budget: Path | None = None) -> tuple[dict, dict, int]:
    """The report of ``path`` read whole and read in windows, and the number of windows."""
    loaded = load_budget([budget]) if budget is not None else None
    whole = report_object(analyze(*load_timeline(path), loaded))
    count = 0

    def counted(_: object) -> None:
        nonlocal count
        count += 1

    parts = analyse_windows(lambda: read_windows(path, whole_bytes=0, window_spans=SPANS), loaded, on_window=counted)
    return whole, report_object(parts), count


def assert_same(whole: dict, parts: dict) -> None:
    assert list(parts) == list(whole)
    for section in whole:
        assert json.dumps(parts[section]) == json.dumps(whole[section]), section


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_report_in_windows_is_the_whole_report(tmp_path: Path, name: str) -> None:
    """Jitter (outliers, causes, warm-up, latency outliers), interrupts, layers, RTOS tasks, CPU
    counters, console text, coherency: section by section (each stream has what it is about)."""
    whole, parts, count = both(write(tmp_path / "run.trace", STREAMS[name]()))
    assert count >= 5
    ids = {f["id"] for f in whole["findings"]}
    if name == "coherency":
        assert {
            "coherency-missing-clean",
            "coherency-missing-invalidate",
            "coherency-unaligned",
            "coherency-nondeterministic-output",
            "coherency-cpu-write-during-npu-job",
        } <= ids, ids
    else:
        assert whole["jitter"]["layers"] and any(layer["outliers"] for layer in whole["jitter"]["layers"])
    if "task" in name:
        assert whole["tasks"]["by_layer"] and whole["tasks"]["incomplete"] == (1 if "loss" in name else 0)
    if "counters" in name:
        assert whole["jitter"]["layers"][2]["causes"] == {"more work": 19}
    if "text" in name:
        assert whole["memory"]["allocation_failures"] and whole["capture"]["labels"] == parts["capture"]["labels"]
    if name == "warm-up":
        assert whole["jitter"]["layers"][1]["warm_up_runs"] == 6
    assert_same(whole, parts)


def test_report_with_budget_in_windows(tmp_path: Path) -> None:
    """Budget findings (over at p50, over at p99, the inferences over), PMU, memory: the same."""
    path, budget = fleet_capture(tmp_path)
    whole, parts, count = both(path, budget)
    assert count >= 10
    ids = {f["id"] for f in whole["findings"]}
    assert {"layer-over-budget", "layer-p99-over-budget", "isr-in-layer"} <= ids, ids
    assert whole["pmu"]["per_inference"] and whole["interrupts"]["count"] == 300
    assert_same(whole, parts)


def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(windows, "WHOLE_BYTES", 0)
    monkeypatch.setattr(windows, "WINDOW_SPANS", SPANS)


def test_cli_report_and_check_in_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli) -> None:
    """The commands' JSON and text, and the gate's verdict, are those of the capture read whole."""
    path, budget = fleet_capture(tmp_path)
    commands = [
        ("report", path, "--budget", budget, "--format", "json"),
        ("report", path, "--budget", budget),
        ("check", path, "--budget", budget, "--format", "json"),
        ("check", path, "--budget", budget),
    ]
    whole = [run_cli(*command) for command in commands]
    small_windows(monkeypatch)
    parts = [run_cli(*command) for command in commands]
    for command, a, b in zip(commands, whole, parts):
        assert (b.code, b.out) == (a.code, a.out), command
        assert "read whole" not in b.err
    assert whole[2].code == 1 and json.loads(whole[2].out)["passed"] is False


def test_cli_report_of_the_demo_capture_in_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli) -> None:
    """The shipped QEMU demo capture (NPU buffer declarations, console text, the task lane): the
    command's JSON read in windows is the whole one's, and nothing is read whole."""
    demo = ("report", DEMO / "demo.trace", "--budget", DEMO / "demo_budget.toml", "--format", "json")
    whole = run_cli(*demo)
    small_windows(monkeypatch)
    parts = run_cli(*demo)
    assert (parts.code, parts.out) == (whole.code, whole.out)
    assert "read whole" not in parts.err


def test_cli_report_of_the_sampling_capture_in_windows(monkeypatch: pytest.MonkeyPatch, run_cli) -> None:
    """The shipped capture of the demo's sampler (NPU and PC samples) with its model's Vela outputs:
    per-operator NPU time and CPU hot spots read in windows are the whole capture's."""
    vela = DEMO.parent / "firmware_snippets" / "demo" / "model" / "vela"
    budget = [*sorted(vela.glob("sampling_net_*.csv")), vela / "sampling_net_debug.xml"]
    demo = ("report", DEMO / "demo_sampling.trace", "--budget", *budget, "--format", "json")
    whole = run_cli(*demo)
    small_windows(monkeypatch)
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 1 << 10)
    parts = run_cli(*demo)
    assert json.loads(whole.out)["npu_operators"]["mapped"]
    assert (parts.code, parts.out) == (whole.code, whole.out)
    assert "read whole" not in parts.err


def test_text_without_records_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli) -> None:
    """Port-0 text and no telemetry record: the text is the timeline, read whole, said so."""
    enc = TelemetryEncoder()
    enc.text("".join(f"Inference {n + 1}/40\nTotal cycles: {900_000 + n}\n" for n in range(40)))
    path = write(tmp_path / "text.trace", bytes(enc))
    with pytest.raises(NotWindowable):
        analyse_windows(lambda: read_windows(path, whole_bytes=0, window_spans=SPANS))
    whole = run_cli("report", path, "--format", "json")
    small_windows(monkeypatch)
    parts = run_cli("report", path, "--format", "json")
    assert (parts.code, parts.out) == (whole.code, whole.out)
    assert "read whole, not in windows: it has console text and no telemetry record" in parts.err


def test_windows_smaller_than_an_inference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of one layer execution, decoded 128 bytes at a time: an inference still open when a
    window would end waits for the next one, with its records, cache operations and NPU jobs
    (nothing is handed out early)."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 128)
    path = write(tmp_path / "run.trace", coherency(120), chunk=128)
    whole = report_object(analyze(*load_timeline(path)))
    parts = report_object(analyse_windows(lambda: read_windows(path, whole_bytes=0, window_spans=1)))
    assert_same(whole, parts)


def clock_from_text() -> bytes:
    """Records without a clock, and the clock and the arena only in the console text (MLEK's lines)."""
    enc = TelemetryEncoder()
    enc.text("INFO - Core clock has been set to: 32000000 Hz\n")
    for n in range(240):
        t = 1000 + n * 50_000
        enc.inference_begin(t)
        for index, length in enumerate((4000, 6000, 3000)):
            t += 100
            enc.layer_begin(t, index)
            t += length + (900 if n % 23 == 5 else 0)
            enc.layer_end(t, index)
        enc.inference_end(t + 100)
    enc.text("INFO - Activation buffer (a.k.a tensor arena) size used: 61440\n")
    return bytes(enc)


@pytest.mark.parametrize("clock", [(), ("--clock", "48000000")])
def test_the_texts_clock_and_arena_in_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli, clock: tuple[str, ...]
) -> None:
    """The records give no clock and no arena report; the console text does: read in windows, the
    text's clock wins over --clock and its arena is the capture's, as read whole."""
    path = write(tmp_path / "text-clock.trace", clock_from_text(), clock_hz=None)
    command = ("report", path, "--format", "json", *clock)
    whole = run_cli(*command)
    report = json.loads(whole.out)
    assert (report["capture"]["clock_hz"], report["capture"]["clock_source"]) == (32_000_000, "log")
    assert report["memory"]["arena"]["used"] == 61440
    small_windows(monkeypatch)
    parts = run_cli(*command)
    assert (parts.code, parts.out) == (whole.code, whole.out)
    assert "read whole" not in parts.err


def test_a_check_a_window_cuts_short_is_said(tmp_path: Path) -> None:
    """One NPU job, in the first inference, whose output the CPU reads in every inference after it
    and no job writes again: read in windows, its reads are checked up to the end of the next
    window only, and the report's warnings say so; every section else is the whole one's."""
    enc = TelemetryEncoder()
    enc.target_info(0, 100_000_000, TimeSource.DWT)
    for n in range(240):
        t = 1000 + n * 20_000
        enc.inference_begin(t)
        if n == 0:
            enc.cpu_write(t + 10, INPUT, 4096)
            enc.npu_buffer(t + 20, 0, NPU_READS, INPUT, 4096)
            enc.npu_buffer(t + 30, 0, NPU_WRITES, OUTPUT, 2048)
            enc.layer_begin(t + 40, 1, 1)
            enc.cache_op(t + 50, 1, INPUT, 4096)
            enc.npu_job_begin(t + 60, 0)
            enc.npu_job_end(t + 3000, 0)
            enc.cache_op(t + 3010, 2, OUTPUT, 2048)
            enc.layer_end(t + 3100, 1)
        enc.layer_begin(t + 3200, 0)
        enc.cpu_read(t + 3300, OUTPUT, 2048)
        enc.layer_end(t + 4000 + (700 if n % 29 == 3 else 0), 0)
        enc.inference_end(t + 5000)
    whole, parts, count = both(write(tmp_path / "once.trace", bytes(enc)))
    assert count >= 3
    said = [w for w in parts["capture"]["warnings"] if "checked up to the end of the next window only" in w]
    assert len(said) == 1 and "of 1 NPU output(s)" in said[0], parts["capture"]["warnings"]
    assert parts["capture"]["warnings"] == [*whole["capture"]["warnings"], said[0]]
    for section in whole:
        if section != "capture":
            assert json.dumps(parts[section]) == json.dumps(whole[section]), section


def test_dwt_pc_samples_in_windows_are_counted_and_said(tmp_path: Path) -> None:
    """DWT PC samples over SWO in a capture read in windows are left out, and the warning counts
    every one (sleep packets are not PC samples); the rest of the report is the one read whole."""
    from sample_streams import dwt_pc_sample

    enc = TelemetryEncoder()
    enc.target_info(0, CLOCK_HZ, TimeSource.DWT)
    enc.layer_info(1, 0, 0, "ADD", "a")
    t, sent = 1_000, 0
    for _ in range(40):
        enc.inference_begin(t)
        enc.layer_begin(t + 10, 0)
        for pc in (0x100, 0x104, None):
            dwt_pc_sample(enc, pc)
            sent += pc is not None
        enc.layer_end(t + 500, 0)
        enc.inference_end(t + 510)
        t += 2_000
    path = tmp_path / "pcs.bin"
    path.write_bytes(bytes(enc))
    windowed = list(read_windows(path, whole_bytes=0, window_spans=5))  # whole_bytes=0: in windows
    warnings = windowed[-1][1].warnings
    assert any(f"{sent} DWT PC samples left out" in w for w in warnings), warnings
    assert sum(len(tl.inferences) for tl, _ in windowed) == 40
