"""Energy in the dataset and in trends: ``tracer ingest --power [PATTERN]`` pairs each capture
with its power recording and writes its energy per inference and per layer execution;
``tracer trend --energy`` follows those across builds.

Captures of our encoder (SYNC_PIN marks) and the recordings a simulated meter made of them from a
per-layer power model, written as real JLS files through pyjls; the model is the truth. Ingest
runs in-process (``--workers 1``): the Dask path is test_fleet.py's.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from power_streams import sync_capture, truth_uj

from tracer.cli.main import main
from tracer.fleet.dataset import Dataset
from tracer.pipeline.load import load_timeline
from tracer.power.simulate import Meter, PowerModel, SimulatedRecording, write_jls

pytest.importorskip("pyarrow")
pytest.importorskip("pyjls")
MODEL = PowerModel({0: 40.0, 1: 95.0, 2: 25.0}, other_mw=12.0, idle_mw=2.0)


def _metered(folder: Path, name: str, seed: int, model: PowerModel = MODEL, meter_name: str | None = None) -> Path:
    """``folder/name.trace`` and, beside it, ``meter_name`` (default ``name.jls``): its meter's recording."""
    folder.mkdir(parents=True, exist_ok=True)
    capture = sync_capture(folder / f"{name}.trace", inferences=30, seed=seed)
    timeline, _ = load_timeline(str(capture))
    recording = SimulatedRecording(timeline, model, Meter(100_000, drift_ppm=80, white_mw=0.5, seed=seed))
    target = folder / (meter_name or f"{name}.jls")
    target.parent.mkdir(parents=True, exist_ok=True)
    write_jls(str(target), recording)
    return capture


def _rows(dataset: Path, table: str) -> list[dict]:
    return Dataset.open(dataset).table(table).to_pylist()


def test_ingest_power_beside_writes_energy_per_inference_and_layer(run_cli, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    metered = _metered(runs, "a", seed=3)
    bare = sync_capture(runs / "b.trace", inferences=30, seed=4)  # no recording beside it
    ds = tmp_path / "ds"
    done = run_cli("ingest", runs, "-o", ds, "--workers", "1", "--power", "--format", "json")
    assert done.code == 0, done.err
    summary = json.loads(done.out)
    assert summary["ingested"] == 2 and summary["failed"] == 0  # a.jls is not taken for a capture
    assert summary["with_energy"] == 1
    captures = {Path(r["path"]).name: r for r in _rows(ds, "captures")}
    timeline, _ = load_timeline(str(metered))
    per_layer, per_inference = truth_uj(timeline, MODEL.layer_mw, MODEL.other_mw)
    a = captures["a.trace"]
    assert a["energy_uj"] == pytest.approx(np.mean(list(per_inference.values())), rel=0.01)
    assert 0 < a["energy_interval_uj"] < 0.05 * a["energy_uj"]
    assert a["power_path"] == str(runs / "a.jls")
    assert captures[bare.name]["energy_uj"] is None and captures[bare.name]["power_path"] is None
    layers = {(r["capture_id"], r["layer"]): r for r in _rows(ds, "layers")}
    for layer in (0, 1):  # the two layers of at least 20 samples (layer 2: 0.6 of one, fitted)
        assert layers[(a["capture_id"], layer)]["energy_uj"] == pytest.approx(per_layer[layer], rel=0.02)
    assert layers[(captures[bare.name]["capture_id"], 1)]["energy_uj"] is None


def test_ingest_power_pattern_and_a_recording_that_does_not_belong(run_cli, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    good = _metered(runs, "good", seed=5, meter_name="meter/good.jls")
    wrong = _metered(runs, "wrong", seed=6, meter_name="meter/wrong.jls")
    shutil.copy(runs / "meter" / "good.jls", runs / "meter" / "wrong.jls")  # another run's recording
    ds = tmp_path / "ds"
    done = run_cli("ingest", good, wrong, "-o", ds, "--workers", "1", "--power", "meter/{stem}.jls")
    assert done.code == 3, done.err
    assert "wrong.trace" not in done.out and "energy: 1 of the 1 captures added" in done.out
    errors = _rows(ds, "errors")
    assert len(errors) == 1 and errors[0]["path"] == str(wrong) and errors[0]["exit_code"] == 3
    assert "wrong.jls" in errors[0]["error"]
    assert [r["energy_uj"] is not None for r in _rows(ds, "captures")] == [True]


def test_ingest_power_bad_pattern_is_a_usage_error(run_cli, tmp_path: Path) -> None:
    capture = sync_capture(tmp_path / "a.trace", inferences=5)
    for pattern in ("{stm}.jls", "fixed.jls", "{stem.jls"):
        done = run_cli("ingest", capture, "-o", tmp_path / "ds", "--workers", "1", "--power", pattern)
        assert done.code == 2 and "--power" in done.err, (pattern, done.err)
    assert not (tmp_path / "ds").exists()


def test_files_written_before_the_energy_columns_read_as_null(run_cli, tmp_path: Path) -> None:
    capture = sync_capture(tmp_path / "a.trace", inferences=5)
    ds = tmp_path / "ds"
    assert run_cli("ingest", capture, "-o", ds, "--workers", "1").code == 0
    for table in ("captures", "layers"):
        (path,) = (ds / table).rglob("*.parquet")
        old = pq.read_table(path)
        keep = [n for n in old.column_names if "energy" not in n and n != "power_path"]
        pq.write_table(old.select(keep), path)  # as an ingest before the columns wrote it
        rows = Dataset.open(ds).table(table).to_pylist()
        assert rows and all(r["energy_uj"] is None for r in rows)
    assert isinstance(Dataset.open(ds).table("layers").schema.field("energy_uj").type, pa.DataType)


@pytest.fixture(scope="module")
def energy_builds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six builds of one metered capture each; from build 4 on, layer 1 draws 15 % more."""
    tmp = tmp_path_factory.mktemp("energy_trend")
    ds = tmp / "ds"
    for build in range(1, 7):
        mw = dict(MODEL.layer_mw)
        if build >= 4:
            mw[1] *= 1.15
        model = PowerModel(mw, MODEL.other_mw, MODEL.idle_mw)
        capture = _metered(tmp / f"b{build}", "run", seed=10 + build, model=model)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            code = main(
                ["ingest", str(capture), "-o", str(ds), "--workers", "1", "--power", "--label", f"build={build}"]
            )
        assert code == 0, err.getvalue()
    return ds


def test_trend_energy_finds_the_step_where_it_began(energy_builds: Path, run_cli) -> None:
    done = run_cli("trend", energy_builds, "--by", "build", "--energy", "--format", "json")
    assert done.code == 0, done.err
    obj = json.loads(done.out)
    assert obj["unit"] == "uJ" and obj["builds"] == [str(b) for b in range(1, 7)]
    series = {s["label"]: s for s in obj["series"]}
    step = series["layer1"]["changes"]
    assert [c["build"] for c in step] == ["4"] and step[0]["pct"] == pytest.approx(15.0, abs=2.0)
    assert [c["build"] for c in series["inference"]["changes"]] == ["4"]
    assert series["layer0"]["changes"] == []
    text = run_cli("trend", energy_builds, "--by", "build", "--energy")
    assert text.code == 0 and "uJ" in text.out and "4: " in text.out


def test_trend_energy_fails_when_the_newest_build_spends_more(energy_builds: Path, run_cli, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    shutil.copytree(energy_builds, ds)
    mw = dict(MODEL.layer_mw)
    mw[1] *= 1.15 * 1.2
    capture = _metered(tmp_path / "b7", "run", seed=17, model=PowerModel(mw, MODEL.other_mw, MODEL.idle_mw))
    assert run_cli("ingest", capture, "-o", ds, "--workers", "1", "--power", "--label", "build=7").code == 0
    done = run_cli("trend", ds, "--by", "build", "--energy", "--format", "json")
    assert done.code == 1, done.err
    assert "layer1" in json.loads(done.out)["newest_regressions"]
    # In cycles nothing changed: the same builds pass.
    assert run_cli("trend", ds, "--by", "build").code == 0


def test_trend_energy_without_energy_in_the_dataset_is_nothing_measured(run_cli, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    capture = sync_capture(tmp_path / "a.trace", inferences=5)
    assert run_cli("ingest", capture, "-o", ds, "--workers", "1", "--label", "build=1").code == 0
    done = run_cli("trend", ds, "--by", "build", "--energy")
    assert done.code == 3 and "--power" in done.err
