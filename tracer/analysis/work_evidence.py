"""How much work each run of a layer did, by every measure the target offers, and whether more work
explains a slow run.

Work measures, per run (-1 where not measured), in the order they are cited:

- ``work_count``: the firmware's own count (``trc_layer_work()``: candidates, tokens ...);
- ``INST_RETIRED``: instructions the CPU retired inside the layer (Armv8.1-M PMU);
- the NPU PMU's work counters: data beats and transactions (names with ``BEAT`` or ``TRANS``).

A run did *the same work* when every measure it has is within 5 % of the layer's median
(:data:`SAME_WORK`). A slow run is *explained by more work* when one measure is up by more than
that and the run's own time (interrupt and task time taken out) grew no more than that measure,
give or take the jitter threshold: ``own / own_median <= work / work_median * (1 + threshold)``.
Time with a fixed part per run grows less than proportionally with work, so it is explained too;
time that grew far more than the work did is not (something else slowed the run).

The DWT's profiling counters (CPI, LSU ...) are 8 bits wide: a record gives their change modulo 256
only. Each counts at most once per CPU cycle, so the change is exact only over a span shorter than
256 CPU cycles, and only a timeline that counts CPU cycles (DWT or PMU time base) can say which
spans those are. Only there are they shown (as evidence of stall cycles, never as work); elsewhere
they are left out, and the evidence says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from tracer.analysis.pmu import CYCLE_NAMES
from tracer.analysis.statistics import nearest_rank
from tracer.base.counters import DWT_SUFFIX, INSTRUCTIONS
from tracer.base.timeline import InferenceTimeline

SAME_WORK = 0.05  # work measures within 5 % of the median: the same work
WORK_COUNT = "work_count"
DWT_EXACT_BELOW = 256  # CPU cycles: a DWT counter cannot wrap inside a shorter span
CPU_CYCLE_CLOCKS = ("dwt", "pmu")  # time bases that count CPU cycles

MORE, SAME, OTHER, UNMEASURED = "more", "same", "other", "unmeasured"  # WorkComparison.verdict


@dataclasses.dataclass(frozen=True)
class PmuRoles:
    """NPU PMU columns by role, by index: work (beats, transactions), waiting (idle, stalls,
    latency), the PMU cycle counter and NPU_ACTIVE.
    """

    work: tuple[int, ...]
    wait: tuple[int, ...]
    cycles: int | None
    active: int | None


def pmu_roles(names: tuple[str, ...]) -> PmuRoles:
    """The role of each NPU PMU counter, from its name."""
    work, wait = [], []
    cycles = active = None
    for j, name in enumerate(names):
        if name in CYCLE_NAMES:
            cycles = j if cycles is None else cycles
        elif name == "NPU_ACTIVE":
            active = j
        elif "IDLE" in name or "STALL" in name or "LATENCY" in name:
            wait.append(j)
        elif "BEAT" in name or "TRANS" in name:
            work.append(j)
    return PmuRoles(tuple(work), tuple(wait), cycles, active)


def median_measured(values: np.ndarray) -> int:
    """Nearest-rank median of the values >= 0 (-1 when there is none)."""
    have = values[values >= 0]
    return nearest_rank(have, 0.5) if len(have) else -1


@dataclasses.dataclass(frozen=True)
class WorkMeasure:
    """One measure of work over the runs of a layer.

    Attributes:
        name: ``work_count``, ``INST_RETIRED`` or an NPU PMU counter's name.
        values: Per run (-1 where not measured).
        median: Over the measured runs (-1 when none was).
    """

    name: str
    values: np.ndarray
    median: int

    def ratio(self, j: int) -> float | None:
        """Run ``j``'s value over the median (None: not measured; inf: the median is 0)."""
        value = int(self.values[j])
        if value < 0 or self.median < 0:
            return None
        if self.median == 0:
            return 1.0 if value == 0 else float("inf")
        return value / self.median


@dataclasses.dataclass(frozen=True)
class WorkComparison:
    """What the work measures say about one slow run.

    Attributes:
        verdict: ``more`` (more work explains it), ``same`` (every measure within 5 %), ``other``
            (work changed, but not enough to explain the time), ``unmeasured`` (no measure).
        measure: The measure that explains it (``more``), else None.
        evidence: Values, medians and ratios (JSON-ready).
    """

    verdict: str
    measure: str | None
    evidence: dict[str, Any]


def work_columns(
    timeline: InferenceTimeline, rows: np.ndarray, fact_rows: np.ndarray, roles: PmuRoles
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The work measures' and the DWT counters' values of span ``rows`` (-1: not measured), by
    name, in the order they are cited; a DWT counter only where it is exact (the span is shorter
    than :data:`DWT_EXACT_BELOW` CPU cycles).

    Args:
        timeline: The timeline.
        rows: Span rows.
        fact_rows: Their rows in ``timeline.span_facts`` (-1: none).
        roles: The NPU PMU columns' roles.
    """
    spans, facts = timeline.spans, timeline.span_facts
    measures: dict[str, np.ndarray] = {}
    dwt: dict[str, np.ndarray] = {}
    if facts is not None and len(facts):
        have = fact_rows >= 0
        safe = np.maximum(fact_rows, 0)

        def column(values: np.ndarray) -> np.ndarray:
            return np.where(have, values[safe], -1)

        measures[WORK_COUNT] = column(facts.work)
        if INSTRUCTIONS in facts.counter_names:
            measures[INSTRUCTIONS] = column(facts.counter(INSTRUCTIONS))
        exact = np.zeros(len(rows), bool)
        if timeline.clock_source in CPU_CYCLE_CLOCKS:
            exact = spans.cycles[rows] < DWT_EXACT_BELOW
        for name in facts.counter_names:
            if name.endswith(DWT_SUFFIX):
                dwt[name] = np.where(exact, column(facts.counter(name)), -1)
    if spans.pmu.shape[1]:
        for c in roles.work:
            measures[spans.pmu_names[c]] = spans.pmu[rows, c]
    return measures, dwt


class LayerWork:
    """The work measures and DWT counters of one layer's runs.

    Args:
        timeline: The timeline.
        rows: The layer's span rows (its complete runs).
        fact_rows: Their rows in ``timeline.span_facts`` (-1: none).
        roles: The NPU PMU columns' roles.
        medians: The capture-wide medians of the measures (a window of a long capture), or None:
            the medians of these runs.
    """

    def __init__(
        self,
        timeline: InferenceTimeline,
        rows: np.ndarray,
        fact_rows: np.ndarray,
        roles: PmuRoles,
        medians: Mapping[str, int] | None = None,
    ) -> None:
        self._medians = medians
        self.measures: list[WorkMeasure] = []
        measures, self.dwt = work_columns(timeline, rows, fact_rows, roles)
        for name, values in measures.items():
            self._add(name, values)

    def _add(self, name: str, values: np.ndarray) -> None:
        if self._medians is not None:  # capture-wide medians (a window of a long capture)
            if name in self._medians:
                self.measures.append(WorkMeasure(name, values, self._medians[name]))
        elif (values >= 0).any():
            self.measures.append(WorkMeasure(name, values, median_measured(values)))

    def compare(self, j: int, own_ratio: float, threshold_pct: float) -> WorkComparison:
        """What the measures say about run ``j``, whose own time is ``own_ratio`` times the median."""
        measured = [(m, r) for m in self.measures if (r := m.ratio(j)) is not None]
        evidence: dict[str, Any] = {}
        if measured:
            evidence["work"] = {m.name: int(m.values[j]) for m, _ in measured}
            evidence["work_median"] = {m.name: m.median for m, _ in measured}
            evidence["own_ratio"] = _finite(own_ratio)
        evidence.update(self._dwt(j))
        if not measured:
            return WorkComparison(UNMEASURED, None, evidence)
        for m, r in measured:
            if r > 1 + SAME_WORK and own_ratio <= r * (1 + threshold_pct / 100.0):
                evidence["work_ratio"] = _finite(r)
                evidence["explained_by"] = m.name
                return WorkComparison(MORE, m.name, evidence)
        if all(abs(r - 1) <= SAME_WORK for _, r in measured):
            return WorkComparison(SAME, None, evidence)
        m, r = max(measured, key=lambda mr: abs(mr[1] - 1))
        evidence["work_ratio"] = _finite(r)
        return WorkComparison(OTHER, m.name, evidence)

    def _dwt(self, j: int) -> dict[str, Any]:
        if not self.dwt:
            return {}
        exact = {name: int(values[j]) for name, values in self.dwt.items() if values[j] >= 0}
        if not exact:
            return {
                "dwt_not_used": "the span is 256 CPU cycles or longer (or the time base is not the CPU's): "
                "its DWT counters' change is known modulo 256 only"
            }
        return {"dwt": exact, "dwt_median": {name: self.dwt_median(name) for name in self.dwt}}

    def dwt_median(self, name: str) -> int:
        """The median of DWT counter ``name`` over the runs where it is exact (-1: none)."""
        if self._medians is not None:
            return self._medians.get(name, -1)
        return median_measured(self.dwt[name])

    def columns(self) -> dict[str, np.ndarray]:
        """Every work measure's and exact DWT counter's values per run (-1: not measured), by name."""
        return {**{m.name: m.values for m in self.measures}, **self.dwt}


def _finite(ratio: float) -> float | None:
    """A ratio for the JSON evidence: rounded, None when infinite (a median of 0)."""
    return round(float(ratio), 3) if np.isfinite(ratio) else None
