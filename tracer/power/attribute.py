"""Energy per layer, per inference, per engine and between inferences, with 95 % intervals.

Two passes over the recording, each in bounded memory: the first finds the sync input's edges
(:mod:`tracer.power.edges`) and fits target cycles to meter samples (:mod:`tracer.power.sync`);
the second keeps, at every segment boundary (:mod:`tracer.power.segments`), the energy before
its sample and the sample's own: nothing else of the samples is kept.

A sample is the mean power over its period. A segment's energy is then exact over the samples it
covers whole; a sample it shares with other segments (at its ends, or a layer shorter than a
sample) is split between them in proportion to overlap times each one's power. Those powers
come from a least-squares fit over every boundary sample and every segment's whole samples of
the whole recording: with one power per layer, and since each inference lands at another phase
of the sample clock, the shared samples of many inferences tell even a layer shorter than one
sample (the method is then ``fitted``; from :data:`INTEGRATED_SAMPLES` samples per execution
on it is ``integrated``: the shares only touch its two ends).

A layer's energy is the mean over its executions in complete inferences; its interval is the
95 % interval of that mean (the executions' spread), widened for a fitted layer by the fit's own
standard error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from tracer.base.timeline import Engine, InferenceTimeline
from tracer.errors import CaptureError
from tracer.power.edges import find_edges
from tracer.power.recording import PowerChunk, PowerRecording, RecordingInfo
from tracer.power.segments import Segments, segments_of
from tracer.power.sync import ClockFit, SyncError, fit_clock, marks_of

INTEGRATED_SAMPLES = 20  # samples per execution from which a layer's energy is its own samples'
Z95 = 1.96
BLOCK = 1 << 16  # boundary samples per block of the fit (bounded memory)


@dataclasses.dataclass(frozen=True)
class LayerEnergy:
    """One layer's energy per execution.

    Attributes:
        index: The layer's index.
        executions: Executions measured (in complete inferences inside the recording).
        energy_uj: Mean energy per execution, microjoules; interval_uj: half-width of its 95 % interval.
        power_mw: Mean power while it ran (energy over mean duration), milliwatts.
        samples: Mean meter samples per execution.
        method: ``integrated`` (its own samples) or ``fitted`` (shorter than INTEGRATED_SAMPLES).
        energy_share, time_share: Its part of the inference's energy and of its time.
    """

    index: int
    executions: int
    energy_uj: float
    interval_uj: float
    power_mw: float
    samples: float
    method: str
    energy_share: float
    time_share: float


@dataclasses.dataclass(frozen=True)
class EnergyAnalysis:
    """A power recording held against the timeline.

    Attributes:
        recording: What was read.
        fit: Target cycles to meter samples.
        layers: Per layer, by index (layers with an execution measured).
        inference_uj: Energy of each measured inference, by number.
        inference_mean_uj, inference_interval_uj: Their mean and its 95 % interval.
        other_uj: Mean energy per inference outside its layers (the markers, the loop).
        engines_uj: Mean energy per inference of the layers on each engine (``cpu``, ``npu``).
        idle_uj, idle_seconds: Energy and time between inferences (total over the recording).
        left_out: Inferences not measured, with why (incomplete, outside the recording).
        notes: Sentences about the numbers (their limits).
        power_cycles, power_mw: The power lane: from each cycle on, the mean power of the segment
            (layer execution, time between layers, idle) that starts there, milliwatts; the last
            value (0) marks the end of the measured time.
    """

    recording: RecordingInfo
    fit: ClockFit
    layers: dict[int, LayerEnergy]
    inference_uj: dict[int, float]
    inference_mean_uj: float | None
    inference_interval_uj: float | None
    other_uj: float | None
    engines_uj: dict[str, float]
    idle_uj: float
    idle_seconds: float
    left_out: dict[str, int]
    notes: tuple[str, ...] = ()
    power_cycles: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    power_mw: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))

    @property
    def idle_mw(self) -> float | None:
        """Mean power between inferences, or None without idle time."""
        return self.idle_uj / self.idle_seconds / 1e3 if self.idle_seconds > 0 else None


def attribute_energy(
    timeline: InferenceTimeline, recording: PowerRecording, meter_input: int | None = None
) -> EnergyAnalysis:
    """Align ``recording`` with ``timeline`` and attribute its energy (exit 3 on what cannot be)."""
    info = recording.info
    marks = marks_of(timeline)
    bit = meter_input if meter_input is not None else (marks.meter_input if marks.meter_input is not None else 0)
    if not info.digital:
        raise SyncError(
            f"{info.path}: the recording has no digital input, so nothing ties its time to the capture's: "
            "record the sync pin on one of the meter's digital inputs (docs/energy.md)"
        )
    if bit not in info.digital:
        have = ", ".join(f"{b} ({n})" for b, n in info.digital.items())
        raise SyncError(
            f"{info.path}: the sync pin is on digital input {bit}, which the recording lacks (it has {have})"
        )
    edges = find_edges(recording.chunks(), bit)
    skip = info.edges_before.get(bit, 0)  # a live window: its first edge is the run's edge `skip`
    if skip:
        marks = dataclasses.replace(marks, cycle=marks.cycle[skip:], level=marks.level[skip:])
    try:
        fit = fit_clock(marks, edges, info.sample_rate, timeline.clock_hz, bit)
    except SyncError as exc:
        raise SyncError(f"{info.path}: {exc}") from None
    total = edges.samples
    inf = timeline.inferences
    start_s = fit.samples(inf.start)
    end_s = fit.samples(inf.end)
    inside = (inf.start >= 0) & (inf.end >= 0) & (start_s >= info.first_sample) & (end_s < total - 1)
    left_out = {
        "incomplete": int(((inf.start >= 0) & (inf.end >= 0) & ~inf.complete & inside).sum()),
        "outside_recording": int(((inf.start >= 0) & (inf.end >= 0) & ~inside).sum()),
    }
    segments = segments_of(timeline, inside)
    if len(segments.klass) == 0:
        raise CaptureError(
            f"{info.path}: no inference of the capture lies inside the recording "
            f"({total} samples at {info.sample_rate:g}/s)"
        )
    bound = fit.samples(segments.bound)
    gathered = [*gather(recording.chunks(), bound)]
    energy, powers, se = _attribute(segments, bound, gathered)
    return _summary(timeline, info, fit, segments, bound, energy, powers, se, left_out)


def gather(chunks: Iterable[PowerChunk], bound: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each boundary (samples, non-decreasing): the energy of the samples before its sample
    and its sample's own (watt-samples), in one pass.
    """
    k = np.floor(bound).astype(np.int64)
    before = np.zeros(len(k))
    own = np.zeros(len(k))
    running = 0.0
    lo = 0
    for chunk in chunks:
        end = chunk.first + len(chunk)
        hi = int(np.searchsorted(k, end, side="left"))
        if hi > lo:
            local = k[lo:hi] - chunk.first
            cs = np.cumsum(chunk.power)
            own[lo:hi] = chunk.power[local]
            before[lo:hi] = running + (cs[local] - chunk.power[local])
            running += float(cs[-1])
        else:
            running += float(np.sum(chunk.power))
        lo = hi
    return before, own


def _attribute(
    seg: Segments, bound: np.ndarray, gathered: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per segment energy (watt-samples), per class power (watts) and its standard error.

    Boundary ``i`` lies in sample ``k[i]`` (non-decreasing): that sample is shared by the
    segment ending there (its last ``o_end``) and the one starting there (its first
    ``o_start``), and by any segment lying wholly inside it. One row of the fit per distinct
    boundary sample, in order: no sort, a few arrays of the boundaries' length. ``gathered``
    (:func:`gather`'s two arrays) is emptied as it is used, to keep the peak memory down.
    """
    before, own = gathered
    gathered.clear()
    k = np.floor(bound).astype(np.int64)
    c = seg.klass
    n = seg.classes
    same = k[:-1] == k[1:]
    o_start = np.where(same, bound[1:] - bound[:-1], (k[:-1] + 1) - bound[:-1])
    o_end = np.where(same, 0.0, bound[1:] - k[1:])
    whole = np.maximum(k[1:] - k[:-1] - 1, 0)
    del same
    # Whole samples: one row per segment, weighted by 1/whole (the noise of a sum of `whole` samples).
    interior = np.where(whole > 0, (before[1:] - before[:-1]) - own[:-1], 0.0)  # samples k+1 .. k'-1
    del before  # the caller keeps no reference: memory stays a few boundary-length arrays
    xtx: np.ndarray = np.diag(np.bincount(c, weights=whole, minlength=n).astype(np.float64))
    xty: np.ndarray = np.bincount(c, weights=interior, minlength=n).astype(np.float64)
    # Shared samples: the row of each boundary's sample; its overlaps with each class.
    row = np.concatenate(([0], np.cumsum(k[1:] != k[:-1])))
    del k
    rows = int(row[-1]) + 1
    value = np.zeros(rows)
    value[row] = own  # the same sample's value at each of its boundaries
    del own
    row_start, row_end = row[:-1], row[1:]  # the rows of each segment's first and last sample
    for lo in range(0, rows, BLOCK):
        hi = min(lo + BLOCK, rows)
        a, b = np.searchsorted(row_start, [lo, hi])
        dense = np.zeros((hi - lo, n))
        np.add.at(dense, (row_start[a:b] - lo, c[a:b]), o_start[a:b])
        e0, e1 = np.searchsorted(row_end, [lo, hi])
        np.add.at(dense, (row_end[e0:e1] - lo, c[e0:e1]), o_end[e0:e1])
        xtx += dense.T @ dense
        xty += dense.T @ value[lo:hi]
    present = np.diag(xtx) > 0
    powers = np.zeros(n)
    cov = np.zeros((n, n))
    if present.any():
        sub = np.ix_(present, present)
        inv = np.linalg.pinv(xtx[sub])
        powers[present] = inv @ xty[present]
        modelled = np.bincount(row_start, weights=o_start * powers[c], minlength=rows)
        modelled += np.bincount(row_end, weights=o_end * powers[c], minlength=rows)
        w = whole > 0
        rss = float(np.sum((value - modelled) ** 2))
        rss += float(np.sum((interior[w] - whole[w] * powers[c[w]]) ** 2 / whole[w]))
        dof = max(rows + int(w.sum()) - int(present.sum()), 1)
        cov[sub] = inv * (rss / dof)
        del modelled, w
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    # Each shared sample split in proportion to overlap x power (by overlap where the model says 0).
    positive = np.clip(powers, 0, None)
    model = np.bincount(row_start, weights=o_start * positive[c], minlength=rows)
    model += np.bincount(row_end, weights=o_end * positive[c], minlength=rows)
    overlap = np.bincount(row_start, weights=o_start, minlength=rows)
    overlap += np.bincount(row_end, weights=o_end, minlength=rows)
    use_model = model > 0
    # Per row, what one watt-sample of overlap-times-power (or of overlap alone) is worth.
    per_model = np.divide(value, model, out=np.zeros(rows), where=use_model)
    del model
    per_overlap = np.divide(value, overlap, out=np.zeros(rows), where=~use_model & (overlap > 0))
    del overlap, use_model, value
    energy = interior
    for o, r in ((o_start, row_start), (o_end, row_end)):
        factor = positive[c] * per_model[r]
        factor += per_overlap[r]
        factor *= o
        energy += factor
        del factor
    return energy, powers, se


def _summary(
    timeline: InferenceTimeline,
    info: RecordingInfo,
    fit: ClockFit,
    seg: Segments,
    bound: np.ndarray,
    energy: np.ndarray,
    powers: np.ndarray,
    se: np.ndarray,
    left_out: dict[str, int],
) -> EnergyAnalysis:
    """Per layer, inference, engine and idle, in microjoules."""
    to_uj = 1e6 / info.sample_rate
    e_uj = energy * to_uj
    dur = np.diff(bound)
    measured = (seg.inference >= 0) & (seg.klass != seg.incomplete)
    numbers, per_inf_idx = np.unique(seg.inference[measured], return_inverse=True)
    per_inf = np.bincount(per_inf_idx, weights=e_uj[measured], minlength=len(numbers))
    per_inf_dur = np.bincount(per_inf_idx, weights=dur[measured], minlength=len(numbers))
    inference_uj = {int(k): float(v) for k, v in zip(numbers, per_inf)}
    mean_inf = float(per_inf.mean()) if len(per_inf) else None
    ci_inf = _interval(per_inf)
    mean_inf_dur = float(per_inf_dur.mean()) if len(per_inf_dur) else 0.0
    layers: dict[int, LayerEnergy] = {}
    engines: dict[str, float] = {}
    n_inf = max(len(numbers), 1)
    for k, index in enumerate(seg.layers):
        rows = np.flatnonzero((seg.klass == k) & measured)
        if not len(rows):
            continue
        values = e_uj[rows]
        samples = float(dur[rows].mean())
        mean = float(values.mean())
        interval = _interval(values) or 0.0
        method = "integrated" if samples >= INTEGRATED_SAMPLES else "fitted"
        if method == "fitted":
            interval = float(np.hypot(interval, Z95 * se[k] * samples * to_uj))
        power = mean / (samples / info.sample_rate) / 1e3 if samples > 0 else float("nan")
        layers[index] = LayerEnergy(
            index,
            len(rows),
            mean,
            interval,
            power,
            samples,
            method,
            float(values.sum() / n_inf / mean_inf) if mean_inf else 0.0,
            float(dur[rows].sum() / n_inf / mean_inf_dur) if mean_inf_dur else 0.0,
        )
        engine = timeline.layer(index).engine
        key = engine.value if isinstance(engine, Engine) else str(engine)
        engines[key] = engines.get(key, 0.0) + float(values.sum()) / n_inf
    other = (seg.klass == seg.other) & measured
    idle = seg.klass == seg.idle
    notes = []
    short = [i for i, la in layers.items() if la.method == "fitted"]
    if short:
        notes.append(
            f"{len(short)} layer(s) ran fewer than {INTEGRATED_SAMPLES} meter samples per execution: their energy is "
            "fitted across inferences (each lands at another phase of the sample clock), its interval says how well"
        )
    if info.simulated:
        notes.append("SIMULATED: the recording comes from tracer's power model, not a meter")
    return EnergyAnalysis(
        recording=info,
        fit=fit,
        layers=layers,
        inference_uj=inference_uj,
        inference_mean_uj=mean_inf,
        inference_interval_uj=ci_inf,
        other_uj=float(e_uj[other].sum()) / n_inf if len(numbers) else None,
        engines_uj=engines,
        idle_uj=float(e_uj[idle].sum()),
        idle_seconds=float(dur[idle].sum() / info.sample_rate),
        left_out=left_out,
        notes=tuple(notes),
        **_power_lane(seg, dur, energy),
    )


def _power_lane(seg: Segments, dur: np.ndarray, energy: np.ndarray) -> dict[str, np.ndarray]:
    """Each segment's mean power from its first cycle (segments of no length left out)."""
    keep = dur > 0
    mw = np.zeros(int(keep.sum()) + 1)
    mw[:-1] = energy[keep] / dur[keep] * 1e3
    cycles = np.concatenate((seg.bound[:-1][keep], seg.bound[-1:]))
    return {"power_cycles": cycles.astype(np.int64), "power_mw": mw}


def _interval(values: np.ndarray) -> float | None:
    """Half-width of the 95 % interval of the mean of ``values`` (None: fewer than 2)."""
    if len(values) < 2:
        return None
    return float(Z95 * values.std(ddof=1) / np.sqrt(len(values)))


def energy_json(energy: EnergyAnalysis, timeline: InferenceTimeline) -> dict[str, object]:
    """The report's ``energy`` section (docs/report.md)."""
    info = energy.recording
    values = list(energy.inference_uj.values())

    def r(x: float | None, digits: int = 3) -> float | None:
        return None if x is None else round(x, digits)

    return {
        "simulated": info.simulated,
        "recording": {
            "path": info.path,
            "meter": info.meter,
            "sample_rate": info.sample_rate,
            "samples": info.samples,
            "quantity": info.quantity,
            "supply_voltage": info.voltage,
            "digital": {str(k): v for k, v in info.digital.items()},
        },
        "sync": energy.fit.to_json(),
        "inference": {
            "count": len(values),
            "mean_uj": r(energy.inference_mean_uj),
            "interval_uj": r(energy.inference_interval_uj),
            "min_uj": r(min(values)) if values else None,
            "max_uj": r(max(values)) if values else None,
            "other_uj": r(energy.other_uj),
            "engines_uj": {k: r(v) for k, v in sorted(energy.engines_uj.items())},
        },
        "idle": {"energy_uj": r(energy.idle_uj), "seconds": r(energy.idle_seconds, 6), "power_mw": r(energy.idle_mw)},
        "layers": [
            {
                "index": la.index,
                "name": timeline.layer(la.index).label,
                "engine": timeline.layer(la.index).engine.value,
                "executions": la.executions,
                "energy_uj": r(la.energy_uj, 4),
                "interval_uj": r(la.interval_uj, 4),
                "power_mw": r(la.power_mw),
                "samples": r(la.samples, 2),
                "method": la.method,
                "energy_share": r(la.energy_share, 4),
                "time_share": r(la.time_share, 4),
            }
            for la in sorted(energy.layers.values(), key=lambda la: la.index)
        ],
        "left_out": dict(energy.left_out),
        "notes": list(energy.notes),
    }
