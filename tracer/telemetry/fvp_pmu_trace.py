"""The FVP's Ethos-U PMU trace as a measured per-operation NPU timeline, mapped to layers.

An Arm Corstone FVP run with ``-C ethosu.extra_args="--pmu-trace FILE"`` (``mps4_board.subsystem.
ethosu.extra_args`` on Corstone-320) writes Chrome trace-event JSON, optionally gzip-compressed:
``{"traceEvents": [...]}`` whose numbers are strings (``"ts": "1029"``) counted in NPU cycles.
Events on the ``qread`` track carry the NPU's command-queue read position (``args.qread``, in
32-bit words). Vela's debug database (``--enable-debug-db``) lists, per command stream, the byte
offset just past each operation's ``NPU_OP_*`` command (table ``queue``), and maps operations to
the original TFLite operators (``optimised.source_id`` -> ``source.ext_key``). When the queue read
position passes an operation's offset, the NPU has issued it; the operation runs until the next one
is issued. This is the join ExecuTorch's Model Explorer overlay makes; here each execution of each
command stream becomes an NPU job and each full pass over the command streams an inference.

The FVP models the NPU cycle-accurately but not the CPU (Arm says so), so NPU spans are labelled
measured and CPU gaps between NPU jobs are labelled "model estimate".

One module although over 400 lines: reading the trace, reading Vela's queue table and joining them
are one algorithm; neither half has another user.
"""

from __future__ import annotations

import bisect
import csv
import dataclasses
import io
import itertools
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from tracer.base.timeline import Engine, Inference, InferenceTimeline, LayerInfo, LayerSpan, NpuJob, TimelineBuilder
from tracer.errors import CaptureError, reading_file
from tracer.limits import MAX_PMU_TRACE_BYTES, InputError, gunzip_limited, parse_json, read_limited

QREAD_TRACK = "qread"
# After its last operation a command stream holds only NPU_OP_STOP and perhaps a few waits; a
# queue read further than this past the last listed operation means the database does not fit.
TAIL_SLACK = 64
LIMIT = 1 << 62  # cycle counts beyond this are not times (and would overflow int64 columns)
NPU_LABEL = "measured (FVP Ethos-U PMU trace; the NPU model is cycle-accurate)"
CPU_LABEL = "model estimate"


@dataclasses.dataclass(frozen=True, slots=True)
class TraceEvent:
    """One trace event with its numbers parsed.

    Attributes:
        name: Event name (``axi_enabled_cycles``, ``qread`` ...).
        track: The ``tid`` (thread/track) it is on.
        group: The ``pid`` (process/group) it is in.
        ts: Start, in NPU cycles.
        dur: Duration in NPU cycles (0 for counters and instants).
        args: The event's ``args``.
    """

    name: str
    track: str
    group: str
    ts: int
    dur: int
    args: dict[str, Any]


@dataclasses.dataclass
class PmuTrace:
    """A parsed PMU trace: its events in time order and the queue-read samples.

    Attributes:
        events: Every event with a timestamp, sorted by ``ts``.
        qread: ``(ts, byte offset)`` samples of the command-queue read position, in time order.
        skipped: Events without a usable ``ts`` (counted, never silently dropped).
    """

    events: list[TraceEvent]
    qread: list[tuple[int, int]]
    skipped: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class QueueEntry:
    """One NPU operation in a command stream (a row of the debug database's ``queue`` table)."""

    cmdstream: int
    offset: int
    optimised_id: int
    layer: int | None


@dataclasses.dataclass
class VelaDebugDb:
    """What the timeline needs from Vela's debug database.

    Attributes:
        streams: Queue entries per command stream id, ordered by offset; streams in id order.
        layers: Original TFLite operators by operator index (``ext_key``).
        npu_layers: Indices of the operators that have NPU operations.
    """

    streams: dict[int, list[QueueEntry]]
    layers: dict[int, LayerInfo]
    npu_layers: set[int]


@dataclasses.dataclass(frozen=True, slots=True)
class NpuOperation:
    """One execution of one NPU operation."""

    inference: int
    job: int
    cmdstream: int
    offset: int
    layer: int | None
    start: int
    end: int
    complete: bool


# -- reading -----------------------------------------------------------------------------------
def read_pmu_trace(source: str | os.PathLike[str] | BinaryIO | bytes, name: str | None = None) -> PmuTrace:
    """Read a PMU trace file (plain or gzip-compressed JSON).

    Raises:
        CaptureError: Missing file, not JSON, or no ``traceEvents`` list.
    """
    label = name or (str(source) if isinstance(source, (str, os.PathLike)) else "<pmu trace>")
    blob = _read_bytes(source, label)
    try:
        if blob[:2] == b"\x1f\x8b":
            blob = gunzip_limited(blob, MAX_PMU_TRACE_BYTES, "a PMU trace")
        doc = parse_json(blob)
    except InputError as exc:
        raise CaptureError(f"{label}: not a JSON trace ({exc})") from None
    raw = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(raw, list):
        raise CaptureError(f"{label}: expected a JSON object with a 'traceEvents' list")
    return parse_trace_events(raw)


def parse_trace_events(raw: Iterable[Any]) -> PmuTrace:
    """Parse a ``traceEvents`` list (numbers may be strings, as the FVP writes them)."""
    events: list[TraceEvent] = []
    skipped = 0
    for item in raw:
        if not isinstance(item, dict) or item.get("ph") == "M":
            continue  # metadata events name tracks; they carry no time
        ts = _number(item.get("ts"))
        if ts is None:
            skipped += 1
            continue
        given = item.get("args")
        args = given if isinstance(given, dict) else {}
        events.append(
            TraceEvent(
                str(item.get("name", "")),
                str(item.get("tid", "")),
                str(item.get("pid", "")),
                ts,
                _number(item.get("dur")) or 0,
                args,
            )
        )
    events.sort(key=lambda e: e.ts)
    qread = []
    for event in events:
        if event.track == QREAD_TRACK or event.name == QREAD_TRACK:
            words = _number(event.args.get("qread"))
            if words is not None:
                qread.append((event.ts, 4 * words))
    return PmuTrace(events, qread, skipped)


def read_debug_db(source: str | os.PathLike[str] | BinaryIO | bytes, name: str | None = None) -> VelaDebugDb:
    """Read Vela's debug database XML (legacy and regor layouts alike).

    Raises:
        CaptureError: Missing file, not XML, or without the ``queue``/``optimised``/``source`` tables.
    """
    label = name or (str(source) if isinstance(source, (str, os.PathLike)) else "<debug db>")
    blob = _read_bytes(source, label)
    try:
        root = ET.fromstring(blob)  # a local file the user names, not network input
    except ET.ParseError as exc:
        raise CaptureError(f"{label}: not Vela debug database XML ({exc})") from None
    tables = {t.get("name"): _csv_rows(t.text or "") for t in root.iter("table")}
    for needed in ("queue", "optimised", "source"):
        if needed not in tables:
            raise CaptureError(f"{label}: no '{needed}' table (was Vela run with --enable-debug-db?)")
    try:
        source_rows = {int(r["id"]): r for r in tables["source"]}
        to_source = {int(r["id"]): int(r["source_id"]) for r in tables["optimised"]}
        names = _perf_names(tables.get("perf", []))
        layers: dict[int, LayerInfo] = {}
        for sid, row in source_rows.items():
            index = int(row.get("ext_key", sid))
            layers[index] = LayerInfo(index, names.get(sid, ""), row.get("operator", ""), Engine.CPU)
        streams: dict[int, list[QueueEntry]] = {}
        npu_layers: set[int] = set()
        for row in tables["queue"]:
            opt = int(row["optimised_id"])
            source_id = to_source.get(opt)
            layer = int(source_rows[source_id].get("ext_key", source_id)) if source_id in source_rows else None
            entry = QueueEntry(int(row["cmdstream_id"]), int(row["offset"]), opt, layer)
            streams.setdefault(entry.cmdstream, []).append(entry)
            if layer is not None:
                npu_layers.add(layer)
    except (KeyError, ValueError) as exc:
        raise CaptureError(f"{label}: unexpected debug database contents ({exc})") from None
    for index in npu_layers:
        info = layers[index]
        layers[index] = LayerInfo(info.index, info.name, info.op, Engine.NPU)
    ordered = {sid: sorted(rows, key=lambda e: e.offset) for sid, rows in sorted(streams.items())}
    return VelaDebugDb(ordered, layers, npu_layers)


# -- joining -----------------------------------------------------------------------------------
def npu_operations(trace: PmuTrace, db: VelaDebugDb) -> tuple[list[NpuOperation], list[str]]:
    """Every NPU operation execution, from the queue-read samples; plus problems found.

    Runs of non-decreasing queue-read position are command-stream executions (NPU jobs); the
    command streams run in id order, once per inference.
    """
    problems: list[str] = []
    streams = list(db.streams)
    if not streams:
        return [], ["the debug database lists no NPU operations"]
    runs = _runs(trace.qread)
    ops: list[NpuOperation] = []
    for job, run in enumerate(runs):
        stream = streams[job % len(streams)]
        inference = job // len(streams)
        entries = db.streams[stream]
        kicks: list[int | None] = []
        k = 0
        for entry in entries:
            while k < len(run) and run[k][1] < entry.offset:
                k += 1
            kicks.append(run[k][0] if k < len(run) else None)
        run_start, run_end = run[0][0], run[-1][0]
        mismatch = run[-1][1] > entries[-1].offset + TAIL_SLACK
        if mismatch:
            problems.append(
                f"NPU job {job} read command stream {stream} up to offset {run[-1][1]}, past the last "
                f"operation the debug database lists ({entries[-1].offset}): is the database from the same "
                "compilation? Its operations are marked incomplete"
            )
        if run[-1][1] < entries[-1].offset:
            problems.append(
                f"NPU job {job} (command stream {stream}) ended at queue offset {run[-1][1]} before "
                f"its last operation at offset {entries[-1].offset}; its operations are incomplete"
            )
        for i, entry in enumerate(entries):
            start = run_start if i == 0 else kicks[i]
            end = kicks[i + 1] if i + 1 < len(entries) else run_end
            complete = start is not None and end is not None and kicks[i] is not None and not mismatch
            ops.append(
                NpuOperation(
                    inference,
                    job,
                    stream,
                    entry.offset,
                    entry.layer,
                    start if start is not None else run_end,
                    end if end is not None else run_end,
                    complete,
                )
            )
    if runs and len(runs) % len(streams):
        problems.append(
            f"{len(runs)} NPU jobs is not a whole number of inferences of {len(streams)} command "
            "streams; the last inference is incomplete"
        )
    return ops, problems


def npu_timeline(trace: PmuTrace, db: VelaDebugDb, clock_hz: int | None = None, source: str = "") -> InferenceTimeline:
    """Build the timeline: NPU layers measured, CPU gaps between NPU jobs as model estimates.

    Args:
        trace: The PMU trace.
        db: Vela's debug database of the same compiled model.
        clock_hz: The NPU clock, when known (trace times are NPU cycles).
        source: Where the trace came from, for reports.
    """
    ops, problems = npu_operations(trace, db)
    builder = TimelineBuilder(
        clock_hz=clock_hz,
        clock_source="fvp npu cycles",
        labels={"npu": NPU_LABEL, "cpu": CPU_LABEL},
        source=source,
        layers=dict(db.layers),
    )
    counters = _counters_by_op(trace, ops)
    streams = len(db.streams)
    by_inference: dict[int, list[NpuOperation]] = {}
    for op in ops:
        by_inference.setdefault(op.inference, []).append(op)
    for number, mine in sorted(by_inference.items()):
        jobs = sorted({op.job for op in mine})
        complete = len(jobs) == streams and all(op.complete for op in mine)
        issues = () if complete else ("NPU trace incomplete for this inference",)
        for job in jobs:
            job_ops = [op for op in mine if op.job == job]
            builder.add_npu_job(
                NpuJob(min(o.start for o in job_ops), max(o.end for o in job_ops), number, job_ops[0].cmdstream)
            )
        _add_layer_spans(builder, number, mine, counters)
        _add_cpu_gaps(builder, db, number, mine)
        builder.add_inference(
            Inference(number, min(o.start for o in mine), max(o.end for o in mine), complete, issues, ())
        )
    timeline = builder.build()
    timeline.log["fvp_pmu_trace"] = {"npu_jobs": len(timeline.npu_jobs), "operations": len(ops), "problems": problems}
    return timeline


def _add_layer_spans(
    builder: TimelineBuilder, number: int, ops: list[NpuOperation], counters: dict[int, dict[str, int]]
) -> None:
    by_layer: dict[int, list[NpuOperation]] = {}
    for op in ops:
        if op.layer is not None:
            by_layer.setdefault(op.layer, []).append(op)
    for layer, span_ops in sorted(by_layer.items()):
        pmu: dict[str, int] = {}
        for op in span_ops:
            for key, value in counters.get(id(op), {}).items():
                pmu[key] = pmu.get(key, 0) + value
        builder.add_span(
            LayerSpan(
                number,
                layer,
                min(o.start for o in span_ops),
                max(o.end for o in span_ops),
                all(o.complete for o in span_ops),
                0,
                pmu,
            )
        )


def _add_cpu_gaps(builder: TimelineBuilder, db: VelaDebugDb, number: int, ops: list[NpuOperation]) -> None:
    """Attribute the time between two NPU jobs to the one CPU operator that lies between them."""
    jobs: dict[int, list[NpuOperation]] = {}
    for op in ops:
        jobs.setdefault(op.job, []).append(op)
    ordered = [jobs[j] for j in sorted(jobs)]
    for before, after in itertools.pairwise(ordered):
        last = max((o.layer for o in before if o.layer is not None), default=None)
        first = min((o.layer for o in after if o.layer is not None), default=None)
        if last is None or first is None:
            continue
        between = [i for i in db.layers if last < i < first and i not in db.npu_layers]
        if len(between) == 1:
            end_before = max(o.end for o in before)
            start_after = min(o.start for o in after)
            builder.add_span(LayerSpan(number, between[0], end_before, start_after, True))


def _counters_by_op(trace: PmuTrace, ops: list[NpuOperation]) -> dict[int, dict[str, int]]:
    """Sum the durations of complete (``X``) events per operation they start in."""
    starts = sorted((op.start, op.end, id(op)) for op in ops)
    out: dict[int, dict[str, int]] = {}
    keys = [s for s, _e, _i in starts]
    for event in trace.events:
        if event.dur <= 0 or event.track == QREAD_TRACK:
            continue
        i = bisect.bisect_right(keys, event.ts) - 1
        if i < 0 or event.ts >= starts[i][1]:
            continue
        counters = out.setdefault(starts[i][2], {})
        counters[event.name] = counters.get(event.name, 0) + event.dur
    return out


def _runs(qread: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    runs: list[list[tuple[int, int]]] = []
    for sample in qread:
        if not runs or sample[1] < runs[-1][-1][1]:
            runs.append([sample])
        else:
            runs[-1].append(sample)
    return runs


# -- helpers -------------------------------------------------------------------------------------
def _read_bytes(source: str | os.PathLike[str] | BinaryIO | bytes, label: str) -> bytes:
    if isinstance(source, bytes):
        return source
    if isinstance(source, (str, os.PathLike)):
        with reading_file(label, "a PMU trace or debug database", CaptureError):
            return read_limited(Path(source), MAX_PMU_TRACE_BYTES, "a PMU trace or debug database")
    blob = source.read(MAX_PMU_TRACE_BYTES + 1)
    if len(blob) > MAX_PMU_TRACE_BYTES:
        raise CaptureError(f"{label}: more than {MAX_PMU_TRACE_BYTES:,} bytes: too large for a PMU trace")
    return blob


def _number(value: Any) -> int | None:
    """An integer from a JSON number or a numeric string; None if absent, not a number or out of range."""
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, int):
            number = value
        elif isinstance(value, float):
            number = int(value)
        elif isinstance(value, str):
            text = value.strip().lower()
            number = int(text, 16) if text.startswith("0x") else int(float(text))
        else:
            return None
    except (ValueError, OverflowError):
        return None
    return number if abs(number) < LIMIT else None


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text.strip())))


def _perf_names(rows: list[dict[str, str]]) -> dict[int, str]:
    names: dict[int, str] = {}
    for row in rows:
        try:
            sid = int(row["source_id"])
        except (KeyError, ValueError):
            continue
        names.setdefault(sid, row.get("name", ""))
    return names


PMU_TRACE_NOTE = "fvp pmu trace"


def pmu_trace_note(path: str, raw_events: list[Any]) -> dict[str, Any]:
    """The capture note that keeps an FVP run's PMU trace inside its capture."""
    return {"event": PMU_TRACE_NOTE, "file": path, "traceEvents": raw_events}


def pmu_trace_from_notes(notes: Iterable[dict[str, Any]]) -> PmuTrace | None:
    """The PMU trace stored in a capture's notes by ``tracer record fvp``, or None."""
    for note in notes:
        if note.get("event") == PMU_TRACE_NOTE and isinstance(note.get("traceEvents"), list):
            return parse_trace_events(note["traceEvents"])
    return None
