"""``tracer export --format model-explorer``: node data for Google's Model Explorer, keyed to the
operators of a model the tests compile with the real Vela (tests/calib_models.py).

The files are checked against Model Explorer's node-data format as its Python package defines it
(``model_explorer.node_data_builder`` of ``ai-edge-model-explorer`` 0.1.34, Apache-2.0: the
``GraphNodeData``, ``NodeDataResult``, ``ThresholdItem`` and ``GradientItem`` dataclasses; their
fields and defaults are transcribed in :data:`GRAPH_NODE_DATA`). The package itself is not a test
dependency: it requires ``ai-edge-model-explorer-adapter``, a 480 MB native wheel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from calib_models import Compiled
from ethosu.vela.tflite import Model

MODEL = "m_c"
# GraphNodeData: field -> (types, default); `results` is required.
GRAPH_NODE_DATA: dict[str, tuple[tuple[type, ...], Any]] = {
    "results": ((dict,), None),
    "name": ((str, type(None)), None),
    "thresholds": ((list,), []),
    "gradient": ((list,), []),
    "hideInAggregatedStatsTable": ((bool,), False),
    "hideInChildrenStatsTable": ((bool,), False),
    "hideAggregatedStats": ((list, type(None)), None),
    "showExpandedSummaryOnGroupNode": ((bool,), False),
    "showLabelCountColumnsInChildrenStatsTable": ((bool,), False),
}
NODE_DATA_RESULT = {"value": (int, float), "bgColor": (str,), "textColor": (str,)}
THRESHOLD_ITEM = {"value": (int, float), "bgColor": (str,), "textColor": (str,)}
GRADIENT_ITEM = {"stop": (int, float), "bgColor": (str,), "textColor": (str,)}


def _check_graph_node_data(data: dict[str, Any]) -> None:
    """What constructing GraphNodeData(**data) with its item classes accepts."""
    assert set(data) <= set(GRAPH_NODE_DATA), set(data) - set(GRAPH_NODE_DATA)
    assert "results" in data
    for key, (types, _) in GRAPH_NODE_DATA.items():
        if key in data:
            assert isinstance(data[key], types), key
    for key, result in data["results"].items():
        assert isinstance(key, str) and key
        _check_item(result, NODE_DATA_RESULT, required="value")
    for item in data.get("thresholds", []):
        _check_item(item, THRESHOLD_ITEM, required="value", also="bgColor")
    for item in data.get("gradient", []):
        _check_item(item, GRADIENT_ITEM, required="stop")
        assert 0 <= item["stop"] <= 1
    if data.get("gradient"):
        assert {g["stop"] for g in data["gradient"]} >= {0, 1}  # the format asks for both ends


def _check_item(item: dict[str, Any], fields: dict[str, tuple[type, ...]], required: str, also: str = "") -> None:
    assert set(item) <= set(fields), item
    for key in (required, also) if also else (required,):
        assert key in item, item
    for key, value in item.items():
        assert isinstance(value, fields[key]) and not isinstance(value, bool), (key, value)


def _operator_outputs(tflite: Path) -> list[str]:
    """The output tensor name of every operator of the model's first subgraph."""
    model = Model.Model.GetRootAsModel(tflite.read_bytes(), 0)
    graph = model.Subgraphs(0)
    return [graph.Tensors(graph.Operators(i).Outputs(0)).Name().decode() for i in range(graph.OperatorsLength())]


@pytest.fixture(scope="module")
def board(calibration_models: Compiled, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tracer.cli.main import main

    path = tmp_path_factory.mktemp("board") / "board.json"
    others = [n for n in calibration_models.budgets if n != MODEL]
    assert main(["calibrate", *calibration_models.pairs(others), "--save", str(path)]) == 0
    return path


def test_node_data_is_keyed_to_the_models_operators(
    run_cli, calibration_models: Compiled, board: Path, tmp_path: Path
) -> None:
    capture, budget = calibration_models.captures[MODEL], calibration_models.files[MODEL][0].parent
    out = tmp_path / "node_data"
    result = run_cli(
        "export", capture, "--budget", budget, "--calibration", board, "--format", "model-explorer", "-o", out
    )
    assert result.code == 0, result.err
    files = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert set(files) == {"measured_cycles", "inference_share", "planner_ratio", "calibrated_ratio", "npu_active"}
    operators = _operator_outputs(calibration_models.folder / f"{MODEL}.tflite")
    for data in files.values():
        _check_graph_node_data(data)
        assert sorted(data["results"]) == sorted(operators)
    report = json.loads(run_cli("report", capture, "--budget", budget, "--calibration", board, "--format", "json").out)
    by_name = {layer["name"]: layer for layer in report["layers"]}
    for key, result_ in files["measured_cycles"]["results"].items():
        assert result_["value"] == by_name[key]["cycles"]["p50"]
    for key, result_ in files["planner_ratio"]["results"].items():
        assert result_["value"] == pytest.approx(by_name[key]["ratio"], abs=1e-4)
    for key, result_ in files["calibrated_ratio"]["results"].items():
        assert result_["value"] == pytest.approx(by_name[key]["calibrated_ratio"], abs=1e-4)
    assert sum(r["value"] for r in files["inference_share"]["results"].values()) == pytest.approx(100, abs=0.01)


def test_without_a_budget_the_layer_names_key_it(run_cli, calibration_models: Compiled, tmp_path: Path) -> None:
    out = tmp_path / "plain"
    result = run_cli("export", calibration_models.captures[MODEL], "--format", "model-explorer", "-o", out)
    assert result.code == 0, result.err
    stems = {p.stem for p in out.glob("*.json")}
    assert stems == {"measured_cycles", "inference_share", "npu_active"}
    data = json.loads((out / "npu_active.json").read_text())
    _check_graph_node_data(data)
    assert all(0 < r["value"] <= 100 for r in data["results"].values())
    stdout = run_cli("export", calibration_models.captures[MODEL], "--format", "model-explorer", "-o", "-")
    assert stdout.code == 2 and "give -o a folder" in stdout.err


def test_a_sampled_npu_job_gives_each_model_operator_its_node(run_cli, tmp_path: Path) -> None:
    """The npu-sampling demo runs its Vela model as one ``ethos-u`` operator; its sampled operations
    give each operator of the original model (sampling_net.tflite) its node, with the report's
    per-operator ratio to Vela."""
    root = Path(__file__).resolve().parent.parent
    capture = root / "captures" / "demo_sampling.trace"
    budget = root / "firmware_snippets" / "demo" / "model" / "vela"
    out = tmp_path / "demo"
    result = run_cli("export", capture, "--budget", budget, "--format", "model-explorer", "-o", out)
    assert result.code == 0, result.err
    assert "left out" not in result.err
    ratios = json.loads((out / "planner_ratio.json").read_text())
    _check_graph_node_data(ratios)
    operators = _operator_outputs(root / "firmware_snippets" / "demo" / "model" / "sampling_net.tflite")
    assert sorted(ratios["results"]) == sorted(operators)
    report = json.loads(run_cli("report", capture, "--budget", budget, "--format", "json").out)
    sampled = {op["name"]: op["ratio"] for op in report["npu_operators"]["jobs"][0]["operators"]}
    assert {k: v["value"] for k, v in ratios["results"].items()} == pytest.approx(sampled, abs=1e-4)
    cycles = json.loads((out / "measured_cycles.json").read_text())["results"]
    assert set(operators) <= set(cycles)
