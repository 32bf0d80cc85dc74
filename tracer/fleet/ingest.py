"""Ingest: captures into a dataset, each once, on Dask workers, committed atomically.

Per capture, on a worker (:func:`ingest_capture`): hash the file (a capture already in the
dataset is skipped: ingesting it again changes nothing), decode and analyse it
(:func:`tracer.pipeline.analyse.analyse_file`, the one analysis of every front end: in windows,
in bounded memory, when it is large; an input with nothing measured in it is an error, not an
empty capture), write its per-execution tables into the run's staging folder and return its
summary rows (captures, labels, layers, stacks, findings), with the energy of its power recording
when one is paired with it (:mod:`tracer.fleet.pairing`). A capture that cannot be read comes back
as an error row; the others go on. On the client (:func:`ingest`): collect the results as they complete, write the summary and
error tables once per run and day, and commit (:meth:`tracer.fleet.dataset.Staging.commit`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tracer.analysis.calibration_data import observations_of
from tracer.analysis.result import Analysis
from tracer.budget.model import Budget
from tracer.compare.digest import NOTHING_MEASURED, digest
from tracer.errors import ExitCode, TracerError, UsageError
from tracer.fleet import schema
from tracer.fleet.cluster import Runner
from tracer.fleet.dataset import Dataset
from tracer.fleet.pairing import PowerPairing
from tracer.fleet.predictions import predictions_table
from tracer.fleet.tables import CaptureStatistics, content_id, execution_tables, partition_date, summary_tables
from tracer.pipeline.analyse import analyse_file
from tracer.pipeline.digest import input_labels
from tracer.power.reading import open_recording
from tracer.power.recording import PowerRecording

INGESTED, SKIPPED, FAILED = "ingested", "skipped", "failed"


@dataclasses.dataclass
class CaptureOutcome:
    """What became of one capture (a worker's answer).

    Attributes:
        path: The capture.
        status: ``ingested``, ``skipped`` (already in the dataset) or ``failed``.
        capture_id: Its content hash (None if the file could not be read at all).
        date: Its partition (ingested captures).
        tables: Its summary rows (ingested captures).
        files: Files it staged, relative to the staging folder.
        bytes: File size.
        executions: Layer executions written.
        error: Why it failed.
        exit_code: The exit code its failure maps to.
        power: The power recording attributed to it (``--power``; None: none asked, or none there).
    """

    path: str
    status: str
    capture_id: str | None = None
    date: str | None = None
    tables: dict[str, pa.Table] = dataclasses.field(default_factory=dict)
    files: list[str] = dataclasses.field(default_factory=list)
    bytes: int = 0
    executions: int = 0
    error: str | None = None
    exit_code: int = 0
    power: str | None = None


@dataclasses.dataclass
class IngestResult:
    """One ingest run.

    Attributes:
        run_id: The run.
        outcomes: Per capture, in the order given.
        seconds: Wall time.
        workers: Where it ran (worker processes).
    """

    run_id: str
    outcomes: list[CaptureOutcome]
    seconds: float
    workers: int

    def count(self, status: str) -> int:
        """Captures with ``status``."""
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def bytes(self) -> int:
        """Bytes of the captures read (ingested)."""
        return sum(o.bytes for o in self.outcomes if o.status == INGESTED)

    @property
    def executions(self) -> int:
        """Layer executions added."""
        return sum(o.executions for o in self.outcomes if o.status == INGESTED)

    @property
    def exit_code(self) -> int:
        """0 when nothing failed, else 3 (the run was partial: see the errors table)."""
        return int(ExitCode.CAPTURE_UNREADABLE) if self.count(FAILED) else int(ExitCode.OK)

    def to_json(self) -> dict[str, object]:
        """As ``tracer ingest --format json`` prints it."""
        return {
            "run_id": self.run_id,
            "ingested": self.count(INGESTED),
            "skipped": self.count(SKIPPED),
            "failed": self.count(FAILED),
            "bytes": self.bytes,
            "executions": self.executions,
            "seconds": round(self.seconds, 3),
            "workers": self.workers,
            "with_energy": sum(1 for o in self.outcomes if o.status == INGESTED and o.power),
            "errors": [{"path": o.path, "error": o.error} for o in self.outcomes if o.status == FAILED],
        }


def ingest_capture(
    path: str,
    staging: str,
    known: frozenset[str],
    labels: Mapping[str, str],
    run_id: str,
    ingested_at: str,
    budget: Budget | None = None,
    power: PowerPairing | None = None,
) -> CaptureOutcome:
    """Ingest one capture into the staging folder (runs on a Dask worker; never raises for a bad file).

    Args:
        path: The capture (or log, raw trace, ETDump).
        staging: The run's staging folder (a path the worker can write).
        known: Capture ids already in the dataset.
        labels: ``--label`` values, added to the capture's own.
        run_id: The ingest run's id.
        ingested_at: When the run started.
        budget: The plan of the capture's model (``--budget``): its layers a calibration can learn
            from go into the ``predictions`` table; a capture of another model fails (exit 2).
        power: Where each capture's power recording is (``--power``), or None.
    """
    capture_id = None
    try:
        size = os.path.getsize(path)
        capture_id = content_id(path)
        if capture_id in known:
            return CaptureOutcome(path, SKIPPED, capture_id, bytes=size)
        all_labels = {**input_labels(path), **labels}
        created = all_labels.get("created")
        date = partition_date(created, _dt.date.fromtimestamp(os.path.getmtime(path)))
        recording = _recording(path, power)
        writers = _CaptureFiles(Path(staging), date, capture_id)
        try:
            # The one analysis of the file (in windows when it is large, unless a power recording
            # is attributed: then whole): its executions are written window by window, as read.
            analysed = analyse_file(
                path,
                budget,
                on_window=lambda window: writers.write(execution_tables(window, capture_id)),
                power=recording,
                meter_input=power.meter_input if power else None,
            )
            analysis = analysed.analysis
            if not analysed.windowed:
                writers.write(execution_tables(analysis.timeline, capture_id))
        finally:
            files, executions = writers.close()
        summary = digest(analysis, path, all_labels)
        empty = next((f for f in summary.findings if f.id == NOTHING_MEASURED), None)
        if empty is not None:
            warnings = analysis.facts.warnings
            warned = f" ({'; '.join(warnings)})" if warnings else ""
            return CaptureOutcome(
                path,
                FAILED,
                capture_id,
                bytes=size,
                error=f"{path}: {empty.message}{warned}",
                exit_code=int(ExitCode.CAPTURE_UNREADABLE),
            )
        stats = CaptureStatistics.of_analysis(analysis)
        tables = summary_tables(
            summary,
            stats,
            analysis.timeline,
            analysis.facts,
            capture_id,
            size,
            created,
            run_id,
            ingested_at,
            analysis.energy,
        )
        tables["predictions"] = _predictions(analysis, path, capture_id)
        used = recording.info.path if recording is not None else None
        return CaptureOutcome(path, INGESTED, capture_id, date, tables, files, size, executions, power=used)
    except TracerError as exc:
        return CaptureOutcome(path, FAILED, capture_id, error=str(exc), exit_code=int(exc.exit_code))
    except OSError as exc:
        return CaptureOutcome(
            path,
            FAILED,
            capture_id,
            error=f"{path}: cannot read: {exc.strerror or exc}",
            exit_code=int(ExitCode.CAPTURE_UNREADABLE),
        )
    except Exception as exc:  # noqa: BLE001 - a decoder bug on one capture must not stop the others
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return CaptureOutcome(
            path,
            FAILED,
            capture_id,
            exit_code=int(ExitCode.CAPTURE_UNREADABLE),
            error=f"{path}: could not be decoded ({type(exc).__name__}: {exc}, at {Path(where.filename).name}:{where.lineno})",
        )


def _recording(path: str, power: PowerPairing | None) -> PowerRecording | None:
    """The power recording paired with ``path``, opened (None: none asked, or none there)."""
    if power is None:
        return None
    found = power.path_for(path)
    if not os.path.isfile(found):
        return None
    return open_recording(found, power.supply_voltage)


def ingest(
    paths: Sequence[str],
    dataset: Dataset,
    runner: Runner,
    labels: Mapping[str, str] | None = None,
    on_done: Callable[[CaptureOutcome], None] | None = None,
    budget: Budget | None = None,
    power: PowerPairing | None = None,
) -> IngestResult:
    """Ingest ``paths`` into ``dataset`` on ``runner``; commit atomically.

    Args:
        paths: The captures (the same path twice counts once).
        dataset: The dataset, opened for writing.
        runner: Where the per-capture work runs.
        labels: ``--label`` values for every capture.
        on_done: Called with each capture's outcome as it completes (progress).
        budget: The plan of the captures' model (``--budget``), or None.
        power: Where each capture's power recording is (``--power``; None: no energy).
    """
    start = time.monotonic()
    unique = list(dict.fromkeys(str(p) for p in paths))
    ingested_at = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    with dataset.writing() as staging:
        known = runner.share(frozenset(dataset.known_ids()))  # sent once, however many captures
        shared = runner.share(budget) if budget is not None else None
        items = [
            (p, str(staging.folder), known, dict(labels or {}), staging.run_id, ingested_at, shared, power)
            for p in unique
        ]
        outcomes: list[CaptureOutcome | None] = [None] * len(unique)
        for i, outcome in runner.run(ingest_capture, items):
            outcomes[i] = outcome
            if on_done is not None:
                on_done(outcome)
        done = [o for o in outcomes if o is not None]
        _same_content_once(done)
        for outcome in done:
            for relative in outcome.files:
                staging.add(relative)
        for relative in _write_run_tables(done, staging.folder, staging.run_id, ingested_at):
            staging.add(relative)
        staging.commit()
        return IngestResult(staging.run_id, done, time.monotonic() - start, runner.workers)


def _same_content_once(outcomes: list[CaptureOutcome]) -> None:
    """Two paths with the same bytes are one capture: the later ones count as skipped."""
    seen: set[str] = set()
    for outcome in outcomes:
        if outcome.status != INGESTED or outcome.capture_id is None:
            continue
        if outcome.capture_id in seen:
            outcome.status, outcome.tables, outcome.files = SKIPPED, {}, []
        seen.add(outcome.capture_id)


def _write_run_tables(outcomes: list[CaptureOutcome], folder: Path, run_id: str, at: str) -> list[str]:
    """The run's summary and error tables, one file per table and day; returns their paths."""
    written = []
    by_date: dict[str, list[CaptureOutcome]] = {}
    for outcome in outcomes:
        if outcome.status == INGESTED and outcome.date is not None:
            by_date.setdefault(outcome.date, []).append(outcome)
    for date, group in sorted(by_date.items()):
        for table in ("captures", "labels", "layers", "stacks", "findings", "predictions"):
            # Written even when empty: a query over the table's files then finds some.
            relative = f"{table}/{schema.PARTITION}={date}/run-{run_id}.parquet"
            _write(folder / relative, pa.concat_tables([o.tables[table] for o in group]))
            written.append(relative)
    failed = [o for o in outcomes if o.status == FAILED]
    if failed:
        errors = pa.Table.from_pylist(
            [
                {
                    "run_id": run_id,
                    "path": o.path,
                    "capture_id": o.capture_id,
                    "exit_code": o.exit_code,
                    "error": o.error,
                    "at": at,
                }
                for o in failed
            ],
            schema=schema.ERRORS,
        )
        relative = f"errors/{schema.PARTITION}={at[:10]}/run-{run_id}.parquet"
        _write(folder / relative, errors)
        written.append(relative)
    return written


def _predictions(analysis: Analysis, path: str, capture_id: str) -> pa.Table:
    """The layers of an analysis against its budget a calibration learns from (none without one).

    Raises:
        UsageError: The budget describes another model than the capture's (exit 2).
    """
    comparison = analysis.comparison
    if comparison is None:
        return schema.PREDICTIONS.empty_table()
    difference = analysis.model_difference()
    if difference is not None:
        raise UsageError(f"{path}: --budget does not describe the capture's model: {difference}")
    observations, _ = observations_of(analysis, path)
    compiler = comparison.budget.model.compiler
    return predictions_table(observations, capture_id, compiler.to_json() if compiler else None)


class _CaptureFiles:
    """The per-capture tables of one capture, written window after window into the staging folder
    (a Parquet row group per window), each renamed into place when complete.
    """

    def __init__(self, staging: Path, date: str, capture_id: str) -> None:
        self.staging = staging
        self.targets = {
            table: staging / f"{table}/{schema.PARTITION}={date}/{capture_id}.parquet"
            for table in schema.CAPTURE_TABLES
        }
        self.temporaries = {t: p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp") for t, p in self.targets.items()}
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.executions = 0

    def write(self, tables: Mapping[str, pa.Table]) -> None:
        """Append one window's rows."""
        for name, data in tables.items():
            if name not in self.writers:
                self.temporaries[name].parent.mkdir(parents=True, exist_ok=True)
                self.writers[name] = pq.ParquetWriter(
                    self.temporaries[name], schema.CAPTURE_TABLES[name], compression="zstd"
                )
            self.writers[name].write_table(data)
        self.executions += tables["layer_executions"].num_rows

    def close(self) -> tuple[list[str], int]:
        """Finish the files; returns their paths relative to the staging folder, and the executions."""
        for writer in self.writers.values():
            writer.close()
        files = []
        for name in self.writers:
            os.replace(self.temporaries[name], self.targets[name])
            files.append(self.targets[name].relative_to(self.staging).as_posix())
        return files, self.executions


def _write(target: Path, table: pa.Table) -> None:
    """Write a Parquet file whole: to a temporary name beside it, then renamed (two workers writing
    the same capture's file cannot interleave).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    pq.write_table(table, temporary, compression="zstd")
    os.replace(temporary, target)
