"""``tracer check`` cannot pass on nothing: a budget given and none, or too few, of its layers
measured fails the gate's ``budget layers measured`` check, in text, JSON and JUnit alike."""

from __future__ import annotations

import json
from pathlib import Path

from check_streams import LayerSpec, budget_toml, encode_model, write_capture
from junitparser import JUnitXml

from tracer.telemetry.wire import RecordType

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
DEMO_BUDGET = ROOT / "captures" / "demo_budget.toml"
MLEK_LOG = ROOT / "tests" / "data" / "logs" / "mlek_img_class_fvp_profile.log"
NAME = "budget layers measured"


def _coverage(doc: dict) -> dict:
    return next(c for c in doc["checks"] if c["name"] == NAME)


def test_a_log_without_layers_fails_against_a_layer_budget(run_cli, tmp_path: Path) -> None:
    """The MLEK log measures one inference and its PMU counters but no layer: with the demo's
    ten-layer budget and its clock given, the gate fails and names the layers it did not measure."""
    done = run_cli("check", MLEK_LOG, "--budget", DEMO_BUDGET, "--clock", "400M")
    assert done.code == 1, done.out
    line = next(line for line in done.out.splitlines() if NAME in line)
    assert line.startswith("  FAIL  ") and "0 of 10 budget layer(s) measured" in line
    assert "conv0, dw1, pw2" in line and "fc9" in line
    doc = json.loads(run_cli("check", MLEK_LOG, "--budget", DEMO_BUDGET, "--clock", "400M", "--format", "json").out)
    check = _coverage(doc)
    assert check["passed"] is False and check["group"] == "input"
    assert check["measured"] == 0 and check["limit"] == 5 and check["unit"] == "layers"
    assert doc["passed"] is False
    junit = tmp_path / "junit.xml"
    done = run_cli("check", MLEK_LOG, "--budget", DEMO_BUDGET, "--clock", "400M", "--format", "junit", "-o", junit)
    assert done.code == 1
    failed = [(c.classname, c.name) for suite in JUnitXml.fromfile(str(junit)) for c in suite if c.result]
    assert ("tracer.input", NAME) in failed


def test_the_clock_hint_does_not_turn_the_gate_green(run_cli) -> None:
    """Without --clock the gate fails for the clock; following its fix still fails (nothing compared)."""
    without = run_cli("check", MLEK_LOG, "--budget", DEMO_BUDGET)
    assert without.code == 1 and "--clock 400M" in without.out
    assert run_cli("check", MLEK_LOG, "--budget", DEMO_BUDGET, "--clock", "400M").code == 1


def test_the_report_says_so_too(run_cli) -> None:
    """The report's findings carry the error docs/check.md promises when no budget layer matched."""
    doc = json.loads(run_cli("report", MLEK_LOG, "--budget", DEMO_BUDGET, "--clock", "400M", "--format", "json").out)
    found = [f for f in doc["findings"] if f["id"] == "budget-layer-not-measured"]
    assert [f["severity"] for f in found] == ["error"]


def _partial_capture(tmp_path: Path, measured: int) -> Path:
    """A capture of ``measured`` layers that lost one record before its inferences (so a budget of
    four layers is not refused as another model's: the others may be in what it lost)."""
    enc = encode_model([LayerSpec(f"l{i}", "CONV_2D", False, 1000) for i in range(measured)], inferences=3)
    data = bytes(enc.out)
    arena = next(r for r in enc.records if r.type == RecordType.ARENA)
    return write_capture(
        tmp_path / f"partial{measured}.trace", data[: arena.offset] + data[arena.offset + arena.length :]
    )


def test_too_few_layers_measured_fail_and_half_pass(run_cli, tmp_path: Path) -> None:
    """One of four budget layers measured (within its budget) fails; two of four pass."""
    budget = budget_toml(tmp_path / "four.toml", [(f"l{i}", "CONV_2D", "cpu", 1000) for i in range(4)])
    done = run_cli("check", _partial_capture(tmp_path, 1), "--budget", budget, "--format", "json")
    assert done.code == 1, done.out
    doc = json.loads(done.out)
    check = _coverage(doc)
    assert check["passed"] is False and (check["measured"], check["limit"]) == (1, 2)
    assert "not measured: l1, l2, l3" in check["message"]
    assert [c["name"] for c in doc["checks"] if not c["passed"]] == [NAME]
    done = run_cli("check", _partial_capture(tmp_path, 2), "--budget", budget, "--format", "json")
    assert done.code == 0, done.out
    check = _coverage(json.loads(done.out))
    assert check["passed"] is True and check["measured"] == 2


def test_the_demo_measures_every_budget_layer(run_cli) -> None:
    """The shipped capture against its budget: ten of ten, and the check list keeps its length."""
    done = run_cli("check", DEMO, "--budget", DEMO_BUDGET)
    assert done.code == 0
    assert f"  PASS  {NAME}: 10 of 10 budget layer(s) measured\n" in done.out
    assert "finding budget-layer-not-measured" not in done.out
    assert "check passed: 36 check(s)" in done.out


def test_a_whole_inference_budget_needs_a_measured_latency(run_cli, tmp_path: Path) -> None:
    """A budget of whole inferences only, against a log with no per-inference times: not a pass."""
    budget = tmp_path / "total.toml"
    budget.write_text('[model]\nname = "whole"\nclock_hz = 400000000\ncycles_total = 8000000\n')
    done = run_cli("check", MLEK_LOG, "--budget", budget, "--clock", "400M")
    assert done.code == 1, done.out
    assert f"  FAIL  {NAME}: the budget predicts whole inferences; not measured" in done.out
