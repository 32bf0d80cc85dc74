"""A dataset folder: opening it (schema version), reading its tables, selecting captures, and
adding an ingest run's files atomically.

**Atomic commit.** An ingest run writes every file into ``_staging/RUN/`` inside the dataset
(the same filesystem, so moving a file is a rename). To commit, it writes the list of files to
``_journal/RUN.json`` (written to a temporary name, flushed, renamed: the journal exists whole or
not at all), renames each file into its table folder (the ``captures`` files last: a capture is
in the dataset once its ``captures`` row is), then removes the journal. A run that fails before
its journal exists leaves the dataset as it was (its staging folder is removed, or ignored and
removed by the next run); a run killed during the renames is completed by the next tracer
command that opens the dataset for writing, from its journal. Readers (tracer, DuckDB, pyarrow)
ignore folders whose names start with ``_``. One writer at a time: ``_lock`` is locked for the
run (``fcntl.flock``).

One module although over 400 lines: opening, reading and the atomic commit share the folder layout
and its lock, and the commit protocol holds only as a whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds

from tracer.analysis.samples import LayerSamples, compact, layer_rows
from tracer.base.timeline import Engine, LayerInfo
from tracer.compare.digest import CaptureDigest, FindingKey
from tracer.errors import CaptureError, OutputError, UsageError
from tracer.fleet import schema

STAGING = "_staging"
JOURNAL = "_journal"
LOCK = "_lock"


class DatasetError(UsageError):
    """The folder is not a dataset tracer can use (exit 2)."""


def parse_selector(items: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` items as a dict (each side of ``compare --dataset``)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"expected KEY=VALUE to select captures by their labels, not {item!r}")
        out[key.strip()] = value.strip()
    return out


@dataclasses.dataclass
class Dataset:
    """A dataset folder (see the module docstring).

    Attributes:
        root: Its folder.
        version: Its schema version.
    """

    root: Path
    version: int

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Dataset:
        """Open an existing dataset for reading.

        Raises:
            DatasetError: Not a dataset, or of a newer schema.
        """
        root = Path(path)
        manifest = root / schema.MANIFEST
        if not manifest.is_file():
            what = "no such folder" if not root.exists() else f"no {schema.MANIFEST} in it"
            raise DatasetError(f"{root}: not a tracer dataset ({what}; 'tracer ingest CAPTURES -o {root}' makes one)")
        return cls(root, _version(manifest))

    @classmethod
    def create_or_open(cls, path: str | os.PathLike[str]) -> Dataset:
        """Open a dataset for writing, making it if the folder does not exist or is empty.

        Raises:
            DatasetError: The folder holds something else, or a dataset of a newer schema.
        """
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise DatasetError(f"{root}: exists and is not a folder")
        if not (root / schema.MANIFEST).is_file():
            if root.exists() and any(p.name not in (STAGING, JOURNAL, LOCK) for p in root.iterdir()):
                raise DatasetError(
                    f"{root}: a folder that is not a tracer dataset (no {schema.MANIFEST}); name a new or empty folder"
                )
            with _output(root):
                root.mkdir(parents=True, exist_ok=True)
                _write_json(
                    root / schema.MANIFEST,
                    {
                        "format": schema.FORMAT,
                        "schema_version": schema.SCHEMA_VERSION,
                        "partitioning": f"hive: {schema.PARTITION}=YYYY-MM-DD",
                        "tables": sorted(schema.TABLES),
                    },
                )
        return cls.open(root)

    # -- writing ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def writing(self) -> Iterator[Staging]:
        """Lock the dataset, finish a run that was cut during its commit, and stage a new run.

        The staged files are committed by :meth:`Staging.commit`; leaving the block without a
        commit (an error, Ctrl-C) removes them and leaves the dataset as it was; leaving it during
        the commit finishes the commit.
        """
        with _output(self.root):
            (self.root / JOURNAL).mkdir(exist_ok=True)
            lock = open(self.root / LOCK, "a+b")  # noqa: SIM115 - closed below
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self.recover()
                run_id = _run_id()
                staging = Staging(self, run_id, self.root / STAGING / run_id)
                staging.folder.mkdir(parents=True)
                try:
                    yield staging
                finally:
                    if (self.root / JOURNAL / f"{run_id}.json").exists():
                        self.recover()  # cut during its commit (Ctrl-C): the journal says how to finish
                    shutil.rmtree(staging.folder, ignore_errors=True)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def recover(self) -> list[str]:
        """Complete the commits journals describe, drop staging folders without one (call with the
        lock held); returns the runs completed.
        """
        done = []
        for journal in sorted((self.root / JOURNAL).glob("*.json")):
            entry = json.loads(journal.read_text())
            source = self.root / STAGING / entry["run_id"]
            for relative in entry["files"]:
                staged, target = source / relative, self.root / relative
                if staged.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(staged, target)
            shutil.rmtree(source, ignore_errors=True)
            journal.unlink()
            done.append(entry["run_id"])
        staging = self.root / STAGING
        if staging.is_dir():
            for folder in staging.iterdir():
                shutil.rmtree(folder, ignore_errors=True)
        return done

    # -- reading ---------------------------------------------------------------------------------
    def table(self, name: str, columns: Sequence[str] | None = None, where: Any = None) -> pa.Table:
        """A table (all of its files), optionally only some columns and rows (a pyarrow expression)."""
        folder = self.root / name
        table_schema = schema.TABLES[name]
        if not folder.is_dir():
            empty = table_schema.empty_table()
            return empty.select(list(columns)) if columns else empty
        partitioning = pds.partitioning(pa.schema([(schema.PARTITION, pa.string())]), flavor="hive")
        data = pds.dataset(
            folder,
            schema=table_schema.append(pa.field(schema.PARTITION, pa.string())),
            format="parquet",
            partitioning=partitioning,
        )
        return data.to_table(columns=list(columns) if columns else None, filter=where)

    def capture_table(self, name: str, ids: Sequence[str], columns: Sequence[str], where: Any = None) -> pa.Table:
        """A per-capture table (inferences, layer_executions, pmu) of the captures ``ids``: their own
        files are read, not every file of the table filtered.
        """
        dates = self.table("captures", ["capture_id", schema.PARTITION], pds.field("capture_id").isin(list(ids)))
        paths = [
            self.root / name / f"{schema.PARTITION}={date}" / f"{capture_id}.parquet"
            for capture_id, date in zip(dates["capture_id"].to_pylist(), dates[schema.PARTITION].to_pylist())
        ]
        files = [str(f) for f in paths if f.is_file()]
        if not files:
            return schema.TABLES[name].empty_table().select(list(columns))
        data = pds.dataset(files, schema=schema.TABLES[name], format="parquet")
        return data.to_table(columns=list(columns), filter=where)

    def known_ids(self) -> set[str]:
        """The capture ids in the dataset."""
        return set(self.table("captures", ["capture_id"]).column("capture_id").to_pylist())

    def select(self, selector: Mapping[str, str]) -> list[str]:
        """The capture ids whose labels match every ``key=value`` of ``selector`` (in ingest order)."""
        captures = self.table("captures", ["capture_id", "ingested_at", "path"])
        order = captures.sort_by([("ingested_at", "ascending"), ("path", "ascending")]).column("capture_id").to_pylist()
        chosen = set(order)
        labels = self.table("labels", ["capture_id", "key", "value"])
        for key, value in selector.items():
            hit = labels.filter(pc.and_(pc.equal(labels["key"], key), pc.equal(labels["value"], value)))
            chosen &= set(hit.column("capture_id").to_pylist())
        return [c for c in order if c in chosen]

    def digests(self, selector: Mapping[str, str], side: str) -> list[CaptureDigest]:
        """The digests of the captures ``selector`` picks, made from the dataset's tables (nothing is
        decoded again).

        Raises:
            UsageError: No capture matches.
        """
        if not selector:
            raise UsageError(f"--{side}: give KEY=VALUE labels selecting captures of the dataset")
        ids = self.select(selector)
        if not ids:
            wanted = " ".join(f"{k}={v}" for k, v in selector.items())
            raise UsageError(
                f"--{side} {wanted}: no capture of {self.root} has these labels; {self.labels_in_words(selector)}"
            )
        return self.capture_digests(ids, side)

    def capture_digests(self, ids: Sequence[str], side: str) -> list[CaptureDigest]:
        """One digest per capture of ``ids`` (a build is judged by its captures:
        :mod:`tracer.compare.intervals`), their model checked to be one first.
        """
        check_models(self, ids, side)
        return [digest_from_tables(self, [i], f"{self.root} {side}") for i in ids]

    def labels_in_words(self, selector: Mapping[str, str], most: int = 8) -> str:
        """The values the dataset's captures carry for the keys of ``selector``, and its other keys."""
        rows = self.table("labels", ["key", "value"]).to_pylist()
        values: dict[str, set[str]] = {}
        for row in rows:
            values.setdefault(row["key"], set()).add(row["value"])
        if not values:
            return "its captures carry no labels ('tracer ingest --label KEY=VALUE' adds them)"
        parts = []
        for key in selector:
            known = sorted(values.get(key, ()))
            if not known:
                parts.append(f"no capture has the label {key!r}")
            else:
                shown = ", ".join(f"{key}={v}" for v in known[:most]) + (" ..." if len(known) > most else "")
                parts.append(f"its captures have {shown}")
        others = sorted(set(values) - set(selector))
        if others:
            parts.append(f"other labels: {', '.join(others[:most])}" + (" ..." if len(others) > most else ""))
        return "; ".join(parts)

    def __str__(self) -> str:
        return str(self.root)


@dataclasses.dataclass
class Staging:
    """The files of one ingest run, before they are committed.

    Attributes:
        dataset: The dataset.
        run_id: The run.
        folder: Where the files wait (``_staging/RUN``).
        files: Relative paths staged so far.
    """

    dataset: Dataset
    run_id: str
    folder: Path
    files: list[str] = dataclasses.field(default_factory=list)

    def add(self, relative: str) -> None:
        """Take a file written at ``folder / relative`` into the commit."""
        if not (self.folder / relative).is_file():
            raise CaptureError(
                f"{self.folder / relative}: a staged file is missing (is the dataset folder shared "
                "with the Dask workers?)"
            )
        self.files.append(relative)

    def commit(self) -> None:
        """Move the staged files into the dataset atomically (see the module docstring)."""
        if not self.files:
            return
        ordered = sorted(self.files, key=lambda f: (f.split("/", 1)[0] == "captures", f))
        root = self.dataset.root
        journal = root / JOURNAL / f"{self.run_id}.json"
        _write_json(journal, {"run_id": self.run_id, "files": ordered})
        for relative in ordered:
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.folder / relative, target)
        journal.unlink()
        _fsync_dir(root / JOURNAL)


def check_models(dataset: Dataset, ids: Sequence[str], side: str) -> dict[str, dict[int, LayerInfo]]:
    """Each capture's model (layer list); raises ModelMismatch unless all of ``ids`` share one."""
    from tracer.compare.models import check_same_model

    where = pds.field("capture_id").isin(list(ids))
    described = dataset.table("layers", ["capture_id", "layer", "name", "op", "engine"], where).to_pylist()
    models: dict[str, dict[int, LayerInfo]] = {i: {} for i in ids}
    for row in described:
        models[row["capture_id"]][row["layer"]] = LayerInfo(
            row["layer"], row["name"] or "", row["op"] or "", Engine(row["engine"])
        )
    check_same_model([(f"capture {i[:12]}", models[i]) for i in ids], side)
    return models


def digest_from_tables(dataset: Dataset, ids: Sequence[str], name: str) -> CaptureDigest:
    """One digest pooling the captures ``ids`` of a dataset (their model is checked first)."""
    models = check_models(dataset, ids, name.rsplit(" ", 1)[-1])
    where = pds.field("capture_id").isin(list(ids))
    executions = dataset.capture_table(
        "layer_executions",
        ids,
        ["layer", "cycles", "isr_cycles"],
        pds.field("complete") == True,  # noqa: E712  -- a pyarrow expression, not a Python comparison
    )
    layer = executions["layer"].to_numpy()
    cycles = compact(executions["cycles"].to_numpy())
    isr = compact(executions["isr_cycles"].to_numpy())
    del executions
    counters: dict[int, dict[str, tuple[int, int]]] = {}
    pmu = dataset.capture_table("pmu", ids, ["layer", "counter", "value"], pds.field("layer").is_valid())
    for g in pmu.group_by(["layer", "counter"]).aggregate([("value", "sum"), ("value", "count")]).to_pylist():
        counters.setdefault(g["layer"], {})[str(g["counter"])] = (int(g["value_sum"]), int(g["value_count"]))
    samples: dict[int, LayerSamples] = {}
    for index, rows in layer_rows(layer):
        isr_part = isr[rows]
        samples[index] = LayerSamples(
            cycles[rows], isr_part if isr_part.any() else None, dict(sorted(counters.get(index, {}).items()))
        )
    inferences = dataset.capture_table("inferences", ids, ["latency", "complete"])
    done = inferences.filter(pc.and_(inferences["complete"], pc.is_valid(inferences["latency"])))
    captures = dataset.table(
        "captures", ["capture_id", "clock_hz", "arena_used", "arena_size", "inferences", "complete", "path"], where
    ).to_pylist()
    stacks: dict[str, tuple[int, int, bool]] = {}
    for row in dataset.table("stacks", ["name", "high_water", "size", "canary_ok"], where).to_pylist():
        old = stacks.get(row["name"], (0, row["size"], True))
        stacks[row["name"]] = (max(old[0], row["high_water"]), row["size"], old[2] and row["canary_ok"])
    findings: dict[tuple[str, int | None], FindingKey] = {}
    for row in dataset.table("findings", ["id", "severity", "layer", "message"], where).to_pylist():
        key = FindingKey(row["id"], row["severity"], row["layer"], row["message"])
        findings.setdefault(key.key, key)
    labels = dataset.table("labels", ["capture_id", "key", "value"], where).to_pylist()
    shared = _shared_labels(labels, len(ids))
    clocks = {c["clock_hz"] for c in captures}
    first_model = models[ids[0]]
    return CaptureDigest(
        names=tuple(c["path"] for c in captures),
        layers=dict(sorted(first_model.items())),
        samples=samples,
        latency=compact(done["latency"].to_numpy()),
        inferences=sum(c["inferences"] for c in captures),
        complete=sum(c["complete"] for c in captures),
        clock_hz=clocks.pop() if len(clocks) == 1 else None,
        arena_used=max((c["arena_used"] for c in captures if c["arena_used"] is not None), default=None),
        arena_size=max((c["arena_size"] for c in captures if c["arena_size"] is not None), default=None),
        stacks=stacks,
        findings=tuple(findings.values()),
        labels=shared,
    )


def _shared_labels(rows: list[dict[str, Any]], captures: int) -> dict[str, str]:
    """The labels every one of ``captures`` captures has with the same value."""
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        seen[(row["key"], row["value"])] = seen.get((row["key"], row["value"]), 0) + 1
    return {k: v for (k, v), n in sorted(seen.items()) if n == captures}


def _version(manifest: Path) -> int:
    try:
        data = json.loads(manifest.read_text())
        version = int(data["schema_version"])
        if data.get("format") != schema.FORMAT:
            raise ValueError(f"format {data.get('format')!r}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"{manifest}: not a tracer dataset manifest ({exc})") from None
    if version > schema.SCHEMA_VERSION:
        raise DatasetError(
            f"{manifest.parent}: written with dataset schema {version}, newer than this tracer's "
            f"{schema.SCHEMA_VERSION}; upgrade tracer to read or add to it"
        )
    if version < 1:
        raise DatasetError(f"{manifest}: schema version {version} is not one tracer ever wrote")
    return version


@contextlib.contextmanager
def _output(root: Path) -> Iterator[None]:
    """The OS's refusals to write the dataset folder (a read-only file system, no permission, a
    parent that is not a folder) as an :class:`OutputError` (exit 2), said with the folder's name.
    """
    try:
        yield
    except OSError as exc:
        raise OutputError(f"the dataset {root}", exc) from None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON whole or not at all: a temporary file, flushed, renamed over ``path``."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _run_id() -> str:
    import datetime as _dt

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{uuid.uuid4().hex[:8]}"
