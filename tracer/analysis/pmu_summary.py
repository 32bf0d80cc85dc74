"""The report's ``pmu`` section: named NPU PMU counters per inference and in total.

Two sources, one shape. A capture carries PMU deltas per layer span (the firmware's snapshots around
each NPU layer): an inference's counter is the sum over its spans. A text log carries the totals
the firmware printed per inference (MLEK's ``Profile for Inference``, ExecuTorch's PMU report,
``ethosu_pmu_cntr`` lines): those are used as printed, and fill in counters the spans do not have.
Totals add up the complete inferences only; incomplete ones are listed but never summed in.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np

from tracer.telemetry.model import InferenceTimeline
from tracer.telemetry.pmu_events import CYCLE_COUNTER

CYCLE_NAMES = (CYCLE_COUNTER, "CYCLE")  # the 48-bit cycle counter: captures say PMU_CYCLES, logs CYCLE
SIMULATED_NOTE = "simulated: no real NPU; the firmware computed these values from the layer shapes"


def pmu_section(timeline: InferenceTimeline) -> dict[str, Any]:
    """``{simulated, note, units, counters, per_inference, totals, totals_over, summaries,
    npu_utilization}`` (see the module docstring)."""
    sums = _span_sums(timeline)
    per_inference = _per_inference(timeline, sums)
    if timeline.pmu_totals:  # a log's totals fill in: add up the rows as they are
        names = list(dict.fromkeys(itertools.chain(*(row["counters"] for row in per_inference))))
        totals: dict[str, int] = {}
        for row in per_inference:
            if row["complete"]:
                for name, value in row["counters"].items():
                    totals[name] = totals.get(name, 0) + value
    else:  # span sums only: the same, by column
        names, totals = sums.names_and_totals(timeline.inferences.complete)
    names.extend(stat for stat in timeline.pmu_stats if stat not in names)
    complete = sum(1 for row in per_inference if row["complete"])
    simulated = timeline.labels.get("npu_pmu") == "simulated"
    units = {n: timeline.pmu_units.get(n) or _unit(n) for n in names}
    return {
        "simulated": simulated,
        "note": SIMULATED_NOTE if simulated else None,
        "units": units,
        "counters": names,
        "per_inference": per_inference,
        "totals": totals,
        "totals_over": complete,
        "excluded": len(per_inference) - complete,
        "summaries": {
            name: {"unit": stat.unit, "samples": stat.samples, "total": stat.total, "mean": stat.mean,
                   "min": stat.min, "max": stat.max}
            for name, stat in timeline.pmu_stats.items()
        },  # fmt: skip
        "npu_utilization": npu_utilization(totals),
    }


def npu_utilization(counters: dict[str, int]) -> dict[str, Any] | None:
    """NPU ACTIVE over the NPU cycle counter (MLIA's "target utilization"), from whichever two of
    ACTIVE, IDLE and the total a source gives; None when fewer than two."""
    total = next((counters[n] for n in CYCLE_NAMES if n in counters), None)
    active = counters.get("NPU_ACTIVE")
    idle = counters.get("NPU_IDLE")
    if active is None and total is not None and idle is not None:
        active = total - idle
    if total is None and active is not None and idle is not None:
        total = active + idle
    if active is None or not total:
        return None
    return {"active": active, "idle": idle if idle is not None else total - active, "total": total,
            "ratio": round(active / total, 6)}  # fmt: skip


def _per_inference(timeline: InferenceTimeline, sums: _SpanSums) -> list[dict[str, Any]]:
    inf = timeline.inferences
    totals = timeline.pmu_totals
    out = []
    rows = zip(sums.values.tolist(), sums.present.tolist()) if sums.names else itertools.repeat(((), ()))
    for number, done, (values, present) in zip(inf.number.tolist(), inf.complete.tolist(), rows):
        counters = {name: value for name, value, have in zip(sums.names, values, present) if have}
        logged = totals.get(number)
        if logged:
            for name, value in logged.items():
                counters.setdefault(name, int(value))
        if counters:
            out.append({"number": number, "complete": done, "counters": counters})
    return out


@dataclasses.dataclass
class _SpanSums:
    """Per inference row and counter, the sum over the inference's spans that measured it.

    Attributes:
        names: The counters some span measured.
        values: Rows x counters, the sums (0 where ``present`` is False).
        present: Whether a span of the inference measured the counter.
    """

    names: list[str]
    values: np.ndarray
    present: np.ndarray

    def names_and_totals(self, complete: np.ndarray) -> tuple[list[str], dict[str, int]]:
        """The counters in order of first appearance over the rows, and their totals over the
        complete inferences (in order of first appearance over those), as the rows give them."""
        names = [self.names[j] for j in _first_seen(self.present)]
        counted = self.present & complete[:, None]
        totals = {self.names[j]: sum(self.values[counted[:, j], j].tolist()) for j in _first_seen(counted)}
        return names, totals


def _first_seen(present: np.ndarray) -> list[int]:
    """Columns with a True, by the first row that has one, then by column."""
    seen = np.flatnonzero(present.any(axis=0))
    if not len(seen):
        return []
    first = present[:, seen].argmax(axis=0)
    return seen[np.lexsort((seen, first))].tolist()


def _span_sums(timeline: InferenceTimeline) -> _SpanSums:
    """Per counter, the sum over each inference's spans that measured it, aligned with the
    inference rows."""
    spans = timeline.spans
    inf = timeline.inferences
    n = len(inf)
    names: list[str] = []
    values: list[np.ndarray] = []
    present: list[np.ndarray] = []
    if len(spans) and spans.pmu.shape[1] and n:
        order = np.argsort(inf.number, kind="stable")
        sorted_numbers = inf.number[order]
        pos = np.minimum(np.searchsorted(sorted_numbers, spans.inference), n - 1)
        known = sorted_numbers[pos] == spans.inference  # spans of an inference without a row are left out
        row = order[pos]
        for j, name in enumerate(spans.pmu_names):
            column = spans.pmu[:, j]
            have = (column >= 0) & known
            if not have.any():
                continue
            rows, counts = row[have], column[have]
            by_row = np.argsort(rows, kind="stable")
            rows, counts = rows[by_row], counts[by_row]
            firsts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            total = np.zeros(n, np.int64)
            total[rows[firsts]] = np.add.reduceat(counts, firsts)
            measured = np.zeros(n, bool)
            measured[rows[firsts]] = True
            names.append(name)
            values.append(total)
            present.append(measured)
    if not names:
        return _SpanSums([], np.zeros((n, 0), np.int64), np.zeros((n, 0), bool))
    return _SpanSums(names, np.stack(values, axis=1), np.stack(present, axis=1))
