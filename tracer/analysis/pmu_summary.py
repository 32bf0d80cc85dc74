"""The report's ``pmu`` section: named NPU PMU counters per inference and in total.

Two sources, one shape. A capture carries PMU deltas per layer span (the firmware's snapshots around
each NPU layer): an inference's counter is the sum over its spans. A text log carries the totals
the firmware printed per inference (MLEK's ``Profile for Inference``, ExecuTorch's PMU report,
``ethosu_pmu_cntr`` lines): those are used as printed, and fill in counters the spans do not have.
Totals add up the complete inferences only; incomplete ones are listed but never summed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tracer.telemetry.model import InferenceTimeline
from tracer.telemetry.pmu_events import CYCLE_COUNTER

CYCLE_NAMES = (CYCLE_COUNTER, "CYCLE")  # the 48-bit cycle counter: captures say PMU_CYCLES, logs CYCLE
SIMULATED_NOTE = "simulated: no real NPU; the firmware computed these values from the layer shapes"


def pmu_section(timeline: InferenceTimeline) -> dict[str, Any]:
    """``{simulated, note, units, counters, per_inference, totals, totals_over, summaries,
    npu_utilization}`` (see the module docstring)."""
    per_inference = _per_inference(timeline)
    names: list[str] = []
    for row in per_inference:
        names.extend(n for n in row["counters"] if n not in names)
    for stat in timeline.pmu_stats:
        if stat not in names:
            names.append(stat)
    totals: dict[str, int] = {}
    complete = [row for row in per_inference if row["complete"]]
    for row in complete:
        for name, value in row["counters"].items():
            totals[name] = totals.get(name, 0) + value
    simulated = timeline.labels.get("npu_pmu") == "simulated"
    units = {n: timeline.pmu_units.get(n) or _unit(n) for n in names}
    return {
        "simulated": simulated,
        "note": SIMULATED_NOTE if simulated else None,
        "units": units,
        "counters": names,
        "per_inference": per_inference,
        "totals": totals,
        "totals_over": len(complete),
        "excluded": len(per_inference) - len(complete),
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


def _per_inference(timeline: InferenceTimeline) -> list[dict[str, Any]]:
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
            out.append({"number": number, "complete": complete[i], "counters": counters})
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
