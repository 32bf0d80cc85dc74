"""Jitter: how much each layer's time varies, which executions are outliers, and why.

Per layer, over the complete inferences: the distribution of cycles (histogram, p50/p99/max,
coefficient of variation), the same for its *own* time (interrupt handlers and other RTOS tasks
taken out), and the *outliers*: executions slower than the median by more than the threshold
(20 % by default) and more than three robust standard deviations (1.4826 x the median absolute
deviation). Each outlier gets one cause, tried in this order:

- ``preemption``: interrupt handlers ran inside it, and with the time other tasks took they make
  at least half of the excess; the handlers took more of it than tasks did;
- ``task preemption``: the same, but other RTOS tasks took more of it than handlers did (the
  task lane, :mod:`tracer.telemetry.tasks`);
- ``more work``: the layer did more work on this run, in proportion to its extra own time: by the
  firmware's work count, the instructions it retired, or the NPU PMU's data beats
  (:mod:`tracer.analysis.work_evidence`);
- ``warm-up``: it belongs to the leading run of slow executions from the first inference on (at
  most a quarter of them): cold caches, lazy initialisation, first-time allocation;
- ``contention``: an NPU layer that did the same work (its PMU work counters within 5 % of the
  layer's median) in more NPU cycles or with more idle/stall cycles: it waited on the memory bus;
  or a CPU layer slower with no handler or task inside and no work measure that explains it (bus
  or memory contention: DMA, the NPU on a shared bus, cache misses);
- ``unexplained``: an NPU layer whose PMU shows neither more work nor more waiting.

Each layer also gets its *share* of the inference (its slowest run over the median inference
latency) and whether the budget marks it data-dependent: a layer under the minimum share, or a
data-dependent one whose outliers could be more work, has jitter that is information, not a
warning (:meth:`LayerJitter.information_only`).

Cycle counts come from the unwrapped 64-bit time of the decoder, so a 32-bit counter wrap inside
a layer or a handler changes nothing here.

The jitter is one accumulator (:class:`JitterAccumulator`, a section of
:class:`~tracer.analysis.accumulate.AnalysisAccumulator`): it keeps each window's executions
compact, settles each layer's capture-wide reference (median, MAD, work and PMU medians), then
runs these rules on each window against it; a timeline read whole is one window
(:func:`analyse_jitter`).

Over 400 lines: the outlier rules and the accumulator that runs them share each layer's reference
and the judged parts; split, each half would name the other's internals.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from tracer.analysis.by_layer import ByLayer, MeasuredByLayer, layer_groups
from tracer.analysis.isr import slice_columns, slice_names, span_of
from tracer.analysis.layer_stats import latency_columns
from tracer.analysis.samples import LayerSamples, compact
from tracer.analysis.settings import JitterSettings
from tracer.analysis.statistics import (
    MAD_TO_SIGMA,
    CycleSummary,
    Tally,
    coefficient_of_variation,
    histogram_sorted,
    nearest_rank,
    summarize_sorted,
)
from tracer.analysis.tasks import task_label
from tracer.analysis.work_evidence import (
    MORE,
    OTHER,
    SAME,
    UNMEASURED,
    LayerWork,
    PmuRoles,
    median_measured,
    pmu_roles,
    work_columns,
)
from tracer.base.timeline import Engine, InferenceTimeline

ROBUST_SIGMAS = 3.0
MAX_LISTED = 20  # outliers listed per layer (all are counted)

PREEMPTION = "preemption"
TASK_PREEMPTION = "task preemption"
WARM_UP = "warm-up"
CONTENTION = "contention"
MORE_WORK = "more work"
UNEXPLAINED = "unexplained"
CAUSES = (PREEMPTION, TASK_PREEMPTION, WARM_UP, CONTENTION, MORE_WORK, UNEXPLAINED)
WORK_COULD_EXPLAIN = (CONTENTION, UNEXPLAINED)  # causes a data-dependent layer's extra work may hide behind


@dataclasses.dataclass(frozen=True)
class Outlier:
    """One slow execution of a layer, with its cause.

    Attributes:
        inference: Inference number.
        layer: Layer index.
        cycles: Its cycles.
        median: The layer's median cycles.
        isr_cycles: Handler cycles inside it.
        cause: One of :data:`CAUSES`.
        detail: The evidence for the cause (handlers, tasks, work measures, PMU counters ...).
        task_cycles: Cycles other RTOS tasks took from it (handler time left out).
    """

    inference: int
    layer: int
    cycles: int
    median: int
    isr_cycles: int
    cause: str
    detail: dict[str, Any]
    task_cycles: int = 0

    @property
    def ratio(self) -> float:
        """Cycles over the median."""
        return self.cycles / self.median if self.median else float("inf")

    def to_json(self) -> dict[str, Any]:
        """As listed in the report's ``jitter.layers[].listed``."""
        return {
            "inference": self.inference,
            "cycles": self.cycles,
            "ratio": round(self.ratio, 3),
            "isr_cycles": self.isr_cycles,
            "task_cycles": self.task_cycles,
            "cause": self.cause,
            **self.detail,
        }


@dataclasses.dataclass(frozen=True)
class LayerJitter:
    """One layer's distribution and outliers.

    Attributes:
        index: Layer index.
        count: Complete executions.
        p50, p99, max: Nearest-rank percentiles of cycles.
        cv: Coefficient of variation (std / mean) of cycles.
        own_p50, own_cv: The same for its own time (handler and other tasks' time taken out).
        histogram: (bin edges, counts) of cycles.
        outliers: Number of outliers.
        causes: Number of outliers per cause (the causes found).
        listed: The first outliers, in inference order (up to :data:`MAX_LISTED`).
        warm_up_runs: Outliers put down to warm-up.
        steady_p50: The steady-state median (of the executions outside the warm-up run).
        outlier_inferences: The inference of every outlier, in inference order (not only the listed).
        outlier_causes: The cause of each of them.
        share: Its slowest run over the median latency of the complete inferences (None: no
            inference latency).
        min_share: The minimum share in force (a fraction), under which its jitter is information.
        data_dependent: The budget marks it data-dependent.
        work_measures: The work measures its runs have (``work_count``, ``INST_RETIRED`` ...).
    """

    index: int
    count: int
    p50: int
    p99: int
    max: int
    cv: float
    own_p50: int
    own_cv: float
    histogram: tuple[list[int], list[int]]
    outliers: int
    causes: dict[str, int]
    listed: list[Outlier]
    warm_up_runs: int
    steady_p50: int
    outlier_inferences: tuple[int, ...] = ()
    outlier_causes: tuple[str, ...] = ()
    share: float | None = None
    min_share: float = 0.0
    data_dependent: bool = False
    work_measures: tuple[str, ...] = ()

    @property
    def small(self) -> bool:
        """Its slowest run takes under the minimum share of the inference."""
        return self.share is not None and self.share < self.min_share

    def information_only(self, cause: str) -> str:
        """Why outliers of ``cause`` in this layer are information, not a warning ("" if they are not)."""
        if self.small:
            assert self.share is not None
            return (
                f"at its slowest it takes {self.share:.2%} of the inference, under the minimum share of "
                f"{self.min_share:.2%}"
            )
        if self.data_dependent and cause in WORK_COULD_EXPLAIN:
            return "the budget marks the layer data-dependent: its spread is expected"
        return ""

    def to_json(self, name: str = "") -> dict[str, Any]:
        """The report's ``jitter.layers[]`` entry."""
        return {
            "index": self.index,
            "name": name,
            "count": self.count,
            "p50": self.p50,
            "p99": self.p99,
            "max": self.max,
            "cv": round(self.cv, 5),
            "own_p50": self.own_p50,
            "own_cv": round(self.own_cv, 5),
            "histogram": {"edges": self.histogram[0], "counts": self.histogram[1]},
            "outliers": self.outliers,
            "causes": self.causes,
            "warm_up_runs": self.warm_up_runs,
            "steady_p50": self.steady_p50,
            "share": None if self.share is None else round(self.share, 6),
            "data_dependent": self.data_dependent,
            "work_measures": list(self.work_measures),
            "listed": [o.to_json() for o in self.listed],
        }


@dataclasses.dataclass(frozen=True)
class JitterAnalysis:
    """Jitter of a capture: per layer, and of whole inferences.

    Attributes:
        settings: The thresholds in force and where they came from.
        layers: Per layer with complete executions.
        latency: Latency distribution of complete inferences (p50, p99, max, cv) and its outliers
            (number, latency, ratio, the layers that were outliers in it).
    """

    settings: JitterSettings
    layers: list[LayerJitter]
    latency: dict[str, Any]

    @property
    def threshold_pct(self) -> float:
        """Excess over the median that makes an outlier, in percent."""
        return self.settings.threshold_pct

    def layer(self, index: int) -> LayerJitter | None:
        """The jitter of layer ``index`` (None: no complete execution)."""
        return next((layer for layer in self.layers if layer.index == index), None)


def _median(values: np.ndarray) -> int:
    return nearest_rank(values, 0.5) if len(values) else 0


@dataclasses.dataclass(frozen=True)
class LayerReference:
    """What one layer's executions are compared with, over the whole capture (a window of a long
    capture is judged against its capture's values, :class:`JitterAccumulator`).

    Attributes:
        count: Complete executions.
        median, mad, own_median: Nearest-rank median of cycles, their median absolute deviation,
            the median of the own time.
        measures: The work measures measured in some run, in order.
        medians: Median of each work measure and exact DWT counter (-1: never measured).
        pmu_medians: Per PMU column, the median of its measured values (-1: never measured).
        idle_median: Median of the PMU cycles minus NPU_ACTIVE (None: no NPU_ACTIVE column).
    """

    count: int
    median: int
    mad: int
    own_median: int
    measures: tuple[str, ...]
    medians: dict[str, int]
    pmu_medians: dict[int, int]
    idle_median: int | None


@dataclasses.dataclass
class _WarmRun:
    """How far the leading run of slow executions has been followed (windows come in order)."""

    seen: int = 0
    alive: bool = True

    def reach(self, n: int, total: int) -> int:
        """How many of the next ``n`` executions (of ``total``) the warm-up may still hold: it is
        at most a quarter of them.
        """
        return min(n, max((total // 4 if total >= 4 else 0) - self.seen, 0))


def _outliers(cycles: np.ndarray, median: int, mad: int, threshold_pct: float) -> np.ndarray:
    """Executions slower than the median by more than the threshold and three robust sigmas."""
    excess = cycles - median
    return (excess > median * threshold_pct / 100.0) & (excess > ROBUST_SIGMAS * MAD_TO_SIGMA * mad) & (excess > 1)


def analyse_jitter(
    timeline: InferenceTimeline, settings: JitterSettings | None = None, data_dependent: frozenset[int] = frozenset()
) -> JitterAnalysis:
    """Distributions, outliers and their causes, per layer and per inference, of one timeline
    (the one-window case of :class:`JitterAccumulator`).

    Args:
        timeline: The timeline.
        settings: Thresholds (default: :class:`JitterSettings`).
        data_dependent: Layer indices the budget marks data-dependent.
    """
    jitter = JitterAccumulator(settings or JitterSettings(), data_dependent)
    jitter.measure(timeline)
    jitter.settle()
    jitter.judge(timeline)
    return jitter.result()


class _SliceIndex:
    """Interrupt slices by the span they start in, for naming the handlers inside an outlier."""

    def __init__(self, timeline: InferenceTimeline) -> None:
        start, end, number, _, _ = slice_columns(timeline.isrs)
        self.row = span_of(timeline, start)
        self.cost = end - start
        self.number = number
        self.names = slice_names(timeline)

    def inside(self, row: int) -> list[dict[str, Any]]:
        pick = self.row == row
        out = []
        for exc in np.unique(self.number[pick]).tolist():
            mine = pick & (self.number == exc)
            out.append(
                {
                    "exception": exc,
                    "name": self.names.get(exc, str(exc)),
                    "runs": int(mine.sum()),
                    "cycles": int(self.cost[mine].sum()),
                }
            )
        return out


class _Context:
    """What every layer's analysis reads, computed once per timeline."""

    def __init__(self, timeline: InferenceTimeline, settings: JitterSettings, data_dependent: frozenset[int]) -> None:
        self.timeline = timeline
        self.settings = settings
        self.data_dependent = data_dependent
        self.roles: PmuRoles = pmu_roles(timeline.spans.pmu_names)
        facts = timeline.span_facts
        # Per span, its row in the span facts and the cycles tasks took from it (None: no span
        # facts, the usual capture; no column of -1 and zeros to gather from, layer by layer).
        self.fact_rows: np.ndarray | None = None
        self.task_cycles: np.ndarray | None = None
        if facts is not None and len(facts):
            self.fact_rows = facts.rows_for(timeline.spans)
            took = facts.preempted_cycles()
            self.task_cycles = np.where(self.fact_rows >= 0, took[np.maximum(self.fact_rows, 0)], 0)
        self.latency, self.latency_numbers = latency_columns(timeline.inferences)

    @functools.cached_property
    def slices(self) -> _SliceIndex:
        """The interrupt slices by span (made when an outlier asks: most windows have none)."""
        return _SliceIndex(self.timeline)

    def tasks_of(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The cycles tasks took from span ``rows`` and the spans' rows in the span facts (-1: none)."""
        if self.fact_rows is None or self.task_cycles is None:
            return np.zeros(len(rows), np.int64), np.full(len(rows), -1, np.int64)
        return self.task_cycles[rows], self.fact_rows[rows]

    def tasks_inside(self, row: int) -> list[dict[str, Any]]:
        """The tasks that took cycles from span ``row``, most first."""
        facts = self.timeline.span_facts
        if facts is None or self.fact_rows is None or int(self.fact_rows[row]) < 0:
            return []
        r = int(self.fact_rows[row])
        names = self.timeline.task_names
        took = [(int(c), task) for task, c in zip(facts.task_ids, facts.preempted[r].tolist()) if c > 0]
        return [{"task": task, "name": task_label(names, task), "cycles": c} for c, task in sorted(took, reverse=True)]


@dataclasses.dataclass
class _Judged:
    """One layer's executions over some rows judged: what its :class:`LayerJitter` needs beyond
    their cycles (the capture's :meth:`JitterAccumulator.result` pools these of every window).
    """

    own: np.ndarray
    median: int
    own_median: int
    outliers: int
    causes: dict[str, int]
    listed: list[Outlier]
    warm: np.ndarray
    measures: tuple[str, ...]
    outlier_inferences: tuple[int, ...]
    outlier_causes: tuple[str, ...]
    flagged: np.ndarray  # the outlier rows
    warm_positions: np.ndarray  # of the warm-up runs among all the layer's executions


def _judge(
    context: _Context,
    index: int,
    rows: np.ndarray,
    cycles: np.ndarray,
    ref: LayerReference | None = None,
    run: _WarmRun | None = None,
) -> _Judged:
    """One layer's executions over ``rows`` (all its complete executions; or, with ``ref`` and
    ``run``, those of one window, judged against the capture's values): outliers, causes, warm-up.
    """
    timeline, settings = context.timeline, context.settings
    threshold_pct = settings.threshold_pct
    spans = timeline.spans
    isr = spans.isr_cycles[rows]
    task, fact_rows = context.tasks_of(rows)
    interrupted = isr + task
    untouched = not interrupted.any()
    own = cycles if untouched else cycles - interrupted  # (the same array: its statistics are the cycles')
    n = len(rows)
    median = ref.median if ref is not None else _median(cycles)
    own_median = ref.own_median if ref is not None else (median if untouched else _median(own))
    mad = ref.mad if ref is not None else _median(np.abs(cycles - median))
    excess = cycles - median
    outlier = _outliers(cycles, median, mad, threshold_pct)
    cause = np.empty(n, object)
    cause.fill("")  # cheaper than np.full for objects
    preempted = outlier & (interrupted > 0) & (2 * interrupted >= excess)
    cause[preempted & (task > isr)] = TASK_PREEMPTION
    cause[preempted & (task <= isr)] = PREEMPTION
    work = LayerWork(timeline, rows, fact_rows, context.roles, ref.medians if ref is not None else None)
    detail: dict[int, dict[str, Any]] = {}
    verdicts: dict[int, str] = {}
    more = np.zeros(n, bool)  # cause MORE_WORK (kept as it is set: comparing objects costs more)
    for j in np.flatnonzero(outlier & ~preempted).tolist():
        own_ratio = own[j] / own_median if own_median > 0 else float("inf")
        compared = work.compare(j, own_ratio, threshold_pct)
        verdicts[j] = compared.verdict
        if compared.evidence:
            detail[j] = compared.evidence
        if compared.verdict == MORE:
            cause[j] = MORE_WORK
            more[j] = True
    # Warm-up: the run of slow executions from the first one on, at most a quarter of them.
    total = ref.count if ref is not None else n
    run = run or _WarmRun()
    window = run.reach(n, total)
    leading = np.cumprod(outlier[:window]).astype(bool) if window and run.alive else np.zeros(window, bool)
    run.alive = run.alive and bool(outlier[:window].all())
    warm = np.zeros(n, bool)
    warm[: len(leading)] = leading
    warm &= ~preempted & ~more
    warm_positions = run.seen + np.flatnonzero(warm)
    run.seen += n
    cause[warm] = WARM_UP
    rest = outlier & ~preempted & ~warm & ~more
    if rest.any():
        _contention(
            timeline,
            rows,
            timeline.layer(index).engine,
            rest,
            cause,
            detail,
            verdicts,
            context.roles,
            threshold_pct,
            ref,
        )
    flagged = np.flatnonzero(outlier)
    listed = []
    for j in flagged[:MAX_LISTED].tolist():
        info = dict(detail.get(j, {}))
        if isr[j]:
            info["isrs"] = context.slices.inside(int(rows[j]))
        if task[j]:
            info["tasks"] = context.tasks_inside(int(rows[j]))
        info["own_cycles"] = int(own[j])
        listed.append(
            Outlier(
                int(spans.inference[rows[j]]),
                index,
                int(cycles[j]),
                median,
                int(isr[j]),
                str(cause[j]),
                info,
                int(task[j]),
            )
        )
    flagged_causes = collections.Counter(cause[outlier].tolist())  # counted once: the column holds objects
    causes = {c: flagged_causes[c] for c in CAUSES if flagged_causes[c]}
    measures = ref.measures if ref is not None else tuple(m.name for m in work.measures)
    return _Judged(
        own,
        median,
        own_median,
        int(outlier.sum()),
        causes,
        listed,
        warm,
        measures,
        tuple(spans.inference[rows[flagged]].tolist()),
        tuple(str(c) for c in cause[flagged]),
        rows[outlier],
        warm_positions,
    )


def _layer_jitter(
    settings: JitterSettings,
    data_dependent: frozenset[int],
    latency_p50: int,
    index: int,
    cycles: np.ndarray,
    own: np.ndarray,
    distribution: tuple[CycleSummary, tuple[list[int], list[int]]],
    own_median: int,
    outliers: int,
    causes: dict[str, int],
    listed: list[Outlier],
    warm: np.ndarray,
    measures: tuple[str, ...],
    outlier_inferences: tuple[int, ...] = (),
    outlier_causes: tuple[str, ...] = (),
) -> LayerJitter:
    """A layer's jitter from all its executions' cycles and own time (in inference order), their
    distribution (summary and histogram), its outliers (every one's inference and cause, when
    known) and the warm-up runs among them.
    """
    summary, spread = distribution
    median, latest = summary.p50, summary.max
    cv = coefficient_of_variation(cycles)
    warm_up_runs = int(warm.sum())
    return LayerJitter(
        index=index,
        count=len(cycles),
        p50=median,
        p99=summary.p99,
        max=latest,
        cv=cv,
        own_p50=own_median,
        own_cv=cv if own is cycles else coefficient_of_variation(own),
        histogram=spread,
        outliers=outliers,
        causes=causes,
        listed=listed,
        warm_up_runs=warm_up_runs,
        steady_p50=_median(cycles[~warm]) if warm_up_runs else median,
        outlier_inferences=outlier_inferences,
        outlier_causes=outlier_causes,
        share=latest / latency_p50 if latency_p50 > 0 else None,
        min_share=settings.min_share_pct / 100.0,
        data_dependent=index in data_dependent,
        work_measures=measures,
    )


CPU_NOTES = {
    UNMEASURED: "bus or memory contention (DMA, the NPU on a shared bus), cache misses, or more work on this run: "
    "no work count or instruction count tells them apart",
    SAME: "it did the same work (its work measures within 5% of usual) in more cycles: it waited (bus or memory "
    "contention: DMA, the NPU on a shared bus; cache misses)",
    OTHER: "its work changed, but its own time grew far more than its work: something else slowed it (bus or "
    "memory contention, cache misses)",
}


def _contention(
    timeline: InferenceTimeline,
    rows: np.ndarray,
    engine: Engine,
    rest: np.ndarray,
    cause: np.ndarray,
    detail: dict[int, dict[str, Any]],
    verdicts: dict[int, str],
    roles: PmuRoles,
    threshold_pct: float,
    ref: LayerReference | None = None,
) -> None:
    """Causes of outliers that no handler, task, more work or warm-up explains."""
    spans = timeline.spans
    pmu = spans.pmu[rows] if spans.pmu.shape[1] else None
    measured = pmu is not None and roles.cycles is not None and (pmu[:, roles.cycles] >= 0).any()
    if engine is not Engine.NPU or not measured:
        cause[rest] = CONTENTION
        for j in np.flatnonzero(rest).tolist():
            note = (
                CPU_NOTES[verdicts.get(j, UNMEASURED)]
                if engine is not Engine.NPU
                else "no PMU counters for this NPU layer: contention assumed, not measured"
            )
            detail[j] = {**detail.get(j, {}), "note": note}
        return
    assert pmu is not None and roles.cycles is not None
    names = spans.pmu_names
    pmu_cycles, active = roles.cycles, roles.active

    idle = (pmu[:, pmu_cycles] - pmu[:, active]) if active is not None else None
    if ref is not None:
        medians, idle_median = ref.pmu_medians, ref.idle_median
    else:
        medians = {j: median_measured(pmu[:, j]) for j in _median_columns(roles)}
        idle_median = _median(idle) if idle is not None else None
    for j in np.flatnonzero(rest).tolist():
        row = pmu[j]
        waited = row[pmu_cycles] > medians[pmu_cycles] * (1 + threshold_pct / 200.0)
        info: dict[str, Any] = {"pmu_cycles": int(row[pmu_cycles]), "pmu_cycles_median": int(medians[pmu_cycles])}
        if idle is not None and idle_median is not None:
            info["idle_cycles"] = int(idle[j])
            info["idle_cycles_median"] = int(idle_median)
            waited = waited or idle[j] > idle_median * (1 + threshold_pct / 100.0) + 1
        for c in roles.wait:
            if row[c] >= 0:
                info[names[c]] = int(row[c])
                info[f"{names[c]}_median"] = int(medians[c])
                waited = waited or row[c] > medians[c] * (1 + threshold_pct / 100.0) + 1
        cause[j] = CONTENTION if waited else UNEXPLAINED
        detail[j] = {**detail.get(j, {}), **info}


def _median_columns(roles: PmuRoles) -> set[int]:
    """The PMU columns whose medians tell contention: the waits, the cycle counter, NPU_ACTIVE."""
    assert roles.cycles is not None
    return set(roles.wait) | {roles.cycles} | ({roles.active} if roles.active is not None else set())


def _latency(
    latency: np.ndarray,
    numbers: np.ndarray,
    median: int,
    threshold_pct: float,
    flagged_inf: np.ndarray,
    flagged_layer: np.ndarray,
) -> dict[str, Any]:
    """Latency distribution and its outliers, with the layers that were outliers in each."""
    if not len(latency):
        return {}
    slow = np.flatnonzero(latency - median > median * threshold_pct / 100.0)
    outliers = []
    for j in slow[:MAX_LISTED].tolist():
        number = int(numbers[j])
        outliers.append(
            {
                "number": number,
                "latency_cycles": int(latency[j]),
                "ratio": round(latency[j] / median, 3),
                "layers": sorted(set(flagged_layer[flagged_inf == number].tolist())),
            }
        )
    return {
        "p50": median,
        "p99": nearest_rank(latency, 0.99),
        "max": int(latency.max()),
        "cv": round(coefficient_of_variation(latency), 5),
        "outliers": int(len(slow)),
        "listed": outliers,
    }


K = TypeVar("K")


def _tally(tallies: dict[K, Tally], key: K) -> Tally:
    """``tallies[key]``, a new one the first time (``setdefault`` would make one every time)."""
    tally = tallies.get(key)
    if tally is None:
        tally = tallies[key] = Tally()
    return tally


class JitterAccumulator:
    """The jitter of a capture's windows (a timeline read whole is one), in two passes.

    The outlier rules compare each execution with its layer's median over the whole capture, so
    the first pass (:meth:`measure`, every window in order) keeps per layer the cycles and own
    time of every complete execution (compact columns, the own time only where interrupts or
    tasks took some) and tallies of its work measures and PMU counters; the second (:meth:`judge`,
    every window again, in order) runs the same rules on each window against those capture-wide
    values (:class:`LayerReference`); then :meth:`result`.
    """

    def __init__(self, settings: JitterSettings, data_dependent: frozenset[int] = frozenset()) -> None:
        self.settings = settings
        self.data_dependent = data_dependent
        self._cycles: dict[int, list[np.ndarray]] = {}
        self._own: dict[int, list[np.ndarray | None]] = {}  # None: the own time is the cycles
        self._isr: dict[int, list[np.ndarray | None]] = {}  # None: no interrupt in the window's executions
        self._measures: dict[int, dict[str, None]] = {}
        self._tallies: dict[int, dict[str, Tally]] = {}
        self._pmu: dict[int, dict[int, Tally]] = {}
        self._idle: dict[int, Tally] = {}
        self._latency: list[np.ndarray] = []
        self._latency_numbers: list[np.ndarray] = []
        self._reference: dict[int, LayerReference] = {}
        self._distribution: dict[int, tuple[CycleSummary, tuple[list[int], list[int]]]] = {}
        self._latency_p50 = 0
        self._runs: dict[int, _WarmRun] = {}
        self._parts: dict[int, list[_Judged]] = {}
        self._warm: dict[int, list[np.ndarray]] = {}
        self._windows: list[list[tuple[int, int]]] = []  # per window: (layer, its part in _cycles)
        self._flagged: list[tuple[np.ndarray, np.ndarray]] = []  # (inference, layer) of every outlier

    def measure(self, timeline: InferenceTimeline) -> None:
        """First pass: keep what the capture-wide values need of the next window.

        Each column is gathered once for the window, in layer order (:class:`ByLayer`), and each
        layer keeps its part of it: a loop over layers of gathers costs ten times as much.
        """
        context = _Context(timeline, self.settings, self.data_dependent)
        spans = timeline.spans
        roles = context.roles
        parts: list[tuple[int, int]] = []
        self._windows.append(parts)
        self._latency.append(compact(context.latency))
        self._latency_numbers.append(context.latency_numbers)
        groups = ByLayer.of(spans)
        rows = groups.rows
        cycles = spans.cycles[rows]
        isr = spans.isr_cycles[rows]
        task, fact_rows = context.tasks_of(rows)
        own = cycles - isr - task
        own_differs, interrupted = groups.any(own != cycles), groups.any(isr != 0)
        cycles, own, isr = compact(cycles), compact(own), compact(isr)
        measures, dwt = work_columns(timeline, rows, fact_rows, roles)
        measured = {name: groups.any(values >= 0) for name, values in measures.items()}
        tallied = {name: groups.measured(values) for name, values in {**measures, **dwt}.items()}
        pmu: dict[int, MeasuredByLayer] = {}  # the PMU columns whose medians tell contention
        idle = None
        if spans.pmu.shape[1] and roles.cycles is not None:
            pmu = {j: groups.measured(spans.pmu[rows, j]) for j in _median_columns(roles)}
            if roles.active is not None:
                idle = spans.pmu[rows, roles.cycles] - spans.pmu[rows, roles.active]
        for k, (index, lo, hi) in enumerate(groups):
            parts.append((index, len(self._cycles.get(index, ()))))
            self._cycles.setdefault(index, []).append(cycles[lo:hi])
            self._own.setdefault(index, []).append(own[lo:hi] if own_differs[k] else None)
            self._isr.setdefault(index, []).append(isr[lo:hi] if interrupted[k] else None)
            self._measures.setdefault(index, {}).update(dict.fromkeys(n for n in measures if measured[n][k]))
            tallies = self._tallies.setdefault(index, {})
            for name, column in tallied.items():
                if name in dwt or measured[name][k]:  # (a measure none of the part measured has no tally)
                    _tally(tallies, name).add(column.of(k))
            if pmu:
                columns = self._pmu.setdefault(index, {})
                for j, column in pmu.items():
                    _tally(columns, j).add(column.of(k))
                if idle is not None:
                    _tally(self._idle, index).add(idle[lo:hi])

    def cycles(self, index: int) -> np.ndarray:
        """Layer ``index``'s complete executions' cycles over every window, in inference order."""
        return np.concatenate(self._cycles[index]).astype(np.int64)

    def hand_over(self, index: int, pmu: Mapping[str, tuple[int, int]]) -> LayerSamples:
        """Layer ``index``'s complete executions (their cycles and interrupt cycles compact, in
        inference order; their cycles summarized by :meth:`settle`) with the PMU sums ``pmu``; the
        jitter forgets them (call after :meth:`result`), so they are held once, not twice.
        """
        cycles, parts = self._cycles.pop(index, []), self._isr.pop(index, [])
        isr = None
        if any(part is not None for part in parts):
            filled = [p if p is not None else np.zeros(len(c), np.int64) for p, c in zip(parts, cycles)]
            isr = compact(np.concatenate(filled))
        pooled = compact(np.concatenate(cycles).astype(np.int64) if cycles else np.zeros(0, np.int64))
        summary = self._distribution.pop(index, (None, None))[0]
        return LayerSamples(pooled, isr, pmu, summary)

    def _pooled(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """A layer's cycles and own time over every window, in inference order (int64)."""
        cycles = self.cycles(index)
        if all(own is None for own in self._own[index]):
            return cycles, cycles
        own = np.concatenate([o if o is not None else c for o, c in zip(self._own[index], self._cycles[index])])
        return cycles, own.astype(np.int64)

    def settle(self) -> None:
        """Between the passes: the capture-wide values every window is judged against, and each
        layer's distribution (its cycles sorted once: the median, p99 and histogram of the result
        and the layer statistics all read that one sort).
        """
        latency = np.concatenate(self._latency) if self._latency else np.zeros(0, np.int64)
        self._latency_p50 = _median(latency)
        for index in sorted(self._cycles):
            cycles, own = self._pooled(index)
            ordered = np.sort(np.concatenate(self._cycles[index])).astype(np.int64)  # (compact: sorts faster)
            summary = summarize_sorted(ordered, int(ordered.sum()))
            self._distribution[index] = (summary, histogram_sorted(ordered))
            del ordered  # (one layer's sorted copy at a time)
            median = summary.p50
            tallies = self._tallies[index]
            self._reference[index] = LayerReference(
                count=len(cycles),
                median=median,
                mad=_median(np.abs(cycles - median)),
                own_median=median if own is cycles else _median(own),
                measures=tuple(self._measures[index]),
                medians={name: t.nearest_rank(0.5) for name, t in tallies.items() if len(t)},
                pmu_medians={j: t.nearest_rank(0.5) if len(t) else -1 for j, t in self._pmu.get(index, {}).items()},
                idle_median=self._idle[index].nearest_rank(0.5) if index in self._idle else None,
            )
            self._runs[index] = _WarmRun()

    def window_cycles(self, window: int) -> dict[int, np.ndarray]:
        """Per layer, the cycles of window ``window``'s complete executions (as the first pass
        kept them: int32 where they fit), in inference order.
        """
        return {index: self._cycles[index][part] for index, part in self._windows[window]}

    def windows_where(self, test: Callable[[int, np.ndarray], np.ndarray | None]) -> list[bool]:
        """Per window (counted from 0 in the first pass), whether ``test`` holds for one of its
        complete executions: ``test(index, cycles)`` is given every execution of layer ``index``
        over the capture (int64, in inference order) and says which hold (None: none), once per
        layer, not once per layer and window.
        """
        hit = [False] * len(self._windows)
        windows: dict[int, list[int]] = {}  # per layer, the windows that hold its parts, in order
        for k, window in enumerate(self._windows):
            for index, _ in window:
                windows.setdefault(index, []).append(k)
        for index, holding in windows.items():
            parts = self._cycles[index]
            holds = test(index, np.concatenate(parts).astype(np.int64))
            if holds is None or not holds.any():
                continue
            starts = np.cumsum([0, *(len(p) for p in parts[:-1])])  # (no part is empty)
            for k, part_holds in zip(holding, np.logical_or.reduceat(holds, starts).tolist()):
                hit[k] = hit[k] or part_holds
        return hit

    def windows_with_outliers(self) -> list[bool]:
        """Per window, whether it has an execution the second pass flags (after :meth:`settle`):
        only those must :meth:`judge` see; for the others :meth:`skip` gives the same result.
        """
        threshold_pct = self.settings.threshold_pct

        def outliers(index: int, cycles: np.ndarray) -> np.ndarray:
            ref = self._reference[index]
            return _outliers(cycles, ref.median, ref.mad, threshold_pct)

        return self.windows_where(outliers)

    def skip(self, window: int) -> None:
        """Second pass: the next window, which has no outlier (:meth:`windows_with_outliers`), not judged:
        only the warm-up runs followed past it, as :meth:`judge` would.
        """
        for index, cycles in self.window_cycles(window).items():
            run = self._runs[index]
            if run.reach(len(cycles), self._reference[index].count):
                run.alive = False  # (the leading slow runs ended: this window starts with a usual one)
            run.seen += len(cycles)

    def judge(self, timeline: InferenceTimeline) -> None:
        """Second pass: the outliers of the next window and their causes."""
        context = _Context(timeline, self.settings, self.data_dependent)
        spans = timeline.spans
        all_cycles = spans.cycles
        for index, rows in layer_groups(spans):
            judged = _judge(context, index, rows, all_cycles[rows], self._reference[index], self._runs[index])
            self._parts.setdefault(index, []).append(judged)
            self._warm.setdefault(index, []).append(judged.warm_positions)
            flagged = judged.flagged
            self._flagged.append((spans.inference[flagged], spans.layer[flagged].astype(np.int64)))

    def result(self) -> JitterAnalysis:
        """The capture's jitter, after both passes."""
        threshold_pct = self.settings.threshold_pct
        out: list[LayerJitter] = []
        for index, ref in self._reference.items():
            cycles, own = self._pooled(index)
            parts = self._parts.get(index, [])
            warm = np.zeros(len(cycles), bool)
            if index in self._warm:
                warm[np.concatenate(self._warm[index]).astype(np.int64)] = True
            causes = {c: sum(p.causes.get(c, 0) for p in parts) for c in CAUSES}
            listed = [o for p in parts for o in p.listed][:MAX_LISTED]
            out.append(
                _layer_jitter(
                    self.settings,
                    self.data_dependent,
                    self._latency_p50,
                    index,
                    cycles,
                    own,
                    self._distribution[index],
                    ref.own_median,
                    sum(p.outliers for p in parts),
                    {c: k for c, k in causes.items() if k},
                    listed,
                    warm,
                    ref.measures,
                    tuple(n for p in parts for n in p.outlier_inferences),
                    tuple(c for p in parts for c in p.outlier_causes),
                )
            )
        latency = np.concatenate(self._latency).astype(np.int64) if self._latency else np.zeros(0, np.int64)
        numbers = np.concatenate(self._latency_numbers) if self._latency_numbers else np.zeros(0, np.int64)
        joined_inf = np.concatenate([i for i, _ in self._flagged]) if self._flagged else np.zeros(0, np.int64)
        joined_layer = np.concatenate([la for _, la in self._flagged]) if self._flagged else np.zeros(0, np.int64)
        return JitterAnalysis(
            self.settings, out, _latency(latency, numbers, self._latency_p50, threshold_pct, joined_inf, joined_layer)
        )
