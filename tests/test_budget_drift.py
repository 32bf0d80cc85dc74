"""``tracer budget OLD NEW``: two plans of one model made by the real Vela (Ethos-U55-128 and -256,
tests/calib_models.py), which layers moved, and which plan a capture agrees with."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from calib_models import CAPTURE_HZ, VELA_FLAGS, Compiled, vela
from check_streams import LayerSpec, encode_model, write_capture

from tracer.budget import load_budget
from tracer.budget.model import Budget

MODEL = "m_e"


@pytest.fixture(scope="module")
def plans(calibration_models: Compiled, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The model's Vela folder for the U55-128 (old) and one compiled for the U55-256 (new)."""
    old = calibration_models.files[MODEL][0].parent
    new = tmp_path_factory.mktemp("drift") / "u55_256"
    flags = list(VELA_FLAGS)
    flags[flags.index("ethos-u55-128")] = "ethos-u55-256"
    tflite = calibration_models.folder / f"{MODEL}.tflite"
    done = subprocess.run(
        [vela(), str(tflite), *flags, "--output-dir", str(new)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return old, new


def _capture(path: Path, budget: Budget, slow: float = 1.0) -> Path:
    """A capture whose layers take exactly ``budget``'s estimates (times ``slow``)."""
    assert budget.model.clock_hz
    scale = CAPTURE_HZ / budget.model.clock_hz
    specs = [
        LayerSpec(la.name, la.op, True, max(round((la.predicted_cycles or 0) * scale * slow), 30))
        for la in budget.layers
    ]
    return write_capture(path, bytes(encode_model(specs, clock_hz=CAPTURE_HZ)))


def test_moved_layers_are_the_ones_whose_estimate_changed(run_cli, plans: tuple[Path, Path]) -> None:
    result = run_cli("budget", *plans, "--format", "json", "--threshold", "5")
    assert result.code == 0, result.err
    drift = json.loads(result.out)
    old, new = load_budget([plans[0]]), load_budget([plans[1]])
    assert drift["paired_by"] == "index"
    old_by = {la.index: la.predicted_cycles for la in old.layers}
    moved = 0
    for row in drift["layers"]:
        before, after = old_by[row["index"]], row["new_cycles"]
        assert row["old_cycles"] == before
        assert row["change_pct"] == pytest.approx(100 * (after / before - 1), abs=0.01)
        assert row["moved"] == (abs(after / before - 1) > 0.05)
        moved += row["moved"]
    assert 0 < moved < len(drift["layers"])  # a bigger NPU speeds up some layers, not all
    assert drift["moved"] == moved
    assert drift["total_change_pct"] == pytest.approx(
        100 * (new.model.cycles_total / old.model.cycles_total - 1), abs=0.01
    )
    text = run_cli("budget", *plans, "--threshold", "5").out
    assert text.count("MOVED") == moved


@pytest.mark.parametrize("which", ["old", "new"])
def test_the_capture_agrees_with_the_plan_it_follows(
    run_cli, plans: tuple[Path, Path], tmp_path: Path, which: str
) -> None:
    followed = load_budget([plans[0] if which == "old" else plans[1]])
    capture = _capture(tmp_path / f"{which}.trace", followed, slow=1.02)
    result = run_cli("budget", "--old", plans[0], "--new", plans[1], "--capture", capture, "--format", "json")
    assert result.code == 0, result.err
    agreement = json.loads(result.out)["capture"]
    assert agreement["verdict"] == which
    other = "new" if which == "old" else "old"
    apart = [r for r in agreement["layers_compared"] if abs(r["new_cycles"] / r["old_cycles"] - 1) > 0.05]
    assert apart and all(r["closer"] == which for r in apart)  # within 5 %, 2 % slower may favour either
    assert agreement[f"closer_{which}"] > agreement[f"closer_{other}"]
    assert agreement[f"{which}_median_error_pct"] < agreement[f"{other}_median_error_pct"]
    assert agreement["layers"] == len(followed.layers)


def test_drift_options_are_checked(run_cli, plans: tuple[Path, Path], calibration_models: Compiled) -> None:
    only_old = run_cli("budget", "--old", plans[0])
    assert only_old.code == 2 and "give both --old" in only_old.err
    one = run_cli("budget", *map(str, calibration_models.files[MODEL]), "--capture", "x.trace")
    assert one.code == 2 and "compare two plans" in one.err
