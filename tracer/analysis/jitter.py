"""Jitter: how much each layer's time varies, which executions are outliers, and why.

Per layer, over the complete inferences: the distribution of cycles (histogram, p50/p99/max,
coefficient of variation), the same for its own time (minus interrupt handlers), and the
*outliers*: executions slower than the median by more than the threshold (20 % by default) and
more than three robust standard deviations (1.4826 x the median absolute deviation). Each outlier
gets one cause, tried in this order:

- ``preemption``: interrupt handlers ran inside it for at least half of the excess;
- ``warm-up``: it belongs to the leading run of slow executions from the first inference on (at
  most a quarter of them): cold caches, lazy initialisation, first-time allocation;
- ``contention``: an NPU layer that did the same work (its PMU work counters, such as data beats,
  within 5 % of the layer's median) in more NPU cycles or with more idle/stall cycles: it waited
  on the memory bus; or a CPU layer slower with no handler inside (bus or memory contention: DMA,
  the NPU on a shared bus, cache misses);
- ``more work``: an NPU layer whose PMU shows more work than usual (data-dependent);
- ``unexplained``: none of these.

Cycle counts come from the unwrapped 64-bit time of the decoder, so a 32-bit counter wrap inside
a layer or a handler changes nothing here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tracer.analysis.isr import slice_columns, slice_names, span_of
from tracer.analysis.settings import JITTER_THRESHOLD_PCT
from tracer.analysis.statistics import coefficient_of_variation, histogram, nearest_rank
from tracer.base.timeline import Engine, InferenceTimeline
from tracer.telemetry.pmu_events import CYCLE_COUNTER

ROBUST_SIGMAS = 3.0
SAME_WORK = 0.05  # PMU work counters within 5 % of the median: the same work
MAX_LISTED = 20  # outliers listed per layer (all are counted)

PREEMPTION = "preemption"
WARM_UP = "warm-up"
CONTENTION = "contention"
MORE_WORK = "more work"
UNEXPLAINED = "unexplained"
CAUSES = (PREEMPTION, WARM_UP, CONTENTION, MORE_WORK, UNEXPLAINED)


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
        detail: The evidence for the cause (handlers, PMU counters ...).
    """

    inference: int
    layer: int
    cycles: int
    median: int
    isr_cycles: int
    cause: str
    detail: dict[str, Any]

    @property
    def ratio(self) -> float:
        """Cycles over the median."""
        return self.cycles / self.median if self.median else float("inf")

    def to_json(self) -> dict[str, Any]:
        """As listed in the report's ``jitter.layers[].listed``."""
        return {"inference": self.inference, "cycles": self.cycles, "ratio": round(self.ratio, 3),
                "isr_cycles": self.isr_cycles, "cause": self.cause, **self.detail}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class LayerJitter:
    """One layer's distribution and outliers.

    Attributes:
        index: Layer index.
        count: Complete executions.
        p50, p99, max: Nearest-rank percentiles of cycles.
        cv: Coefficient of variation (std / mean) of cycles.
        own_p50, own_cv: The same for its own time (handler time taken out).
        histogram: (bin edges, counts) of cycles.
        outliers: Number of outliers.
        causes: Number of outliers per cause (the causes found).
        listed: The first outliers, in inference order (up to :data:`MAX_LISTED`).
        warm_up_runs: Outliers put down to warm-up.
        steady_p50: The steady-state median (of the executions outside the warm-up run).
        outlier_inferences: The inference of every outlier, in inference order (not only the listed).
        outlier_causes: The cause of each of them.
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

    def to_json(self, name: str = "") -> dict[str, Any]:
        """The report's ``jitter.layers[]`` entry."""
        return {
            "index": self.index, "name": name, "count": self.count, "p50": self.p50, "p99": self.p99,
            "max": self.max, "cv": round(self.cv, 5), "own_p50": self.own_p50, "own_cv": round(self.own_cv, 5),
            "histogram": {"edges": self.histogram[0], "counts": self.histogram[1]},
            "outliers": self.outliers, "causes": self.causes, "warm_up_runs": self.warm_up_runs,
            "steady_p50": self.steady_p50, "listed": [o.to_json() for o in self.listed],
        }  # fmt: skip


@dataclasses.dataclass(frozen=True)
class JitterAnalysis:
    """Jitter of a capture: per layer, and of whole inferences.

    Attributes:
        threshold_pct: Excess over the median that makes an outlier.
        layers: Per layer with complete executions.
        latency: Latency distribution of complete inferences (p50, p99, max, cv) and its outliers
            (number, latency, ratio, the layers that were outliers in it).
    """

    threshold_pct: float
    layers: list[LayerJitter]
    latency: dict[str, Any]

    def layer(self, index: int) -> LayerJitter | None:
        """The jitter of layer ``index`` (None: no complete execution)."""
        return next((layer for layer in self.layers if layer.index == index), None)


def _median(values: np.ndarray) -> int:
    return nearest_rank(values, 0.5) if len(values) else 0


def _pmu_roles(names: tuple[str, ...]) -> tuple[list[int], list[int], int | None, int | None]:
    """Columns that measure work (beats, transactions), waiting (idle, stalls, latency), and the
    PMU cycle counter and NPU_ACTIVE, by index."""
    work, wait = [], []
    cycles = active = None
    for j, name in enumerate(names):
        if name in (CYCLE_COUNTER, "CYCLE"):
            cycles = j if cycles is None else cycles
        elif name == "NPU_ACTIVE":
            active = j
        elif "IDLE" in name or "STALL" in name or "LATENCY" in name:
            wait.append(j)
        elif "BEAT" in name or "TRANS" in name:
            work.append(j)
    return work, wait, cycles, active


def analyse_jitter(timeline: InferenceTimeline, threshold_pct: float = JITTER_THRESHOLD_PCT) -> JitterAnalysis:
    """Distributions, outliers and their causes, per layer and per inference."""
    spans = timeline.spans
    complete = np.flatnonzero(spans.complete)
    layers_of = spans.layer[complete].astype(np.int64)
    numbers = spans.inference[complete]
    if len(complete) and numbers.min() >= 0 and numbers.max() < (1 << 40) and layers_of.min() >= 0:
        order = complete[np.argsort((layers_of << 40) | numbers, kind="stable")]  # one key: faster than lexsort
    else:
        order = complete[np.lexsort((numbers, layers_of))]
    sorted_layers = spans.layer[order].astype(np.int64)
    indices, firsts = np.unique(sorted_layers, return_index=True)
    bounds = list(firsts.tolist()) + [len(order)]
    slices = _SliceIndex(timeline)
    work, wait, pmu_cycles, active = _pmu_roles(spans.pmu_names)
    all_cycles = spans.cycles  # computed once: the property subtracts whole columns
    out: list[LayerJitter] = []
    outlier_rows: list[np.ndarray] = []
    for n, index in enumerate(indices.tolist()):
        rows = order[bounds[n] : bounds[n + 1]]
        engine = timeline.layer(index).engine
        layer, rows_out = _layer(timeline, index, rows, all_cycles[rows], engine, threshold_pct, slices,
                                 (work, wait, pmu_cycles, active))  # fmt: skip
        out.append(layer)
        outlier_rows.append(rows_out)
    flagged = np.concatenate(outlier_rows) if outlier_rows else np.zeros(0, np.int64)
    return JitterAnalysis(threshold_pct, out, _latency(timeline, threshold_pct, flagged))


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
            out.append({"exception": exc, "name": self.names.get(exc, str(exc)), "runs": int(mine.sum()),
                        "cycles": int(self.cost[mine].sum())})  # fmt: skip
        return out


def _layer(  # noqa: PLR0913
    timeline: InferenceTimeline, index: int, rows: np.ndarray, cycles: np.ndarray, engine: Engine,
    threshold_pct: float, slices: _SliceIndex, roles: tuple[list[int], list[int], int | None, int | None],
) -> tuple[LayerJitter, np.ndarray]:  # fmt: skip
    spans = timeline.spans
    isr = spans.isr_cycles[rows]
    own = cycles - isr
    n = len(rows)
    median = _median(cycles)
    mad = _median(np.abs(cycles - median))
    excess = cycles - median
    outlier = (excess > median * threshold_pct / 100.0) & (excess > ROBUST_SIGMAS * 1.4826 * mad) & (excess > 1)
    cause = np.full(n, "", dtype=object)
    preempted = outlier & (isr > 0) & (2 * isr >= excess)
    cause[preempted] = PREEMPTION
    # Warm-up: the run of slow executions from the first one on, at most a quarter of them.
    window = n // 4 if n >= 4 else 0
    leading = np.cumprod(outlier[:window]).astype(bool) if window else np.zeros(0, bool)
    warm = np.zeros(n, bool)
    warm[: len(leading)] = leading
    warm &= ~preempted
    cause[warm] = WARM_UP
    rest = outlier & ~preempted & ~warm
    detail: dict[int, dict[str, Any]] = {}
    if rest.any():
        _contention(timeline, rows, engine, rest, cause, detail, roles, threshold_pct)
    steady = cycles[~warm]
    flagged = np.flatnonzero(outlier)
    listed = []
    for j in flagged[:MAX_LISTED].tolist():
        info = dict(detail.get(j, {}))
        if isr[j]:
            info["isrs"] = slices.inside(int(rows[j]))
        listed.append(Outlier(int(spans.inference[rows[j]]), index, int(cycles[j]), median, int(isr[j]),
                              str(cause[j]), info))  # fmt: skip
    causes = {c: int((cause[outlier] == c).sum()) for c in CAUSES if (cause[outlier] == c).any()}
    return LayerJitter(
        index=index, count=n, p50=median, p99=nearest_rank(cycles, 0.99), max=int(cycles.max()), cv=coefficient_of_variation(cycles),
        own_p50=_median(own), own_cv=coefficient_of_variation(own), histogram=histogram(cycles),
        outliers=int(outlier.sum()), causes=causes, listed=listed, warm_up_runs=int(warm.sum()),
        steady_p50=_median(steady), outlier_inferences=tuple(spans.inference[rows[flagged]].tolist()),
        outlier_causes=tuple(str(c) for c in cause[flagged]),
    ), rows[outlier]  # fmt: skip


def _contention(  # noqa: PLR0913
    timeline: InferenceTimeline, rows: np.ndarray, engine: Engine, rest: np.ndarray, cause: np.ndarray,
    detail: dict[int, dict[str, Any]], roles: tuple[list[int], list[int], int | None, int | None],
    threshold_pct: float,
) -> None:  # fmt: skip
    """Causes of outliers that no handler and no warm-up explain."""
    spans = timeline.spans
    work, wait, pmu_cycles, active = roles
    pmu = spans.pmu[rows] if spans.pmu.shape[1] else None
    measured = pmu is not None and pmu_cycles is not None and (pmu[:, pmu_cycles] >= 0).any()
    if engine is not Engine.NPU or not measured:
        cause[rest] = CONTENTION
        note = ("bus or memory contention (DMA, the NPU on a shared bus), cache misses, or more work on this run "
                "(a data-dependent path)" if engine is not Engine.NPU
                else "no PMU counters for this NPU layer: contention assumed, not measured")  # fmt: skip
        for j in np.flatnonzero(rest).tolist():
            detail[j] = {"note": note}
        return
    assert pmu is not None and pmu_cycles is not None
    names = spans.pmu_names

    def med(col: int) -> int:
        have = pmu[:, col] >= 0
        return _median(pmu[have, col]) if have.any() else -1

    medians = {j: med(j) for j in set(work) | set(wait) | {pmu_cycles} | ({active} if active is not None else set())}
    idle = (pmu[:, pmu_cycles] - pmu[:, active]) if active is not None else None
    idle_median = _median(idle) if idle is not None else None
    for j in np.flatnonzero(rest).tolist():
        row = pmu[j]
        same = all(row[c] >= 0 and medians[c] >= 0 and abs(row[c] - medians[c]) <= SAME_WORK * max(medians[c], 1)
                   for c in work)  # fmt: skip
        waited = row[pmu_cycles] > medians[pmu_cycles] * (1 + threshold_pct / 200.0)
        info: dict[str, Any] = {"pmu_cycles": int(row[pmu_cycles]), "pmu_cycles_median": int(medians[pmu_cycles])}
        if idle is not None and idle_median is not None:
            info["idle_cycles"] = int(idle[j])
            info["idle_cycles_median"] = int(idle_median)
            waited = waited or idle[j] > idle_median * (1 + threshold_pct / 100.0) + 1
        for c in wait:
            if row[c] >= 0:
                info[names[c]] = int(row[c])
                info[f"{names[c]}_median"] = int(medians[c])
                waited = waited or row[c] > medians[c] * (1 + threshold_pct / 100.0) + 1
        if work:
            info["work"] = {names[c]: int(row[c]) for c in work}
            info["work_median"] = {names[c]: int(medians[c]) for c in work}
        if work and not same:
            cause[j] = MORE_WORK
        elif waited:
            cause[j] = CONTENTION
        else:
            cause[j] = UNEXPLAINED
        detail[j] = info


def _latency(timeline: InferenceTimeline, threshold_pct: float, flagged_rows: np.ndarray) -> dict[str, Any]:
    inf = timeline.inferences
    ok = inf.complete & (inf.start >= 0) & (inf.end >= 0)
    latency = (inf.end - inf.start)[ok]
    numbers = inf.number[ok]
    if not len(latency):
        return {}
    median = _median(latency)
    slow = np.flatnonzero(latency - median > median * threshold_pct / 100.0)
    spans = timeline.spans
    flagged_inf = spans.inference[flagged_rows]
    flagged_layer = spans.layer[flagged_rows]
    outliers = []
    for j in slow[:MAX_LISTED].tolist():
        number = int(numbers[j])
        outliers.append({"number": number, "latency_cycles": int(latency[j]), "ratio": round(latency[j] / median, 3),
                         "layers": sorted(set(flagged_layer[flagged_inf == number].tolist()))})  # fmt: skip
    return {"p50": median, "p99": nearest_rank(latency, 0.99), "max": int(latency.max()),
            "cv": round(coefficient_of_variation(latency), 5),
            "outliers": int(len(slow)), "listed": outliers}  # fmt: skip
