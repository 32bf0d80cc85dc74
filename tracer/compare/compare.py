"""Comparing a new build with a base: per layer and per inference, how much, is it real, and why.

For the inference latency and for every layer (paired by :mod:`tracer.compare.models`):

* the **median and p99 change**, in cycles and in percent of the base, each with a bootstrap
  confidence interval (:func:`~tracer.compare.significance.bootstrap_change`);
* **is it real**: with repeats (several executions on each side), the Mann-Whitney U test; the
  change is significant when its p-value is below ``alpha`` and the median's interval excludes
  no change. A deterministic target (every execution of a side the same number of cycles, as on
  the QEMU demo) has no noise: the change is exact, significant whenever it is not zero;
* the **verdict**: ``slower`` when significant and the median grew by more than the threshold,
  ``faster`` when it shrank by more, ``changed`` when significant but within the threshold,
  ``unchanged`` otherwise; ``not measured`` when a side has no complete execution;
* **why** (layers): the change of the layer's own time (without interrupts) against the change
  of the interrupt time inside it, the PMU counters that moved (NPU active and MAC counters:
  compute; AXI beats: memory traffic), an engine change (an NPU layer now on the CPU).

Besides: the arena and stack high-water marks of both builds (memory that grew by more than the
threshold is a regression too: "bigger"), and the findings that appeared or went away.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

import numpy as np

from tracer.analysis.samples import LayerSamples
from tracer.analysis.statistics import nearest_rank, summarize_sorted
from tracer.compare.digest import CaptureDigest, FindingKey, pool
from tracer.compare.models import LayerPair, MatchMode, check_same_model, pair_layers
from tracer.compare.significance import Interval, RankTest, bootstrap_change, mann_whitney_u
from tracer.errors import CaptureError

DEFAULT_THRESHOLD_PCT = 5.0
DEFAULT_ALPHA = 0.01
INFERENCE_LABEL = "inference"

# PMU counters by what they count (Ethos-U event names as tracer.telemetry.pmu_events gives them).
MEMORY_COUNTER_MARKS = ("AXI", "BEAT", "SRAM", "EXT_", "DMA")
COMPUTE_COUNTER_MARKS = ("MAC", "NPU_ACTIVE", "ACTIVE")


class Verdict(str, enum.Enum):
    """What a change amounts to."""

    SLOWER = "slower"
    FASTER = "faster"
    CHANGED = "changed"  # real, but within the threshold
    UNCHANGED = "unchanged"
    NOT_MEASURED = "not measured"


@dataclasses.dataclass(frozen=True)
class QuantileChange:
    """One quantile (median or p99) of the base and the new build.

    Attributes:
        base, new: The values (nearest rank).
        interval: The bootstrap interval of the change (None: exact, or too few values).
    """

    base: int
    new: int
    interval: Interval | None

    @property
    def delta(self) -> int:
        """New minus base, in cycles."""
        return self.new - self.base

    @property
    def pct(self) -> float | None:
        """The change in percent of the base (None for a base of 0)."""
        return 100.0 * self.delta / self.base if self.base else None


@dataclasses.dataclass(frozen=True)
class CounterChange:
    """A PMU counter's mean per execution in both builds.

    Attributes:
        name: The counter.
        kind: ``memory``, ``compute`` or ``other``.
        base, new: The means (None: not measured on that side).
    """

    name: str
    kind: str
    base: float | None
    new: float | None

    @property
    def pct(self) -> float | None:
        """The change in percent of the base."""
        if self.base is None or self.new is None or not self.base:
            return None
        return 100.0 * (self.new - self.base) / self.base


@dataclasses.dataclass(frozen=True)
class Why:
    """Where a layer's change comes from.

    Attributes:
        own: Median own cycles (without interrupts) of both builds.
        interrupts: Mean interrupt cycles per execution of both builds.
        counters: Every PMU counter measured on either side.
        moved: The counters whose mean moved by more than the threshold.
        bound: ``memory``, ``compute`` or None: what the moved counters point at.
        engine: (base engine, new engine) when the layer changed engine, else None.
    """

    own: tuple[int, int]
    interrupts: tuple[float, float]
    counters: tuple[CounterChange, ...]
    moved: tuple[CounterChange, ...]
    bound: str | None
    engine: tuple[str, str] | None


@dataclasses.dataclass(frozen=True)
class Change:
    """The inference latency or one layer, base against new.

    Attributes:
        label: ``inference`` or the layer's name.
        base_index, new_index: The layer's index in each build (None for the inference, or a
            layer only one build has).
        op: The layer's operator ('' for the inference).
        base_count, new_count: Values on each side.
        p50, p99: The median and p99 of both sides (None: a side has no values).
        test: The rank test (None: exact or not measured).
        exact: Both sides had no spread at all: the change is exact.
        significant: The change is real (see the module docstring).
        verdict: What it amounts to.
        why: Where a layer's change comes from (None for the inference or not measured).
    """

    label: str
    base_index: int | None
    new_index: int | None
    op: str
    base_count: int
    new_count: int
    p50: QuantileChange | None
    p99: QuantileChange | None
    test: RankTest | None
    exact: bool
    significant: bool
    verdict: Verdict
    why: Why | None = None

    @property
    def is_layer(self) -> bool:
        """True for a layer, False for the inference latency."""
        return self.base_index is not None or self.new_index is not None


@dataclasses.dataclass(frozen=True)
class MemoryChange:
    """A memory high-water mark of both builds.

    Attributes:
        name: ``arena`` or ``stack NAME``.
        base, new: Bytes (None: not reported on that side).
        size: The region's size in the new build (else the base's), if known.
        grew: It grew by more than the threshold (a regression).
    """

    name: str
    base: int | None
    new: int | None
    size: int | None
    grew: bool

    @property
    def delta(self) -> int | None:
        """New minus base, in bytes."""
        return None if self.base is None or self.new is None else self.new - self.base


@dataclasses.dataclass(frozen=True)
class Comparison:
    """A new build against a base.

    Attributes:
        base, new: The pooled digests of each side.
        mode: How layers were paired.
        threshold_pct: Changes beyond this are regressions (or improvements).
        alpha: The p-value a change must beat to be real.
        latency: The inference latency (None: no complete inference on either side).
        layers: Every layer pair, in the new build's order.
        memory: The arena and every stack.
        appeared: Findings the new build has and the base has not.
        gone: Findings the base has and the new build has not.
        notes: Things to know about the comparison itself (different clocks ...).
    """

    base: CaptureDigest
    new: CaptureDigest
    mode: MatchMode
    threshold_pct: float
    alpha: float
    latency: Change | None
    layers: tuple[Change, ...]
    memory: tuple[MemoryChange, ...]
    appeared: tuple[FindingKey, ...]
    gone: tuple[FindingKey, ...]
    notes: tuple[str, ...] = ()

    @property
    def changes(self) -> tuple[Change, ...]:
        """The inference latency (if measured) and every layer."""
        return ((self.latency,) if self.latency is not None else ()) + self.layers

    @property
    def regressions(self) -> tuple[Change, ...]:
        """Changes that are significant and slower beyond the threshold."""
        return tuple(c for c in self.changes if c.verdict is Verdict.SLOWER)

    @property
    def memory_regressions(self) -> tuple[MemoryChange, ...]:
        """Memory marks that grew beyond the threshold."""
        return tuple(m for m in self.memory if m.grew)

    @property
    def passed(self) -> bool:
        """No regression in time or memory."""
        return not self.regressions and not self.memory_regressions


def compare(
    base: Sequence[CaptureDigest],
    new: Sequence[CaptureDigest],
    *,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    alpha: float = DEFAULT_ALPHA,
    mode: MatchMode = MatchMode.STRICT,
) -> Comparison:
    """Compare the captures of a new build with those of a base.

    Args:
        base: The digests of the base build's captures (one or more).
        new: The digests of the new build's captures (one or more).
        threshold_pct: The smallest change that is a regression, in percent.
        alpha: The p-value a change must beat.
        mode: How the layers pair.

    Raises:
        ModelMismatch: The inputs are of different models (and ``mode`` does not allow it).
        CaptureError: An input measured nothing (exit 3).
    """
    if not base or not new:
        raise ValueError("each side needs at least one input")
    for side, digests in (("base", base), ("new", new)):
        for d in digests:
            if not (d.inferences or d.executions or d.arena_used is not None or d.stacks):
                # Before the models are held side by side: "10 layers against 0" would call an
                # empty or wrong file another model, and two empty files would compare as a pass.
                raise CaptureError(
                    f"{d.name} ({side}): nothing measured: no inference, layer execution or memory "
                    "report in it (an empty or cut capture, the wrong file, or firmware without "
                    "tracer's records)"
                )
        if mode is MatchMode.STRICT:
            check_same_model([(d.name, d.layers) for d in digests], side)
    b, n = pool(base), pool(new)
    pairs = pair_layers(b.layers, n.layers, mode)
    notes = []
    if b.clock_hz and n.clock_hz and b.clock_hz != n.clock_hz:
        notes.append(f"the builds count cycles of different clocks ({b.clock_hz:,} Hz and {n.clock_hz:,} Hz)")
    latency = None
    if len(b.latency) or len(n.latency):
        latency = _change(INFERENCE_LABEL, None, None, "", b.latency, n.latency, threshold_pct, alpha)
    layers = tuple(_layer_change(pair, b, n, threshold_pct, alpha) for pair in pairs)
    base_keys = {f.key for f in b.findings}
    new_keys = {f.key for f in n.findings}
    return Comparison(
        base=b,
        new=n,
        mode=mode,
        threshold_pct=threshold_pct,
        alpha=alpha,
        latency=latency,
        layers=layers,
        memory=_memory(b, n, threshold_pct),
        appeared=tuple(f for f in n.findings if f.key not in base_keys),
        gone=tuple(f for f in b.findings if f.key not in new_keys),
        notes=tuple(notes),
    )


def _layer_change(pair: LayerPair, b: CaptureDigest, n: CaptureDigest, threshold: float, alpha: float) -> Change:
    base = b.samples.get(pair.base) if pair.base is not None else None
    new = n.samples.get(pair.new) if pair.new is not None else None
    info = n.layers.get(pair.new) if pair.new is not None else None
    info = info or (b.layers.get(pair.base) if pair.base is not None else None)
    empty = np.zeros(0, np.int64)
    change = _change(
        pair.label,
        pair.base,
        pair.new,
        info.op if info else "",
        base.cycles if base else empty,
        new.cycles if new else empty,
        threshold,
        alpha,
    )
    if base is None or new is None:
        return change
    engines = None
    if pair.base is not None and pair.new is not None:
        eb, en = b.layers[pair.base].engine.value, n.layers[pair.new].engine.value
        engines = (eb, en) if eb != en else None
    return dataclasses.replace(change, why=_why(base, new, threshold, engines))


def _change(
    label: str,
    base_index: int | None,
    new_index: int | None,
    op: str,
    base_values: np.ndarray,
    new_values: np.ndarray,
    threshold: float,
    alpha: float,
) -> Change:
    nb, nn = len(base_values), len(new_values)
    if nb == 0 or nn == 0:
        return Change(label, base_index, new_index, op, nb, nn, None, None, None, False, False, Verdict.NOT_MEASURED)
    base_sorted, new_sorted = np.sort(base_values), np.sort(new_values)
    sb, sn = summarize_sorted(base_sorted), summarize_sorted(new_sorted)
    exact = sb.min == sb.max and sn.min == sn.max
    if exact:
        p50 = QuantileChange(sb.p50, sn.p50, None)
        p99 = QuantileChange(sb.p99, sn.p99, None)
        test = None
        significant = p50.delta != 0
    else:
        p50 = QuantileChange(sb.p50, sn.p50, bootstrap_change(base_sorted, new_sorted, 0.5))
        p99 = QuantileChange(sb.p99, sn.p99, bootstrap_change(base_sorted, new_sorted, 0.99))
        test = mann_whitney_u(base_values, new_values)
        assert p50.interval is not None
        significant = test.p_value < alpha and p50.interval.excludes_zero()
    return Change(
        label,
        base_index,
        new_index,
        op,
        nb,
        nn,
        p50,
        p99,
        test,
        exact,
        significant,
        _verdict(significant, p50, threshold),
    )


def _verdict(significant: bool, p50: QuantileChange, threshold: float) -> Verdict:
    if not significant:
        return Verdict.UNCHANGED
    pct = p50.pct
    if pct is None:  # a base of zero cycles: any growth is beyond any threshold
        return Verdict.SLOWER if p50.delta > 0 else Verdict.FASTER
    if pct > threshold:
        return Verdict.SLOWER
    if pct < -threshold:
        return Verdict.FASTER
    return Verdict.CHANGED


def _why(base: LayerSamples, new: LayerSamples, threshold: float, engines: tuple[str, str] | None) -> Why:
    own = (nearest_rank(base.own_cycles, 0.5), nearest_rank(new.own_cycles, 0.5))
    interrupts = (_mean(base.isr_cycles), _mean(new.isr_cycles))
    counters = []
    for name in sorted({*base.pmu, *new.pmu}):
        counters.append(CounterChange(name, counter_kind(name), base.pmu_mean(name), new.pmu_mean(name)))
    moved = tuple(c for c in counters if c.pct is not None and abs(c.pct) > threshold)
    return Why(own, interrupts, tuple(counters), moved, _bound(moved), engines)


def counter_kind(name: str) -> str:
    """``memory`` (AXI beats, SRAM and external memory traffic), ``compute`` (MAC, NPU active) or ``other``."""
    upper = name.upper()
    if any(mark in upper for mark in MEMORY_COUNTER_MARKS):
        return "memory"
    if any(mark in upper for mark in COMPUTE_COUNTER_MARKS):
        return "compute"
    return "other"


def _bound(moved: Sequence[CounterChange]) -> str | None:
    """What grew most among the counters that moved up: memory traffic or compute."""
    grew = [c for c in moved if (c.pct or 0) > 0 and c.kind in ("memory", "compute")]
    if not grew:
        return None
    return max(grew, key=lambda c: c.pct or 0).kind


def _mean(values: np.ndarray | None) -> float:
    return float(values.mean()) if values is not None and len(values) else 0.0


def _memory(b: CaptureDigest, n: CaptureDigest, threshold: float) -> tuple[MemoryChange, ...]:
    out = []
    if b.arena_used is not None or n.arena_used is not None:
        out.append(_memory_change("arena", b.arena_used, n.arena_used, n.arena_size or b.arena_size, threshold))
    for name in dict.fromkeys([*b.stacks, *n.stacks]):
        base, new = b.stacks.get(name), n.stacks.get(name)
        size = (new or base or (0, None, True))[1]
        out.append(_memory_change(f"stack {name}", base[0] if base else None, new[0] if new else None, size, threshold))
    return tuple(out)


def _memory_change(name: str, base: int | None, new: int | None, size: int | None, threshold: float) -> MemoryChange:
    grew = base is not None and new is not None and new > base and (not base or 100.0 * (new - base) / base > threshold)
    return MemoryChange(name, base, new, size, grew)
