"""Per-operator NPU time from QREAD samples: one NPU job opened up into Vela's operations.

A Vela command stream runs as one NPU job, so a layer span (TFLite Micro's ``ethos-u`` operator)
stops at the job. The sampler (``trc_sampler.h``, or a probe polling the registers) reads the
NPU's QREAD, the byte offset of the command it executes, now and then. Vela's debug database
gives, per command stream, the byte offset of each operation's kernel command (``queue``). While
operation *k* runs, the command processor reads on through the next operation's register set-up
and waits at its kernel command (or at the stream's end), so QREAD lies in ``(offset[k],
offset[k+1]]``: the running operation is the last one whose kernel command lies *before* QREAD.
QREAD at or before the first kernel command (the stream's opening weight transfers) counts to the
first operation. A sample whose STATUS says stopped counts to no operation: the NPU was idle
inside the job (before it started or after it finished).

Statistics, per sampled NPU layer over the complete inferences: operation *k* took a share
``p = n_k / N`` of the job (``n_k`` samples on it, ``N`` samples inside the job spans), so its
time per inference is ``p * mean(job cycles)``; ``p`` has a Wilson score interval at 95 %
(sampling error only: the spread of the job's own duration is not in it). With the job's PMU
cycle counter (``PMU_CYCLES`` of the span), the same share of it gives NPU cycles, compared
with Vela's estimate for the operation (``perf.op_cycles``); without it, time is compared with
Vela's cycles converted to the capture's clock. Per inference, each job's samples give
``n_k(i) / N(i) * cycles(i)``.

What is never shown is a wrong split: without a debug database, with one whose streams do not
match the sampled jobs (their number, or a stream length the offsets do not fit), or with several
streams in one layer, the result keeps the per-job view and says why.

One module although over 400 lines: the QREAD-to-operation rule and the statistics it feeds
(shares, cycles, Vela's ratios) are one method.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tracer.analysis.samples import layer_rows
from tracer.base.samples import NpuSamples
from tracer.base.timeline import Engine, InferenceTimeline, simulated_npu
from tracer.budget.command_stream import CommandStream

CONFIDENCE = 0.95
Z_95 = 1.959963984540054
# After its last kernel command a Vela stream holds only its closing commands (NPU_OP_STOP, a
# final wait or two): a stream much longer than that is another compile's.
TAIL_BYTES = 256
PMU_CYCLES = "PMU_CYCLES"
SETUP_NOTE = "QREAD before the first kernel command (the stream's opening transfers) counts to the first operation"


def wilson(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (``z`` = 1.96: 95 %)."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1 + z * z / trials
    center = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, center - half), min(1.0, center + half)


@dataclasses.dataclass(frozen=True, slots=True)
class OperatorTime:
    """One operation of a command stream, measured by sampling.

    Attributes:
        position: Its place in the stream (0, 1 ...).
        offset: Byte offset of its kernel command.
        name: Vela's name for it (its output tensor), else ``operator@offset``.
        operator: Vela's operation (``Conv2D`` ...).
        model_index: The model operator it comes from (TFLite operator index), if known.
        samples: Samples that fell on it.
        share, share_low, share_high: Its share of the job's time and the 95 % interval.
        cycles, cycles_low, cycles_high: Its time per inference in capture cycles (share times the
            mean job duration) and the interval.
        npu_cycles: The same share of the job's PMU cycle counter (NPU cycles), if measured.
        predicted_npu_cycles: Vela's estimate (NPU cycles at Vela's clock), if the database has it.
        predicted_cycles: That estimate in capture cycles (needs both clocks), else None.
        ratio: Measured over predicted: NPU cycles when the PMU measured them, else capture cycles.
    """

    position: int
    offset: int
    name: str
    operator: str
    model_index: int | None
    samples: int
    share: float
    share_low: float
    share_high: float
    cycles: float
    cycles_low: float
    cycles_high: float
    npu_cycles: float | None
    predicted_npu_cycles: float | None
    predicted_cycles: float | None
    ratio: float | None

    def to_json(self) -> dict[str, Any]:
        """As a JSON object (numbers rounded for reading)."""
        out = dataclasses.asdict(self)
        for key, value in out.items():
            if isinstance(value, float):
                out[key] = round(value, 6 if key.startswith("share") or key == "ratio" else 2)
        return out


@dataclasses.dataclass(frozen=True)
class SampledJob:
    """An NPU layer whose jobs were sampled, whole and (when mapped) per operation.

    Attributes:
        layer: The layer index.
        label: The layer's name (or ``op#index``).
        jobs: Job spans sampled (complete inferences only).
        samples: Samples inside those spans.
        running: Of which the NPU was running.
        cycles_mean: Mean job duration (capture cycles).
        npu_cycles_mean: Mean PMU cycle counter of the job, if measured.
        qbase: The command stream's address (low 32 bits) the samples saw, if one.
        qsize: Its length in bytes, if one.
        stream: The debug database's command stream id it was mapped to (None: not mapped).
        operators: Per operation (empty when not mapped).
        idle_share, idle_low, idle_high: Share of the job the NPU was not running, and interval.
        inference: Inference number of each job span (per-inference columns below).
        per_inference_cycles: Shape (jobs, operations): ``n_k(i) / N(i) * cycles(i)``, NaN where
            the job got no sample.
        per_inference_samples: Shape (jobs, operations): the samples each operation got.
    """

    layer: int
    label: str
    jobs: int
    samples: int
    running: int
    cycles_mean: float
    npu_cycles_mean: float | None
    qbase: int | None
    qsize: int | None
    stream: int | None
    operators: tuple[OperatorTime, ...]
    idle_share: float
    idle_low: float
    idle_high: float
    inference: np.ndarray
    per_inference_cycles: np.ndarray
    per_inference_samples: np.ndarray

    def to_json(self, per_inference: bool = False) -> dict[str, Any]:
        """As a JSON object (``per_inference`` adds the per-job estimates)."""
        out: dict[str, Any] = {
            "layer": self.layer,
            "label": self.label,
            "jobs": self.jobs,
            "samples": self.samples,
            "running": self.running,
            "cycles_mean": round(self.cycles_mean, 2),
            "npu_cycles_mean": None if self.npu_cycles_mean is None else round(self.npu_cycles_mean, 2),
            "qbase": self.qbase,
            "qsize": self.qsize,
            "stream": self.stream,
            "idle_share": round(self.idle_share, 6),
            "idle_interval": [round(self.idle_low, 6), round(self.idle_high, 6)],
            "operators": [op.to_json() for op in self.operators],
        }
        if per_inference and self.operators:
            out["per_inference"] = [
                {
                    "inference": int(n),
                    "cycles": [None if math.isnan(c) else round(float(c), 1) for c in row],
                    "samples": [int(s) for s in srow],
                }
                for n, row, srow in zip(self.inference, self.per_inference_cycles, self.per_inference_samples)
            ]
        return out


@dataclasses.dataclass(frozen=True)
class NpuOperatorProfile:
    """Per-operator NPU time of a capture, from sampled QREAD.

    Attributes:
        jobs: The sampled NPU layers, in layer order.
        mapped: True when every job was split into its operations.
        message: Why there is no per-operator split (None when mapped).
        notes: What a reader should know (how QREAD maps, what the numbers leave out).
        samples_total: NPU samples in the capture (calibration excluded).
        samples_outside: Of which outside any complete NPU job span (between jobs, incomplete
            inferences).
        confidence: The intervals' confidence level.
        achieved_hz: Samples per second of job time (needs the capture's clock).
        simulated: The NPU is simulated (the QEMU demo), as the capture says.
    """

    jobs: tuple[SampledJob, ...]
    mapped: bool
    message: str | None
    notes: tuple[str, ...]
    samples_total: int
    samples_outside: int
    confidence: float
    achieved_hz: float | None
    simulated: bool

    def to_json(self, per_inference: bool = False) -> dict[str, Any]:
        """The report's ``npu_operators`` section."""
        return {
            "mapped": self.mapped,
            "message": self.message,
            "notes": list(self.notes),
            "samples": self.samples_total,
            "samples_outside_jobs": self.samples_outside,
            "confidence": self.confidence,
            "achieved_hz": None if self.achieved_hz is None else round(self.achieved_hz, 3),
            "simulated": self.simulated,
            "jobs": [job.to_json(per_inference) for job in self.jobs],
        }


@dataclasses.dataclass
class SampledLayer:
    """One sampled layer's spans and the samples inside them."""

    layer: int
    start: np.ndarray
    end: np.ndarray
    inference: np.ndarray
    pmu_cycles: np.ndarray | None
    sample_rows: list[np.ndarray]  # per span: indices into the samples


def profile_of_jobs(
    timeline: InferenceTimeline,
    jobs: list[SampledLayer],
    npu: NpuSamples,
    streams: Sequence[CommandStream] = (),
    budget_clock_hz: int | None = None,
) -> NpuOperatorProfile:
    """The profile of the sampled NPU layers ``jobs`` (:func:`sampled_job`, in layer order) and
    the NPU samples ``npu`` (in time order); ``timeline`` gives the clock, labels and layer names.
    """
    inside = sum(int(sum(len(r) for r in job.sample_rows)) for job in jobs)
    simulated = simulated_npu(timeline.labels)
    notes: list[str] = []
    if not jobs:
        return NpuOperatorProfile(
            (),
            False,
            "no NPU sample fell inside an NPU layer of a complete inference",
            (),
            len(npu),
            len(npu),
            CONFIDENCE,
            None,
            simulated,
        )
    message = _mapping_problem(jobs, npu, streams)
    mapped = message is None
    if mapped:
        notes.append(SETUP_NOTE)
    notes.append("intervals: sampling error only (95 % Wilson score); the job's own spread is not in them")
    results = []
    for k, job in enumerate(jobs):
        stream = streams[k] if mapped else None
        results.append(_job_result(timeline, job, npu, stream, budget_clock_hz))
    job_cycles = sum(float((j.end - j.start).sum()) for j in jobs)
    achieved = inside / (job_cycles / timeline.clock_hz) if timeline.clock_hz and job_cycles > 0 else None
    return NpuOperatorProfile(
        tuple(results), mapped, message, tuple(notes), len(npu), len(npu) - inside, CONFIDENCE, achieved, simulated
    )


def _job_rows(timeline: InferenceTimeline) -> np.ndarray:
    """Which spans can be sampled NPU jobs: complete spans of NPU layers in complete inferences."""
    spans = timeline.spans
    complete_numbers = timeline.inferences.number[timeline.inferences.complete]
    # (layer by layer, not span by span: a capture has many spans of few layers)
    npu_layers = [i for i in np.unique(spans.layer).tolist() if timeline.layer(int(i)).engine is Engine.NPU]
    is_npu = np.isin(spans.layer, npu_layers)
    return is_npu & spans.complete & np.isin(spans.inference, complete_numbers)


def sampled_layers(timeline: InferenceTimeline, npu: NpuSamples) -> set[int]:
    """The NPU layers of ``timeline`` where the NPU was seen running inside a span (``npu`` in
    time order).
    """
    spans = timeline.spans
    if not len(spans) or not len(npu):
        return set()
    lo = np.searchsorted(npu.cycle, spans.start, "left")
    hi = np.searchsorted(npu.cycle, spans.end, "right")
    running_before = np.concatenate([[0], np.cumsum(npu.running)])
    keep = _job_rows(timeline) & (running_before[hi] > running_before[lo])
    return set(spans.layer[keep].tolist())


def job_spans(
    timeline: InferenceTimeline, layers: Iterable[int]
) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per layer of ``layers``: start, end, inference and PMU cycle counter (-1: not measured) of
    every span of the layer that counts to its job (a job that got no sample still lasted).
    """
    spans = timeline.spans
    rows = np.flatnonzero(_job_rows(timeline)) if len(spans) else np.zeros(0, np.int64)
    grouped = {layer: rows[at] for layer, at in layer_rows(spans.layer[rows])}  # one pass, not one per layer
    column = spans.pmu_names.index(PMU_CYCLES) if PMU_CYCLES in spans.pmu_names else None
    out = {}
    for layer in layers:
        mine = grouped.get(layer, np.zeros(0, np.int64))
        pmu = spans.pmu[mine, column] if column is not None else np.full(len(mine), -1, np.int64)
        out[layer] = (spans.start[mine], spans.end[mine], spans.inference[mine], pmu)
    return out


def sampled_job(
    layer: int, start: np.ndarray, end: np.ndarray, inference: np.ndarray, pmu: np.ndarray, npu: NpuSamples
) -> SampledLayer:
    """A sampled NPU layer from its spans (:func:`job_spans`) and the NPU samples in time order."""
    lo = np.searchsorted(npu.cycle, start, "left")
    hi = np.searchsorted(npu.cycle, end, "right")
    return SampledLayer(
        layer=layer,
        start=start,
        end=end,
        inference=inference,
        pmu_cycles=pmu if (pmu >= 0).all() else None,
        sample_rows=[np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist())],
    )


def _mapping_problem(jobs: list[SampledLayer], npu: NpuSamples, streams: Sequence[CommandStream]) -> str | None:
    """Why the samples cannot be split into operations, or None."""
    if not streams:
        return (
            "no Vela debug database with command streams given (vela --enable-debug-db writes "
            "<model>_debug.xml; pass it with --budget): NPU jobs are shown whole"
        )
    if len(streams) != len(jobs):
        return (
            f"{streams[0].source}: {len(streams)} command stream(s), but the capture has {len(jobs)} sampled "
            "NPU layer(s) per inference: the database is from another compile; NPU jobs are shown whole"
        )
    for job, stream in zip(jobs, streams):
        rows = np.concatenate(job.sample_rows) if job.sample_rows else np.zeros(0, np.int64)
        running = rows[npu.running[rows]]
        if not len(running):
            continue
        bases, sizes = np.unique(npu.qbase[running]), np.unique(npu.qsize[running])
        if len(bases) > 1 or len(sizes) > 1:
            return (
                f"layer {job.layer} ran {max(len(bases), len(sizes))} different command streams (QBASE/QSIZE): "
                "which operation a QREAD belongs to is ambiguous; NPU jobs are shown whole"
            )
        size = int(sizes[0])
        last = stream.offsets[-1] if stream.operations else 0
        top = int(npu.qread[running].max())
        if not stream.operations or last >= size or size - last > TAIL_BYTES or top > size:
            return (
                f"{stream.source}: command stream {stream.id}'s last kernel command is at byte {last}, but the "
                f"sampled stream of layer {job.layer} is {size} bytes long (QSIZE) and QREAD reached {top}: "
                "the offsets do not fit the stream, the database is from another compile; NPU jobs are "
                "shown whole"
            )
    return None


def _job_result(
    timeline: InferenceTimeline, job: SampledLayer, npu: NpuSamples, stream: CommandStream | None, budget_hz: int | None
) -> SampledJob:
    cycles = (job.end - job.start).astype(np.float64)
    n_per_span = np.array([len(r) for r in job.sample_rows], np.int64)
    total = int(n_per_span.sum())
    rows = np.concatenate(job.sample_rows) if job.sample_rows else np.zeros(0, np.int64)
    run_mask = npu.running[rows]
    running = int(run_mask.sum())
    idle_lo, idle_hi = wilson(total - running, total)
    bases, sizes = np.unique(npu.qbase[rows[run_mask]]), np.unique(npu.qsize[rows[run_mask]])
    mean_cycles = float(cycles.mean())
    mean_pmu = float(job.pmu_cycles.mean()) if job.pmu_cycles is not None else None
    operators: list[OperatorTime] = []
    n_ops = len(stream.operations) if stream is not None else 0
    per_samples = np.zeros((len(job.sample_rows), n_ops), np.int64)
    if stream is not None:
        offsets = np.array(stream.offsets, np.int64)
        for i, span_rows in enumerate(job.sample_rows):
            mine = span_rows[npu.running[span_rows]]
            which = np.maximum(np.searchsorted(offsets, npu.qread[mine], "left") - 1, 0)
            per_samples[i] = np.bincount(which, minlength=n_ops)
        counts = per_samples.sum(axis=0)
        clock = timeline.clock_hz
        for k, op in enumerate(stream.operations):
            share = counts[k] / total if total else 0.0
            low, high = wilson(int(counts[k]), total)
            npu_cycles = share * mean_pmu if mean_pmu is not None else None
            predicted = op.op_cycles
            predicted_capture = predicted * clock / budget_hz if predicted is not None and clock and budget_hz else None
            if npu_cycles is not None and predicted:
                ratio: float | None = npu_cycles / predicted
            elif predicted_capture:
                ratio = share * mean_cycles / predicted_capture
            else:
                ratio = None
            operators.append(
                OperatorTime(
                    position=k,
                    offset=op.offset,
                    name=op.label,
                    operator=op.operator,
                    model_index=op.model_index,
                    samples=int(counts[k]),
                    share=share,
                    share_low=low,
                    share_high=high,
                    cycles=share * mean_cycles,
                    cycles_low=low * mean_cycles,
                    cycles_high=high * mean_cycles,
                    npu_cycles=npu_cycles,
                    predicted_npu_cycles=predicted,
                    predicted_cycles=predicted_capture,
                    ratio=ratio,
                )
            )
    with np.errstate(invalid="ignore", divide="ignore"):
        per_cycles = per_samples / n_per_span[:, None] * cycles[:, None]
    info = timeline.layer(job.layer)
    return SampledJob(
        layer=job.layer,
        label=info.label,
        jobs=len(job.sample_rows),
        samples=total,
        running=running,
        cycles_mean=mean_cycles,
        npu_cycles_mean=mean_pmu,
        qbase=int(bases[0]) if len(bases) == 1 else None,
        qsize=int(sizes[0]) if len(sizes) == 1 else None,
        stream=stream.id if stream is not None else None,
        operators=tuple(operators),
        idle_share=(total - running) / total if total else 0.0,
        idle_low=idle_lo,
        idle_high=idle_hi,
        inference=job.inference,
        per_inference_cycles=per_cycles,
        per_inference_samples=per_samples,
    )
