"""NPU samples a probe polled (``npu=`` on ``jlink://``/``pyocd://``), placed on the firmware's time line.

A probe's samples carry host time and the raw 32-bit DWT CYCCNT it read in the same poll
(:mod:`tracer.sources.npu_polling`). When the firmware's own records count DWT CYCCNT too (its
TARGET_INFO says ``dwt``), CYCCNT places each sample exactly: the samples' CYCCNT values are
unwrapped into one increasing sequence (consecutive polls less than 2^31 cycles apart, checked
with the host times), and the one unknown, how many 2^32 wraps the firmware's 64-bit time had
made at the first sample, is the value that puts the most samples of a running NPU inside the
capture's NPU layer spans; it is accepted only when at least half of them land there and no
other value does as well. Otherwise the samples are left out and a warning says why: a sample
placed at the wrong time would give a wrong split.

The placed samples become NPU_SAMPLE records (and one SAMPLER_INFO record saying "probe", with
the rate asked for) among the timeline's kept records, so the sampling analysis reads them like
the firmware's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tracer.base.samples import NPU_STATUS_RUNNING
from tracer.base.timeline import Engine, InferenceTimeline, TelemetryRecord
from tracer.telemetry.wire import (
    MARKER_COST_UNKNOWN,
    NPU_SAMPLE_CYCLES,
    SAMPLER_NPU,
    SAMPLER_PROBE,
    RecordType,
)

WRAP = 1 << 32
MIN_PLACED = 0.5
MAX_WRAP_CANDIDATES = 4096  # counts of wraps tried: 4.8 hours of a 1 GHz core's time line


def probe_npu_records(
    notes: Iterable[dict[str, Any]], timeline: InferenceTimeline
) -> tuple[list[TelemetryRecord], list[str]]:
    """The probe's NPU samples as placed records, and warnings about what could not be placed."""
    batches = [n for n in notes if n.get("event") == "npu samples"]
    if not batches:
        return [], []
    rates = [n["requested_hz"] for n in notes if n.get("event") == "npu sampling" and n.get("requested_hz")]
    columns = {
        key: [v for b in batches for v in b.get(key, [])]
        for key in ("qread", "status", "qbase", "qsize", "pmu_cycles", "counters", "cyccnt", "host_time")
    }
    count = len(columns["qread"])
    where = f"{count} NPU samples polled by the probe"
    if timeline.clock_source != "dwt" or not timeline.clock_hz:
        return [], [
            (
                f"{where} are left out: the firmware's time base is {timeline.clock_source}, not DWT CYCCNT, "
                "so they cannot be placed on its time line"
            )
        ]
    if any(c is None for c in columns["cyccnt"]):
        return [], [f"{where} are left out: they carry no DWT CYCCNT (cyccnt=0 in the URL)"]
    cycles = _place(columns, timeline)
    if isinstance(cycles, str):
        return [], [f"{where} are left out: {cycles}"]
    records = []
    period = round(timeline.clock_hz / rates[-1]) if rates else 0
    records.append(
        TelemetryRecord(
            RecordType.SAMPLER_INFO,
            int(cycles[0]),
            None,
            (SAMPLER_NPU | SAMPLER_PROBE, period, 0, MARKER_COST_UNKNOWN),
        )
    )
    for k in range(count):
        counters = [int(c) for c in columns["counters"][k] or []][:8]
        pmu = columns["pmu_cycles"][k]
        flags = len(counters) | ((NPU_SAMPLE_CYCLES | (((int(pmu) >> 32) & 0xFFFF) << 16)) if pmu is not None else 0)
        words = [columns["qread"][k], columns["status"][k], columns["qbase"][k], columns["qsize"][k], flags]
        words += [int(pmu) & 0xFFFFFFFF] if pmu is not None else []
        records.append(
            TelemetryRecord(RecordType.NPU_SAMPLE, int(cycles[k]), None, tuple(int(w) for w in words + counters))
        )
    return records, []


def _place(columns: dict[str, list[Any]], timeline: InferenceTimeline) -> np.ndarray | str:
    """The samples' 64-bit cycles, or why they cannot be placed."""
    raw = np.array([c & (WRAP - 1) for c in columns["cyccnt"]], np.int64)  # (checked: 0..2^64-1)
    host = np.array(columns["host_time"], np.float64)
    clock = float(timeline.clock_hz or 0)
    if len(host) > 1 and float(np.max(np.diff(host))) * clock >= WRAP / 2:
        return "two polls were more than 2^31 cycles apart: CYCCNT wrapped an unknown number of times between them"
    unwrapped = raw[0] + np.concatenate([[0], np.cumsum((np.diff(raw)) % WRAP)])
    running = (np.array(columns["status"], np.int64) & NPU_STATUS_RUNNING) != 0
    spans = timeline.spans
    npu = np.array([timeline.layer(int(i)).engine is Engine.NPU for i in spans.layer.tolist()], bool)
    starts, ends = spans.start[npu], spans.end[npu]
    if not running.any() or not len(starts):
        return "no NPU layer span or no running NPU sample to align them with"
    order = np.argsort(starts)
    starts, ends = starts[order], ends[order]
    candidates = _candidate_wraps(starts, ends, unwrapped)
    if isinstance(candidates, str):
        return candidates
    scores = {}
    for wraps in candidates:
        t = unwrapped[running] + wraps * WRAP
        at = np.searchsorted(starts, t, "right") - 1
        inside = (at >= 0) & (t <= ends[np.clip(at, 0, None)])
        scores[wraps] = int(inside.sum())
    ranked = sorted(scores.items(), key=lambda kv: -kv[1]) or [(0, 0)]
    best, hits = ranked[0]
    if hits < MIN_PLACED * int(running.sum()) or (len(ranked) > 1 and ranked[1][1] == hits):
        return (
            f"their DWT CYCCNT values do not put the running samples inside the capture's NPU layers "
            f"(at best {hits} of {int(running.sum())})"
        )
    return unwrapped + best * WRAP


def _candidate_wraps(starts: np.ndarray, ends: np.ndarray, unwrapped: np.ndarray) -> list[int] | str:
    """The counts of wraps that put at least one sample inside an NPU span, in increasing order
    (the others score 0), or why there are too many to try.

    Only these are scored: counting every wrap between the first span and the last would take
    as long as the distance the input puts between them (2^28 wraps for spans 2^60 cycles apart).
    """
    lo, hi = int(unwrapped.min()), int(unwrapped.max())
    found: set[int] = set()
    for start, end in zip(starts.tolist(), ends.tolist()):
        first, last = max(0, (start - hi) // WRAP), (end - lo) // WRAP
        if last < first:
            continue
        if last - first + 1 + len(found) > MAX_WRAP_CANDIDATES:
            return (
                f"the capture's NPU layers leave more than {MAX_WRAP_CANDIDATES:,} ways to place them "
                "(its time line is too long, or damaged)"
            )
        found.update(range(first, last + 1))
    return sorted(found)
