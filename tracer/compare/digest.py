"""What one capture contributes to a comparison or a dataset, in compact columns: a digest.

A digest keeps, per layer, the cycles of every complete execution and the interrupt cycles
inside them (numpy integers in the smallest type that holds them, no Python object per
execution), the sums of each PMU counter, the latency of every complete inference, the memory
high-water marks, the findings and the model (the layer list). Everything else about the capture
is summarised by its :class:`~tracer.analysis.analyze.Analysis`, which the digest is made from:
the digest only keeps the values that comparing sets of captures needs pooled.

Digests pool: the digest of several captures (one side of a comparison, or the windows of one
long capture) is their concatenation (:func:`pool`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from tracer.analysis.layer_stats import complete_latencies
from tracer.analysis.result import Analysis
from tracer.analysis.samples import LayerSamples, add_counts, compact, pool_layers
from tracer.base.timeline import NPU_PMU_LABEL, SIMULATED, LayerInfo, simulated_npu

NOTHING_MEASURED = "no-measurements"  # the finding of an input (or a window) with nothing in it


@dataclasses.dataclass(frozen=True)
class FindingKey:
    """A finding, as compared across builds: its kind, its layer, its severity and message."""

    id: str
    severity: str
    layer: int | None
    message: str

    @property
    def key(self) -> tuple[str, int | None]:
        """What makes two findings the same across captures: the kind and the layer."""
        return (self.id, self.layer)


@dataclasses.dataclass(frozen=True)
class CaptureDigest:
    """One capture (or a pool of several) in the compact form comparisons read.

    Attributes:
        names: The inputs it covers (paths as given).
        layers: The model: every layer the inputs describe or measured, by index.
        samples: Per layer index, its complete executions.
        latency: Latency of every complete inference.
        inferences: Inferences seen, complete or not.
        complete: Complete inferences.
        clock_hz: The clock the cycles count (None: unknown or different between inputs).
        arena_used: The highest arena use reported (bytes), if any.
        arena_size: The arena's size, if reported.
        stacks: Per stack: (highest high-water mark, size, canary intact in every report).
        findings: Every distinct finding.
        labels: What the inputs' headers say (build, board, clocks ...): the values all inputs share.
        warnings: Damage found while reading.
        excluded: Per layer, executions left out because their inference is incomplete.
    """

    names: tuple[str, ...]
    layers: Mapping[int, LayerInfo]
    samples: Mapping[int, LayerSamples]
    latency: np.ndarray
    inferences: int
    complete: int
    clock_hz: int | None
    arena_used: int | None
    arena_size: int | None
    stacks: Mapping[str, tuple[int, int, bool]]
    findings: tuple[FindingKey, ...]
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    excluded: Mapping[int, int] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        """One line naming the inputs."""
        if len(self.names) == 1:
            return self.names[0]
        return f"{len(self.names)} captures ({self.names[0]} ...)"

    @property
    def executions(self) -> int:
        """Complete layer executions."""
        return sum(len(s.cycles) for s in self.samples.values())


def digest(analysis: Analysis, name: str, labels: Mapping[str, str] | None = None) -> CaptureDigest:
    """The digest of one analysed capture or log (its executions as the analysis keeps them, read
    whole or in windows).

    Args:
        analysis: The capture's analysis.
        name: How to name the input.
        labels: The capture's labels (:func:`tracer.pipeline.provenance.capture_labels`, user labels);
            ``npu_pmu=simulated`` is added when the capture's NPU PMU is simulated (its NPU layers'
            times are then not comparable with a planner's estimate).
    """
    timeline = analysis.timeline
    samples = analysis.complete_executions
    inf = timeline.inferences
    memory = analysis.memory
    layers = {i: timeline.layer(i) for i in sorted(set(timeline.layers) | set(samples))}
    return CaptureDigest(
        names=(name,),
        layers=layers,
        samples=samples,
        latency=compact(complete_latencies(inf)),
        inferences=len(inf),
        complete=int(inf.complete.sum()),
        clock_hz=timeline.clock_hz,
        arena_used=memory.arena_used,
        arena_size=memory.arena_size,
        stacks={s.name: (s.high_water, s.size, s.canary_ok) for s in memory.stacks},
        findings=tuple(FindingKey(f.id, f.severity.value, f.layer, f.message) for f in analysis.findings),
        labels={**({NPU_PMU_LABEL: SIMULATED} if simulated_npu(timeline.labels) else {}), **(labels or {})},
        warnings=tuple(analysis.facts.warnings),
        excluded={i: st.excluded for i, st in analysis.layers.items() if st.excluded},
    )


def pool(digests: Sequence[CaptureDigest]) -> CaptureDigest:
    """The digest of several captures together (executions and latencies concatenated, the
    highest memory marks, every distinct finding, the labels they share).

    The layer descriptions come from the first digest that has each layer; whether the inputs are
    of one model is checked before pooling (:func:`tracer.compare.models.check_same_model`).
    """
    if not digests:
        raise ValueError("nothing to pool")
    if len(digests) == 1:
        return digests[0]
    layers: dict[int, LayerInfo] = {}
    for d in digests:
        for index, info in d.layers.items():
            layers.setdefault(index, info)
    samples = pool_layers([d.samples for d in digests])
    clocks = {d.clock_hz for d in digests}
    stacks: dict[str, tuple[int, int, bool]] = {}
    for d in digests:
        for stack, (high, size, ok) in d.stacks.items():
            old = stacks.get(stack, (0, size, True))
            stacks[stack] = (max(old[0], high), size, old[2] and ok)
    shared = dict(digests[0].labels)
    for d in digests[1:]:
        shared = {k: v for k, v in shared.items() if d.labels.get(k) == v}
    return CaptureDigest(
        names=tuple(n for d in digests for n in d.names),
        layers=dict(sorted(layers.items())),
        samples=samples,
        latency=compact(np.concatenate([d.latency for d in digests])),
        inferences=sum(d.inferences for d in digests),
        complete=sum(d.complete for d in digests),
        clock_hz=clocks.pop() if len(clocks) == 1 else None,
        arena_used=_highest(d.arena_used for d in digests),
        arena_size=_highest(d.arena_size for d in digests),
        stacks=stacks,
        findings=tuple(_first_of_each(f for d in digests for f in d.findings)),
        labels=shared,
        warnings=tuple(w for d in digests for w in d.warnings),
        excluded=add_counts([d.excluded for d in digests]),
    )


def _first_of_each(findings: Iterable[FindingKey]) -> list[FindingKey]:
    """The first finding of each kind and layer."""
    first: dict[tuple[str, int | None], FindingKey] = {}
    for finding in findings:
        first.setdefault(finding.key, finding)
    return list(first.values())


def _highest(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None
