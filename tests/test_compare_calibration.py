"""``tracer compare BASE NEW --budget FILES [--calibration FILE]``: per layer, each build's measured
median beside the planner's and the calibrated prediction, each side's error and its change.

Models compiled by the real Vela and measured from a hidden per-operator-type truth
(tests/calib_models.py); the calibration is learnt without the compared model. The new build is
the same model measured again with other per-layer deviations (another seed). The numbers must be
those ``tracer report`` shows for each capture alone (one matching, one calibrated prediction).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from calib_models import HELD_OUT, Compiled, measured_capture
from junitparser import JUnitXml


@pytest.fixture(scope="module")
def new_build(calibration_models: Compiled, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:data:`HELD_OUT` measured again: the same plan, other per-layer deviations."""
    folder = tmp_path_factory.mktemp("new_build")
    path, _ = measured_capture(folder / "new.trace", calibration_models.budgets[HELD_OUT], seed=999)
    return path


def _budget(models: Compiled) -> list[str]:
    return ["--budget", *map(str, models.files[HELD_OUT])]


def _report_layers(run_cli, capture: Path, models: Compiled, board: Path) -> dict[str, dict]:
    result = run_cli("report", capture, *_budget(models), "--calibration", board, "--format", "json")
    assert result.code == 0, result.err
    return {la["name"]: la for la in json.loads(result.out)["layers"]}


def test_both_builds_against_the_planner_and_the_calibration(
    run_cli, calibration_models: Compiled, board: Path, new_build: Path
) -> None:
    base = calibration_models.captures[HELD_OUT]
    result = run_cli(
        "compare", base, new_build, *_budget(calibration_models), "--calibration", board, "--format", "json"
    )
    assert result.code in (0, 1), result.err
    obj = json.loads(result.out)
    section = obj["planner"]
    assert section["calibration"]["source"] == str(board)
    assert section["budget"]["name"] == HELD_OUT
    changes = {ch["label"]: ch for ch in obj["layers"]}
    reports = {"base": _report_layers(run_cli, base, calibration_models, board)}
    reports["new"] = _report_layers(run_cli, new_build, calibration_models, board)
    assert len(section["layers"]) == len(changes) == len(calibration_models.budgets[HELD_OUT].layers)
    for la in section["layers"]:
        for side in ("base", "new"):
            mine, report = la[side], reports[side][la["label"]]
            # The compare's own medians, and the report's predictions of each capture alone.
            assert mine["measured"] == changes[la["label"]]["p50"][side] == report["cycles"]["p50"]
            assert mine["planner"] == pytest.approx(report["predicted_cycles"], abs=1e-3)
            assert mine["calibrated"] == report["budget"]["calibrated"]
            assert mine["planner_error"] == pytest.approx(mine["planner"] / mine["measured"] - 1, abs=1e-4)
            calibrated = mine["calibrated"]["cycles"]
            assert mine["calibrated_error"] == pytest.approx(calibrated / mine["measured"] - 1, abs=1e-4)
            assert mine["in_interval"] == (mine["calibrated"]["low"] <= mine["measured"] <= mine["calibrated"]["high"])
        expected = abs(la["new"]["planner_error"]) - abs(la["base"]["planner_error"])
        assert la["planner_error_change"] == pytest.approx(expected, abs=2e-4)
        expected = abs(la["new"]["calibrated_error"]) - abs(la["base"]["calibrated_error"])
        assert la["calibrated_error_change"] == pytest.approx(expected, abs=2e-4)
    # The calibration learnt on the other models predicts both builds better than the planner.
    for side in ("base", "new"):
        summary = section["summary"][side]
        assert summary["calibrated_median_error"] <= 0.5 * summary["planner_median_error"], summary


def test_text_and_markdown_show_the_section(
    run_cli, calibration_models: Compiled, board: Path, new_build: Path
) -> None:
    base = calibration_models.captures[HELD_OUT]
    args = ("compare", base, new_build, *_budget(calibration_models), "--calibration", board)
    obj = json.loads(run_cli(*args, "--format", "json").out)
    text = run_cli(*args).out
    assert "measured against the planner's prediction" in text
    header = next(line for line in text.splitlines() if line.startswith("#") and "calibrated" in line)
    assert header.split().count("err") == 6  # base err, new err, err change: planner and calibrated
    first = obj["planner"]["layers"][0]
    row = next(line for line in text.splitlines() if f" {first['label']} " in line and "pt" in line)
    assert f"{first['base']['planner_error'] * 100:+.1f}%" in row
    assert f"{first['calibrated_error_change'] * 100:+.1f} pt" in row
    markdown = run_cli(*args, "--format", "markdown").out
    assert "**Against the planner**" in markdown
    assert f"| {first['label']} |" in markdown
    (suite,) = list(JUnitXml.fromstring(run_cli(*args, "--format", "junit").out))
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["calibration"] == str(board)
    case = next(c for c in suite if c.name == f"layer {first['new_index']} {first['label']}")
    said = (case.system_out or "") + "".join(r.text or "" for r in case.result)
    assert f"error {first['base']['planner_error'] * 100:+.1f}% -> {first['new']['planner_error'] * 100:+.1f}%" in said


def test_budget_without_calibration_shows_the_planner_only(
    run_cli, calibration_models: Compiled, new_build: Path
) -> None:
    base = calibration_models.captures[HELD_OUT]
    result = run_cli("compare", base, new_build, *_budget(calibration_models), "--format", "json")
    section = json.loads(result.out)["planner"]
    assert section["calibration"] is None
    assert all(la["base"]["calibrated"] is None and la["calibrated_error_change"] is None for la in section["layers"])
    assert all(la["planner_error_change"] is not None for la in section["layers"])
    assert (
        "calibrated" not in run_cli("compare", base, new_build, *_budget(calibration_models)).out.split("planner ")[-1]
    )


def test_misuse_is_exit_2(run_cli, calibration_models: Compiled, board: Path, new_build: Path, tmp_path: Path) -> None:
    base = calibration_models.captures[HELD_OUT]
    result = run_cli("compare", base, new_build, "--calibration", board)
    assert result.code == 2 and "--budget" in result.err
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "tracer-calibration", "version": 1, "operators": [{"op": "ADD"}]}')
    missing = tmp_path / "missing.trace"  # the calibration is read first: its error, not the capture's
    result = run_cli("compare", base, missing, *_budget(calibration_models), "--calibration", broken)
    assert result.code == 2 and "broken.json: operators[0]" in result.err, result.err
    other = ["--budget", *map(str, calibration_models.files["m_a"])]
    result = run_cli("compare", base, new_build, *other)
    assert result.code == 2
    assert "does not describe the base build's model" in result.err, result.err
    assert "Traceback" not in result.err


def test_a_simulated_npu_gets_no_prediction_as_in_the_report(run_cli) -> None:
    """The npu-sampling demo's NPU is emulated: its ethos-u layer's time is not comparable with
    Vela's estimate. compare says so as report does (no prediction, the same note)."""
    root = Path(__file__).resolve().parent.parent
    capture = root / "captures" / "demo_sampling.trace"
    budget = root / "firmware_snippets" / "demo" / "model" / "vela"
    result = run_cli("compare", capture, capture, "--budget", budget, "--format", "json")
    assert result.code == 0, result.err
    section = {la["label"]: la for la in json.loads(result.out)["planner"]["layers"]}
    report = json.loads(run_cli("report", capture, "--budget", budget, "--format", "json").out)
    for layer in report["layers"]:
        mine = section[layer["name"]]
        for side in ("base", "new"):
            assert mine[side]["planner"] == layer["predicted_cycles"]
            assert mine[side]["note"] == layer["budget"]["note"]
    assert "simulated NPU" in section["sampling_net"]["new"]["note"]
    assert json.loads(result.out)["base"]["labels"]["npu_pmu"] == "simulated"


def test_a_dataset_gives_the_same_section(
    run_cli, calibration_models: Compiled, board: Path, new_build: Path, tmp_path: Path
) -> None:
    """The builds selected from a dataset by label are held against the plan as the files are."""
    dataset = tmp_path / "ds"
    base = calibration_models.captures[HELD_OUT]
    for capture, build in ((base, "1"), (new_build, "2")):
        result = run_cli("ingest", capture, "-o", dataset, "--label", f"build={build}", "--workers", "1")
        assert result.code == 0, result.err
    plan = (*_budget(calibration_models), "--calibration", board, "--format", "json")
    from_files = json.loads(run_cli("compare", base, new_build, *plan).out)["planner"]
    result = run_cli("compare", "--dataset", dataset, "--base", "build=1", "--new", "build=2", *plan)
    assert result.code in (0, 1), result.err
    from_dataset = json.loads(result.out)["planner"]
    assert from_dataset["layers"] == from_files["layers"]
    assert from_dataset["summary"] == from_files["summary"]
