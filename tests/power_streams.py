"""Synthetic timelines with sync marks, for the energy tests and the benchmark (a test oracle).

``synthetic_timeline`` builds an :class:`InferenceTimeline` directly (no firmware): inferences of
layers whose durations jitter from one inference to the next (so each lands at another phase of
a meter's sample clock), idle gaps of varying length between them, and a SYNC_PIN record before
each inference (the pin toggles, as ``trc_sync_pin`` does).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from check_streams import write_capture
from telemetry_encoder import TelemetryEncoder

from tracer.base.timeline import (
    Engine,
    Inference,
    LayerInfo,
    LayerSpan,
    TelemetryRecord,
    TimelineBuilder,
)
from tracer.telemetry.record_facts import add_records
from tracer.telemetry.wire import RecordType, TimeSource

CLOCK_HZ = 100_000_000
CLOCK = 50_000_000  # sync_capture's


def synthetic_timeline(
    layer_us: list[float],
    inferences: int = 100,
    seed: int = 1,
    gap_us: tuple[float, float] = (200.0, 900.0),
    jitter: float = 0.03,
    sync: bool = True,
    npu: tuple[int, ...] = (),
    clock_hz: int = CLOCK_HZ,
):
    """A timeline of ``inferences`` runs of layers of about ``layer_us`` microseconds each."""
    rng = np.random.default_rng(seed)
    b = TimelineBuilder(clock_hz=clock_hz, clock_source="dwt")
    for i, _ in enumerate(layer_us):
        b.add_layer(LayerInfo(i, f"l{i}", "CONV_2D", Engine.NPU if i in npu else Engine.CPU))
    per_us = clock_hz / 1e6
    t = 1000
    records = []
    for n in range(inferences):
        t += int(rng.uniform(*gap_us) * per_us)
        if sync:
            records.append(TelemetryRecord(int(RecordType.SYNC_PIN), t, None, ((n + 1) & 1, n)))
        t += int(20 * per_us)
        start = t
        t += int(3 * per_us)  # the inference's own time before its first layer
        for i, us in enumerate(layer_us):
            d = max(int(us * per_us * (1 + rng.uniform(-jitter, jitter))), 1)
            b.add_span(LayerSpan(n, i, t, t + d, True))
            t += d + int(1 * per_us)
        b.add_inference(Inference(n, start, t, True, (), ()))
    timeline = b.build()
    add_records(timeline, records)
    return timeline


def truth_uj(timeline, layer_mw: dict[int, float], other_mw: float) -> tuple[dict[int, float], dict[int, float]]:
    """The model's mean energy per execution of each layer, and each inference's energy (uJ)."""
    spans, hz = timeline.spans, timeline.clock_hz
    per_layer = {}
    for layer, mw in layer_mw.items():
        rows = spans.layer == layer
        per_layer[layer] = float(np.mean(spans.cycles[rows])) / hz * mw * 1e3
    per_inf = {}
    inf = timeline.inferences
    for row in range(len(inf)):
        number = int(inf.number[row])
        mine = spans.inference == number
        in_layers = sum(
            float(spans.cycles[mine & (spans.layer == la)].sum()) / hz * mw * 1e3 for la, mw in layer_mw.items()
        )
        rest = (int(inf.end[row] - inf.start[row]) - int(spans.cycles[mine].sum())) / hz * other_mw * 1e3
        per_inf[number] = in_layers + rest
    return per_layer, per_inf


def sync_capture(path: Path, inferences: int = 40, seed: int = 2) -> Path:
    """A capture (our encoder) of three layers (1 on the NPU) with a SYNC_PIN mark before each
    inference, at irregular gaps: what a meter's recording is aligned with.
    """
    return write_capture(path, sync_stream(inferences, seed))


def sync_stream(inferences: int = 40, seed: int = 2) -> bytes:
    """The ITM bytes of :func:`sync_capture`."""
    rng = np.random.default_rng(seed)
    enc = TelemetryEncoder()
    t = 1000
    enc.target_info(t, CLOCK, TimeSource.DWT)
    for layer, engine in ((0, 0), (1, 1), (2, 0)):
        enc.layer_info(t + 1 + layer, layer, engine, "CONV_2D", f"layer{layer}")
    t += 100
    for n in range(inferences):
        t += int(rng.integers(20_000, 60_000))
        enc.record(RecordType.SYNC_PIN, t, [(n + 1) & 1, n])
        t += 500
        enc.inference_begin(t, n)
        for layer, cycles in ((0, 30_000), (1, 120_000), (2, 300)):
            enc.layer_begin(t + 50, layer, int(layer == 1))
            t += 50 + cycles + int(rng.integers(0, 200))
            enc.layer_end(t, layer)
        t += 40
        enc.inference_end(t)
    return bytes(enc.out)


def pmu_sync_capture(path: Path, layers: list[tuple[int, bool, int]], inferences: int = 30, seed: int = 1) -> Path:
    """A capture like :func:`sync_capture` whose NPU layers report NPU PMU counters: ``layers`` are
    (cycles, on the NPU, AXI read beats); an NPU layer is active 90 % of its cycles.
    """
    rng = np.random.default_rng(seed)
    enc = TelemetryEncoder()
    t = 1000
    enc.target_info(t, CLOCK, TimeSource.DWT)
    enc.pmu_config(t + 1, 55, [35, 130])  # NPU_ACTIVE, AXI0_RD_DATA_BEAT_RECEIVED
    for index, (_, npu, _) in enumerate(layers):
        enc.layer_info(t + 2 + index, index, int(npu), "CONV_2D", f"layer{index}")
    t += 100
    for n in range(inferences):
        t += int(rng.integers(20_000, 60_000))
        enc.record(RecordType.SYNC_PIN, t, [(n + 1) & 1, n])
        t += 500
        enc.inference_begin(t, n)
        for index, (cycles, npu, beats) in enumerate(layers):
            own = cycles + int(rng.integers(0, 200))
            enc.layer_begin(t + 50, index, int(npu))
            t += 50
            if npu:
                enc.pmu_snapshot(t + own - 6, own - 10, [int(0.9 * own), beats])
            t += own
            enc.layer_end(t, index)
        t += 40
        enc.inference_end(t)
    return write_capture(path, bytes(enc.out))
