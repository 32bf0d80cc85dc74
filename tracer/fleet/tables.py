"""One analysed capture as rows of the dataset's tables (:mod:`tracer.fleet.schema`).

The per-execution tables are each window's timeline columns as they are (no Python object per
execution), written as they come. The summary rows come from the capture's digest (its windows
merged): memory marks, findings, labels; the per-layer statistics and the latency are the
analysis's own when the capture was one window, else the same statistics over the digest's
compact columns (:class:`CaptureStatistics`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from tracer.analysis.result import Analysis
from tracer.analysis.statistics import CycleSummary
from tracer.base.facts import InputFacts
from tracer.base.timeline import InferenceTimeline, LayerInfo
from tracer.compare.digest import CaptureDigest
from tracer.fleet import schema
from tracer.power.attribute import EnergyAnalysis

HASH_BLOCK = 1 << 20


def content_id(path: str) -> str:
    """The SHA-256 of a file's bytes, hex: a capture's identity in the dataset."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def model_id(layers: Mapping[int, LayerInfo]) -> str:
    """A short hash of a layer list (index, name, operator): captures of one model share it."""
    shape = [[i, info.name, info.op] for i, info in sorted(layers.items())]
    return hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:16]


def partition_date(created: str | None, fallback: _dt.date) -> str:
    """The ``date`` partition: the day of ``created`` (ISO 8601) if it parses, else ``fallback``."""
    if created:
        try:
            return _dt.datetime.fromisoformat(created).date().isoformat()
        except ValueError:
            pass
    return fallback.isoformat()


@dataclasses.dataclass(frozen=True)
class CaptureStatistics:
    """The statistics of a whole capture the summary tables carry.

    Attributes:
        layers: Per layer index: its cycle statistics over the complete executions (None: none).
        latency: The complete inferences' latency (None: none).
    """

    layers: Mapping[int, CycleSummary | None]
    latency: CycleSummary | None

    @classmethod
    def of_analysis(cls, analysis: Analysis) -> CaptureStatistics:
        """The analysis' own numbers (read whole or in windows: the same analysis)."""
        return cls({i: st.cycles for i, st in analysis.layers.items()}, analysis.latency)


def summary_tables(
    d: CaptureDigest,
    stats: CaptureStatistics,
    last: InferenceTimeline,
    facts: InputFacts,
    capture_id: str,
    size: int,
    created: str | None,
    run_id: str,
    ingested_at: str,
    energy: EnergyAnalysis | None = None,
) -> dict[str, pa.Table]:
    """The captures, labels, layers, stacks and findings rows of one capture.

    Args:
        d: The capture's digest (its windows merged).
        stats: Its statistics.
        last: Its last window (the loss counters and the clock, as at the end of the capture).
        facts: The input's facts at its end.
        capture_id: Its identity.
        size: Its file size in bytes.
        created: When it was recorded, if known.
        run_id: The ingest run's id.
        ingested_at: When the ingest run started.
        energy: Its power recording's attribution (``ingest --power``), or None.
    """
    loss = last.loss
    lat = stats.latency
    layers = {i: d.layers.get(i) or last.layer(i) for i in sorted(set(d.layers) | set(stats.layers))}
    captures = {
        "capture_id": [capture_id],
        "path": [d.names[0]],
        "bytes": [size],
        "kind": [facts.kind],
        "source": [facts.source],
        "created": [created],
        "clock_hz": [last.clock_hz],
        "clock_source": [last.clock_source],
        "model": [model_id(layers)],
        "layer_count": [len(layers)],
        "inferences": [d.inferences],
        "complete": [d.complete],
        "latency_p50": [lat.p50 if lat else None],
        "latency_p99": [lat.p99 if lat else None],
        "arena_used": [d.arena_used],
        "arena_size": [d.arena_size],
        "overflows": [loss.overflows],
        "gaps": [loss.gaps],
        "lost_records": [loss.lost_records],
        "damaged_records": [loss.damaged_records],
        "warnings": [len(facts.warnings)],
        "run_id": [run_id],
        "ingested_at": [ingested_at],
        "energy_uj": [energy.inference_mean_uj if energy else None],
        "energy_interval_uj": [energy.inference_interval_uj if energy else None],
        "power_path": [energy.recording.path if energy else None],
    }
    rows = []
    for index, info in layers.items():
        c = stats.layers.get(index)
        e = energy.layers.get(index) if energy else None
        rows.append(
            {
                "capture_id": capture_id,
                "layer": index,
                "name": info.name,
                "op": info.op,
                "engine": info.engine.value,
                "count": c.count if c else 0,
                "excluded": d.excluded.get(index, 0),
                "min": c.min if c else None,
                "p50": c.p50 if c else None,
                "p99": c.p99 if c else None,
                "max": c.max if c else None,
                "mean": c.mean if c else None,
                "std": c.std if c else None,
                "energy_uj": e.energy_uj if e else None,
                "energy_interval_uj": e.interval_uj if e else None,
            }
        )
    return {
        "captures": pa.Table.from_pydict(captures, schema=schema.CAPTURES),
        "labels": pa.Table.from_pylist(
            [{"capture_id": capture_id, "key": k, "value": v} for k, v in sorted(d.labels.items())],
            schema=schema.LABELS,
        ),
        "layers": pa.Table.from_pylist(rows, schema=schema.LAYERS),
        "stacks": pa.Table.from_pylist(
            [
                {"capture_id": capture_id, "name": name, "high_water": high, "size": size_, "canary_ok": ok}
                for name, (high, size_, ok) in d.stacks.items()
            ],
            schema=schema.STACKS,
        ),
        "findings": pa.Table.from_pylist(
            [
                {"capture_id": capture_id, "id": f.id, "severity": f.severity, "layer": f.layer, "message": f.message}
                for f in d.findings
            ],
            schema=schema.FINDINGS,
        ),
    }


def execution_tables(timeline: InferenceTimeline, capture_id: str) -> dict[str, pa.Table]:
    """The inferences, layer_executions and pmu rows of a timeline (or of a window of one)."""
    inf, spans = timeline.inferences, timeline.spans
    missing_start, missing_end = inf.start < 0, inf.end < 0
    problems = [("; ".join(p) if p else None) for p in inf.problems]
    inferences = pa.table(
        {
            "capture_id": _ids(capture_id, len(inf)),
            "inference": pa.array(inf.number, pa.int64()),
            "start": pa.array(inf.start, pa.int64(), mask=missing_start),
            "end": pa.array(inf.end, pa.int64(), mask=missing_end),
            "latency": pa.array(inf.end - inf.start, pa.int64(), mask=missing_start | missing_end),
            "complete": pa.array(inf.complete, pa.bool_()),
            "problems": pa.array(problems, pa.string()),
            "input_crc": pa.array(inf.input_crc, pa.int64(), mask=inf.input_crc < 0),
            "output_crc": pa.array(inf.output_crc, pa.int64(), mask=inf.output_crc < 0),
        },
        schema=schema.INFERENCES,
    )
    executions = pa.table(
        {
            "capture_id": _ids(capture_id, len(spans)),
            "inference": pa.array(spans.inference, pa.int64()),
            "layer": pa.array(spans.layer, pa.int32()),
            "start": pa.array(spans.start, pa.int64()),
            "cycles": pa.array(spans.cycles, pa.int64()),
            "isr_cycles": pa.array(spans.isr_cycles, pa.int64()),
            "complete": pa.array(spans.complete, pa.bool_()),
        },
        schema=schema.LAYER_EXECUTIONS,
    )
    return {"inferences": inferences, "layer_executions": executions, "pmu": _pmu(timeline, capture_id)}


def _pmu(timeline: InferenceTimeline, capture_id: str) -> pa.Table:
    """Long format: one row per measured counter of a layer execution, and per counter a log
    printed for a whole inference (layer null).
    """
    spans = timeline.spans
    parts = []
    names = list(spans.pmu_names)
    if spans.pmu.shape[1]:
        rows, cols = np.nonzero(spans.pmu >= 0)
        parts.append(
            (
                spans.inference[rows],
                spans.layer[rows].astype(np.int32),
                cols.astype(np.int32),
                spans.pmu[rows, cols],
                np.zeros(len(rows), bool),
            )
        )
    totals = [
        (number, name, value) for number, counters in timeline.pmu_totals.items() for name, value in counters.items()
    ]
    if totals:
        for _, name, _ in totals:
            if name not in names:
                names.append(name)
        parts.append(
            (
                np.array([t[0] for t in totals], np.int64),
                np.zeros(len(totals), np.int32),
                np.array([names.index(t[1]) for t in totals], np.int32),
                np.array([t[2] for t in totals], np.int64),
                np.ones(len(totals), bool),
            )
        )
    if not parts:
        return schema.PMU.empty_table()
    inference, layer, counter, value, whole = (np.concatenate(c) for c in zip(*parts))
    return pa.table(
        {
            "capture_id": _ids(capture_id, len(value)),
            "inference": pa.array(inference, pa.int64()),
            "layer": pa.array(layer, pa.int32(), mask=whole),
            "counter": pa.DictionaryArray.from_arrays(pa.array(counter, pa.int32()), pa.array(names, pa.string())),
            "value": pa.array(value, pa.int64()),
        },
        schema=schema.PMU,
    )


def _ids(capture_id: str, n: int) -> pa.DictionaryArray:
    """``capture_id`` repeated ``n`` times, dictionary-encoded (4 bytes a row)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([capture_id], pa.string()))
