"""Exporting a session: the report JSON of ``tracer report`` (the contract of docs/report.md), to a file.

With a capture on disk (the replayed file, or the one ``tracer live`` is recording) the capture is
read again from the start by the same code as ``tracer report`` (``load_timeline`` and
``analyze``), so the export is the exact report of everything received so far, with the session's
budget and the CI gate's findings. Without one (``tracer live --no-record``) the same analysis runs
on the session's recent window (the inferences the screen still holds): the same report, by the
same code, covering that window, and it says so in ``capture.notes``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from tracer.errors import UsageError
from tracer.export.report_json import report_object
from tracer.session.engine import Session
from tracer.session.findings import capture_analysis


def free_path(folder: Path, stem: str, suffix: str) -> Path:
    """``folder/stem.suffix``, or ``stem-2.suffix``, ``-3`` ... if taken."""
    path = folder / f"{stem}{suffix}"
    n = 2
    while path.exists():
        path = folder / f"{stem}-{n}{suffix}"
        n += 1
    return path


def default_report_path(session: Session, directory: str | os.PathLike[str] | None = None) -> Path:
    """``<capture stem>-report.json`` (``-2``, ``-3`` ... if taken) in ``directory`` (default: here)."""
    folder = Path(directory) if directory is not None else Path.cwd()
    capture = session.capture_file()
    stem = capture.stem if capture is not None else "live-" + _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return free_path(folder, f"{stem}-report", ".json")


def session_report(session: Session) -> dict[str, Any]:
    """The report object of the session (see the module docstring for which way it is made)."""
    capture = session.capture_file()
    budget = session.budget.budget if session.budget is not None else None
    if capture is not None and capture.is_file():
        return report_object(capture_analysis(capture, budget))
    analysis = session.snapshot().diagnosis.analysis  # the worker's latest, at most a second old
    if analysis is None:
        raise UsageError("nothing to report yet: the session has not analysed any data")
    report = report_object(analysis)
    report["capture"]["notes"] = (
        f"made from the live session's recent window (not recorded): {session.snapshot().diagnosis.scope}"
    )
    return report


def write_session_report(session: Session, path: str | os.PathLike[str]) -> Path:
    """Write the report JSON; returns the path.

    Raises:
        UsageError: The file cannot be written, or there is nothing to report yet.
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
