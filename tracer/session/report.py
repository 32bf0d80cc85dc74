"""Exporting a session: the report JSON of ``tracer report`` (the PRODUCT.md contract), to a file.

With a capture on disk (the replayed file, or the one ``tracer live`` is recording) the capture is
read again from the start by the same code as ``tracer report`` (``load_timeline`` and
``analyze``), so the export is the exact report of everything received so far, with the session's
budget and the CI gate's findings. Without one (``tracer live --no-record``) the report is made
from the session's running statistics: the same shape, its percentiles taken over the session's
window, with the findings on screen (the gate's rules on the recent window), and it says so in
``capture.notes``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from tracer.analysis.report import SCHEMA_VERSION
from tracer.errors import UsageError
from tracer.session.engine import Session
from tracer.session.findings import capture_analysis
from tracer.session.snapshot import SessionSnapshot
from tracer.session.stats import Summary


def default_report_path(session: Session, directory: str | os.PathLike[str] | None = None) -> Path:
    """``<capture stem>-report.json`` (``-2``, ``-3`` ... if taken) in ``directory`` (default: here)."""
    folder = Path(directory) if directory is not None else Path.cwd()
    capture = session.capture_file()
    stem = capture.stem if capture is not None else "live-" + _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = folder / f"{stem}-report.json"
    n = 2
    while path.exists():
        path = folder / f"{stem}-report-{n}.json"
        n += 1
    return path


def session_report(session: Session) -> dict[str, Any]:
    """The report object of the session (see the module docstring for which way it is made)."""
    capture = session.capture_file()
    if capture is not None and capture.is_file():
        budget = session.budget.budget if session.budget is not None else None
        return capture_analysis(capture, budget).report
    snapshot = session.snapshot()
    return snapshot_report(snapshot, [f.to_json() for f in snapshot.findings])


def snapshot_report(snapshot: SessionSnapshot, findings: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's shape from running statistics (no capture to decode)."""
    s = snapshot.status
    lat = snapshot.latency.stats
    layers = []
    for row in snapshot.layers:
        c = row.cycles
        layers.append({
            "index": row.index, "name": row.info.name, "op": row.info.op, "engine": row.info.engine.value,
            "count": c.count if c else 0, "excluded": row.excluded,
            "cycles": _cycles_json(c),
            "predicted_cycles": row.predicted, "ratio": None if row.ratio is None else round(row.ratio, 4),
        })  # fmt: skip
    m = snapshot.memory
    return {
        "schema_version": SCHEMA_VERSION,
        "capture": {
            "source": s.source, "path": None, "bytes": s.bytes, "clock_hz": s.clock_hz, "clock_source": s.clock_source,
            "labels": dict(s.labels), "loss": s.loss.to_json(), "warnings": list(s.warnings),
            "notes": "made from the live session's running statistics (not recorded): p50/p99 cover the most "
                     "recent executions of each layer",
        },  # fmt: skip
        "inferences": {
            "count": snapshot.inferences, "complete": snapshot.complete_inferences,
            "latency_cycles": _cycles_json(lat),
        },  # fmt: skip
        "layers": layers,
        "memory": {
            "arena": {"used": m.arena_peak, "size": m.arena_size, "planned": m.arena_planned},
            "stacks": [{"name": st.name, "high_water": st.high_water, "size": st.size, "canary_ok": st.canary_ok}
                       for st in m.stacks],
        },  # fmt: skip
        "findings": findings,
    }


def _cycles_json(summary: Summary | None) -> dict[str, int | float] | None:
    """``{min, p50, p99, max, mean, std}`` as in the report contract (None before the first value)."""
    if summary is None:
        return None
    return {"min": summary.min, "p50": summary.p50, "p99": summary.p99, "max": summary.max,
            "mean": round(summary.mean, 3), "std": round(summary.std, 3)}  # fmt: skip


def write_session_report(session: Session, path: str | os.PathLike[str]) -> Path:
    """Write the report JSON; returns the path.

    Raises:
        UsageError: The file cannot be written.
    """
    report = session_report(session)
    target = Path(path)
    try:
        with open(target, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)
            out.write("\n")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror}") from None
    return target
