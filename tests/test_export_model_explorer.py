"""``tracer export --format model-explorer``: node data for Google's Model Explorer, keyed to the
operators of a model the tests compile with the real Vela (tests/calib_models.py).

The files are read back with Model Explorer's own node-data classes (``model_explorer.
node_data_builder`` of ``ai-edge-model-explorer``, Apache-2.0: ``GraphNodeData``, ``NodeDataResult``,
``ThresholdItem``, ``GradientItem``, ``ModelNodeData``), which reject a field they do not know and
write back what they read. ``.ci/run`` installs the package with ``--no-deps``: it requires
``ai-edge-model-explorer-adapter``, a 480 MB native wheel its node-data classes do not use, and its
``__init__`` starts importing its web server, so the classes' module is loaded without it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from calib_models import Compiled
from ethosu.vela.tflite import Model

MODEL = "m_c"
CLASSES = "_model_explorer_node_data"  # the package's folder, imported under a name of our own


def _node_data_builder() -> types.ModuleType:
    """``model_explorer.node_data_builder``, without the package's ``__init__`` (its server)."""
    if CLASSES + ".node_data_builder" in sys.modules:
        return sys.modules[CLASSES + ".node_data_builder"]
    spec = importlib.util.find_spec("model_explorer")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("ai-edge-model-explorer is not installed: .ci/run installs it (pip install --no-deps)")
    package = types.ModuleType(CLASSES)
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules[CLASSES] = package
    return importlib.import_module(CLASSES + ".node_data_builder")


def _check_graph_node_data(data: dict[str, Any]) -> None:
    """Model Explorer's classes take the file as it is, and write back the same values."""
    ndb = _node_data_builder()
    rest = {k: v for k, v in data.items() if k not in ("results", "thresholds", "gradient")}
    graph = ndb.GraphNodeData(
        results={key: ndb.NodeDataResult(**value) for key, value in data["results"].items()},
        thresholds=[ndb.ThresholdItem(**item) for item in data.get("thresholds", [])],
        gradient=[ndb.GradientItem(**item) for item in data.get("gradient", [])],
        **rest,
    )
    again = json.loads(ndb.ModelNodeData(graphsData={"graph": graph}).to_json_string())["graph"]
    for key, value in data.items():
        assert again[key] == value, key
    assert all(isinstance(key, str) and key for key in data["results"])
    for item in data.get("gradient", []):
        assert 0 <= item["stop"] <= 1
    if data.get("gradient"):
        assert {g["stop"] for g in data["gradient"]} >= {0, 1}  # the format asks for both ends


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


def test_energy_per_node_with_a_power_recording(run_cli, tmp_path: Path) -> None:
    """With ``--power``, each layer's energy per execution and its share of the inference's energy,
    the numbers of the report's energy section (a simulated Joulescope recording of a capture whose
    layers draw known power: tests/test_energy_cli.py)."""
    pytest.importorskip("pyjls")
    from test_energy_cli import MODEL as POWER
    from test_energy_cli import _capture

    from tracer.pipeline.load import load_timeline
    from tracer.power.simulate import Meter, SimulatedRecording, write_jls

    capture = _capture(tmp_path / "run.trace")
    timeline, _ = load_timeline(str(capture))
    jls = tmp_path / "run.jls"
    write_jls(str(jls), SimulatedRecording(timeline, POWER, Meter(100_000, white_mw=1.0, seed=4)))
    out = tmp_path / "energy"
    result = run_cli("export", capture, "--power", jls, "--format", "model-explorer", "-o", out)
    assert result.code == 0, result.err
    report = json.loads(run_cli("report", capture, "--power", jls, "--format", "json").out)
    by_name = {la["name"]: la for la in report["energy"]["layers"]}
    energy = json.loads((out / "energy_uj.json").read_text())
    share = json.loads((out / "energy_share.json").read_text())
    for data in (energy, share):
        _check_graph_node_data(data)
        assert set(data["results"]) == set(by_name) == {"layer0", "layer1", "layer2"}
    for key, value in energy["results"].items():
        assert value["value"] == pytest.approx(by_name[key]["energy_uj"], rel=1e-3)
        assert share["results"][key]["value"] == pytest.approx(100 * by_name[key]["energy_share"], abs=0.02)
    # layer1 draws 95 mW for 120,000 cycles, layer0 40 mW for 30,000: about 9.5 times its energy.
    ratio = energy["results"]["layer1"]["value"] / energy["results"]["layer0"]["value"]
    assert 8.5 < ratio < 10.5, ratio
    plain = tmp_path / "plain"
    assert run_cli("export", capture, "--format", "model-explorer", "-o", plain).code == 0
    assert not (plain / "energy_uj.json").exists()
