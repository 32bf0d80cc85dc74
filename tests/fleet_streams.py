"""Captures of "builds" with known differences, for the compare, ingest and trend tests.

Each capture runs a five-layer model (two NPU layers with PMU snapshots, three CPU layers) for a
number of inferences; a build can make one layer slower by a percentage, add interrupt time
inside a layer, or make an NPU layer move more data (AXI beats). Cycles get Gaussian noise of a
given spread, seeded, so every capture is reproducible. Built with the reference telemetry encoder
and written as real ``.trace`` captures with a header that names the build.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

from telemetry_encoder import TelemetryEncoder

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.telemetry.wire import TimeSource

CLOCK_HZ = 200_000_000
LAYERS = (  # name, op, npu, cycles, AXI read beats per execution
    ("conv0", "CONV_2D", True, 20_000, 600),
    ("dw1", "DEPTHWISE_CONV_2D", True, 12_000, 400),
    ("add2", "ADD", False, 3_000, 0),
    ("pool3", "MAX_POOL_2D", False, 2_000, 0),
    ("fc4", "FULLY_CONNECTED", False, 800, 0),
)
TIMER_EXCEPTION = 18


@dataclasses.dataclass(frozen=True)
class Build:
    """What differs in a build.

    Attributes:
        slow: (layer index, percent) the layer is slower by.
        isr: (layer index, cycles) of an interrupt handler inside the layer in every inference.
        beats_pct: (layer index, percent) more AXI beats for an NPU layer (memory traffic).
        noise_pct: Standard deviation of every execution's cycles, in percent.
        scale: Every layer's cycles times this (a build that is a little faster or slower all over).
        arena_used: Tensor-arena bytes used.
        layers: The model (name, op, npu, cycles, beats) per layer.
    """

    slow: tuple[int, float] | None = None
    isr: tuple[int, int] | None = None
    beats_pct: tuple[int, float] | None = None
    noise_pct: float = 0.5
    scale: float = 1.0
    arena_used: int = 40_000
    layers: tuple[tuple[str, str, bool, int, int], ...] = LAYERS


def encode_build(build: Build, inferences: int = 20, seed: int = 0) -> bytes:
    """The telemetry of ``inferences`` inferences of ``build``."""
    rng = random.Random(seed)
    enc = TelemetryEncoder()
    t = 1_000
    enc.target_info(t, CLOCK_HZ, TimeSource.DWT)
    enc.pmu_config(t + 1, 55, [35, 130])  # NPU_ACTIVE, AXI0_RD_DATA_BEAT_RECEIVED
    for index, (name, op, npu, _, _) in enumerate(build.layers):
        enc.layer_info(t + 2 + index, index, int(npu), op, name)
    enc.arena(t + 50, build.arena_used, 65_536)
    if build.isr is not None:
        enc.isr_info(t + 60, TIMER_EXCEPTION, "TIMER")
    t += 1_000
    for n in range(inferences):
        enc.inference_begin(t, n)
        t += 20
        for index, (_, _, npu, cycles, beats) in enumerate(build.layers):
            scale = 1 + (build.slow[1] / 100 if build.slow and build.slow[0] == index else 0.0)
            own = max(10, round(cycles * build.scale * scale * (1 + rng.gauss(0, build.noise_pct / 100))))
            isr = build.isr[1] if build.isr and build.isr[0] == index else 0
            length = own + isr
            enc.layer_begin(t, index, int(npu))
            if isr:
                enc.isr_enter(t + own // 2, TIMER_EXCEPTION)
                enc.isr_exit(t + own // 2 + isr, TIMER_EXCEPTION)
            if npu:
                more = 1 + (build.beats_pct[1] / 100 if build.beats_pct and build.beats_pct[0] == index else 0.0)
                enc.pmu_snapshot(t + length - 6, length - 10, [int(0.9 * own), round(beats * more)])
            enc.layer_end(t + length, index)
            t += length + 5
        enc.inference_end(t)
        enc.stack(t + 10, 0, "main", 8192, 2000)
        t += 500
    return bytes(enc.out)


def write_build(path: Path, build: Build = Build(), inferences: int = 20, seed: int = 0, **header: Any) -> Path:
    """A ``.trace`` capture of ``build``; ``header`` adds capture metadata (``elf_build_id``,
    ``created``, and further keys such as ``board`` or ``git_revision``)."""
    known = {"elf_build_id", "firmware_hash", "created", "source", "cpu_hz"}
    meta = CaptureMetadata(
        source=header.pop("source", "test://fleet"),
        tpiu=False,
        cpu_hz=CLOCK_HZ,
        **{k: header.pop(k) for k in list(header) if k in known},
    )
    meta.extra.update(header)
    with CaptureWriter(path, meta, flush_bytes=1 << 14) as writer:
        writer.write(encode_build(build, inferences, seed))
    return path
