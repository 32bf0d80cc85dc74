"""``tracer check``: the CI gate on the shipped demo capture and on synthetic captures; JUnit read
back with a real JUnit reader (``junitparser``), JSON with its checks, exit codes 0/1/2/3."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from check_streams import LayerSpec, budget_toml, encode_model, write_capture
from junitparser import Failure, JUnitXml

from tracer.telemetry.wire import RecordType

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
DEMO_BUDGET = ROOT / "captures" / "demo_budget.toml"
DEMO_LAYERS = ["conv0", "dw1", "pw2", "dw3", "pw4", "add5", "pool6", "conv7", "gap8", "fc9"]


def halved_budget(tmp_path: Path) -> Path:
    """The demo budget with every layer's predicted cycles cut in half."""
    text = re.sub(r"^cycles = (\d+)", lambda m: f"cycles = {int(m.group(1)) // 2}", DEMO_BUDGET.read_text(), flags=re.M)
    assert text.count("cycles = ") == 10
    path = tmp_path / "half.toml"
    path.write_text(text)
    return path


def test_demo_capture_passes_its_budget(run_cli) -> None:
    """The README's gate: the shipped capture within its shipped budget exits 0, every layer checked."""
    done = run_cli("check", DEMO, "--budget", DEMO_BUDGET)
    assert done.code == 0, done.out + done.err
    passed = [line for line in done.out.splitlines() if line.startswith("  PASS  layer ")]
    assert [re.match(r"  PASS  layer \d+ (\S+)", line).group(1) for line in passed] == DEMO_LAYERS
    assert "FAIL" not in done.out and "check passed" in done.out


def test_demo_capture_passes_with_fail_on_warning(run_cli) -> None:
    """The clean demo has no warning at all: it passes even when warnings fail the gate."""
    done = run_cli("check", DEMO, "--budget", DEMO_BUDGET, "--fail-on", "warning")
    assert done.code == 0, done.out
    assert "[warning]" not in done.out


def test_halved_budget_fails_with_one_junit_failure_per_layer(run_cli, tmp_path: Path) -> None:
    """Every layer takes about twice its (halved) prediction: ten failures, one per layer, nothing else."""
    out = tmp_path / "junit.xml"
    done = run_cli("check", DEMO, "--budget", halved_budget(tmp_path), "--format", "junit", "-o", out)
    assert done.code == 1, done.err
    assert "check FAILED: 10 of" in done.err
    xml = JUnitXml.fromfile(str(out))
    suites = {suite.name.split(" (")[0]: suite for suite in xml}
    assert set(suites) == {
        "tracer check: input",
        "tracer check: layer budgets",
        "tracer check: memory",
        "tracer check: findings",
    }
    layer_cases = list(suites["tracer check: layer budgets"])
    assert len(layer_cases) == 10
    for case, name in zip(layer_cases, DEMO_LAYERS):
        failures = [r for r in case.result if isinstance(r, Failure)]
        assert len(failures) == 1, case.name
        assert case.classname == "tracer.layers" and f" {name} " in case.name
        assert failures[0].type == "layer-over-budget"
        assert "OVER the limit" in failures[0].message and "fix:" in failures[0].text
        assert case.time > 0  # the layer's p50 in seconds at 32 MHz
    for title in ("tracer check: memory", "tracer check: findings"):
        assert all(not case.result for case in suites[title]), title
    assert sum(1 for suite in xml for case in suite if case.result) == 10
    assert int(xml.failures) == 10 and int(xml.tests) == sum(len(list(s)) for s in xml)


def test_halved_budget_text_names_every_layer_and_its_ratio(run_cli, tmp_path: Path) -> None:
    """The text verdict says which layer, by how much, and what to change."""
    done = run_cli("check", DEMO, "--budget", halved_budget(tmp_path))
    assert done.code == 1
    fails = [line for line in done.out.splitlines() if line.startswith("  FAIL  layer ")]
    assert len(fails) == 10
    conv0 = next(line for line in fails if " conv0 " in line)
    p50 = next(la for la in json.loads(run_cli("report", DEMO, "--format", "json").out)["layers"] if la["index"] == 0)
    assert f"p50 {p50['cycles']['p50']:,} cycles OVER the limit 19,142" in conv0 and "ratio 2.00" in conv0
    assert done.out.count("fix: An NPU layer") == 6 and done.out.count("fix: A CPU layer") == 4
    assert "check FAILED: 10 of" in done.out


def test_json_is_the_report_plus_checks(run_cli, tmp_path: Path, demo_budget: dict) -> None:
    """JSON: the report object, with predicted cycles and ratios filled, plus checks and passed."""
    done = run_cli("check", DEMO, "--budget", DEMO_BUDGET, "--format", "json")
    assert done.code == 0
    doc = json.loads(done.out)
    assert set(doc) >= {
        "schema_version",
        "capture",
        "inferences",
        "layers",
        "memory",
        "pmu",
        "findings",
        "checks",
        "passed",
        "budget",
    }
    assert doc["passed"] is True
    layer_checks = [c for c in doc["checks"] if c["group"] == "layers"]
    assert len(layer_checks) == 10
    for check, layer in zip(layer_checks, doc["layers"]):
        assert set(check) >= {"name", "passed", "measured", "limit"}
        assert check["measured"] == layer["cycles"]["p50"]
        assert check["limit"] == pytest.approx(layer["predicted_cycles"] * 1.15, abs=0.001)
        assert layer["ratio"] == pytest.approx(layer["cycles"]["p50"] / layer["predicted_cycles"], abs=1e-4)
    assert doc["memory"]["arena"]["planned"] == demo_budget["model"]["arena_bytes"]
    half = json.loads(run_cli("check", DEMO, "--budget", halved_budget(tmp_path), "--format", "json").out)
    assert half["passed"] is False
    assert sum(not c["passed"] for c in half["checks"]) == 10
    assert {f["id"] for f in half["findings"] if f["severity"] != "info"} == {"layer-over-budget"}
    assert "cpu-operators" in {f["id"] for f in half["findings"]}


def test_without_budget_memory_and_findings_are_still_checked(run_cli, tmp_path: Path) -> None:
    """No layer checks, but the arena, each stack and the finding kinds are."""
    done = run_cli("check", DEMO, "--format", "json")
    assert done.code == 0
    doc = json.loads(done.out)
    groups = {c["group"] for c in doc["checks"]}
    assert groups == {"input", "memory", "findings"}
    names = [c["name"] for c in doc["checks"] if c["group"] == "memory"]
    assert names == ["tensor arena", "stack main", "stack handler"]
    broken = encode_model([LayerSpec("conv", "CONV_2D", False, 500)], stacks=(("main", 4096, 4096, False),))
    capture = write_capture(tmp_path / "overflow.trace", bytes(broken.out))
    junit = tmp_path / "overflow.xml"
    done = run_cli("check", capture, "--format", "junit", "-o", junit)
    assert done.code == 1
    xml = JUnitXml.fromfile(str(junit))
    failed = [(case.classname, case.name, case.result[0].type) for suite in xml for case in suite if case.result]
    assert failed == [("tracer.memory", "stack main", "stack-canary")]


def test_fail_on_warning_fails_on_loss(run_cli, tmp_path: Path) -> None:
    """Bytes lost in one inference: a warning (the numbers exclude it); --fail-on warning fails."""
    enc = encode_model(
        [LayerSpec("conv", "CONV_2D", False, 800), LayerSpec("fc", "FULLY_CONNECTED", False, 300)], inferences=6
    )
    data = bytes(enc.out)
    layer_end = next(r for r in enc.records if r.inference == 2 and r.type == RecordType.LAYER_END)
    data = data[: layer_end.offset] + data[layer_end.offset + layer_end.length :]
    capture = write_capture(tmp_path / "lossy.trace", data)
    done = run_cli("check", capture, "--format", "json")
    assert done.code == 0, done.out
    doc = json.loads(done.out)
    loss = next(f for f in doc["findings"] if f["id"] == "capture-loss")
    assert loss["severity"] == "warning" and loss["evidence"]["incomplete_inferences"] == [2]
    assert doc["inferences"]["complete"] == 5
    assert run_cli("check", capture, "--fail-on", "warning").code == 1


def test_tolerance_option_applies_to_every_layer(run_cli, tmp_path: Path) -> None:
    """A layer 15% over its prediction: fails at the default 10%, passes with --tolerance 20."""
    capture = write_capture(tmp_path / "c.trace", bytes(encode_model([LayerSpec("conv", "CONV_2D", False, 1150)]).out))
    budget = budget_toml(tmp_path / "b.toml", [("conv", "CONV_2D", "cpu", 1000)])
    assert run_cli("check", capture, "--budget", budget).code == 1
    assert run_cli("check", capture, "--budget", budget, "--tolerance", "20").code == 0
    assert run_cli("check", capture, "--budget", budget, "--tolerance", "12").code == 1
    own = budget_toml(tmp_path / "own.toml", [("conv", "CONV_2D", "cpu", 1000)], model="tolerance_pct = 16")
    assert run_cli("check", capture, "--budget", own).code == 0  # the budget's own 16%
    replaced = run_cli("check", capture, "--budget", own, "--tolerance", "5")
    assert replaced.code == 1  # the option applies to every layer, and says what it replaced
    assert "--tolerance 5% applies to every layer, in place of the budget's own (model 16%)" in replaced.err


def test_errors_keep_their_exit_codes(run_cli, tmp_path: Path) -> None:
    """A bad budget file is 2, an unreadable capture 3: never 1."""
    bad = tmp_path / "bad.toml"
    bad.write_text("[model]\nname = 'x'\nbogus_key = 3\n")
    done = run_cli("check", DEMO, "--budget", bad)
    assert done.code == 2 and "bogus_key" in done.err and "Traceback" not in done.err
    assert run_cli("check", DEMO, "--budget", tmp_path / "missing.csv").code == 2
    done = run_cli("check", tmp_path / "missing.trace", "--budget", DEMO_BUDGET)
    assert done.code == 3 and "no such file" in done.err
    assert run_cli("check", tmp_path, "--budget", DEMO_BUDGET).code == 3
    assert run_cli("check", DEMO, "--tolerance", "lots").code == 2
    assert run_cli("check", DEMO, "--fail-on", "info").code == 2


def test_a_log_is_checked_like_a_capture(run_cli, data_dir: Path) -> None:
    """TFLite Micro's 'Failed to resize buffer' in a text log fails the gate on the arena."""
    done = run_cli("check", data_dir / "logs" / "tflm_host" / "arena_50000_too_small.txt")
    assert done.code == 1
    assert "FAIL  tensor arena" in done.out and "1,608 bytes short" in done.out
    assert run_cli("check", data_dir / "logs" / "tflm_host" / "ok_arena_128k.txt").code == 0


def test_help_teaches(run_cli) -> None:
    """Description, metavars, examples."""
    done = run_cli("check", "--help")
    assert done.code == 0
    for text in (
        "--budget FILE",
        "--tolerance PCT",
        "--fail-on {warning,error}",
        "--format {text,json,junit}",
        "-o PATH",
        "examples:",
        "tracer check captures/demo.trace --budget captures/demo_budget.toml",
    ):
        assert text in done.out, text
