"""A timeline laid out as trace-viewer tracks: what the Perfetto and Chrome JSON exports draw.

Tracks, in this order:

* ``Inferences``: one slice per inference (latency, complete, problems);
* one track per engine, ``CPU`` and ``NPU``: one slice per layer execution, named by the layer,
  with its cycles, the budget's prediction and the ratio as arguments; executions that overlap on
  one engine (possible only in damaged data) go to extra lanes ``CPU #2`` ...; an execution of zero
  length is an instant;
* one track per interrupt (``ISR SysTick`` ...), from the timeline's ISR slices;
* ``NPU jobs`` (slices), ``Cache maintenance``, ``Marks`` and ``Console`` (instants);
* counter tracks: ``Power (uW)`` with a power recording (each layer execution's attributed mean
  power, the time between layers, idle), ``Arena used``, ``Stack <name> high-water``, and one per NPU PMU counter
  (``NPU PMU <counter>``: its delta over each NPU layer, as a step: the value from the layer's start
  to its end, then 0; "(simulated)" when the capture says the values are).

Time: nanoseconds from the timeline's cycles at its one clock (``ns = cycles * 1e9 / clock_hz``,
rounded); with no known clock one cycle is drawn as one nanosecond and the title says so. CPU
timings an FVP produced carry "model estimate" in the CPU track's name and in each slice's args.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Mapping
from typing import Any

import numpy as np

from tracer.analysis.result import Analysis
from tracer.base.timeline import NPU_PMU_LABEL, SIMULATED, Engine, InferenceTimeline, simulated_npu
from tracer.export.perfetto_events import CounterValue, Instant, Slice, Track
from tracer.export.sampling_layout import add_sampling_tracks

INFERENCES = "Inferences"
NPU_JOBS = "NPU jobs"
CACHE = "Cache maintenance"
MARKS = "Marks"
CONSOLE = "Console"
ARENA = "Arena used"
MODEL_ESTIMATE = "model estimate"


@dataclasses.dataclass
class TraceLayout:
    """Everything to draw, track by track.

    Attributes:
        title: The process name (the model or the capture).
        clock_hz: The clock the cycles were converted with (None: 1 cycle drawn as 1 ns).
        tracks: In display order.
        slices, instants, counters: Events, each in time order per track.
    """

    title: str
    clock_hz: int | None
    tracks: list[Track]
    slices: list[Slice]
    instants: list[Instant]
    counters: list[CounterValue]


class CycleClock:
    """Cycles to nanoseconds at one clock (exact integer arithmetic, rounded to the nearest ns)."""

    def __init__(self, clock_hz: int | None) -> None:
        self.hz = clock_hz if clock_hz and clock_hz > 0 else None

    def ns(self, cycles: int) -> int:
        """The time of cycle ``cycles`` in ns."""
        if self.hz is None:
            return int(cycles)
        return (int(cycles) * 1_000_000_000 + self.hz // 2) // self.hz


def layout(analysis: Analysis) -> TraceLayout:
    """Lay an analysed timeline out in tracks (see the module docstring).

    The process is named after the budget's model (else the timeline's source); layer slices carry
    the budget's predicted cycles in the capture's clock; a sampler's results add the tracks of
    :mod:`tracer.export.sampling_layout`.
    """
    timeline = analysis.timeline
    comparison = analysis.comparison
    predicted = comparison.predicted_cycles if comparison is not None else {}
    clock = CycleClock(timeline.clock_hz)
    name = (comparison.budget.model.name if comparison is not None else "") or timeline.source or "capture"
    if clock.hz is None:
        name += " (clock unknown: 1 cycle drawn as 1 ns)"
    if "cycles" in timeline.labels:
        name += f" [{timeline.labels['cycles']}]"
    out = TraceLayout(name, clock.hz, [], [], [], [])
    seen: dict[str, Track] = {}

    def track(track_name: str, counter: bool = False, unit: str = "") -> str:
        if track_name not in seen:
            seen[track_name] = Track(track_name, counter, unit)
            out.tracks.append(seen[track_name])
        return track_name

    _inferences(timeline, clock, out, track)
    _layers(timeline, clock, predicted, out, track)
    _isrs(timeline, clock, out, track)
    _npu_jobs(timeline, clock, out, track)
    _moments(timeline, clock, out, track)
    _memory(timeline, clock, out, track)
    if analysis.energy is not None:  # the power lane (issue 28)
        _power(analysis, clock, out, track)
    sampling = analysis.sampling
    if sampling is not None:  # NPU operators inside the job, QREAD, PC samples
        add_sampling_tracks(out, timeline, sampling, clock, track)
    out.tracks.sort(key=lambda t: t.counter)  # lanes first, counters below them (stable)
    return out


def _inferences(timeline: InferenceTimeline, clock: CycleClock, out: TraceLayout, track: Any) -> None:
    inf = timeline.inferences
    for i in range(len(inf)):
        start, end = int(inf.start[i]), int(inf.end[i])
        if start < 0:
            continue
        args: dict[str, Any] = {"inference": int(inf.number[i]), "complete": bool(inf.complete[i])}
        if inf.problems[i]:
            args["problems"] = "; ".join(inf.problems[i])
        name = f"inference {int(inf.number[i])}" + ("" if inf.complete[i] else " (incomplete)")
        if end > start:
            args["latency_cycles"] = end - start
            out.slices.append(Slice(track(INFERENCES), clock.ns(start), clock.ns(end), name, "inference", args))
        else:
            out.instants.append(Instant(track(INFERENCES), clock.ns(start), name, "inference", args))


def _layers(
    timeline: InferenceTimeline, clock: CycleClock, predicted: Mapping[int, float], out: TraceLayout, track: Any
) -> None:
    spans = timeline.spans
    if not len(spans):
        return
    estimate = MODEL_ESTIMATE in timeline.labels.get("cpu_cycles", "") or timeline.clock_source == MODEL_ESTIMATE
    simulated = simulated_npu(timeline.labels)
    order = np.lexsort((spans.end, spans.start))
    # Per engine: the lanes whose last slice may still run (a heap by end cycle) and the lanes free
    # (a heap by number). Starts only grow, so a lane once free stays free until it is taken: the
    # lowest free lane is found without scanning every lane (overlapping spans make thousands).
    busy: dict[str, list[tuple[int, int]]] = {}
    free: dict[str, list[int]] = {}
    lane_count: dict[str, int] = {}
    pmu_tracks = {j: f"NPU PMU {n}" for j, n in enumerate(spans.pmu_names)}
    infos = {i: timeline.layer(i) for i in set(spans.layer.tolist())}
    engines = {info.engine for info in infos.values()}
    if Engine.CPU in engines:
        track("CPU (" + MODEL_ESTIMATE + ")" if estimate else "CPU")
    if Engine.NPU in engines:
        track("NPU")
    cols = (
        spans.inference.tolist(),
        spans.layer.tolist(),
        spans.start.tolist(),
        spans.end.tolist(),
        spans.complete.tolist(),
        spans.isr_cycles.tolist(),
    )
    pmu = spans.pmu
    for r in order.tolist():
        number, index, start, end, complete, isr = (c[r] for c in cols)
        info = infos[index]
        engine = info.engine
        base = "NPU" if engine is Engine.NPU else ("CPU (" + MODEL_ESTIMATE + ")" if estimate else "CPU")
        running, idle = busy.setdefault(base, []), free.setdefault(base, [])
        while running and running[0][0] <= start:
            heapq.heappush(idle, heapq.heappop(running)[1])
        if idle:
            lane = heapq.heappop(idle)
        else:
            lane = lane_count.get(base, 0)
            lane_count[base] = lane + 1
        heapq.heappush(running, (end, lane))
        name_of_track = track(base if lane == 0 else f"{base} #{lane + 1}")
        cycles = end - start
        args: dict[str, Any] = {
            "layer": index,
            "op": info.op,
            "engine": engine.value,
            "inference": number,
            "cycles": cycles,
            "complete": bool(complete),
        }
        if isr:
            args["isr_cycles"] = isr
        guess = predicted.get(index)
        if guess:
            args["predicted_cycles"] = round(guess, 3)
            args["ratio"] = round(cycles / guess, 4)
        if engine is Engine.CPU and estimate:
            args["timing"] = MODEL_ESTIMATE
        row = pmu[r].tolist() if pmu.shape[1] else []
        counters = {spans.pmu_names[j]: int(v) for j, v in enumerate(row) if v >= 0}
        for counter, value in counters.items():
            args[f"pmu.{counter}"] = value
        if counters and simulated:
            args[NPU_PMU_LABEL] = SIMULATED
        label = info.label + ("" if complete else " (incomplete)")
        if end > start:
            out.slices.append(Slice(name_of_track, clock.ns(start), clock.ns(end), label, "layer", args))
        else:
            out.instants.append(Instant(name_of_track, clock.ns(start), label, "layer", args))
        for j, value in enumerate(row):
            if value >= 0 and end > start:
                counter_track = track(pmu_tracks[j] + (" (simulated)" if simulated else ""), True, "count")
                out.counters.append(CounterValue(counter_track, clock.ns(start), int(value)))
                out.counters.append(CounterValue(counter_track, clock.ns(end), 0))


def _isrs(timeline: InferenceTimeline, clock: CycleClock, out: TraceLayout, track: Any) -> None:
    lanes: dict[str, int] = {}
    for isr in sorted(timeline.isrs, key=lambda s: (s.start, -s.end)):
        base = f"ISR {isr.name or f'exception {isr.exception}'}"
        # The same handler cannot preempt itself; a second lane only guards against damaged data.
        name = base if lanes.get(base, -1) <= isr.start else f"{base} #2"
        lanes[name] = isr.end
        args: dict[str, Any] = {"exception": isr.exception, "depth": isr.depth, "cycles": isr.end - isr.start}
        if isr.repaired:
            args["repaired"] = "exit lost in an overflow; inferred"
        if isr.end > isr.start:
            out.slices.append(Slice(track(name), clock.ns(isr.start), clock.ns(isr.end), base[4:], "isr", args))
        else:
            out.instants.append(Instant(track(name), clock.ns(isr.start), base[4:], "isr", args))


def _npu_jobs(timeline: InferenceTimeline, clock: CycleClock, out: TraceLayout, track: Any) -> None:
    lane_end = -1
    for job in sorted(timeline.npu_jobs, key=lambda j: j.start):
        args = {"job": job.job, "inference": job.inference}
        name = f"NPU job {job.job}"
        if job.end is not None and job.end > job.start and job.start >= lane_end:
            args["cycles"] = job.end - job.start
            out.slices.append(Slice(track(NPU_JOBS), clock.ns(job.start), clock.ns(job.end), name, "npu-job", args))
            lane_end = job.end
        else:
            out.instants.append(Instant(track(NPU_JOBS), clock.ns(job.start), name, "npu-job", args))


def _moments(timeline: InferenceTimeline, clock: CycleClock, out: TraceLayout, track: Any) -> None:
    for op in timeline.cache_ops:
        out.instants.append(
            Instant(
                track(CACHE),
                clock.ns(op.cycle),
                f"{op.op} 0x{op.address:08x} +{op.length}",
                "cache",
                {"op": op.op, "address": f"0x{op.address:08x}", "length": op.length, "inference": op.inference},
            )
        )
    for mark in timeline.marks:
        args = {"id": mark.id} if mark.value is None else {"id": mark.id, "value": mark.value}
        name = f"mark {mark.id}" + ("" if mark.value is None else f" = {mark.value}")
        out.instants.append(Instant(track(MARKS), clock.ns(mark.cycle), name, "mark", args))
    for line in timeline.console:
        if line.cycle is not None and line.text.strip():
            out.instants.append(
                Instant(track(CONSOLE), clock.ns(line.cycle), line.text[:200], "console", {"text": line.text})
            )


def _memory(timeline: InferenceTimeline, clock: CycleClock, out: TraceLayout, track: Any) -> None:
    for sample in timeline.arena:
        if sample.cycle is not None:
            out.counters.append(CounterValue(track(ARENA, True, "bytes"), clock.ns(sample.cycle), sample.used))
    for stack in timeline.stacks:
        if stack.cycle is not None:
            name = track(f"Stack {stack.stack} high-water", True, "bytes")
            out.counters.append(CounterValue(name, clock.ns(stack.cycle), stack.high_water))


def _power(analysis: Analysis, clock: CycleClock, out: TraceLayout, track: Any) -> None:
    """``Power (uW)``: each segment's attributed mean power (a layer, the time between, idle)."""
    energy = analysis.energy
    assert energy is not None
    name = "Power (uW, simulated meter)" if energy.recording.simulated else "Power (uW)"
    lane = track(name, True, "count")
    for cycle, mw in zip(energy.power_cycles.tolist(), energy.power_mw.tolist()):
        out.counters.append(CounterValue(lane, clock.ns(cycle), round(mw * 1e3)))
