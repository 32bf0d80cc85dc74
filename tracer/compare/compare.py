"""Comparing a new build with a base: per layer and per inference, how much, is it real, and why.

For the inference latency and for every layer (paired by :mod:`tracer.compare.models`):

* the **median and p99 change**, in cycles and in percent of the base, each with a confidence
  interval whose level holds (:mod:`tracer.compare.intervals`): over the captures when each side
  has several (a build is judged by its captures), else over the executions from their order
  statistics (a p99 too few executions can place gets no interval, and says why);
* **is it real**: with several captures a side, Welch's t test of the captures' medians; with one,
  the Mann-Whitney U test of the executions (the run-to-run variance is then not measured, and a
  note says so). The change is significant when its p-value is below ``alpha`` and the median's
  interval excludes no change. A deterministic target (every execution of a side the same number
  of cycles, as on the QEMU demo) has no noise: the change is exact, significant whenever it is
  not zero;
* the **verdict**: ``slower`` when the whole interval of the median's change lies beyond the
  threshold (and the change is significant), ``faster`` when it lies beyond minus the threshold,
  ``inconclusive`` when the interval straddles either and the change is significant or its
  estimate beyond the threshold (with the runs that would decide it), ``changed`` when
  significant and within the threshold, ``unchanged`` otherwise; ``not measured``
  when a side has no complete execution;
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
from tracer.analysis.statistics import nearest_rank, rank_index, summarize_sorted
from tracer.compare.digest import CaptureDigest, FindingKey, pool
from tracer.compare.distributions import normal_quantile
from tracer.compare.intervals import (
    MIN_PER_CAPTURE_P99,
    CaptureTest,
    Interval,
    capture_interval,
    capture_summaries,
    capture_test,
    execution_interval,
    min_executions,
)
from tracer.compare.models import LayerPair, MatchMode, check_same_model, pair_layers
from tracer.compare.plan import Plan, Variance, plan, to_decide, variance
from tracer.compare.significance import RankTest, mann_whitney_u

DEFAULT_THRESHOLD_PCT = 5.0
DEFAULT_ALPHA = 0.01
DEFAULT_POWER = 0.8
INFERENCE_LABEL = "inference"

# PMU counters by what they count (Ethos-U event names as tracer.telemetry.pmu_events gives them).
MEMORY_COUNTER_MARKS = ("AXI", "BEAT", "SRAM", "EXT_", "DMA")
COMPUTE_COUNTER_MARKS = ("MAC", "NPU_ACTIVE", "ACTIVE")


class Verdict(str, enum.Enum):
    """What a change amounts to."""

    SLOWER = "slower"
    FASTER = "faster"
    CHANGED = "changed"  # real, but within the threshold
    INCONCLUSIVE = "inconclusive"  # the interval straddles the threshold: more runs needed
    UNCHANGED = "unchanged"
    NOT_MEASURED = "not measured"


@dataclasses.dataclass(frozen=True)
class QuantileChange:
    """One quantile (median or p99) of the base and the new build.

    Attributes:
        base, new: The values (nearest rank).
        interval: The interval of the change (None: exact, or too few values; ``note`` says).
        note: Why there is no interval, when there is none and the change is not exact.
    """

    base: int
    new: int
    interval: Interval | None
    note: str | None = None

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
class Decide:
    """What would decide an inconclusive change: more runs of the unit the interval counts.

    Attributes:
        unit: ``captures`` or ``executions`` (per side).
        per_side: How many a side needs (None: the estimate sits on the threshold).
    """

    unit: str
    per_side: int | None


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
        test: The rank test over executions, or Welch's test over captures (None: exact or not
            measured).
        exact: Both sides had no spread at all: the change is exact.
        significant: The change is real (see the module docstring).
        verdict: What it amounts to.
        why: Where a layer's change comes from (None for the inference or not measured).
        unit: What the statistics count as independent: ``capture`` or ``execution`` (None: exact
            or not measured).
        captures: (base captures, new captures) that measured it.
        decide: For an inconclusive change, the runs that would decide it.
        variance: The variance components the plan is made from (None: not measured).
        plan: The runs a side needs to detect the comparison's planned change (None: exact, not
            measured, or no change planned).
    """

    label: str
    base_index: int | None
    new_index: int | None
    op: str
    base_count: int
    new_count: int
    p50: QuantileChange | None
    p99: QuantileChange | None
    test: RankTest | CaptureTest | None
    exact: bool
    significant: bool
    verdict: Verdict
    why: Why | None = None
    unit: str | None = None
    captures: tuple[int, int] = (0, 0)
    decide: Decide | None = None
    variance: Variance | None = None
    plan: Plan | None = None

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
        plan_pct, power: The change the plans of the changes detect, and with what power.
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
    plan_pct: float = 0.0
    power: float = 0.0

    @property
    def changes(self) -> tuple[Change, ...]:
        """The inference latency (if measured) and every layer."""
        return ((self.latency,) if self.latency is not None else ()) + self.layers

    @property
    def inconclusive(self) -> tuple[Change, ...]:
        """Changes whose interval straddles the threshold: neither a regression nor cleared."""
        return tuple(c for c in self.changes if c.verdict is Verdict.INCONCLUSIVE)

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
    plan_pct: float | None = None,
    power: float = DEFAULT_POWER,
) -> Comparison:
    """Compare the captures of a new build with those of a base.

    Args:
        base: The digests of the base build's captures (one or more).
        new: The digests of the new build's captures (one or more).
        threshold_pct: The smallest change that is a regression, in percent.
        alpha: The p-value a change must beat.
        mode: How the layers pair.
        plan_pct: The change each change's plan detects (default: the threshold, else 1 %).
        power: The power the plans give.

    Raises:
        ModelMismatch: The inputs are of different models (and ``mode`` does not allow it).
    """
    if not base or not new:
        raise ValueError("each side needs at least one input")
    for side, digests in (("base", base), ("new", new)):
        if mode is MatchMode.STRICT:
            check_same_model([(d.name, d.layers) for d in digests], side)
    b, n = pool(base), pool(new)
    pairs = pair_layers(b.layers, n.layers, mode)
    notes = []
    if b.clock_hz and n.clock_hz and b.clock_hz != n.clock_hz:
        notes.append(f"the builds count cycles of different clocks ({b.clock_hz:,} Hz and {n.clock_hz:,} Hz)")
    if plan_pct is None:
        plan_pct = threshold_pct if threshold_pct > 0 else 1.0
    rule = _Rule(threshold_pct, alpha, plan_pct, power)
    latency = None
    if len(b.latency) or len(n.latency):
        latency = _change(INFERENCE_LABEL, None, None, "", [d.latency for d in base], [d.latency for d in new], rule)
    layers = tuple(_layer_change(pair, b, n, base, new, rule) for pair in pairs)
    changes = ((latency,) if latency is not None else ()) + layers
    if any(c.unit == "execution" for c in changes):
        notes.append(run_to_run_note(len(base), len(new)))
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
        plan_pct=plan_pct,
        power=power,
    )


MIN_CAPTURES = 3  # captures a side advised to measure the run-to-run variance


def run_to_run_note(base: int, new: int) -> str:
    """What one capture on a side leaves unmeasured, and what would measure it."""
    sides = "each side has one capture" if base == new == 1 else f"a side has one capture ({base} against {new})"
    return (
        f"{sides}: the run-to-run variance (a capture or boot shifting as a whole: caches, "
        "clocks, temperature) is not measured, so intervals and p-values count executions and say "
        f"whether these captures differ, not the builds; at least {MIN_CAPTURES} captures a side "
        "(boots apart) measure it (2 at the very least)"
    )


@dataclasses.dataclass(frozen=True)
class _Rule:
    threshold: float
    alpha: float
    plan_pct: float
    power: float


def _parts(digests: Sequence[CaptureDigest], index: int | None) -> list[np.ndarray]:
    """Each capture's executions of layer ``index`` (empty where a capture has none)."""
    empty = np.zeros(0, np.int64)
    out = []
    for d in digests:
        samples = d.samples.get(index) if index is not None else None
        out.append(samples.cycles if samples is not None else empty)
    return out


def _layer_change(
    pair: LayerPair,
    b: CaptureDigest,
    n: CaptureDigest,
    base_digests: Sequence[CaptureDigest],
    new_digests: Sequence[CaptureDigest],
    rule: _Rule,
) -> Change:
    base = b.samples.get(pair.base) if pair.base is not None else None
    new = n.samples.get(pair.new) if pair.new is not None else None
    info = n.layers.get(pair.new) if pair.new is not None else None
    info = info or (b.layers.get(pair.base) if pair.base is not None else None)
    change = _change(
        pair.label,
        pair.base,
        pair.new,
        info.op if info else "",
        _parts(base_digests, pair.base),
        _parts(new_digests, pair.new),
        rule,
    )
    if base is None or new is None:
        return change
    engines = None
    if pair.base is not None and pair.new is not None:
        eb, en = b.layers[pair.base].engine.value, n.layers[pair.new].engine.value
        engines = (eb, en) if eb != en else None
    return dataclasses.replace(change, why=_why(base, new, rule.threshold, engines))


def _change(
    label: str,
    base_index: int | None,
    new_index: int | None,
    op: str,
    base_parts: Sequence[np.ndarray],
    new_parts: Sequence[np.ndarray],
    rule: _Rule,
) -> Change:
    base_parts = [p for p in base_parts if len(p)]
    new_parts = [p for p in new_parts if len(p)]
    base_values = np.concatenate(base_parts) if base_parts else np.zeros(0, np.int64)
    new_values = np.concatenate(new_parts) if new_parts else np.zeros(0, np.int64)
    nb, nn = len(base_values), len(new_values)
    captures = (len(base_parts), len(new_parts))
    if nb == 0 or nn == 0:
        return Change(
            label, base_index, new_index, op, nb, nn, None, None, None, False, False, Verdict.NOT_MEASURED,
            captures=captures,
        )  # fmt: skip
    base_sorted, new_sorted = np.sort(base_values), np.sort(new_values)
    sb, sn = summarize_sorted(base_sorted), summarize_sorted(new_sorted)
    exact = sb.min == sb.max and sn.min == sn.max
    if exact:
        p50 = QuantileChange(sb.p50, sn.p50, None)
        p99 = QuantileChange(sb.p99, sn.p99, None)
        significant = p50.delta != 0
        return Change(
            label, base_index, new_index, op, nb, nn, p50, p99, None, True, significant,
            _exact_verdict(significant, p50, rule.threshold), captures=captures,
        )  # fmt: skip
    test: RankTest | CaptureTest
    if min(captures) >= 2:
        unit = "capture"
        logs_b, logs_n = capture_summaries(base_parts, 0.5), capture_summaries(new_parts, 0.5)
        test = capture_test(logs_b, logs_n)
        p50 = QuantileChange(sb.p50, sn.p50, capture_interval(logs_b, logs_n, sb.p50))
        p99 = QuantileChange(sb.p99, sn.p99, None, _capture_p99_note(base_parts, new_parts))
        if p99.note is None:
            p99 = QuantileChange(
                sb.p99,
                sn.p99,
                capture_interval(capture_summaries(base_parts, 0.99), capture_summaries(new_parts, 0.99), sb.p99),
            )
    else:
        unit = "execution"
        test = mann_whitney_u(base_values, new_values)
        p50 = _execution_quantile(sb.p50, sn.p50, base_sorted, new_sorted, 0.5)
        p99 = _execution_quantile(sb.p99, sn.p99, base_sorted, new_sorted, 0.99)
    interval = p50.interval
    significant = test.p_value < rule.alpha and (interval is None or interval.excludes_zero())
    verdict = _verdict(significant, p50, rule.threshold)
    decide = None
    if verdict is Verdict.INCONCLUSIVE and interval is not None:
        decide = _decide(interval, rule.threshold, rule.alpha, captures if unit == "capture" else (nb, nn), unit)
    components = variance(base_parts, new_parts)
    planned = None if components is None else plan(components, rule.plan_pct, rule.alpha, rule.power)
    return Change(
        label, base_index, new_index, op, nb, nn, p50, p99, test, False, significant, verdict,
        unit=unit, captures=captures, decide=decide, variance=components, plan=planned,
    )  # fmt: skip


def _execution_quantile(
    base: int, new: int, base_sorted: np.ndarray, new_sorted: np.ndarray, q: float
) -> QuantileChange:
    interval = execution_interval(base_sorted, new_sorted, q)
    if interval is not None:
        return QuantileChange(base, new, interval)
    least = min_executions(q)
    fewest = min(len(base_sorted), len(new_sorted))
    name = "median" if q == 0.5 else f"p{round(q * 100)}"
    note = (
        f"no interval: a side has {fewest:,} executions and a two-sided 95 % interval of the {name} "
        f"needs at least {least:,} a side"
    )
    if q > 0.5 and rank_index(fewest, q) == fewest - 1:
        note += f" (the {name} of {fewest:,} executions is their maximum)"
    return QuantileChange(base, new, None, note)


def _capture_p99_note(base_parts: Sequence[np.ndarray], new_parts: Sequence[np.ndarray]) -> str | None:
    fewest = min(len(p) for p in [*base_parts, *new_parts])
    if fewest >= MIN_PER_CAPTURE_P99:
        return None
    return (
        f"no interval: a capture has {fewest:,} executions, so its p99 is its maximum; the p99's interval "
        f"over captures needs at least {MIN_PER_CAPTURE_P99} executions in every capture"
    )


def _decide(interval: Interval, threshold: float, alpha: float, units: tuple[int, int], unit: str) -> Decide:
    """The runs a side needs for the median's interval to leave the threshold it straddles (or,
    beyond it already, for the test to beat ``alpha``: the interval at ``1 - alpha`` to leave 0).
    """
    assert interval.low_pct is not None and interval.high_pct is not None
    low, high = interval.low_pct, interval.high_pct
    half, centre = (high - low) / 2, (high + low) / 2
    if low < threshold < high:
        gap = abs(centre - threshold)
    elif low < -threshold < high:
        gap = abs(centre + threshold)
    else:
        gap = abs(centre)
        half *= normal_quantile(1 - alpha / 2) / normal_quantile((1 + interval.confidence) / 2)
    per_side = to_decide(max(units), half, gap)
    return Decide("captures" if unit == "capture" else "executions", per_side)


def _exact_verdict(significant: bool, p50: QuantileChange, threshold: float) -> Verdict:
    """Without noise the change is what it is: beyond the threshold or not."""
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


def _verdict(significant: bool, p50: QuantileChange, threshold: float) -> Verdict:
    """Slower or faster when the interval lies beyond the threshold, inconclusive when it straddles
    it, else changed or unchanged (no interval: the point estimate, as for an exact change).
    """
    interval = p50.interval
    if interval is None or interval.low_pct is None or interval.high_pct is None:
        return _exact_verdict(significant, p50, threshold)
    low, high = interval.low_pct, interval.high_pct
    if threshold <= 0:
        if not significant:
            return Verdict.UNCHANGED
        return Verdict.SLOWER if low > 0 else Verdict.FASTER
    # Beyond the threshold at 95 % but the test does not beat alpha: not yet decided either.
    if low > threshold:
        return Verdict.SLOWER if significant else Verdict.INCONCLUSIVE
    if high < -threshold:
        return Verdict.FASTER if significant else Verdict.INCONCLUSIVE
    # Straddling the threshold: undecided when something changed or the estimate lies beyond it.
    # A change neither significant nor beyond the threshold is "unchanged" (no evidence of one);
    # the plan says how many runs would detect a change of the threshold's size.
    beyond = p50.pct is not None and abs(p50.pct) > threshold
    if (low < threshold < high or low < -threshold < high) and (significant or beyond):
        return Verdict.INCONCLUSIVE
    return Verdict.CHANGED if significant else Verdict.UNCHANGED


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
