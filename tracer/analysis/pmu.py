"""NPU PMU counters per inference and in total (the report's ``pmu`` section).

Two sources, one shape. A capture carries PMU deltas per layer span (the firmware's snapshots around
each NPU layer): an inference's counter is the sum over its spans. A text log carries the totals
the firmware printed per inference (MLEK's ``Profile for Inference``, ExecuTorch's PMU report,
``ethosu_pmu_cntr`` lines): those are used as printed, and fill in counters the spans do not have.
Totals add up the complete inferences only; incomplete ones are listed but never summed in.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np

from tracer.analysis.statistics import run_starts
from tracer.base.columns import Column, JsonRows
from tracer.base.counters import CYCLE_COUNTER
from tracer.base.timeline import CounterStat, InferenceTimeline, simulated_npu

CYCLE_NAMES = (CYCLE_COUNTER, "CYCLE")  # the 48-bit cycle counter: captures say PMU_CYCLES, logs CYCLE
SIMULATED_NOTE = "simulated: no real NPU; the firmware computed these values from the layer shapes"
RATIO_PLACES = 6  # NPU utilization ratios are rounded to this many places


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
        """Active over total, rounded to :data:`RATIO_PLACES` places."""
        return round(self.active / self.total, RATIO_PLACES)

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
    per_inference: InferenceCounterTable
    totals: dict[str, int]
    totals_over: int
    summaries: dict[str, CounterStat]
    utilization: NpuUtilization | None

    def to_json(self, streamed: bool = False) -> dict[str, Any]:
        """The report's ``pmu`` section (``streamed``: its per-inference rows made as a writer
        reads them, :class:`~tracer.base.columns.JsonRows`).
        """
        return {
            "simulated": self.simulated,
            "note": SIMULATED_NOTE if self.simulated else None,
            "units": self.units,
            "counters": self.counters,
            "per_inference": JsonRows(
                len(self.per_inference), self.per_inference.json_rows, self.per_inference.json_columns
            )
            if streamed
            else list(self.per_inference.json_rows()),
            "totals": self.totals,
            "totals_over": self.totals_over,
            "excluded": len(self.per_inference) - self.totals_over,
            "summaries": {
                name: {
                    "unit": stat.unit,
                    "samples": stat.samples,
                    "total": stat.total,
                    "mean": stat.mean,
                    "min": stat.min,
                    "max": stat.max,
                }
                for name, stat in self.summaries.items()
            },
            "npu_utilization": self.utilization.to_json() if self.utilization else None,
        }


def pmu_summary(per_inference: InferenceCounterTable, timeline: InferenceTimeline) -> PmuSummary:
    """The summary of inferences' counters (of one timeline, or of the windows of one, joined);
    ``timeline`` gives the labels, units and the firmware's own summaries.
    """
    names = per_inference.first_seen()
    for stat in timeline.pmu_stats:
        if stat not in names:
            names.append(stat)
    complete = per_inference.complete
    return PmuSummary(
        simulated=simulated_npu(timeline.labels),
        units={n: timeline.pmu_units.get(n) or _unit(n) for n in names},
        counters=names,
        per_inference=per_inference,
        totals=per_inference.totals(complete),
        totals_over=int(complete.sum()),
        summaries=dict(timeline.pmu_stats),
        utilization=npu_utilization(per_inference.totals(complete)),
    )


def npu_utilization(counters: Mapping[str, int]) -> NpuUtilization | None:
    """NPU utilization from whichever two of ACTIVE, IDLE and the cycle counter ``counters`` give;
    None when fewer than two.
    """
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


class InferenceCounterTable(Sequence[InferenceCounters]):
    """The counters of the inferences that have any, as columns: no object per inference until
    one is asked for (a long capture has hundreds of thousands).

    Args:
        number: Inference numbers.
        complete: Whether each inference is complete.
        names: The counters.
        values: One row per inference, one column per counter; -1 where it has none.
    """

    def __init__(self, number: np.ndarray, complete: np.ndarray, names: Sequence[str], values: np.ndarray) -> None:
        self.number = number
        self.complete = complete
        self.names = tuple(names)
        self.values = values

    def __len__(self) -> int:
        return int(self.number.shape[0])

    @overload
    def __getitem__(self, index: int) -> InferenceCounters: ...

    @overload
    def __getitem__(self, index: slice) -> list[InferenceCounters]: ...

    def __getitem__(self, index: int | slice) -> InferenceCounters | list[InferenceCounters]:
        if isinstance(index, slice):
            return list(self)[index]
        row = self.values[index].tolist()
        counters = {name: value for name, value in zip(self.names, row) if value >= 0}
        return InferenceCounters(int(self.number[index]), bool(self.complete[index]), counters)

    def __iter__(self) -> Iterator[InferenceCounters]:
        for i in range(len(self)):
            yield self[i]

    def json_rows(self) -> Iterator[dict[str, Any]]:
        """Every row as :meth:`InferenceCounters.to_json` gives it, made from the columns in bulk
        (one ``tolist`` per column, not one per row: a long capture has hundreds of thousands).
        """
        names = self.names
        values = self.values.tolist()
        counters: Iterator[dict[str, int]]
        if self._every_measured():  # the usual table
            counters = map(dict, map(zip, itertools.repeat(names), values))  # no Python frame per row
        else:
            counters = ({name: value for name, value in zip(names, row) if value >= 0} for row in values)
        for number, complete, row_counters in zip(self.number.tolist(), self.complete.tolist(), counters):
            yield {"number": number, "complete": complete, "counters": row_counters}

    def json_columns(self) -> tuple[dict[str, Any], list[np.ndarray]] | None:
        """:meth:`json_rows` as a row template and columns (:class:`~tracer.base.columns.JsonRows`)
        when every counter is measured in every row (else the rows differ in shape: None).
        """
        if not self._every_measured():
            return None
        template = {
            "number": Column(0),
            "complete": Column(1),
            "counters": {name: Column(2 + j) for j, name in enumerate(self.names)},
        }
        return template, [self.number, self.complete, *(self.values[:, j] for j in range(len(self.names)))]

    def _every_measured(self) -> bool:
        """Every counter is measured in every row (the rows then share one shape)."""
        return bool((self.values >= 0).all())

    def _column(self, name: str) -> np.ndarray:
        if name in self.names:
            return self.values[:, self.names.index(name)]
        return np.full(len(self), -1, np.int64)

    def utilization_rows(self, below: float) -> np.ndarray:
        """The rows whose NPU utilization (as :func:`npu_utilization` gives it for the row) is
        under ``below``, computed on the columns (a long capture has hundreds of thousands of rows).
        """
        total = np.full(len(self), -1, np.int64)
        has_total = np.zeros(len(self), bool)
        for name in reversed(CYCLE_NAMES):  # the first cycle counter a row has wins
            column = self._column(name)
            total = np.where(column >= 0, column, total)
            has_total |= column >= 0
        active, idle = self._column("NPU_ACTIVE").copy(), self._column("NPU_IDLE")
        has_active, has_idle = active >= 0, idle >= 0
        derive = ~has_active & has_total & has_idle
        active[derive] = total[derive] - idle[derive]
        has_active |= derive
        derive = ~has_total & has_active & has_idle
        total[derive] = active[derive] + idle[derive]
        has_total |= derive
        known = has_active & has_total & (total != 0)
        ratio = np.divide(active, total, out=np.zeros(len(self)), where=known)
        # Wide by the rounding of NpuUtilization.ratio (a row just above ``below`` may round under
        # it) and a little more (floating point): the caller confirms each row on its rounded ratio.
        return np.flatnonzero(known & (ratio < below + 10.0**-RATIO_PLACES + 1e-9))

    @staticmethod
    def concat(parts: Sequence[InferenceCounterTable]) -> InferenceCounterTable:
        """The rows of ``parts`` in order, with every counter any of them has."""
        names = list(dict.fromkeys(name for p in parts for name in p.names))
        values = np.full((sum(len(p) for p in parts), len(names)), -1, np.int64)
        at = 0
        for p in parts:
            for j, name in enumerate(p.names):
                values[at : at + len(p), names.index(name)] = p.values[:, j]
            at += len(p)
        number = np.concatenate([p.number for p in parts]) if parts else np.zeros(0, np.int64)
        complete = np.concatenate([p.complete for p in parts]) if parts else np.zeros(0, bool)
        return InferenceCounterTable(number, complete, names, values)

    def first_seen(self, rows: np.ndarray | None = None) -> list[str]:
        """The counters the rows (all, or where ``rows`` holds) have, in the order a reader of the
        rows one by one meets them.
        """
        present = self.values >= 0 if rows is None else (self.values >= 0) & rows[:, None]
        have = np.flatnonzero(present.any(axis=0))
        if not len(have):
            return []
        first = present[:, have].argmax(axis=0)
        return [self.names[j] for _, j in sorted(zip(first.tolist(), have.tolist()))]

    def totals(self, rows: np.ndarray) -> dict[str, int]:
        """Per counter, the sum over the rows where ``rows`` holds that have it (in the order met)."""
        present = (self.values >= 0) & rows[:, None]
        column = {name: j for j, name in enumerate(self.names)}
        return {name: int(self.values[present[:, column[name]], column[name]].sum()) for name in self.first_seen(rows)}


def inference_counters(timeline: InferenceTimeline) -> InferenceCounterTable:
    """The counters of each inference of ``timeline`` that has any, in order: the sums over its
    spans, and what a log printed for the counters its spans do not have.
    """
    inf = timeline.inferences
    names, columns = _span_sums(timeline)
    totals = timeline.pmu_totals
    names += [name for name in dict.fromkeys(n for row in totals.values() for n in row) if name not in names]
    values = np.full((len(inf), len(names)), -1, np.int64)
    for j, column in enumerate(columns):
        values[:, j] = column
    if totals:
        column_of = {name: j for j, name in enumerate(names)}
        for i, number in enumerate(inf.number.tolist()):
            for name, value in totals.get(number, {}).items():
                if values[i, column_of[name]] < 0:
                    values[i, column_of[name]] = int(value)
    keep = (values >= 0).any(axis=1) if len(names) else np.zeros(len(inf), bool)
    return InferenceCounterTable(inf.number[keep], inf.complete[keep], names, values[keep])


def _span_sums(timeline: InferenceTimeline) -> tuple[list[str], list[np.ndarray]]:
    """Per counter, the sum over each inference's spans that measured it, aligned with the
    inference rows (-1 where no span of the inference measured it).
    """
    spans = timeline.spans
    inf = timeline.inferences
    n = len(inf)
    if not len(spans) or not spans.pmu.shape[1] or not n:
        return [], []
    # Spans come in runs of one inference (spans end in inference order, nearly always): each run
    # is looked up among the inference rows once, not each span, and summed per counter
    # (unmeasured values as 0). A run per span, in the worst case, costs what a lookup per span did.
    first = run_starts(spans.inference)
    numbers = spans.inference[first]
    order = np.argsort(inf.number, kind="stable")
    sorted_numbers = inf.number[order]
    pos = np.minimum(np.searchsorted(sorted_numbers, numbers), n - 1)
    known = sorted_numbers[pos] == numbers  # spans of an inference without a row are left out
    row = order[pos[known]]
    several = len(row) > 1 and not bool((row[1:] > row[:-1]).all())  # an inference in several runs
    # Every counter at once (a span without a counter adds 0 to its run's sum).
    run_sums = np.add.reduceat(np.maximum(spans.pmu, 0), first, axis=0)[known]
    run_measured = np.logical_or.reduceat(spans.pmu >= 0, first, axis=0)[known]
    names: list[str] = []
    columns: list[np.ndarray] = []
    for j in np.flatnonzero(run_measured.any(axis=0)).tolist():  # counters no span measured left out
        sums = np.zeros(n, np.int64)
        have = np.zeros(n, bool)
        if several:
            np.add.at(sums, row, run_sums[:, j])
            np.logical_or.at(have, row, run_measured[:, j])
        else:
            sums[row] = run_sums[:, j]
            have[row] = run_measured[:, j]
        names.append(spans.pmu_names[j])
        columns.append(np.where(have, sums, -1))
    return names, columns


def _unit(name: str) -> str:
    if "BEAT" in name:
        return "beats"
    return "cycles"
