"""``tracer ingest --budget`` keeps the planner's estimate of each layer in the dataset's
``predictions`` table, and ``tracer calibrate --dataset`` learns from it: the same table and
calibration as from the captures and their budgets.

Models compiled by the real Vela and measured from a hidden per-operator-type truth
(tests/calib_models.py). Ingest runs in this process (``--workers 1``) except where the test says
it uses a local Dask cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.dataset as pds
import pytest
from calib_models import Compiled, measured_capture

from tracer.analysis.calibration import FEATURES
from tracer.fleet import schema


@pytest.fixture(scope="module")
def dataset(calibration_models: Compiled, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every model's capture ingested with its budget, one run per model (as the help says)."""
    from tracer.cli.main import main

    folder = tmp_path_factory.mktemp("calib_dataset") / "ds"
    for name in calibration_models.budgets:
        capture, budget = calibration_models.captures[name], calibration_models.files[name][0].parent
        args = ["ingest", capture, "-o", folder, "--workers", "1", "--label", "board=b1", "--budget", budget]
        code = main([str(a) for a in args])
        assert code == 0
    return folder


def _json(run_cli, *args: object) -> dict:
    result = run_cli("calibrate", *args, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_calibrating_from_the_dataset_is_calibrating_from_the_captures(
    run_cli, calibration_models: Compiled, dataset: Path, tmp_path: Path
) -> None:
    from_captures = _json(run_cli, *calibration_models.pairs())
    from_dataset = _json(run_cli, "--dataset", dataset)
    assert from_dataset == from_captures
    assert from_dataset["validation"]["done"] is True
    assert _json(run_cli, "--dataset", dataset, "--where", "board=b1") == from_captures
    # Mixed with captures given as usual: one more capture of m_a adds its layers, not a model.
    mixed = _json(run_cli, "--dataset", dataset, calibration_models.pairs(["m_a"])[0])
    assert mixed["all"]["layers"] == from_captures["all"]["layers"] + len(calibration_models.budgets["m_a"].layers)
    assert mixed["all"]["models"] == from_captures["all"]["models"] == 6
    saved = tmp_path / "board.json"
    assert run_cli("calibrate", "--dataset", dataset, "--save", saved).code == 0
    assert set(json.loads(saved.read_text())["models"]) == set(calibration_models.budgets)


def test_the_predictions_table_is_plain_parquet(calibration_models: Compiled, dataset: Path) -> None:
    """Read without tracer: one row per layer of every budget (every layer of these models is one
    NPU operator with an estimate), measured over predicted near the hidden truth of its type."""
    from calib_models import TRUTH

    table = pds.dataset(dataset / "predictions", format="parquet", partitioning="hive").to_table()
    assert set(schema.PREDICTIONS.names) <= set(table.column_names)
    assert set(FEATURES) <= set(table.column_names)
    rows = table.to_pylist()
    assert len(rows) == sum(len(b.layers) for b in calibration_models.budgets.values())
    assert {r["model"] for r in rows} == set(calibration_models.budgets)
    for row in rows:
        ratio = row["measured_cycles"] / row["predicted_cycles"]
        assert 0.6 < ratio / TRUTH[row["op"]] < 1.6, row
        assert row["planner_cycles"] > 0 and row["mac_count"] is not None
        assert json.loads(row["planner"])["name"] == "vela"
    layers = pds.dataset(dataset / "layers", format="parquet", partitioning="hive").to_table().to_pylist()
    p50 = {(r["capture_id"], r["layer"]): r["p50"] for r in layers}
    assert all(p50[(r["capture_id"], r["layer"])] == r["measured_cycles"] for r in rows)


def test_ingest_on_dask_ships_the_budget(calibration_models: Compiled, tmp_path: Path, run_cli) -> None:
    """Two captures of one model on a local Dask cluster of two workers: both get their rows."""
    name = "m_a"
    again, _ = measured_capture(tmp_path / "again.trace", calibration_models.budgets[name], seed=555)
    folder = tmp_path / "ds"
    budget = calibration_models.files[name][0].parent
    result = run_cli(
        "ingest", calibration_models.captures[name], again, "-o", folder, "--workers", "2", "--budget", budget
    )
    assert result.code == 0, result.err
    rows = pds.dataset(folder / "predictions", format="parquet", partitioning="hive").to_table().to_pylist()
    per_capture: dict[str, int] = {}
    for row in rows:
        per_capture[row["capture_id"]] = per_capture.get(row["capture_id"], 0) + 1
    assert sorted(per_capture.values()) == [len(calibration_models.budgets[name].layers)] * 2


def test_misuse_says_what_to_do(run_cli, calibration_models: Compiled, dataset: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    result = run_cli(
        "ingest", calibration_models.captures["m_a"], "-o", other, "--workers", "1", "--budget",
        calibration_models.files["m_b"][0].parent,
    )  # fmt: skip
    assert result.code == 3
    assert "does not describe the capture's model" in result.err
    errors = pds.dataset(other / "errors", format="parquet", partitioning="hive").to_table().to_pylist()
    assert [e["exit_code"] for e in errors] == [2]
    assert not (other / "captures").exists() or not pds.dataset(other / "captures", format="parquet").count_rows()
    plain = tmp_path / "plain"
    assert run_cli("ingest", calibration_models.captures["m_a"], "-o", plain, "--workers", "1").code == 0
    result = run_cli("calibrate", "--dataset", plain)
    assert result.code == 2 and "ingested with a budget" in result.err and "--budget" in result.err
    result = run_cli("calibrate", "--dataset", dataset, "--where", "board=b9")
    assert result.code == 2 and "board=b1" in result.err  # the values the dataset has
    result = run_cli("calibrate", "--where", "board=b1", f"{calibration_models.pairs()[0]}")
    assert result.code == 2 and "--dataset" in result.err
    result = run_cli("calibrate", "--dataset", tmp_path / "nothing")
    assert result.code == 2 and "not a tracer dataset" in result.err
    result = run_cli("ingest", calibration_models.captures["m_a"], "-o", other, "--budget", tmp_path / "none.csv")
    assert result.code == 2 and "none.csv" in result.err
    assert all("Traceback" not in r for r in (result.err,))
