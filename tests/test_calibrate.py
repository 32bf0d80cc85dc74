"""``tracer calibrate`` on models the tests make and compile with the real Vela (tests/calib_models.py),
measured from a hidden per-operator-type truth plus noise: the calibration must at least halve the
median per-layer error on the models left out, and its intervals must cover the truth."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from calib_models import TRUTH, Compiled

from tracer.analysis.calibration import LayerObservation, fit_operator, leave_one_model_out
from tracer.analysis.calibration_file import read_calibration
from tracer.analysis.distributions import t_quantile
from tracer.errors import UsageError


def _table(run_cli, *args: str) -> dict:
    result = run_cli("calibrate", *args, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_calibration_halves_the_error_on_models_left_out(run_cli, calibration_models: Compiled) -> None:
    table = _table(run_cli, *calibration_models.pairs())
    assert table["validation"]["done"] is True
    every = table["all"]
    assert every["layers"] == sum(len(b.layers) for b in calibration_models.budgets.values())
    assert every["calibrated_layers"] == every["layers"]  # every type is in every model
    assert every["median_error_after"] <= 0.5 * every["median_error_before"], every
    # With their uncertainty: the calibrated median's interval lies below the planner's.
    low, high = every["median_error_interval"]
    assert low <= every["median_error"] <= high
    assert every["median_error_after_interval"][1] < low
    for row in table["operators"]:
        assert row["median_error_after"] < row["median_error_before"], row


def test_intervals_cover_the_truth(run_cli, calibration_models: Compiled, tmp_path: Path) -> None:
    saved = tmp_path / "board.json"
    result = run_cli("calibrate", *calibration_models.pairs(), "--save", saved)
    assert result.code == 0, result.err
    calibration = read_calibration(saved)
    assert set(calibration.operators) == set(TRUTH)
    for op, f in calibration.operators.items():
        low, high = f.factor_interval
        assert low <= TRUTH[op] <= high, (op, f)
        assert f.layers >= 3 and f.models == 6
    # Each layer's true expected cycles against the interval a fit without its model gives it.
    table = _table(run_cli, *calibration_models.pairs())
    assert table["all"]["coverage"] >= 0.8


def test_leave_one_model_out_interval_covers_true_cycles(calibration_models: Compiled) -> None:
    """The library: the held-out layers' intervals cover their hidden expected cycles (90 % intervals:
    at least 80 % of layers), and the true per-type factor sits in each held-out fit's range."""
    observations = _observations(calibration_models)
    held = leave_one_model_out(observations)
    assert not isinstance(held, str)
    inside = 0
    for h in held:
        assert h.interval is not None
        truth = calibration_models.truth[h.observation.model][h.observation.layer]
        inside += h.interval[0] <= truth <= h.interval[1]
    assert inside / len(held) >= 0.8, (inside, len(held))


def _observations(models: Compiled) -> list[LayerObservation]:
    from tracer.analysis.analyze import analyze
    from tracer.analysis.calibration_data import observations_of
    from tracer.pipeline.load import load_timeline

    out: list[LayerObservation] = []
    for name, budget in models.budgets.items():
        timeline, facts = load_timeline(models.captures[name])
        found, left = observations_of(analyze(timeline, facts, budget), name)
        assert not left, left
        out += found
    return out


def test_too_few_models_says_so_and_writes_nothing(run_cli, calibration_models: Compiled, tmp_path: Path) -> None:
    saved = tmp_path / "board.json"
    one = run_cli("calibrate", *calibration_models.pairs(["m_a"]), "--save", saved)
    assert one.code == 1
    assert "too few data to calibrate" in one.err and "not written" in one.err
    assert "from 2 models" in one.out  # each type's reason is in the table
    assert not saved.exists()
    two = _table(run_cli, *calibration_models.pairs(["m_a", "m_b"]))
    assert two["validation"]["done"] is False
    assert "at least 3 models" in two["validation"]["note"]


def test_the_three_ways_to_pair_give_one_table(run_cli, calibration_models: Compiled) -> None:
    names = ["m_a", "m_c", "m_e"]
    colon = _table(run_cli, *calibration_models.pairs(names))
    runs = []
    for n in names:
        runs += ["--run", str(calibration_models.captures[n]), *map(str, calibration_models.files[n])]
    assert _table(run_cli, *runs)["operators"] == colon["operators"]
    # One model, its captures given with --budget (a second recording of it counts as the same model).
    alone = _table(
        run_cli, str(calibration_models.captures["m_b"]), "--budget", *map(str, calibration_models.files["m_b"])
    )
    assert alone["models"] == ["m_b"] and alone["layers"] == len(calibration_models.budgets["m_b"].layers)


def test_markdown_table_rows_rest_on_the_counted_layers(run_cli, calibration_models: Compiled) -> None:
    result = run_cli("calibrate", *calibration_models.pairs(), "--format", "markdown")
    assert result.code == 0, result.err
    rows = [line for line in result.out.splitlines() if line.startswith("| `")]
    counts: dict[str, int] = {}
    for budget in calibration_models.budgets.values():
        for layer in budget.layers:
            from tracer.analysis.calibration import op_type

            counts[op_type(layer.op)] = counts.get(op_type(layer.op), 0) + 1
    assert {r.split("|")[1].strip().strip("`"): int(r.split("|")[2]) for r in rows} == counts


def test_a_budget_of_another_model_is_refused(run_cli, calibration_models: Compiled) -> None:
    capture = calibration_models.captures["m_a"]
    result = run_cli("calibrate", f"{capture}:{calibration_models.files['m_b'][0].parent}")
    assert result.code == 2
    assert "does not describe the capture's model" in result.err


def test_fit_needs_layers_from_two_models() -> None:
    def obs(model: str, ratio: float) -> LayerObservation:
        return LayerObservation(model, "c", "l", "ADD", 100 * ratio, 100.0, 100.0)

    assert isinstance(fit_operator("ADD", [obs("a", 1.1), obs("a", 1.2), obs("a", 1.3)]), str)
    fitted = fit_operator("ADD", [obs("a", 1.1), obs("a", 1.2), obs("b", 1.3)])
    assert not isinstance(fitted, str)
    assert fitted.factor == pytest.approx(math.exp((math.log(1.1) + math.log(1.2) + math.log(1.3)) / 3))
    assert fitted.layer_interval[0] < fitted.factor_interval[0] < fitted.factor < fitted.factor_interval[1]


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    # Student's t table (any statistics textbook): two-sided 95 % and 90 % critical values.
    [(0.975, 1, 12.7062), (0.975, 5, 2.5706), (0.95, 5, 2.0150), (0.975, 30, 2.0423), (0.95, 2, 2.9200)],
)
def test_student_t_quantile(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-4)
    assert t_quantile(1 - p, df) == pytest.approx(-expected, abs=1e-4)


def test_a_damaged_calibration_file_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps({"format": "tracer-calibration", "version": 1, "operators": [{"op": "ADD", "factor": -1}]})
    )
    with pytest.raises(UsageError, match=r"bad.json: operators\[0\]: 'layers'"):
        read_calibration(path)
    path.write_text("{}")
    with pytest.raises(UsageError, match="not a calibration file"):
        read_calibration(path)


def test_a_sampled_npu_job_gives_one_observation_per_model_operator() -> None:
    """The npu-sampling demo's ``ethos-u`` layer, sampled and split into operations: each model
    operator is observed with the ratio the report's ``npu_operators`` gives it."""
    from tracer.analysis.analyze import analyze
    from tracer.analysis.calibration_data import observations_of
    from tracer.budget import load_budget
    from tracer.export.report_json import report_object
    from tracer.pipeline.load import load_timeline

    root = Path(__file__).resolve().parent.parent
    timeline, facts = load_timeline(root / "captures" / "demo_sampling.trace")
    analysis = analyze(timeline, facts, load_budget([root / "firmware_snippets" / "demo" / "model" / "vela"]))
    found, left = observations_of(analysis, "demo")
    report = report_object(analysis)
    sampled = {op["name"]: op["ratio"] for op in report["npu_operators"]["jobs"][0]["operators"]}
    assert {o.layer: o.measured_cycles / o.predicted_cycles for o in found} == pytest.approx(sampled, abs=1e-5)
    assert {o.op for o in found} >= {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}
    assert not any("sampling_net" in why for why in left)  # the ethos-u layer is not left out
