"""Comparing a new build with a base: per layer and per inference, how much, is it real, and why.

For the inference latency and for every layer (paired by :mod:`tracer.compare.models`):

* the **median and p99 change**, in cycles and in percent of the base, each with a confidence
  interval whose level holds (:mod:`tracer.compare.intervals`): over the captures when there are
  three or more (a build is judged by its captures), else over the executions from their order
  statistics (a p99 too few executions can place gets no interval, and says why);
* **is it real**: with three captures or more, Welch's t test of the captures' medians; with one a side,
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

The statistics are in :mod:`tracer.compare.intervals`, the verdict in :mod:`tracer.compare.verdict`,
the why in :mod:`tracer.compare.why`. Besides: the arena and stack high-water marks of both builds (memory that grew by more than the
threshold is a regression too: "bigger"), and the findings that appeared or went away.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from tracer.analysis.statistics import summarize_sorted
from tracer.compare.digest import CaptureDigest, FindingKey, pool
from tracer.compare.intervals import CaptureTest, capture_interval, capture_summaries, capture_test
from tracer.compare.models import LayerPair, MatchMode, check_same_model, pair_layers
from tracer.compare.plan import Plan, Variance, plan, variance
from tracer.compare.significance import RankTest, mann_whitney_u
from tracer.compare.verdict import (
    Decide,
    QuantileChange,
    Rule,
    Verdict,
    capture_p99_note,
    decide,
    exact_verdict,
    execution_quantile,
    run_to_run_note,
    verdict,
)
from tracer.compare.why import Why, why
from tracer.errors import CaptureError

DEFAULT_THRESHOLD_PCT = 5.0
DEFAULT_ALPHA = 0.01
DEFAULT_POWER = 0.8
INFERENCE_LABEL = "inference"


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
    if plan_pct is None:
        plan_pct = threshold_pct if threshold_pct > 0 else 1.0
    rule = Rule(threshold_pct, alpha, plan_pct, power)
    latency = None
    if len(b.latency) or len(n.latency):
        latency = _change(INFERENCE_LABEL, None, None, "", [d.latency for d in base], [d.latency for d in new], rule)
    layers = tuple(_layer_change(pair, b, n, base, new, rule) for pair in pairs)
    changes = ((latency,) if latency is not None else ()) + layers
    if any(c.unit == "execution" for c in changes):
        notes.append(run_to_run_note())
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
    rule: Rule,
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
    return dataclasses.replace(change, why=why(base, new, rule.threshold, engines))


def _change(
    label: str,
    base_index: int | None,
    new_index: int | None,
    op: str,
    base_parts: Sequence[np.ndarray],
    new_parts: Sequence[np.ndarray],
    rule: Rule,
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
            exact_verdict(significant, p50, rule.threshold), captures=captures,
        )  # fmt: skip
    test: RankTest | CaptureTest
    if sum(captures) >= 3:  # the spread of captures is measured on at least one side
        unit = "capture"
        logs_b, logs_n = capture_summaries(base_parts, 0.5), capture_summaries(new_parts, 0.5)
        test = capture_test(logs_b, logs_n)
        p50 = QuantileChange(sb.p50, sn.p50, capture_interval(logs_b, logs_n, sb.p50))
        p99 = QuantileChange(sb.p99, sn.p99, None, capture_p99_note(base_parts, new_parts))
        if p99.note is None:
            p99 = QuantileChange(
                sb.p99,
                sn.p99,
                capture_interval(capture_summaries(base_parts, 0.99), capture_summaries(new_parts, 0.99), sb.p99),
            )
    else:
        unit = "execution"
        test = mann_whitney_u(base_values, new_values)
        p50 = execution_quantile(sb.p50, sn.p50, base_sorted, new_sorted, 0.5)
        p99 = execution_quantile(sb.p99, sn.p99, base_sorted, new_sorted, 0.99)
    interval = p50.interval
    significant = test.p_value < rule.alpha and (interval is None or interval.excludes_zero())
    outcome = verdict(significant, p50, rule.threshold)
    deciding = None
    if outcome is Verdict.INCONCLUSIVE and interval is not None:
        deciding = decide(interval, rule.threshold, rule.alpha, captures if unit == "capture" else (nb, nn), unit)
    components = variance(base_parts, new_parts)
    planned = None if components is None else plan(components, rule.plan_pct, rule.alpha, rule.power)
    return Change(
        label, base_index, new_index, op, nb, nn, p50, p99, test, False, significant, outcome,
        unit=unit, captures=captures, decide=deciding, variance=components, plan=planned,
    )  # fmt: skip


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
