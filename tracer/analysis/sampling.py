"""What a capture's sampler says, computed once: per-operator NPU time and CPU hot spots.

:class:`SamplingAccumulator` reads the sampler's samples (``InferenceTimeline.samples``), folds
the NPU samples into per-operator time against Vela's debug database
(:mod:`tracer.analysis.npu_operators`) and the PC samples into per-layer hot spots
(:mod:`tracer.analysis.hotspots`). :meth:`SamplingAnalysis.report_sections` gives the report's
``sampling``, ``npu_operators`` and ``cpu_hotspots`` sections; every view (text report, Perfetto,
the TUI) renders from this one object.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tracer.analysis.hotspots import CpuHotSpots, hot_spots, pc_layers
from tracer.analysis.npu_operators import (
    NpuOperatorProfile,
    SampledLayer,
    job_spans,
    profile_of_jobs,
    sampled_job,
    sampled_layers,
)
from tracer.base.samples import NpuSamples, PcSamples, SamplerInfo, Samples
from tracer.base.timeline import InferenceTimeline
from tracer.budget.model import Budget
from tracer.elf.inlines import CodeLocator


@dataclasses.dataclass(frozen=True)
class SamplingAnalysis:
    """A capture's samples, analysed.

    Attributes:
        samples: The decoded samples.
        npu: Per-operator NPU time (None without NPU samples).
        hotspots: CPU hot spots per layer (None without PC samples).
        overhead_share: The sampler's share of the target's time (its measured cost per interrupt
            times the interrupts taken, over the time they span), if the firmware measured it.
    """

    samples: Samples
    npu: NpuOperatorProfile | None
    hotspots: CpuHotSpots | None
    overhead_share: float | None

    @property
    def sampler(self) -> tuple[SamplerInfo, ...]:
        """What the firmware said about its sampling."""
        return self.samples.info

    def report_sections(self, per_inference: bool = False) -> dict[str, Any]:
        """The report's ``sampling`` section, and ``npu_operators`` / ``cpu_hotspots`` when there."""
        samples = self.samples
        out: dict[str, Any] = {
            "sampling": {
                "sampler": [info.to_json() for info in samples.info],
                "npu_samples": len(samples.npu),
                "pc_samples": len(samples.pc),
                "calibration_records": samples.calibration,
                "overhead_share": None if self.overhead_share is None else round(self.overhead_share, 6),
            }
        }
        if self.npu is not None:
            out["npu_operators"] = self.npu.to_json(per_inference)
        if self.hotspots is not None:
            out["cpu_hotspots"] = self.hotspots.to_json()
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class LayerBreakdown:
    """What the samples say inside one layer, for a compact view (the TUI's layer detail).

    Attributes:
        kind: ``npu operators`` (Vela operations of an NPU job) or ``cpu hot spots``.
        samples: Samples it rests on.
        parts: (name, share) pairs, largest first; shares add up to 1 (or less, for an NPU job
            whose NPU was idle part of the time).
        simulated: The NPU is simulated.
    """

    kind: str
    samples: int
    parts: tuple[tuple[str, float], ...]
    simulated: bool = False


def layer_breakdowns(sampling: SamplingAnalysis | None) -> dict[int, LayerBreakdown]:
    """Per layer index: the NPU operators of a mapped NPU job, else the CPU hot spots (if any)."""
    out: dict[int, LayerBreakdown] = {}
    if sampling is None:
        return out
    if sampling.hotspots is not None:
        for layer in sampling.hotspots.layers:
            parts = tuple((f.label, f.share) for f in layer.functions)
            out[layer.layer] = LayerBreakdown("cpu hot spots", layer.samples, parts)
    if sampling.npu is not None and sampling.npu.mapped:
        for job in sampling.npu.jobs:
            ops = sorted(job.operators, key=lambda op: -op.share)
            out[job.layer] = LayerBreakdown(
                "npu operators", job.samples, tuple((op.name, op.share) for op in ops), sampling.npu.simulated
            )
    return out


def sampling_analysis(
    timeline: InferenceTimeline, budget: Budget | None = None, locator: CodeLocator | None = None
) -> SamplingAnalysis | None:
    """Analyse one timeline's samples (the one-window case of :class:`SamplingAccumulator`; None
    when it has no sampler record at all).

    Args:
        timeline: The capture.
        budget: The budget; its Vela debug database's command streams map QREAD to operations.
        locator: Names PCs (``--elf``), inlined functions included.
    """
    sampling = SamplingAccumulator()
    sampling.add(timeline)
    sampling.add_jobs(timeline)
    return sampling.result(timeline, budget, locator)


def _pc_source(samples: Samples) -> str:
    return next((f"{info.how} PC samples" for info in samples.info if info.pc), "PC samples")


class SamplingAccumulator:
    """The sampling analysis of a capture's windows (a timeline read whole is one), from compact
    columns.

    First pass (:meth:`add`): every window's samples in time order (a window holds the records up
    to its end, so the windows' samples follow each other in time), the layer of each PC sample
    (the spans it fell in are in its window) and the NPU layers where a sample saw the NPU running.
    Second pass (:meth:`add_jobs`): the spans of those layers (every one counts to the job's mean
    time, sampled or not). Then :meth:`result`.
    """

    def __init__(self) -> None:
        self.any = False
        self.npu: list[NpuSamples] = []
        self.pc: list[PcSamples] = []  # each window's, in time order
        self.pc_layer: list[np.ndarray] = []
        self.info: list[SamplerInfo] = []
        self.calibration = 0
        self.layers: set[int] = set()
        self.spans: dict[int, list[tuple[np.ndarray, ...]]] = {}

    def add(self, window: InferenceTimeline) -> None:
        """First pass: the next window's samples."""
        samples = window.samples
        if samples.empty and not samples.info:
            return
        self.any = True
        npu = samples.npu.where(np.argsort(samples.npu.cycle, kind="stable"))
        self.npu.append(npu)
        self.layers |= sampled_layers(window, npu)
        pc = samples.pc
        order = np.argsort(pc.cycle, kind="stable")
        pc = PcSamples(pc.cycle[order], pc.pc[order], pc.exception[order], pc.inference[order])
        self.pc.append(pc)
        self.pc_layer.append(pc_layers(window, pc.cycle))
        self.info += samples.info
        self.calibration += samples.calibration

    def add_jobs(self, window: InferenceTimeline) -> None:
        """Second pass: the next window's spans of the sampled NPU layers."""
        for layer, part in job_spans(window, self.layers).items():
            self.spans.setdefault(layer, []).append(part)

    def result(
        self, timeline: InferenceTimeline, budget: Budget | None, locator: CodeLocator | None
    ) -> SamplingAnalysis | None:
        """The capture's sampling analysis (None: no sampler record); ``timeline`` has the capture's
        facts (clock, labels, layers).
        """
        if not self.any:
            return None
        npu, pc = NpuSamples.concat(self.npu), PcSamples.concat(self.pc)
        samples = Samples(npu, pc, tuple(self.info), self.calibration)
        profile = None
        if len(npu):
            jobs: list[SampledLayer] = []
            for layer in sorted(self.layers):
                parts = self.spans.get(layer, [])
                start, end, inference, pmu = (np.concatenate([p[k] for p in parts]) for k in range(4))
                jobs.append(sampled_job(layer, start, end, inference, pmu, npu))
            streams = budget.command_streams if budget is not None else ()
            profile = profile_of_jobs(timeline, jobs, npu, streams, budget.model.clock_hz if budget else None)
        hotspots = None
        if len(pc):
            layer_of = np.concatenate(self.pc_layer)
            hotspots = hot_spots(timeline, pc.pc, pc.exception, layer_of, locator, _pc_source(samples))
        return SamplingAnalysis(samples, profile, hotspots, _overhead(samples))


def _overhead(samples: Samples) -> float | None:
    costs = [info.cost_cycles for info in samples.info if info.cost_cycles is not None]
    # One interrupt per PC sample when the sampler takes them, else per NPU sample.
    ticks = samples.pc.cycle if len(samples.pc) else samples.npu.cycle
    if not costs or len(ticks) < 2:
        return None
    span = int(ticks.max()) - int(ticks.min())  # (in Python: a damaged stream's times can be 2**63 apart)
    return costs[-1] * len(ticks) / span if span > 0 else None
