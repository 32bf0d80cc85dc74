"""Target cycles fitted to meter time: matching the meter's edges to the firmware's sync marks.

The firmware sets a pin the meter records on a digital input and emits a SYNC_PIN record with
the cycle right after (``trc_sync_pin``); without sync records, a pin the firmware sets at each
inference's begin and clears at its end does (the marks are then the inference records). The
edges are matched to the marks in order, by level, trying the meter having started late or
early by up to :data:`MAX_SHIFT` edges (as many edges as marks: each edge is its mark); a straight line ``sample = offset + scale * cycle`` is
fitted over the matched pairs (least squares): the offset says when the meter started, the scale
the two clocks' ratio, whose departure from nominal is the drift (ppm). A fit that does not hold
is refused, saying why: too few marks, levels that do not match, residuals above
:data:`MAX_RMS_SAMPLES` / :data:`MAX_RESIDUAL_SAMPLES`, a drift too large to be a clock's, or
marks so regular that another pairing fits as well.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.base.timeline import InferenceTimeline
from tracer.errors import CaptureError
from tracer.power.edges import Edges

MAX_SHIFT = 16  # edges the meter may have seen before the first mark (or missed), either way
MIN_PAIRS = 3
MAX_RMS_SAMPLES = 1.0  # edge quantisation alone gives 0.29
MAX_RESIDUAL_SAMPLES = 3.0
MAX_DRIFT_PPM = 20_000.0  # crystals are within +-100 ppm, RC oscillators within 1-2 %


class SyncError(CaptureError):
    """The meter's time could not be tied to the target's (exit 3), said in words."""


@dataclasses.dataclass(frozen=True)
class Marks:
    """Moments the target set its sync pin: cycle and the level set, in order."""

    cycle: np.ndarray
    level: np.ndarray
    method: str  # "sync pin" or "inference edges"
    meter_input: int | None  # the input the firmware named (SYNC_PIN records), else None


@dataclasses.dataclass(frozen=True)
class ClockFit:
    """``sample = offset + scale * cycle``: meter samples (0 = the recording's first) from cycles.

    Attributes:
        offset, scale: The line.
        nominal_scale: ``sample_rate / clock_hz`` (None: the target's clock is unknown).
        drift_ppm: How far the meter's clock runs from the target's, relative to nominal.
        pairs: Edges matched to marks; skipped: edges before the first matched one.
        rms, worst: Residuals of the fit, in samples.
        method: ``sync pin`` or ``inference edges``; meter_input: the digital input used.
        cycles: The first and last matched mark's cycle (where the fit is measured).
    """

    offset: float
    scale: float
    nominal_scale: float | None
    drift_ppm: float | None
    pairs: int
    skipped: int
    rms: float
    worst: float
    method: str
    meter_input: int
    cycles: tuple[int, int]

    def samples(self, cycles: np.ndarray) -> np.ndarray:
        """Meter time, in samples, of target ``cycles``."""
        return self.offset + self.scale * (np.asarray(cycles, np.float64) - self.cycles[0])

    def to_json(self) -> dict[str, object]:
        """The fit, for the report."""
        return {
            "method": self.method,
            "meter_input": self.meter_input,
            "pairs": self.pairs,
            "skipped_edges": self.skipped,
            "drift_ppm": None if self.drift_ppm is None else round(self.drift_ppm, 2),
            "residual_rms_samples": round(self.rms, 3),
            "residual_max_samples": round(self.worst, 3),
        }


def marks_of(timeline: InferenceTimeline) -> Marks:
    """The sync marks of ``timeline``: its sync pins, else its inferences' begin and end."""
    sync = timeline.sync_pins
    if sync:
        return Marks(
            np.array([p.cycle for p in sync], np.int64),
            np.array([p.level for p in sync], np.int8),
            "sync pin",
            min(p.meter_input for p in sync),
        )
    inf = timeline.inferences
    ok = (inf.start >= 0) & (inf.end >= 0)
    cycles = np.column_stack((inf.start[ok], inf.end[ok])).ravel()
    levels = np.tile(np.array([1, 0], np.int8), int(ok.sum()))
    return Marks(cycles, levels, "inference edges", None)


def fit_clock(marks: Marks, edges: Edges, sample_rate: float, clock_hz: int | None, meter_input: int) -> ClockFit:
    """Match ``edges`` to ``marks`` and fit the line; :class:`SyncError` saying why when it does not hold."""
    where = f"digital input {meter_input}"
    if len(marks.cycle) == 0:
        raise SyncError(
            "no sync marks: the capture has no SYNC_PIN records (trc_sync_pin) and no complete inference "
            "to take its begin and end from"
        )
    if len(edges.position) == 0:
        raise SyncError(
            f"the meter saw no edge on {where}: is the sync pin wired to it, and was it recorded? "
            f"({len(marks.cycle)} {marks.method} marks in the capture)"
        )
    nominal = sample_rate / clock_hz if clock_hz else None
    tried = []
    for shift in range(-MAX_SHIFT, MAX_SHIFT + 1):
        trial = _try(marks, edges, shift, nominal)
        if trial is not None:
            tried.append(trial)
    if not tried:
        raise SyncError(
            f"the {len(edges.position)} edges on {where} do not match the {len(marks.cycle)} {marks.method} marks "
            f"in level and order, whichever edge is taken as the first mark's (up to {MAX_SHIFT} either way): "
            "wrong input, or a pin the firmware sets elsewhere too"
        )
    tried.sort(key=lambda t: t[0])
    each_its_own = len(edges.position) == len(marks.cycle) and any(t[2] == 0 for t in tried)
    if each_its_own:
        tried.sort(key=lambda t: t[2] != 0)  # as many edges as marks: each edge is its mark
    rms, worst, shift, offset, scale, pairs, first_cycle, last_cycle = tried[0]
    if rms > MAX_RMS_SAMPLES or worst > MAX_RESIDUAL_SAMPLES:
        raise SyncError(
            f"the meter's edges on {where} do not follow the {marks.method} marks on a straight line: residuals "
            f"{rms:.2f} samples RMS, {worst:.1f} at worst (at most {MAX_RMS_SAMPLES:g} and "
            f"{MAX_RESIDUAL_SAMPLES:g}): the meter lost samples, the clock's drift is not steady, or the edges "
            "are not this capture's"
        )
    if not each_its_own and len(tried) > 1 and tried[1][0] <= MAX_RMS_SAMPLES and tried[1][1] <= MAX_RESIDUAL_SAMPLES:
        raise SyncError(
            f"the {marks.method} marks are too regular to tell which meter edge is which: pairings "
            f"{tried[0][2]:+d} and {tried[1][2]:+d} edges apart fit as well ({len(edges.position)} edges, "
            f"{len(marks.cycle)} marks); start the meter before the firmware, or call trc_sync_pin at "
            "irregular moments"
        )
    drift = None if nominal is None else (scale / nominal - 1.0) * 1e6
    if drift is not None and abs(drift) > MAX_DRIFT_PPM:
        raise SyncError(
            f"the fit puts the meter's clock {drift / 1e4:+.2f} % off the target's ({clock_hz} Hz): no clock "
            "drifts so far; the target's clock rate or the meter's sample rate is wrong"
        )
    return ClockFit(
        offset, scale, nominal, drift, pairs, max(shift, 0), rms, worst, marks.method, meter_input,
        (first_cycle, last_cycle),
    )  # fmt: skip


def _try(
    marks: Marks, edges: Edges, shift: int, nominal: float | None
) -> tuple[float, float, int, float, float, int, int, int] | None:
    """Mark ``i`` paired with edge ``i + shift``: the fit's (rms, worst, shift, offset, scale,
    pairs, first cycle, last cycle), or None when levels disagree or too few pairs.
    """
    m0, e0 = max(0, -shift), max(0, shift)
    n = min(len(marks.cycle) - m0, len(edges.position) - e0)
    if n < MIN_PAIRS:
        return None
    cycles = marks.cycle[m0 : m0 + n]
    pos = edges.position[e0 : e0 + n]
    if (marks.level[m0 : m0 + n] != edges.level[e0 : e0 + n]).any():
        return None
    x = (cycles - cycles[0]).astype(np.float64)
    if x[-1] <= 0:
        return None
    scale, offset = np.polyfit(x, pos, 1)
    if scale <= 0 or (nominal is not None and abs(scale / nominal - 1.0) * 1e6 > 10 * MAX_DRIFT_PPM):
        return None
    residual = pos - (offset + scale * x)
    return (
        float(np.sqrt(np.mean(residual**2))), float(np.abs(residual).max()), shift, float(offset), float(scale),
        n, int(cycles[0]), int(cycles[-1]),
    )  # fmt: skip
