"""The timeline as a legacy Chrome trace-event JSON file (chrome://tracing, Perfetto's JSON import).

The tracks of :mod:`tracer.export.perfetto_layout`, as the JSON format expresses them: one process
(``pid`` 1, named by an ``M`` ``process_name`` event), one thread per slice track (``tid`` from 1,
named by ``M`` ``thread_name`` events, ordered by ``thread_sort_index``), slices as complete events
(``ph`` ``X`` with ``ts`` and ``dur`` in microseconds), instants as ``ph`` ``i`` (thread scope) and
counters as ``ph`` ``C``. Complete events on one thread never overlap (overlapping executions were
already moved to lanes of their own): the format does not allow it.
"""

from __future__ import annotations

import json
from typing import IO, Any

from tracer.analysis.result import Analysis
from tracer.export.perfetto_layout import layout

PID = 1


def chrome_trace(analysis: Analysis) -> dict[str, Any]:
    """The ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}`` object."""
    timeline = analysis.timeline
    laid = layout(analysis)
    tids = {t.name: k + 1 for k, t in enumerate(tr for tr in laid.tracks if not tr.counter)}
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": 0, "args": {"name": laid.title}}
    ]
    for name, tid in tids.items():
        events.append({"name": "thread_name", "ph": "M", "pid": PID, "tid": tid, "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": PID, "tid": tid, "args": {"sort_index": tid}})
    for s in laid.slices:
        events.append(
            {
                "name": s.name,
                "cat": s.category,
                "ph": "X",
                "ts": _us(s.start_ns),
                "dur": _us(s.end_ns - s.start_ns),
                "pid": PID,
                "tid": tids[s.track],
                "args": s.args,
            }
        )
    for i in laid.instants:
        events.append(
            {
                "name": i.name,
                "cat": i.category,
                "ph": "i",
                "s": "t",
                "ts": _us(i.ts_ns),
                "pid": PID,
                "tid": tids[i.track],
                "args": i.args,
            }
        )
    units = {t.name: t.unit for t in laid.tracks if t.counter}
    for c in laid.counters:
        events.append(
            {
                "name": c.track,
                "ph": "C",
                "ts": _us(c.ts_ns),
                "pid": PID,
                "args": {units.get(c.track) or "value": c.value},
            }
        )
    events[1:] = sorted(events[1:], key=lambda e: (e["ph"] != "M", e.get("ts", 0)))
    other = {
        "source": timeline.source,
        "clock_hz": laid.clock_hz,
        "clock_source": timeline.clock_source,
        "labels": dict(timeline.labels),
        "time_unit_note": "ts and dur in microseconds from target cycles",
    }
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def write_chrome_json(out: IO[str], analysis: Analysis) -> None:
    """Write the JSON trace."""
    json.dump(chrome_trace(analysis), out, separators=(",", ":"))
    out.write("\n")


def _us(ns: int) -> float:
    return round(ns / 1000, 3)
