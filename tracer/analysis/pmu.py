"""NPU PMU counters per inference and in total (the report's ``pmu`` section).

Two sources, one shape. A capture carries PMU deltas per layer span (the firmware's snapshots around
each NPU layer): an inference's counter is the sum over its spans. A text log carries the totals
the firmware printed per inference (MLEK's ``Profile for Inference``, ExecuTorch's PMU report,
``ethosu_pmu_cntr`` lines): those are used as printed, and fill in counters the spans do not have.
Totals add up the complete inferences only; incomplete ones are listed but never summed in.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import numpy as np

from tracer.base.timeline import CounterStat, InferenceTimeline
from tracer.telemetry.pmu_events import CYCLE_COUNTER

CYCLE_NAMES = (CYCLE_COUNTER, "CYCLE")  # the 48-bit cycle counter: captures say PMU_CYCLES, logs CYCLE
SIMULATED_NOTE = "simulated: no real NPU; the firmware computed these values from the layer shapes"


@dataclasses.dataclass(frozen=True)
class NpuUtilization:
    """How busy the NPU was: ACTIVE over the NPU cycle counter (MLIA's "target utilization").

    Attributes:
        active: NPU_ACTIVE cycles.
        idle: Cycles not active.
        total: The NPU cycle counter.
    """

    active: int
    idle: int
    total: int

    @property
    def ratio(self) -> float:
        """Active over total, rounded to 6 places."""
        return round(self.active / self.total, 6)

    def to_json(self) -> dict[str, Any]:
        """``{active, idle, total, ratio}``."""
        return {"active": self.active, "idle": self.idle, "total": self.total, "ratio": self.ratio}


@dataclasses.dataclass(frozen=True)
class InferenceCounters:
    """The PMU counters of one inference (summed over its spans, or as a log printed them)."""

    number: int
    complete: bool
    counters: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        """``{number, complete, counters}``."""
        return {"number": self.number, "complete": self.complete, "counters": self.counters}


@dataclasses.dataclass(frozen=True)
class PmuSummary:
    """A timeline's NPU PMU counters per inference and in total.

    Attributes:
        simulated: The values were simulated by the firmware (no real NPU).
        units: Unit of each counter (``cycles``, ``beats``).
        counters: Counter names, in the order first seen.
        per_inference: Inferences with at least one counter.
        totals: Sums over the complete inferences.
        totals_over: Complete inferences summed.
        summaries: Counters the firmware summarised over several inferences, as printed.
        utilization: NPU utilization from the totals, when two of ACTIVE, IDLE and the total are known.
    """

    simulated: bool
    units: dict[str, str]
    counters: list[str]
    per_inference: list[InferenceCounters]
    totals: dict[str, int]
    totals_over: int
    summaries: dict[str, CounterStat]
    utilization: NpuUtilization | None

    def to_json(self) -> dict[str, Any]:
        """The report's ``pmu`` section."""
        return {
            "simulated": self.simulated,
            "note": SIMULATED_NOTE if self.simulated else None,
            "units": self.units,
            "counters": self.counters,
            "per_inference": [row.to_json() for row in self.per_inference],
            "totals": self.totals,
            "totals_over": self.totals_over,
            "excluded": len(self.per_inference) - self.totals_over,
            "summaries": {
                name: {"unit": stat.unit, "samples": stat.samples, "total": stat.total, "mean": stat.mean,
                       "min": stat.min, "max": stat.max}
                for name, stat in self.summaries.items()
            },  # fmt: skip
            "npu_utilization": self.utilization.to_json() if self.utilization else None,
        }


def summarize_pmu(timeline: InferenceTimeline) -> PmuSummary:
    """Counters per inference and totals over the complete ones (see the module docstring)."""
    return pmu_summary(inference_counters(timeline), timeline)


def pmu_summary(per_inference: list[InferenceCounters], timeline: InferenceTimeline) -> PmuSummary:
    """The summary of inferences' counters (of one timeline, or of the windows of one, in order);
    ``timeline`` gives the labels, units and the firmware's own summaries."""
    names: list[str] = []
    for row in per_inference:
        names.extend(n for n in row.counters if n not in names)
    for stat in timeline.pmu_stats:
        if stat not in names:
            names.append(stat)
    totals: dict[str, int] = {}
    complete = [row for row in per_inference if row.complete]
    for row in complete:
        for name, value in row.counters.items():
            totals[name] = totals.get(name, 0) + value
    return PmuSummary(
        simulated=timeline.labels.get("npu_pmu") == "simulated",
        units={n: timeline.pmu_units.get(n) or _unit(n) for n in names},
        counters=names,
        per_inference=per_inference,
        totals=totals,
        totals_over=len(complete),
        summaries=dict(timeline.pmu_stats),
        utilization=npu_utilization(totals),
    )


def npu_utilization(counters: Mapping[str, int]) -> NpuUtilization | None:
    """NPU utilization from whichever two of ACTIVE, IDLE and the cycle counter ``counters`` give;
    None when fewer than two."""
    total = next((counters[n] for n in CYCLE_NAMES if n in counters), None)
    active = counters.get("NPU_ACTIVE")
    idle = counters.get("NPU_IDLE")
    if active is None and total is not None and idle is not None:
        active = total - idle
    if total is None and active is not None and idle is not None:
        total = active + idle
    if active is None or not total:
        return None
    return NpuUtilization(active, idle if idle is not None else total - active, total)


def inference_counters(timeline: InferenceTimeline) -> list[InferenceCounters]:
    """The counters of each inference of ``timeline`` that has any, in order."""
    inf = timeline.inferences
    names, columns = _span_sums(timeline)
    numbers = inf.number.tolist()
    complete = inf.complete.tolist()
    totals = timeline.pmu_totals
    out = []
    for i, number in enumerate(numbers):
        counters = {name: column[i] for name, column in zip(names, columns) if column[i] is not None}
        for name, value in totals.get(number, {}).items():
            counters.setdefault(name, int(value))
        if counters:
            out.append(InferenceCounters(number, complete[i], counters))
    return out


def _span_sums(timeline: InferenceTimeline) -> tuple[list[str], list[list[int | None]]]:
    """Per counter, the sum over each inference's spans that measured it, as a list aligned with the
    inference rows (None where no span of the inference measured it)."""
    spans = timeline.spans
    inf = timeline.inferences
    n = len(inf)
    if not len(spans) or not spans.pmu.shape[1] or not n:
        return [], []
    order = np.argsort(inf.number, kind="stable")
    sorted_numbers = inf.number[order]
    pos = np.minimum(np.searchsorted(sorted_numbers, spans.inference), n - 1)
    known = sorted_numbers[pos] == spans.inference  # spans of an inference without a row are left out
    row = order[pos]
    names: list[str] = []
    columns: list[list[int | None]] = []
    for j, name in enumerate(spans.pmu_names):
        column = spans.pmu[:, j]
        have = (column >= 0) & known
        if not have.any():
            continue
        rows, values = row[have], column[have]
        by_row = np.argsort(rows, kind="stable")
        rows, values = rows[by_row], values[by_row]
        firsts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        aligned: list[int | None] = [None] * n
        for index, total in zip(rows[firsts].tolist(), np.add.reduceat(values, firsts).tolist()):
            aligned[index] = total
        names.append(name)
        columns.append(aligned)
    return names, columns


def _unit(name: str) -> str:
    if "BEAT" in name:
        return "beats"
    return "cycles"
