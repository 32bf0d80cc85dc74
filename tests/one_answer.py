"""The differential oracle of ``tests/test_one_answer.py``: the numbers every path that reads a
capture must agree on, and :func:`assert_one_answer`, which reads one input along every path.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tracer.pipeline.windows as windows
from tracer.analysis.statistics import DEFAULT_WINDOW
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.compare.digest import CaptureDigest
from tracer.pipeline.digest import digest_file
from tracer.session.engine import Session, SessionOptions
from tracer.session.feeds import SourceFeed
from tracer.sources.registry import open_source

SMALL_WINDOW = 300  # layer executions per window, when windows are forced


# -- the numbers ------------------------------------------------------------------------------------
def report_numbers(report: dict[str, Any]) -> dict[str, Any]:
    """What every path must agree on, from a report JSON object."""
    return {
        "inferences": (report["inferences"]["count"], report["inferences"]["complete"]),
        "layers": {
            layer["index"]: (
                layer["count"],
                layer["cycles"]["min"],
                layer["cycles"]["p50"],
                layer["cycles"]["p99"],
                layer["cycles"]["max"],
                layer["cycles"]["mean"],
            )
            for layer in report["layers"]
            if layer["count"]
        },
        "excluded": {layer["index"]: layer["excluded"] for layer in report["layers"] if layer["excluded"]},
        "pmu": {layer["index"]: layer["pmu_mean"] for layer in report["layers"] if layer.get("pmu_mean")},
        "loss": report["capture"]["loss"],
        "findings": sorted((f["id"], f["severity"], f.get("layer")) for f in report["findings"]),
    }


def digest_numbers(d: CaptureDigest) -> dict[str, Any]:
    """The same numbers from a compare digest (what ``compare`` and ``ingest`` keep)."""
    layers = {}
    for index, samples in d.samples.items():
        cycles = np.sort(samples.cycles.astype(np.int64))
        if not len(cycles):
            continue
        layers[index] = (len(cycles), int(cycles[0]), int(cycles[-1]), round(float(cycles.mean()), 2))
    return {
        "inferences": (d.inferences, d.complete),
        "layers": layers,
        "findings": sorted((f.id, f.severity, f.layer) for f in d.findings),
    }


def as_digest_numbers(numbers: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """A report's numbers in the digest's terms (count, min, max and mean of cycles per layer)."""
    layers = {}
    for layer in report["layers"]:
        if layer["count"]:
            c = layer["cycles"]
            layers[layer["index"]] = (layer["count"], c["min"], c["max"], round(c["mean"], 2))
    return {"inferences": numbers["inferences"], "layers": layers, "findings": numbers["findings"]}


def run_report(run_cli, path: Path, *extra: str) -> dict[str, Any]:
    result = run_cli("report", path, "--format", "json", *extra)
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


@contextlib.contextmanager
def forced_windows() -> Iterator[None]:
    """Inside, every capture and raw trace is read in small windows."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(windows, "WHOLE_BYTES", 0)
        patch.setattr(windows, "WINDOW_SPANS", SMALL_WINDOW)
        yield


# -- the session ------------------------------------------------------------------------------------
class LeapingClock:
    """A clock that leaps a minute at each reading: every paced piece is due at once, while the
    session still runs its paced path (pieces of the paced size, due times, speed changes)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.now += 60.0
            return self.now


def session_numbers(session: Session) -> dict[str, Any]:
    """The session's own numbers at the end (its running statistics, loss and final findings):
    per layer count, min, max and mean (as the report rounds it), and p50 and p99 while its window
    holds every execution (``tracer.session.layers`` says why they differ after); executions left
    out and PMU means per layer."""
    snap = session.snapshot()
    layers: dict[int, tuple[Any, ...]] = {}
    for row in snap.layers:
        c = row.cycles
        if c is not None and c.count:
            exact = (c.p50, c.p99) if c.window == c.count else None
            layers[row.info.index] = (c.count, c.min, c.max, round(c.mean, 3), exact)
    return {
        "inferences": (snap.inferences, snap.complete_inferences),
        "layers": layers,
        "excluded": {row.info.index: row.excluded for row in snap.layers if row.excluded},
        "pmu": {
            row.info.index: {name: round(value, 3) for name, value in row.pmu_mean.items()}
            for row in snap.layers
            if row.pmu_mean
        },
        "loss": snap.status.loss.to_json(),
        "findings": sorted((f.id, f.severity.value, f.layer) for f in snap.diagnosis.findings),
    }


def as_session_numbers(numbers: dict[str, Any], window: int = DEFAULT_WINDOW) -> dict[str, Any]:
    """A report's numbers in the session's terms (count, min, max, mean per layer; p50 and p99 when
    the session's ``window`` holds every execution)."""
    return {
        "inferences": numbers["inferences"],
        "layers": {
            i: (v[0], v[1], v[4], v[5], (v[2], v[3]) if v[0] <= window else None) for i, v in numbers["layers"].items()
        },
        "excluded": numbers["excluded"],
        "pmu": numbers["pmu"],
        "loss": numbers["loss"],
        "findings": numbers["findings"],
    }


def replayed(path: Path, speed: float | None, during: Callable[[Session], None] | None = None) -> Session:
    options = SessionOptions(speed=speed, index=True)
    session = Session.replay(str(path), options=options, clock=LeapingClock())
    thread = session.start()
    if during is not None:
        during(session)
    thread.join(300)
    assert session.ended, session.snapshot().status
    return session


class MeteredSource:
    """A live source that is a real one (``file://``: a capture replayed as a source, as
    ``tracer live file://...`` reads it) let through so many bytes at a time: the test opens the
    tap (:meth:`allow`) and, between, the session is live with nothing arriving, its recording
    growing no more, as a device between bursts. ``drained`` is set while every byte let
    through has been read."""

    def __init__(self, path: Path) -> None:
        self._inner = open_source(f"file://{path}")
        self.url = self._inner.url
        self._allowed = 0
        self.read_bytes = 0
        self._tap = threading.Condition()
        self.drained = threading.Event()

    def open(self) -> None:
        self._inner.open()

    def allow(self, more: int) -> None:
        """Let ``more`` bytes through (a very large number: all the rest)."""
        with self._tap:
            self._allowed += more
            self.drained.clear()
            self._tap.notify_all()

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        with self._tap:
            room = self._allowed - self.read_bytes
            if room <= 0:
                self.drained.set()
                self._tap.wait(timeout)
                return b""
        data = self._inner.read(min(max_bytes, room), timeout)
        self.read_bytes += len(data)
        return data

    def close(self) -> None:
        self._inner.close()

    def metadata(self) -> dict[str, Any]:
        return self._inner.metadata()


def recording_live(source: MeteredSource, recording: Path) -> Session:
    """A live session on ``source`` (opened here) recording to ``recording``, as ``tracer live``
    builds it; started."""
    source.open()
    meta = CaptureMetadata.from_json(source.metadata())
    session = Session.live(SourceFeed(source, CaptureWriter(recording, meta)), meta)
    session.start()
    return session


def speed_changes(session: Session) -> None:
    """The screen's ``+`` and ``-`` while the replay plays: the pieces change size mid-chunk
    (as fast as possible reads larger pieces)."""
    stop = threading.Event()
    while not session.ended and not stop.wait(0.003):
        session.set_speed(None if session.speed is not None else 1.0)


def ingest_numbers(path: Path, staging: Path) -> dict[str, Any]:
    """The numbers of the rows ``tracer ingest`` writes for ``path`` (its staged Parquet files and
    its summary rows): inferences, complete layer executions per layer, findings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tracer.fleet.ingest import INGESTED, ingest_capture

    outcome = ingest_capture(str(path), str(staging), frozenset(), {}, "run", "2026-01-01T00:00:00Z")
    if outcome.status != INGESTED:
        assert outcome.error is not None
        return {
            "failed": "nothing could be measured" if "nothing could be measured" in outcome.error else outcome.error
        }
    tables: dict[str, list[pa.Table]] = {}
    for name in outcome.files:
        tables.setdefault(Path(name).parts[0], []).append(pq.read_table(staging / name))
    inferences = pa.concat_tables(tables["inferences"]).to_pydict()
    executions = pa.concat_tables(tables["layer_executions"]).to_pydict()
    per_layer: dict[int, int] = {}
    for layer, complete in zip(executions["layer"], executions["complete"]):
        if complete:
            per_layer[layer] = per_layer.get(layer, 0) + 1
    findings = outcome.tables["findings"].to_pydict()
    return {
        "inferences": (len(inferences["inference"]), sum(inferences["complete"])),
        "layers": dict(sorted(per_layer.items())),
        "findings": sorted(zip(findings["id"], findings["severity"], findings["layer"])),
    }


def as_ingest_numbers(numbers: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """A report's numbers in the rows' terms: complete executions per layer (a row is complete when
    its inference is too). An input with nothing measured is no row but an error (docs/fleet.md)."""
    if any(f[0] == "no-measurements" for f in numbers["findings"]):
        return {"failed": "nothing could be measured"}
    layers = {la["index"]: la["count"] for la in report["layers"] if la["count"]}
    return {"inferences": numbers["inferences"], "layers": layers, "findings": numbers["findings"]}


def assert_one_answer(run_cli: Callable[..., Any], path: Path, staging: Path, session: bool = True) -> dict[str, Any]:
    """Read ``path`` along every path and assert they agree; returns the report read whole.

    ``staging``: an empty folder for the ingest's files. ``session``: also replay it (captures and
    raw traces; the session reads no text log).
    """
    whole = run_report(run_cli, path)
    expected = report_numbers(whole)
    with forced_windows():
        assert report_numbers(run_report(run_cli, path)) == expected, f"{path.name}: report in windows"
        assert digest_numbers(digest_file(str(path))) == as_digest_numbers(expected, whole), f"{path.name}: digest"
    assert digest_numbers(digest_file(str(path))) == as_digest_numbers(expected, whole), f"{path.name}: digest"
    assert ingest_numbers(path, staging) == as_ingest_numbers(expected, whole), f"{path.name}: ingest rows"
    if session:
        in_session = as_session_numbers(expected)
        assert session_numbers(replayed(path, None)) == in_session, f"{path.name}: session at max speed"
        assert session_numbers(replayed(path, 1.0, speed_changes)) == in_session, f"{path.name}: paced session"
    return whole
