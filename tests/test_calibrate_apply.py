"""``report`` and ``check`` with ``--calibration FILE``: the calibrated prediction beside the planner's
(JSON per the schema, text, JUnit), ``check --against planner|calibrated``, and what the
calibration has not seen said per layer. Models compiled by the real Vela (tests/calib_models.py);
the calibration is learnt without the model it is applied to."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
from calib_models import HELD_OUT, Compiled
from test_report_schema import _errors


def _args(models: Compiled, name: str = HELD_OUT) -> list[str]:
    return [str(models.captures[name]), "--budget", *map(str, models.files[name])]


def _edited(board: Path, tmp_path: Path, edit) -> Path:
    data = json.loads(board.read_text())
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return path


def test_report_json_has_the_calibrated_prediction_beside_the_planners(
    run_cli, calibration_models: Compiled, board: Path
) -> None:
    result = run_cli("report", *_args(calibration_models), "--calibration", board, "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert _errors(report) == []
    factors = {f["op"]: f for f in json.loads(board.read_text())["operators"]}
    planner_off = calibrated_off = 0.0
    for layer in report["layers"]:
        f = factors[layer["op"]]
        assert layer["calibrated_cycles"] == pytest.approx(layer["predicted_cycles"] * f["factor"], rel=1e-6)
        c = layer["budget"]["calibrated"]
        assert c["low"] < layer["calibrated_cycles"] < c["high"]
        assert layer["budget"]["against"] == "planner"
        planner_off += abs(layer["ratio"] - 1)
        calibrated_off += abs(layer["calibrated_ratio"] - 1)
    assert calibrated_off < 0.5 * planner_off
    calibration = report["budget"]["calibration"]
    assert calibration["against"] == "planner" and calibration["models"] == 5
    assert sum(calibration["layers_by_status"].values()) == len(report["layers"])


def test_report_text_labels_the_calibrated_column(run_cli, calibration_models: Compiled, board: Path) -> None:
    result = run_cli("report", *_args(calibration_models), "--calibration", board)
    assert result.code == 0, result.err
    assert "calibrated  cal.ratio" in result.out
    assert f"calibration: {board}" in result.out
    plain = run_cli("report", *_args(calibration_models))
    assert "calibrated" not in plain.out


def test_check_gates_on_either_prediction(run_cli, calibration_models: Compiled, board: Path, tmp_path: Path) -> None:
    common = [*_args(calibration_models), "--calibration", board, "--tolerance", "30"]
    planner = run_cli("check", *common)
    assert planner.code == 1  # the planner is off by more than 30 % on several operator types
    calibrated = run_cli("check", *common, "--against", "calibrated")
    assert calibrated.code == 0, calibrated.out
    assert "(calibrated " in calibrated.out and "; planner " in calibrated.out
    junit = tmp_path / "junit.xml"
    assert run_cli("check", *common, "--against", "calibrated", "--format", "junit", "-o", junit).code == 0
    root = ElementTree.parse(junit).getroot()
    texts = " ".join(ElementTree.tostring(e, encoding="unicode") for e in root.iter("testcase"))
    assert "calibrated" in texts
    props = {p.attrib["name"]: p.attrib["value"] for p in root.iter("property")}
    assert props["against"] == "calibrated"


def test_an_operator_type_not_calibrated_keeps_the_planners_limit(
    run_cli, calibration_models: Compiled, board: Path, tmp_path: Path
) -> None:
    edited = _edited(board, tmp_path, lambda d: d.update(operators=[f for f in d["operators"] if f["op"] != "ADD"]))
    result = run_cli(
        "check", *_args(calibration_models), "--calibration", edited, "--against", "calibrated", "--format", "json"
    )
    report = json.loads(result.out)
    adds = [la for la in report["layers"] if la["op"] == "ADD"]
    assert adds
    for layer in adds:
        assert layer["calibrated_cycles"] is None
        assert layer["budget"]["calibrated"]["status"] == "not-calibrated"
        assert layer["budget"]["against"] == "planner"
        assert layer["budget"]["limit_cycles"] == pytest.approx(layer["predicted_cycles"] * 1.1, rel=1e-3)
    assert report["budget"]["calibration"]["layers_by_status"]["not-calibrated"] == len(adds)


def test_a_layer_outside_what_the_calibration_saw_is_said(
    run_cli, calibration_models: Compiled, board: Path, tmp_path: Path
) -> None:
    def shrink(data: dict) -> None:
        for f in data["operators"]:
            if f["op"] == "CONV_2D":
                f["planner_cycles_range"] = [1, 2]

    edited = _edited(board, tmp_path, shrink)
    report = json.loads(run_cli("report", *_args(calibration_models), "--calibration", edited, "--format", "json").out)
    convs = [la for la in report["layers"] if la["op"] == "CONV_2D"]
    assert convs
    for layer in convs:
        c = layer["budget"]["calibrated"]
        assert c["status"] == "outside" and "the calibration saw CONV_2D from 1 to 2" in c["note"]
    text = run_cli("report", *_args(calibration_models), "--calibration", edited).out
    assert any(line.split()[2] == "CONV_2D" and "*" in line for line in text.splitlines() if line[:3].strip().isdigit())


def test_calibration_option_errors(run_cli, calibration_models: Compiled, tmp_path: Path) -> None:
    no_file = run_cli("check", *_args(calibration_models), "--against", "calibrated")
    assert no_file.code == 2 and "--against calibrated needs --calibration" in no_file.err
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "tracer-calibration", "version": 9, "operators": []}')
    result = run_cli("report", *_args(calibration_models), "--calibration", bad)
    assert result.code == 2 and f"{bad}: calibration file version 9" in result.err
    no_budget = run_cli("report", str(calibration_models.captures[HELD_OUT]), "--calibration", bad)
    assert no_budget.code == 2 and "give the budget too" in no_budget.err


def test_the_screen_shows_the_calibrated_prediction(calibration_models: Compiled, board: Path, run_cli) -> None:
    """A headless replay (Textual's Pilot) with --calibration: the session's layer rows carry the
    calibrated prediction the report gives, and the layer detail shows it, labelled."""
    import asyncio

    from tracer.analysis.calibration_file import read_calibration
    from tracer.budget import load_budget
    from tracer.session.engine import Session, SessionOptions
    from tracer.tui.app import TracerApp

    capture = calibration_models.captures[HELD_OUT]
    options = SessionOptions(speed=None, calibration=read_calibration(board))
    session = Session.replay(str(capture), budget=load_budget(calibration_models.files[HELD_OUT]), options=options)
    report = json.loads(run_cli("report", *_args(calibration_models), "--calibration", board, "--format", "json").out)
    app = TracerApp(session)
    text = ""

    async def main() -> None:
        nonlocal text
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(2000):
                if app.session.ended:
                    break
                await pilot.pause(0.01)
            assert app.session.ended
            rows = {row.index: row for row in app.session.snapshot().layers}
            for layer in report["layers"]:
                assert rows[layer["index"]].calibrated == pytest.approx(layer["calibrated_cycles"], abs=1e-3)
                assert rows[layer["index"]].calibration_status == layer["budget"]["calibrated"]["status"]
            app.select_layer(1)
            for _ in range(200):
                app.refresh_views(force=True)
                await pilot.pause(0.02)
                detail = app.query_one("#detail").content
                text = detail.plain if hasattr(detail, "plain") else str(detail)
                if "calibrated" in text:
                    break

    asyncio.run(main())
    assert "budget" in text and "calibrated" in text, text  # the planner's and the calibrated prediction
