"""``tracer report --budget``: predicted cycles in the capture's clock and ratios per layer, the
budget and pmu sections, on the demo capture, on the Vela samples (both CSV dialects) and on
budgets generated here by the real Vela (PyPI ``ethos-u-vela``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from check_streams import LayerSpec, encode_model, write_capture

from tracer.base.timeline import Engine
from tracer.budget import load_budget
from tracer.budget.model import Budget

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
DEMO_BUDGET = ROOT / "captures" / "demo_budget.toml"
VELA = Path(__file__).resolve().parent / "data" / "vela"
CLOCK = 100_000_000  # the synthetic captures' CPU clock


def test_demo_report_with_its_budget(run_cli) -> None:
    """Every layer predicted (same clock: no scaling), ratio = p50 / predicted, memory planned, pmu."""
    report = json.loads(run_cli("report", DEMO, "--budget", DEMO_BUDGET, "--format", "json").out)
    predicted = {
        "conv0": 33291,
        "dw1": 20905,
        "pw2": 16186,
        "dw3": 41745,
        "pw4": 20381,
        "add5": 2628,
        "pool6": 3054,
        "conv7": 16039,
        "gap8": 135,
        "fc9": 62,
    }
    for layer in report["layers"]:
        assert layer["predicted_cycles"] == predicted[layer["name"]]
        assert layer["ratio"] == round(layer["cycles"]["p50"] / predicted[layer["name"]], 4)
        assert layer["budget"]["matched_by"] == "name" and layer["budget"]["tolerance_pct"] == 15
        assert layer["budget"]["limit_cycles"] == pytest.approx(predicted[layer["name"]] * 1.15, abs=0.001)
    assert report["memory"]["arena"]["planned"] == 13312
    assert report["budget"]["name"] == "tracer-demo-int8-10layer" and report["budget"]["scale"] == 1.0
    assert report["budget"]["predicted_cycles_per_inference"] == sum(predicted.values())
    pmu = report["pmu"]
    assert pmu["simulated"] is True and "simulated" in pmu["note"]
    assert len(pmu["per_inference"]) == 20 and pmu["totals_over"] == 20
    for name in pmu["counters"]:
        assert pmu["totals"][name] == sum(row["counters"][name] for row in pmu["per_inference"])
    # The per-inference NPU_ACTIVE is the sum over the six NPU layers (simulated: the same every time).
    mean_active = sum(la["pmu_mean"]["NPU_ACTIVE"] for la in report["layers"] if "pmu_mean" in la)
    assert pmu["per_inference"][0]["counters"]["NPU_ACTIVE"] == mean_active == 6048


def _measured_model(budget: Budget, slow: str, factor: float = 3.0) -> list[LayerSpec]:
    """The budget's layers as a firmware would measure them at CLOCK: each at its prediction, ``slow`` slower."""
    scale = CLOCK / (budget.model.clock_hz or CLOCK)
    layers = []
    for b in budget.layers:
        cycles = max(1, round((b.predicted_cycles or 400) * scale * (factor if b.name == slow else 1.0)))
        op = {"Conv2D": "CONV_2D", "DepthwiseConv2D": "DEPTHWISE_CONV_2D", "Add": "ADD"}.get(b.op, b.op)
        layers.append(LayerSpec(b.name, op, b.engine is not Engine.CPU, cycles))
    return layers


@pytest.mark.parametrize("dialect", ["out_u55-128_regor", "out_u55-128_legacy"])
def test_vela_samples_against_a_capture(run_cli, tmp_path: Path, dialect: str) -> None:
    """Vela's NPU cycles (500 MHz) scaled to a 100 MHz capture; they add up to Vela's own total; the
    slow layer, and only it, is over budget; the CPU operator is Vela's own fallback."""
    files = [VELA / dialect / "tiny_int8_per-layer.csv", next((VELA / dialect).glob("tiny_int8_summary_*.csv"))]
    budget = load_budget(files)
    capture = write_capture(
        tmp_path / "run.trace", bytes(encode_model(_measured_model(budget, "add"), clock_hz=CLOCK).out)
    )
    done = run_cli("report", capture, "--format", "json", "--budget", *files)
    assert done.code == 0, done.err
    report = json.loads(done.out)
    scale = CLOCK / 500_000_000
    assert report["budget"]["scale"] == scale
    rows = {la["name"]: la for la in report["layers"]}
    for b in budget.layers:
        expected = None if b.predicted_cycles is None else b.predicted_cycles * scale
        assert rows[b.name]["predicted_cycles"] == (None if expected is None else pytest.approx(expected))
    total = sum(la["predicted_cycles"] or 0 for la in report["layers"])
    assert total == pytest.approx(budget.model.cycles_total * scale)  # Vela's own cycles_total, scaled
    over = [(f["id"], f["layer"]) for f in report["findings"] if f["severity"] == "error"]
    assert over == [("layer-over-budget", next(la["index"] for la in report["layers"] if la["name"] == "add"))]
    assert rows["add"]["ratio"] == pytest.approx(3.0, rel=0.01)
    fallbacks = [f for f in report["findings"] if f["id"] == "cpu-fallback"]
    if "regor" in dialect:  # the default core lists the CPU operator; the legacy core does not
        assert [(f["severity"], f["layer"]) for f in fallbacks] == [("warning", rows["l2norm"]["index"])]
    else:
        assert fallbacks == []


def _vela() -> str:
    script = Path(sys.executable).with_name("vela")
    found = str(script) if script.exists() else shutil.which("vela")
    assert found, "vela is not installed: pip install -e '.[test]' installs ethos-u-vela"
    return found


def test_budget_generated_by_vela_gates_a_capture(run_cli, tmp_path: Path) -> None:
    """A fresh Vela run (U65, 1 GHz, with its debug database) as the budget of a 100 MHz capture:
    ``tracer check`` passes at the prediction and fails, on that layer alone, when one layer is 3x."""
    shutil.copyfile(VELA / "tiny_int8.tflite", tmp_path / "tiny_int8.tflite")
    cmd = [
        _vela(),
        "tiny_int8.tflite",
        "--config",
        "Arm/vela.ini",
        "--accelerator-config",
        "ethos-u65-256",
        "--system-config",
        "Ethos_U65_High_End",
        "--memory-mode",
        "Dedicated_Sram",
        "--output-dir",
        "out",
        "--verbose-performance",
        "--enable-debug-db",
    ]
    run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    out = tmp_path / "out"
    files = [out / "tiny_int8_per-layer.csv", next(out.glob("tiny_int8_summary_*.csv")), out / "tiny_int8_debug.xml"]
    budget = load_budget(files)
    assert budget.model.clock_hz == 1_000_000_000
    fine = write_capture(tmp_path / "fine.trace", bytes(encode_model(_measured_model(budget, "", 1.0)).out))
    slow = write_capture(tmp_path / "slow.trace", bytes(encode_model(_measured_model(budget, "dw/Relu6")).out))
    ok = run_cli("check", fine, "--budget", *files, "--format", "json")
    assert ok.code == 0, ok.out
    doc = json.loads(ok.out)
    assert len([c for c in doc["checks"] if c["group"] == "layers"]) == 7  # the NPU layers; L2Norm has no estimate
    for layer in doc["layers"]:
        b = next(x for x in budget.layers if x.name == layer["name"])
        if b.predicted_cycles is not None:
            assert layer["predicted_cycles"] == pytest.approx(b.predicted_cycles / 10)  # 1 GHz -> 100 MHz
    bad = run_cli("check", slow, "--budget", *files, "--format", "json")
    assert bad.code == 1
    failed = [c["name"] for c in json.loads(bad.out)["checks"] if not c["passed"]]
    assert len(failed) == 1 and " dw/Relu6 " in failed[0]
