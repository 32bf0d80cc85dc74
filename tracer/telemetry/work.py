"""Work counts and CPU counters per layer span (WORK, CPU_COUNTERS and CPU_COUNTER_CONFIG records).

A layer whose time depends on its input by design (a detection post-process scoring more
candidates when an object is in the frame) says how much work it did with ``trc_layer_work()``;
cores with an Armv8.1-M PMU send the instructions they retired inside each layer (INST_RETIRED)
and the other events configured; cores with DWT profiling counters send those (8 bits wide: only
their change modulo 256 is known from the records, see :data:`tracer.base.counters.DWT_SUFFIX`). Each record
belongs to the span of its layer that contains its time, in its inference.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tracer.base.counters import DWT_SUFFIX
from tracer.base.timeline import LayerSpans, TelemetryRecord
from tracer.telemetry.wire import COUNTERS_DWT, COUNTERS_PMU, DWT_COUNTER_NAMES, RecordType

# Armv8.1-M PMU event numbers (the Armv8.1-M Architecture Reference Manual's common events).
CPU_PMU_EVENTS = {
    0x0003: "L1D_CACHE_REFILL",
    0x0004: "L1D_CACHE",
    0x0006: "LD_RETIRED",
    0x0007: "ST_RETIRED",
    0x0008: "INST_RETIRED",
    0x0009: "EXC_TAKEN",
    0x0010: "BR_MIS_PRED",
    0x0011: "CPU_CYCLES",
    0x0013: "MEM_ACCESS",
    0x0019: "BUS_ACCESS",
    0x001D: "BUS_CYCLES",
    0x0021: "BR_RETIRED",
    0x0023: "STALL_FRONTEND",
    0x0024: "STALL_BACKEND",
    0x003C: "STALL",
    0x0200: "MVE_INST_RETIRED",
}


def counter_name(source: int, event: int) -> str:
    """The name of a CPU counter column."""
    if source == COUNTERS_DWT:
        return DWT_COUNTER_NAMES.get(event, f"DWT_{event}") + DWT_SUFFIX
    return CPU_PMU_EVENTS.get(event, f"PMU_EVENT_0x{event:04X}")


def span_rows(spans: LayerSpans, records: Sequence[TelemetryRecord]) -> np.ndarray:
    """The span each record (of a layer) belongs to: row index, or -1.

    The record's layer index is its first word's low 16 bits; its span has that layer, its
    inference and holds its time (layers do not nest, so at most one does).
    """
    if not len(spans) or not records:
        return np.full(len(records), -1, np.int64)
    order = np.argsort(spans.start, kind="stable")
    starts = spans.start[order]
    t = np.array([r.cycle for r in records], np.int64)
    layer = np.array([r.words[0] & 0xFFFF for r in records], np.int64)
    inference = np.array([-1 if r.inference is None else r.inference for r in records], np.int64)
    at = order[np.maximum(np.searchsorted(starts, t, side="right") - 1, 0)]
    ok = (spans.start[at] <= t) & (t <= spans.end[at]) & (spans.layer[at] == layer) & (spans.inference[at] == inference)
    return np.where(ok, at, -1)


def span_work(spans: LayerSpans, records: Iterable[TelemetryRecord]) -> np.ndarray:
    """Work count of each span (the last WORK record inside it), -1 where none came."""
    work = [r for r in records if r.type == RecordType.WORK and len(r.words) >= 2]
    out = np.full(len(spans), -1, np.int64)
    rows = span_rows(spans, work)
    for row, rec in zip(rows.tolist(), work):
        if row >= 0:
            out[row] = rec.words[1]
    return out


def span_counters(spans: LayerSpans, records: Iterable[TelemetryRecord]) -> tuple[tuple[str, ...], np.ndarray, int]:
    """CPU counter values per span.

    Returns:
        (column names, values of shape (spans, names) with -1 where not measured, records that
        could not be read: no configuration before them or fewer values than they announce).
    """
    names: list[str] = []
    config: dict[int, list[str]] = {}  # source -> its columns, in value order
    rows_of: list[tuple[TelemetryRecord, list[int]]] = []
    malformed = 0
    for rec in sorted(records, key=lambda r: r.cycle):
        if rec.type == RecordType.CPU_COUNTER_CONFIG:
            source, n = rec.words[0] & 0xFF, (rec.words[0] >> 8) & 0xFF
            events = [
                (rec.words[1 + i // 2] >> (16 * (i & 1))) & 0xFFFF for i in range(n) if 1 + i // 2 < len(rec.words)
            ]
            config[source] = [counter_name(source, e) for e in events]
            names.extend(c for c in config[source] if c not in names)
        elif rec.type == RecordType.CPU_COUNTERS:
            source, n = (rec.words[0] >> 16) & 0xF, (rec.words[0] >> 24) & 0xFF
            columns = config.get(source)
            if (
                columns is None
                or len(columns) != n
                or len(rec.words) < 1 + n
                or source not in (COUNTERS_PMU, COUNTERS_DWT)
            ):
                malformed += 1
                continue
            rows_of.append((rec, [names.index(c) for c in columns]))
    out = np.full((len(spans), len(names)), -1, np.int64)
    rows = span_rows(spans, [rec for rec, _ in rows_of])
    for row, (rec, indices) in zip(rows.tolist(), rows_of):
        if row < 0:
            continue
        source = (rec.words[0] >> 16) & 0xF
        for j, column in enumerate(indices):
            value = rec.words[1 + j]
            if source == COUNTERS_DWT:  # the counter at the layer's begin | at its end << 8
                value = ((value >> 8) - value) & 0xFF
            out[row, column] = value
    return tuple(names), out, malformed
