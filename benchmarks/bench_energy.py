"""Energy benchmark: an hour of 2 MS/s power recording aligned and attributed, in bounded memory.

Usage (from the project root; about a minute for the hour)::

    nice .venv/bin/python benchmarks/bench_energy.py                 # 3600 s of 2 MS/s
    nice .venv/bin/python benchmarks/bench_energy.py --seconds 600   # a shorter recording

The recording is generated as it is read, the way a reader hands it out: chunks of 2,000,000
float64 samples (one second) of a 10-layer inference every 50 ms (8 layers, 2 of them shorter
than a sample, idle between inferences) with white noise, and the sync pin toggling at each
inference on digital input 0. Its timeline (72,000 inferences, 576,000 layer spans, SYNC_PIN
records) has cycles at 100 MHz and a meter clock running 200 ppm fast. To read an hour without
generating 29 GB, two noisy one-second chunks are precomputed and handed out in turn (the
schedule is periodic in meter time; the timeline matches it exactly).

Measured in the same run: ``attribute_energy`` (two passes: the sync input's edges, then the
energy at every boundary; fit and attribution), against a reference numpy pass over the same
samples (``np.sum`` of every chunk: the least any reader of the samples does). Printed: wall
time, real-time factor (recording seconds per second of work), the ratio to the reference, peak
RSS of the process, and the error of the integrated layers against the model.

Targets (issue 28): at least 10x faster than real time, peak memory below 300 MB.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracer.base.timeline import (
    Engine,
    Inferences,
    InferenceTimeline,
    LayerInfo,
    LayerSpans,
    TelemetryRecord,
)
from tracer.power.attribute import attribute_energy
from tracer.power.recording import PowerChunk, RecordingInfo
from tracer.telemetry.record_facts import add_records
from tracer.telemetry.wire import RecordType

RATE = 2_000_000
CLOCK = 100_000_000
DRIFT_PPM = 200.0
PERIOD = 100_000  # samples per inference period (50 ms)
CHUNK = 2_000_000  # one second: 20 periods, so each chunk starts at the same phase
# Layer boundaries within a period, in samples (fractional), and each layer's power.
LAYER_SAMPLES = [4000.3, 12000.7, 0.6, 9000.2, 30000.9, 0.3, 2000.4, 7000.1]
LAYER_MW = [80.0, 55.0, 200.0, 120.0, 60.0, 150.0, 45.0, 90.0]
GAP = 20.25  # samples between layers
START = 1000.5  # the inference begins this far into its period
MARK = 500.5  # the sync pin toggles here in each period
OTHER_MW, IDLE_MW = 20.0, 5.0


def layout() -> tuple[np.ndarray, np.ndarray]:
    """The boundaries of one period (samples) and the power of each segment between them (W)."""
    bounds, watts = [0.0, START], [IDLE_MW]
    t = START
    for n, mw in zip(LAYER_SAMPLES, LAYER_MW):
        bounds += [t + GAP, t + GAP + n]
        watts += [OTHER_MW, mw]
        t += GAP + n
    bounds += [t + GAP, float(PERIOD)]
    watts += [OTHER_MW, IDLE_MW]
    return np.array(bounds), np.array(watts) / 1e3


class PeriodicRecording:
    """The generated recording: precomputed chunks handed out in turn."""

    def __init__(self, seconds: int) -> None:
        self.total = seconds * RATE
        bounds, watts = layout()
        cum = np.concatenate(([0.0], np.cumsum(watts * np.diff(bounds))))
        one = np.diff(np.interp(np.arange(PERIOD + 1, dtype=np.float64), bounds, cum))
        clean = np.tile(one, CHUNK // PERIOD)
        rng = np.random.default_rng(1)
        self._power = [clean + rng.normal(0, 5e-3, CHUNK) for _ in range(2)]
        s = np.arange(CHUNK)
        p, q = s // PERIOD, s % PERIOD  # the pin toggles at MARK in each period: levels 1, 0, 1 ...
        self._digital = np.where(q > MARK, (p + 1) & 1, p & 1).astype(np.uint8)
        self._info = RecordingInfo("generated", "benchmark", float(RATE), self.total, "power", None, {0: "sync"})

    @property
    def info(self) -> RecordingInfo:
        return self._info

    def chunks(self, samples: int = CHUNK):
        for i, first in enumerate(range(0, self.total, CHUNK)):
            yield PowerChunk(first, self._power[i % 2], self._digital)


def timeline_of(seconds: int) -> InferenceTimeline:
    """The timeline the recording shows, in target cycles (the meter's clock 200 ppm fast)."""
    scale = RATE / CLOCK * (1 + DRIFT_PPM * 1e-6)  # samples per cycle
    n_inf = seconds * RATE // PERIOD
    period0 = np.arange(n_inf, dtype=np.float64) * PERIOD
    bounds, _ = layout()
    cycles = lambda s: np.round(s / scale).astype(np.int64) + 10_000  # noqa: E731
    layers = len(LAYER_SAMPLES)
    starts = bounds[2 : 2 + 2 * layers : 2]
    ends = bounds[3 : 3 + 2 * layers : 2]
    span_start = cycles((period0[:, None] + starts[None, :]).ravel())
    span_end = cycles((period0[:, None] + ends[None, :]).ravel())
    rows = n_inf * layers
    spans = LayerSpans(
        inference=np.repeat(np.arange(n_inf, dtype=np.int64), layers),
        layer=np.tile(np.arange(layers, dtype=np.int32), n_inf),
        start=span_start,
        end=span_end,
        complete=np.ones(rows, bool),
        isr_cycles=np.zeros(rows, np.int64),
        pmu=np.zeros((rows, 0), np.int64),
    )
    none = np.full(n_inf, -1, np.int64)
    inferences = Inferences(
        number=np.arange(n_inf, dtype=np.int64),
        start=cycles(period0 + START),
        end=cycles(period0 + bounds[-2]),
        complete=np.ones(n_inf, bool),
        input_crc=none,
        output_crc=none.copy(),
        problems=[()] * n_inf,
    )
    marks = cycles(period0 + MARK)  # seen at the next sample, a half sample later on average
    records = [TelemetryRecord(int(RecordType.SYNC_PIN), int(c), None, ((n + 1) & 1, n)) for n, c in enumerate(marks)]
    info = {i: LayerInfo(i, f"l{i}", "CONV_2D", Engine.NPU if i in (3, 4) else Engine.CPU) for i in range(layers)}
    timeline = InferenceTimeline(clock_hz=CLOCK, clock_source="dwt", layers=info, inferences=inferences, spans=spans)
    add_records(timeline, records)  # (and their typed facts: the sync pins the attribution reads)
    return timeline


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3600, help="recording length (default: 3600)")
    args = parser.parse_args()
    rec = PeriodicRecording(args.seconds)
    timeline = timeline_of(args.seconds)
    base = rss_mb()
    t0 = time.perf_counter()
    total = 0.0
    for chunk in rec.chunks():
        total += float(np.sum(chunk.power))
    reference = time.perf_counter() - t0
    t0 = time.perf_counter()
    energy = attribute_energy(timeline, rec)
    took = time.perf_counter() - t0
    peak = rss_mb()
    samples = args.seconds * RATE
    print(f"recording      {args.seconds} s at {RATE / 1e6:g} MS/s: {samples / 1e9:.2f} G samples, "
          f"{len(timeline.inferences):,} inferences, {len(timeline.spans):,} layer spans")  # fmt: skip
    print(f"reference      numpy sum over every chunk: {reference:.2f} s ({samples / reference / 1e6:,.0f} MS/s)")
    print(f"attribution    {took:.2f} s: {args.seconds / took:.1f}x real time, {took / reference:.2f}x the reference")
    print(f"memory         peak RSS {peak:.0f} MB (after building the inputs: {base:.0f} MB)")
    print(f"fit            drift {energy.fit.drift_ppm:+.1f} ppm (truth {DRIFT_PPM:+.0f}), {energy.fit.pairs:,} pairs, "
          f"residuals {energy.fit.rms:.2f} samples RMS")  # fmt: skip
    for i, layer in sorted(energy.layers.items()):
        truth = LAYER_MW[i] * 1e-3 * LAYER_SAMPLES[i] / RATE * 1e6
        print(f"  layer {i}: {layer.energy_uj:10.4f} uJ +- {layer.interval_uj:.4f}  truth {truth:10.4f}  "
              f"({(layer.energy_uj / truth - 1) * 100:+.2f} %, {layer.method}, {layer.samples:.1f} samples)")  # fmt: skip
    ok = args.seconds / took >= 10 and peak < 300
    print(f"targets        >= 10x real time, < 300 MB: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
