"""A simulated power meter: what ``tracer demo --power`` records beside the capture.

From a per-layer power model (:class:`PowerModel`), the capture's timeline and a meter
(:class:`Meter`: rate, clock drift, when it started, noise), the samples a meter would record:
each the mean power over its period (the model is constant within a segment), plus white and
1/f noise, and the sync pin on digital input 0 sampled at each sample's start. The meter's clock
runs ``drift_ppm`` off the target's. Everything it writes says it is simulated (a JLS file's
user data, the report's label).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import numpy as np

from tracer.base.timeline import InferenceTimeline
from tracer.power.recording import CHUNK_SAMPLES, PowerChunk, RecordingInfo
from tracer.power.segments import segments_of
from tracer.power.sync import marks_of

SUPPLY_VOLTS = 3.3


@dataclasses.dataclass(frozen=True)
class PowerModel:
    """Milliwatts drawn by each layer, by the rest of an inference, and between inferences."""

    layer_mw: dict[int, float]
    other_mw: float
    idle_mw: float


@dataclasses.dataclass(frozen=True)
class Meter:
    """A simulated meter.

    Attributes:
        sample_rate: Samples per second (its own clock).
        drift_ppm: How fast its clock runs against the target's.
        lead_s: Seconds it records before the capture's first cycle.
        tail_s: Seconds it records after the last inference.
        white_mw, pink_mw: Standard deviation of the white and 1/f noise per sample.
        seed: The noise's seed.
    """

    sample_rate: float
    drift_ppm: float = 0.0
    lead_s: float = 0.01
    tail_s: float = 0.01
    white_mw: float = 0.0
    pink_mw: float = 0.0
    seed: int = 0


class SimulatedRecording:
    """The samples a :class:`Meter` records of a timeline run on a :class:`PowerModel`."""

    def __init__(self, timeline: InferenceTimeline, model: PowerModel, meter: Meter) -> None:
        if not timeline.clock_hz:
            raise ValueError("the timeline needs a clock to be simulated in meter time")
        self.meter, self.model = meter, model
        seg = segments_of(timeline)
        first = int(seg.bound[0]) if len(seg.bound) else 0
        self._scale = meter.sample_rate / timeline.clock_hz * (1 + meter.drift_ppm * 1e-6)
        self._offset = meter.lead_s * meter.sample_rate - self._scale * first
        watts = (
            np.array(
                [model.layer_mw.get(layer, model.other_mw) for layer in seg.layers]
                + [model.other_mw, model.idle_mw, model.other_mw]
            )
            / 1e3
        )
        self._bound = self.samples_of(seg.bound)
        self._cum = np.concatenate(([0.0], np.cumsum(watts[seg.klass] * np.diff(self._bound))))
        self._idle_w = model.idle_mw / 1e3
        marks = marks_of(timeline)
        self._mark_at = self.samples_of(marks.cycle)
        self._mark_level = marks.level
        end = self._bound[-1] if len(self._bound) else 0.0
        self.samples = int(end + meter.tail_s * meter.sample_rate)
        self._info = RecordingInfo("simulated", "simulated meter", meter.sample_rate, self.samples, "power", None,
                                   {0: "sync"}, simulated=True)  # fmt: skip

    @property
    def info(self) -> RecordingInfo:
        """The recording's description."""
        return self._info

    def samples_of(self, cycles: np.ndarray) -> np.ndarray:
        """Where target ``cycles`` fall in the meter's samples (the truth the fit estimates)."""
        return self._offset + self._scale * np.asarray(cycles, np.float64)

    def energy(self, x: np.ndarray) -> np.ndarray:
        """The model's energy (watt-samples) from the first boundary to sample position ``x``."""
        if not len(self._bound):
            return np.asarray(x, np.float64) * self._idle_w
        inside = np.interp(x, self._bound, self._cum)
        before = np.minimum(x - self._bound[0], 0.0) * self._idle_w
        after = np.maximum(x - self._bound[-1], 0.0) * self._idle_w
        return inside + before + after

    def chunks(self, samples: int = CHUNK_SAMPLES) -> Iterator[PowerChunk]:
        """The meter's samples: mean power per period plus noise, and the sync pin."""
        rng = np.random.default_rng(self.meter.seed)
        for first in range(0, self.samples, samples):
            n = min(samples, self.samples - first)
            k = np.arange(first, first + n + 1, dtype=np.float64)
            power = np.diff(self.energy(k))
            if self.meter.white_mw:
                power += rng.normal(0.0, self.meter.white_mw / 1e3, n)
            if self.meter.pink_mw:
                power += pink(rng, n) * (self.meter.pink_mw / 1e3)
            idx = np.searchsorted(self._mark_at, k[:-1], side="right") - 1
            level = np.where(idx >= 0, self._mark_level[np.maximum(idx, 0)], 0).astype(np.uint8)
            yield PowerChunk(first, power, level)


def pink(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` samples of 1/f noise of unit standard deviation (spectrum shaped by FFT)."""
    if n < 4:
        return np.zeros(n)
    spectrum = np.fft.rfft(rng.normal(size=n))
    f = np.arange(len(spectrum), dtype=np.float64)
    f[0] = f[1]
    noise = np.fft.irfft(spectrum / np.sqrt(f), n)
    noise -= noise.mean()
    sd = noise.std()
    return noise / sd if sd > 0 else noise


def write_jls(path: str, recording: SimulatedRecording, note: str = "") -> None:
    """Write ``recording`` as a Joulescope JLS file (current, voltage, gpi[0]) through pyjls."""
    from tracer.power.jls import _pyjls

    pyjls = _pyjls()
    rate = int(round(recording.meter.sample_rate))
    with pyjls.Writer(path) as w:
        w.source_def(source_id=1, name="tracer-simulated", vendor="tracer", model="simulated", version="1",
                     serial_number="0")  # fmt: skip
        w.signal_def(signal_id=1, source_id=1, signal_type=pyjls.SignalType.FSR, data_type=pyjls.DataType.F32,
                     sample_rate=rate, name="current", units="A")  # fmt: skip
        w.signal_def(signal_id=2, source_id=1, signal_type=pyjls.SignalType.FSR, data_type=pyjls.DataType.F32,
                     sample_rate=rate, name="voltage", units="V")  # fmt: skip
        w.signal_def(signal_id=3, source_id=1, signal_type=pyjls.SignalType.FSR, data_type=pyjls.DataType.U1,
                     sample_rate=rate, name="gpi[0]", units="")  # fmt: skip
        meta = {"simulated": True, "drift_ppm": recording.meter.drift_ppm, "note": note}
        w.user_data(0, json.dumps(meta).encode())
        for chunk in recording.chunks():
            w.fsr_f32(1, chunk.first, (chunk.power / SUPPLY_VOLTS).astype(np.float32))
            w.fsr_f32(2, chunk.first, np.full(len(chunk), SUPPLY_VOLTS, np.float32))
            digital = chunk.digital if chunk.digital is not None else np.zeros(len(chunk), np.uint8)
            w.fsr(3, chunk.first, np.packbits(digital & 1, bitorder="little"))
