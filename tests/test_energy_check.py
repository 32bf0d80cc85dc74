"""Energy budgets and findings: ``energy_uj`` per layer and per inference in the TOML budget,
``layer-energy-over-budget`` / ``inference-energy-over-budget`` (errors: ``tracer check`` fails),
and ``energy-share-above-time-share`` for a layer drawing far more than the rest."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from power_streams import synthetic_timeline
from test_energy_cli import run_files  # noqa: F401 - the module's fixture: capture, JLS, CSV

from tracer.analysis.analyze import analyze
from tracer.base.facts import InputFacts
from tracer.budget import load_budget
from tracer.power.simulate import Meter, PowerModel, SimulatedRecording

FACTS = InputFacts("capture", "test", None, 0)


def _budget(path: Path, model_uj: float, layer1_uj: float) -> Path:
    layers = "".join(
        f'[[layer]]\nindex = {i}\nname = "layer{i}"\nop = "CONV_2D"\ncycles = {c}\n'
        + (f"energy_uj = {layer1_uj}\n" if i == 1 else "")
        for i, c in ((0, 30_050), (1, 120_150), (2, 450))
    )
    path.write_text(f'[model]\nname = "three"\nenergy_uj = {model_uj}\ntolerance_pct = 10\n\n{layers}')
    return path


def test_budget_reads_energy(tmp_path: Path) -> None:
    budget = load_budget([str(_budget(tmp_path / "b.toml", 300.0, 150.0))])
    assert budget.model.energy_uj == 300.0
    assert [la.energy_uj for la in budget.layers] == [None, 150.0, None]


def test_check_fails_on_energy_over_budget(run_files, run_cli, tmp_path: Path) -> None:  # noqa: F811
    capture, jls, _, _ = run_files
    # layer1: 95 mW for 2.4 ms = 228 uJ; the inference about 270 uJ.
    budget = _budget(tmp_path / "b.toml", 200.0, 150.0)
    done = run_cli("check", capture, "--power", jls, "--budget", budget, "--format", "json")
    assert done.code == 1, done.err
    found = {f["id"]: f for f in json.loads(done.out)["findings"]}
    layer = found["layer-energy-over-budget"]
    assert layer["layer"] == 1 and layer["severity"] == "error"
    assert layer["evidence"]["budget_uj"] == 150.0 and layer["evidence"]["energy_uj"] > 200
    assert "over its budget of 150.000 uJ" in layer["message"]
    assert found["inference-energy-over-budget"]["evidence"]["budget_uj"] == 200.0


def test_check_junit_fails_the_energy_over_budget(run_files, run_cli, tmp_path: Path) -> None:  # noqa: F811
    """CI reads the gate as JUnit: an energy over its budget is a failed test case there too."""
    capture, jls, _, _ = run_files
    budget = _budget(tmp_path / "b.toml", 200.0, 150.0)
    done = run_cli("check", capture, "--power", jls, "--budget", budget, "--format", "junit")
    assert done.code == 1, done.err
    root = ElementTree.fromstring(done.out)
    failures = {f.get("type"): f.text or "" for f in root.iter("failure")}
    assert "layer-energy-over-budget" in failures or any(
        "layer-energy-over-budget" in text for text in failures.values()
    ), failures
    assert any("over its budget of 150.000 uJ" in text for text in failures.values()), failures


def test_check_passes_within_energy_budget(run_files, run_cli, tmp_path: Path) -> None:  # noqa: F811
    capture, jls, _, _ = run_files
    budget = _budget(tmp_path / "b.toml", 400.0, 260.0)
    done = run_cli("check", capture, "--power", jls, "--budget", budget, "--format", "json")
    ids = {f["id"] for f in json.loads(done.out)["findings"]}
    assert not ids & {"layer-energy-over-budget", "inference-energy-over-budget"}, done.out
    assert done.code == 0, done.err


def test_energy_share_above_time_share() -> None:
    """A 300 us layer at 150 mW beside a 1 ms layer at 20 mW: 2/3 of the energy in 1/4 of the time."""
    timeline = synthetic_timeline([1000.0, 300.0], inferences=30, seed=4)
    rec = SimulatedRecording(timeline, PowerModel({0: 20.0, 1: 150.0}, 10.0, 1.0), Meter(100_000, white_mw=1.0))
    analysis = analyze(timeline, FACTS, power=rec)
    shares = [f for f in analysis.findings if f.id == "energy-share-above-time-share"]
    assert [f.layer for f in shares] == [1]
    assert shares[0].evidence["energy_share"] > 1.5 * shares[0].evidence["time_share"]
    assert "draws 150" in shares[0].message
