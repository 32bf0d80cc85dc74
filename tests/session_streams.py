"""Telemetry streams and captures with known content for the session and TUI tests (our own encoder)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from telemetry_encoder import TelemetryEncoder

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.telemetry.wire import RecordType, TimeSource

CLOCK_HZ = 100_000_000
ROOT = Path(__file__).resolve().parent.parent
DEMO_CAPTURE = ROOT / "captures" / "demo.trace"
DEMO_BUDGET = ROOT / "captures" / "demo_budget.toml"


@dataclasses.dataclass
class Truth:
    """What a built stream contains."""

    data: bytes
    inferences: int
    layer_cycles: dict[int, list[int]]  # per layer, every span's cycles in order
    latencies: list[int]
    isr_layers: dict[int, int]  # layer -> ISR slices that start inside it
    console: list[str]
    records: int  # telemetry records encoded


def build_stream(
    inferences: int = 40,
    layers: int = 6,
    seed: int = 1,
    isr_every: int = 5,
    first: int = 0,
    text: bool = True,
    isr_cycles: int = 40,
    canary_at: int | None = None,
    cut_last: bool = False,
    memory: bool = True,
    gap: int = 300,
) -> Truth:
    """A stream like an instrumented NPU application's: target info, layer descriptions, then per
    inference input CRC, layers (NPU ones with cache clean, NPU job and PMU snapshot), an ISR of
    ``isr_cycles`` in layer 3 every ``isr_every`` inferences, a mark, arena and stack reports and a
    console line. ``canary_at``: inference in whose layer 2 a stack report finds the canary broken;
    ``cut_last``: the stream ends in the middle of one more inference (as when recording stops);
    ``memory``: send arena and stack reports at all; ``gap``: cycles between inferences."""
    rng = random.Random(seed)
    enc = TelemetryEncoder()
    t = 1_000
    if text:
        enc.text("boot ok\n")
    enc.target_info(t, CLOCK_HZ, TimeSource.DWT, marker_cost_q4=16 * 12)
    enc.pmu_config(t + 1, 55, [35, 130], simulated=True)
    for layer in range(layers):
        enc.layer_info(
            t + 2 + layer, layer, int(layer % 2 == 0), "CONV_2D" if layer % 2 == 0 else "ADD", f"layer{layer}"
        )
    t += 100
    cycles: dict[int, list[int]] = {layer: [] for layer in range(layers)}
    latencies, console = [], []
    isr_layers: dict[int, int] = {}
    for i in range(first, first + inferences):
        begin = t
        enc.inference_begin(t, i)
        enc.buffer_crc(t + 3, 0, 0xAB00 + i, 64)
        t += 10
        for layer in range(layers):
            s = t
            npu = layer % 2 == 0
            enc.layer_begin(s, layer, int(npu))
            if layer == 2 and canary_at == i:  # records go in time order: right after the begin
                enc.stack(s + 1, 0, "main", 8_192, 8_192, canary_ok=False)
            length = 1000 + 100 * layer + rng.randrange(400)
            if npu:
                enc.cache_op(s + 2, 1, 0x3000_0000, 4096)
                enc.npu_job_begin(s + 5, layer)
                enc.pmu_snapshot(s + length - 5, 900 + layer, [800 + layer, 16 * layer])
                enc.npu_job_end(s + length - 3, layer)
            if layer == 3 and isr_every and i % isr_every == 0:
                enc.record(RecordType.ISR_ENTER, s + 50, [7])
                enc.record(RecordType.ISR_EXIT, s + 50 + isr_cycles, [7])
                isr_layers[layer] = isr_layers.get(layer, 0) + 1
                length += max(0, isr_cycles - 40)
            enc.layer_end(s + length, layer)
            cycles[layer].append(length)
            t = s + length + 7
        enc.mark(t, 42)
        if memory:
            enc.arena(t + 1, 4_000 + i, 8_192)
        enc.inference_end(t + 2)
        latencies.append(t + 2 - begin)
        if memory:
            enc.stack(t + 10, 0, "main", 8_192, 1_000 + i)
        if text:
            line = f"inference {i} done"
            enc.text(line + "\n")
            console.append(line)
        t += gap
    if cut_last:
        enc.inference_begin(t, first + inferences)
        enc.layer_begin(t + 10, 0, 1)
        enc.layer_end(t + 900, 0)
        enc.layer_begin(t + 907, 1, 0)
    return Truth(bytes(enc.out), inferences, cycles, latencies, isr_layers, console, len(enc.records))


def write_capture(path: Path, data: bytes, chunk: int = 4_000, ns_per_byte: int = 1_000) -> Path:
    """A .trace capture of ``data`` whose chunks arrived ``ns_per_byte`` apart per byte."""
    meta = CaptureMetadata(source="synthetic://session-test", tpiu=False, cpu_hz=CLOCK_HZ)
    with CaptureWriter(path, meta, overwrite=True, flush_bytes=chunk) as writer:
        for at in range(0, len(data), chunk):
            writer.write(data[at : at + chunk], host_ns=1_000_000_000 + at * ns_per_byte)
    return path
