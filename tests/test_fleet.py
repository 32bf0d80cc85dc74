"""``tracer ingest`` and ``tracer compare`` on Dask, the dataset, and bad input.

A real ``dask.distributed.LocalCluster`` of two worker processes is started once for the module
(no mock); the commands reach it through ``--scheduler`` exactly as they would reach a farm's
cluster. DuckDB runs the queries ``docs/fleet.md`` shows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from conftest import ROOT
from fleet_streams import LAYERS, Build, write_build

from tracer.fleet import schema
from tracer.fleet.dataset import Dataset
from tracer.sources.qemu import free_port


@pytest.fixture(scope="module")
def scheduler() -> str:
    """A local Dask cluster of two worker processes; its scheduler's address."""
    from distributed import LocalCluster  # here: only the worker running this module pays the import

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two builds, two captures each, on two boards; a capture that is missing, one cut inside its
    header, one with nothing in it."""
    root = tmp_path_factory.mktemp("captures")
    out = {}
    for name, build, seed, board, number in (
        ("a1", Build(), 1, "board-a", 41),
        ("a2", Build(), 2, "board-b", 41),
        ("b1", Build(slow=(1, 10.0)), 3, "board-a", 42),
        ("b2", Build(slow=(1, 10.0)), 4, "board-b", 42),
    ):
        out[name] = write_build(
            root / f"{name}.trace",
            build,
            25,
            seed,
            board=board,
            labels={"build": number},
            created=f"2025-06-0{1 + number - 41}T10:00:00+00:00",
        )
    out["cut"] = root / "cut.trace"
    out["cut"].write_bytes(out["a1"].read_bytes()[:20])
    out["missing"] = root / "missing.trace"
    out["empty"] = root / "empty.trace"
    out["empty"].write_text("nothing to see\n")
    return out


def snapshot(root: Path) -> dict[str, str]:
    """Every file of a dataset that readers see (not _staging, _journal, _lock), with its hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if (
            path.is_file()
            and not any(part.startswith(("_", ".")) for part in relative.split("/")[:-1])
            and not path.name.startswith("_lock")
        ):
            out[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_ingest_on_the_cluster_then_again_changes_nothing(captures, scheduler, run_cli, tmp_path) -> None:
    """Four captures go in on two Dask workers, partitioned by day, labelled; ingesting them again
    (and a copy of one under another name) adds nothing and changes no byte."""
    ds = tmp_path / "results"
    paths = [captures[n] for n in ("a1", "a2", "b1", "b2")]
    first = run_cli("ingest", *paths, "-o", ds, "--scheduler", scheduler, "--label", "branch=main", "--format", "json")
    assert first.code == 0, first.err
    summary = json.loads(first.out)
    assert (summary["ingested"], summary["skipped"], summary["failed"]) == (4, 0, 0)
    assert summary["executions"] == 4 * 25 * len(LAYERS) and summary["workers"] == 2
    dataset = Dataset.open(ds)
    assert sorted(p.name for p in (ds / "captures").iterdir()) == ["date=2025-06-01", "date=2025-06-02"]
    labels = dataset.table("labels").to_pylist()
    a1 = next(r["capture_id"] for r in dataset.table("captures").to_pylist() if r["path"] == str(captures["a1"]))
    mine = {r["key"]: r["value"] for r in labels if r["capture_id"] == a1}
    assert mine["build"] == "41" and mine["board"] == "board-a" and mine["branch"] == "main"
    assert mine["cpu_hz"] == "200000000" and mine["created"].startswith("2025-06-01")
    before = snapshot(ds)
    copy = tmp_path / "renamed.trace"
    copy.write_bytes(captures["a1"].read_bytes())
    again = run_cli("ingest", *paths, copy, "-o", ds, "--scheduler", scheduler, "--format", "json")
    assert again.code == 0 and json.loads(again.out)["skipped"] == 5
    assert snapshot(ds) == before


def test_unreadable_captures_go_to_the_errors_table(captures, scheduler, run_cli, tmp_path) -> None:
    """A missing file, a capture cut in its header and a file with nothing in it fail, the good
    capture goes in; exit 3 says the run was partial."""
    ds = tmp_path / "results"
    bad = [captures["cut"], captures["missing"], captures["empty"]]
    done = run_cli("ingest", captures["a1"], *bad, "-o", ds, "--scheduler", scheduler, "--format", "json")
    assert done.code == 3
    assert json.loads(done.out)["ingested"] == 1
    errors = {Path(r["path"]).name: r for r in Dataset.open(ds).table("errors").to_pylist()}
    assert set(errors) == {"cut.trace", "missing.trace", "empty.trace"}
    assert "truncated at byte 20, inside the capture header" in errors["cut.trace"]["error"]
    assert "No such file" in errors["missing.trace"]["error"] or "no such file" in errors["missing.trace"]["error"]
    assert "nothing could be measured" in errors["empty.trace"]["error"]
    assert all(r["exit_code"] == 3 for r in errors.values())
    assert "not ingested" in done.err


def test_compare_on_the_cluster_and_from_the_dataset(captures, scheduler, run_cli, tmp_path) -> None:
    """Sets compared on the cluster, and the same captures selected from the dataset by label, give
    the same verdict and the same numbers."""
    base, new = [captures["a1"], captures["a2"]], [captures["b1"], captures["b2"]]
    files = run_cli("compare", "--base", *base, "--new", *new, "--scheduler", scheduler, "--format", "json")
    assert files.code == 1, files.err
    ds = tmp_path / "results"
    assert run_cli("ingest", *base, *new, "-o", ds, "--scheduler", scheduler).code == 0
    selected = run_cli("compare", "--dataset", ds, "--base", "build=41", "--new", "build=42", "--format", "json")
    assert selected.code == 1, selected.err
    a, b = json.loads(files.out), json.loads(selected.out)
    assert a["regressions"] == b["regressions"] == ["dw1"]
    for key in ("inference", "layers", "memory", "findings"):
        assert a[key] == b[key], key
    assert run_cli("compare", "--dataset", ds, "--base", "build=41", "--new", "build=99").code == 2


def test_unreachable_scheduler_is_exit_4_and_writes_nothing(captures, run_cli, tmp_path) -> None:
    """No scheduler listens on the port: exit 4, said in words; no dataset folder is made."""
    address = f"tcp://127.0.0.1:{free_port()}"
    ds = tmp_path / "results"
    done = run_cli("ingest", captures["a1"], "-o", ds, "--scheduler", address)
    assert done.code == 4
    assert f"cannot reach the Dask scheduler at {address}" in done.err
    assert not ds.exists()
    assert run_cli("ingest", captures["a1"], "-o", ds, "--scheduler", "localhost").code == 2


def test_a_newer_dataset_is_refused_untouched(captures, run_cli, tmp_path) -> None:
    """A dataset written by a newer schema: ingest, compare and trend say so (exit 2), change nothing."""
    ds = tmp_path / "results"
    assert run_cli("ingest", captures["a1"], "-o", ds, "--workers", "1").code == 0
    manifest = ds / schema.MANIFEST
    data = json.loads(manifest.read_text())
    data["schema_version"] = schema.SCHEMA_VERSION + 1
    manifest.write_text(json.dumps(data))
    before = snapshot(ds)
    for args in (
        ("ingest", captures["b1"], "-o", ds, "--workers", "1"),
        ("compare", "--dataset", ds, "--base", "build=41", "--new", "build=41"),
        ("trend", ds, "--by", "build"),
    ):
        done = run_cli(*args)
        assert done.code == 2 and "newer than this tracer's" in done.err, args
    assert snapshot(ds) == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    refused = run_cli("ingest", captures["a1"], "-o", other, "--workers", "1")
    assert refused.code == 2 and "not a tracer dataset" in refused.err
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]


def test_a_killed_ingest_leaves_the_dataset_as_it_was(captures, run_cli, tmp_path) -> None:
    """An ingest killed (SIGKILL) while its workers write: the dataset readers see is unchanged, and
    the next ingest clears what the killed one staged."""
    ds = tmp_path / "results"
    assert run_cli("ingest", captures["a1"], "-o", ds, "--workers", "1").code == 0
    before = snapshot(ds)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(60):
        write_build(many / f"c{i:02d}.trace", Build(), 40, 100 + i)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tracer", "ingest", str(many), "-o", str(ds), "--workers", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not any((ds / "_staging").rglob("*.parquet")):
            assert process.poll() is None, "the ingest ended before it was killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert snapshot(ds) == before
    assert any((ds / "_staging").rglob("*.parquet"))  # what it staged is still there, unseen
    assert run_cli("ingest", captures["a2"], "-o", ds, "--workers", "1").code == 0
    assert not any((ds / "_staging").rglob("*"))
    assert len(Dataset.open(ds).known_ids()) == 2


def test_a_commit_cut_midway_is_completed(captures, run_cli, tmp_path, monkeypatch) -> None:
    """The process dies between two renames of a commit (simulated: the rename raises after four
    files): the next writer completes the run from its journal; the capture is then whole."""
    import tracer.fleet.dataset as dataset_module

    ds = tmp_path / "results"
    real_replace = os.replace
    calls = {"n": 0}

    def dying_replace(src, dst):
        if "_staging" in str(src) and "_staging" not in str(dst):  # a commit's move into place
            calls["n"] += 1
            if calls["n"] > 4:
                raise KeyboardInterrupt  # the process stops here
        return real_replace(src, dst)

    monkeypatch.setattr(dataset_module.os, "replace", dying_replace)
    assert run_cli("ingest", captures["b1"], "-o", ds, "--workers", "1").code == 130
    monkeypatch.setattr(dataset_module.os, "replace", real_replace)
    assert list((ds / "_journal").glob("*.json")), "the journal of the cut commit is kept"
    assert Dataset.open(ds).known_ids() == set()  # the captures row comes last: not yet in
    with Dataset.create_or_open(ds).writing():
        pass  # opening for writing recovers
    dataset = Dataset.open(ds)
    assert len(dataset.known_ids()) == 1
    assert dataset.table("layer_executions").num_rows == 25 * len(LAYERS)
    assert not list((ds / "_journal").glob("*.json"))


def test_duckdb_queries_of_the_docs_run(captures, run_cli, tmp_path) -> None:
    """The three queries of docs/fleet.md run on a dataset and give what they promise."""
    ds = tmp_path / "results"
    jitter = write_build(tmp_path / "isr.trace", Build(isr=(3, 900)), 25, 9, board="board-b", labels={"build": 43})
    paths = [captures[n] for n in ("a1", "a2", "b1", "b2")] + [jitter]
    assert run_cli("ingest", *paths, "-o", ds, "--workers", "1").code == 0
    text = (ROOT / "docs" / "fleet.md").read_text()
    queries = re.findall(r"```sql\n(.*?)```", text, re.S)
    assert len(queries) == 3
    results = [duckdb.sql(q.replace("'results/", f"'{ds.as_posix()}/")).fetchall() for q in queries]
    per_build = {(row[0], row[1]): row[2] for row in results[0]}
    assert per_build[("42", "dw1")] > 1.08 * per_build[("41", "dw1")]
    assert per_build[("42", "conv0")] == pytest.approx(per_build[("41", "conv0")], rel=0.01)
    slowest = results[1]
    assert len(slowest) == 10 and all(row[2] >= slowest[-1][2] for row in slowest)
    assert ("board-b", "isr-in-layer", "info", 1) in results[2]
