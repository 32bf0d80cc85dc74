"""Energy without a meter: ``tracer report --power run.jls --fit-power-model model.json`` fits a
layer execution's energy to its time and NPU PMU counters on a metered run; ``tracer report
other.trace --power-model model.json`` estimates another run's, labelled an estimate with the
fit's error.

The device is simulated by a law of known coefficients (energy = base power x time + energy per
NPU active cycle + energy per AXI beat): captures of our encoder with PMU snapshots and SYNC_PIN
marks, and the JLS (pyjls) a simulated meter records of them. Where the law holds, the fit finds
it and the estimate of other layers matches the law; where the device's powers follow no such
law, the stated fit error says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from power_streams import CLOCK, pmu_sync_capture

from tracer.pipeline.load import load_timeline
from tracer.power.simulate import Meter, PowerModel, SimulatedRecording, write_jls

pytest.importorskip("pyjls")
BASE_MW, UJ_PER_ACTIVE, UJ_PER_BEAT = 20.0, 1e-3, 0.01
FITTED = [(40_000, False, 0), (100_000, True, 3000), (60_000, True, 9000), (20_000, False, 0),
          (150_000, True, 1000), (30_000, True, 6000), (50_000, False, 0)]  # fmt: skip
OTHER = [(70_000, True, 12_000), (25_000, False, 0), (120_000, True, 500), (45_000, True, 4000)]


def law_uj(cycles: float, npu: bool, beats: int) -> float:
    """The simulated device's energy per execution (the truth)."""
    seconds = cycles / CLOCK
    return BASE_MW * 1e3 * seconds + (UJ_PER_ACTIVE * 0.9 * cycles + UJ_PER_BEAT * beats if npu else 0.0)


def _metered(path: Path, layers: list[tuple[int, bool, int]], mw: dict[int, float] | None = None) -> tuple[Path, Path]:
    capture = pmu_sync_capture(path, layers)
    mean_cycles = [c + 100 for c, _, _ in layers]  # the capture's jitter is uniform 0-200 cycles
    if mw is None:
        mw = {i: law_uj(c, npu, b) / (c / CLOCK) / 1e3 for i, ((_, npu, b), c) in enumerate(zip(layers, mean_cycles))}
    timeline, _ = load_timeline(str(capture))
    jls = path.with_suffix(".jls")
    write_jls(str(jls), SimulatedRecording(timeline, PowerModel(mw, 12.0, 2.0), Meter(100_000, 60, white_mw=0.3)))
    return capture, jls


def test_fit_then_estimate_another_network(run_cli, tmp_path: Path) -> None:
    capture, jls = _metered(tmp_path / "fit.trace", FITTED)
    model = tmp_path / "model.json"
    done = run_cli("report", capture, "--power", jls, "--fit-power-model", model, "--format", "json")
    assert done.code == 0, done.err
    fitted = json.loads(model.read_text())
    assert fitted["format"] == "tracer-power-model" and fitted["fitted_on"]["simulated"] is True
    c = fitted["coefficients"]
    assert c["seconds"] == pytest.approx(BASE_MW * 1e3, rel=0.03)
    assert c["NPU_ACTIVE"] == pytest.approx(UJ_PER_ACTIVE, rel=0.05)
    assert c["AXI_BEATS"] == pytest.approx(UJ_PER_BEAT, rel=0.1)
    assert fitted["fit"]["layers"] == len(FITTED) and fitted["fit"]["leave_one_out_rms_pct"] < 2.0
    assert "fit error" in done.err

    other = pmu_sync_capture(tmp_path / "other.trace", OTHER, seed=7)  # no meter on this one
    done = run_cli("report", other, "--power-model", model, "--format", "json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    schema = json.loads((Path(__file__).resolve().parent.parent / "docs" / "report.schema.json").read_text())
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(report))
    assert not errors, [e.message for e in errors]
    assert "energy" not in report  # nothing measured: only the estimate
    est = report["energy_estimate"]
    assert est["estimate"] is True and est["fit_error_pct"] == fitted["fit"]["leave_one_out_rms_pct"]
    for row in est["layers"]:
        cycles, npu, beats = OTHER[row["index"]]
        assert row["energy_uj"] == pytest.approx(law_uj(cycles + 100, npu, beats), rel=0.03), row
    text = run_cli("report", other, "--power-model", model)
    assert "Energy ESTIMATE, no meter" in text.out and "fit error +-" in text.out


def test_powers_no_law_explains_give_a_large_stated_error(run_cli, tmp_path: Path) -> None:
    arbitrary = {0: 90.0, 1: 15.0, 2: 70.0, 3: 10.0, 4: 120.0, 5: 8.0, 6: 60.0}
    capture, jls = _metered(tmp_path / "fit.trace", FITTED, arbitrary)
    model = tmp_path / "model.json"
    assert run_cli("report", capture, "--power", jls, "--fit-power-model", model).code == 0
    error = json.loads(model.read_text())["fit"]["leave_one_out_rms_pct"]
    assert error > 20.0
    other = pmu_sync_capture(tmp_path / "other.trace", OTHER, seed=7)
    done = run_cli("report", other, "--power-model", model)
    assert f"fit error +-{error:.1f} %" in done.out


def test_bad_uses_and_files_say_what_is_wrong(run_cli, tmp_path: Path) -> None:
    capture, jls = _metered(tmp_path / "fit.trace", FITTED)
    done = run_cli("report", capture, "--fit-power-model", tmp_path / "m.json")
    assert done.code == 2 and "--power" in done.err
    model = tmp_path / "model.json"
    assert run_cli("report", capture, "--power", jls, "--fit-power-model", model).code == 0
    done = run_cli("report", capture, "--power", jls, "--power-model", model)
    assert done.code == 2 and "measured" in done.err
    for text, words in (
        ("not json", "not JSON"),
        ('{"format": "other"}', "not a power model"),
        ('{"format": "tracer-power-model", "version": 9}', "version 9"),
        ('{"format": "tracer-power-model", "version": 1, "coefficients": {"x": 1}}', "bad field"),
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        done = run_cli("report", capture, "--power-model", bad)
        assert done.code == 2 and words in done.err and "bad.json" in done.err, (text, done.err)
    assert run_cli("report", capture, "--power-model", tmp_path / "none.json").code == 2
    # A capture without any NPU PMU counter cannot use a model that needs them.
    from power_streams import sync_capture

    bare = sync_capture(tmp_path / "bare.trace")
    done = run_cli("report", bare, "--power-model", model)
    assert done.code == 2 and "does not measure" in done.err
    # Too few layers measured to fit and test the coefficients: exit 3 in words.
    few = tmp_path / "few.trace"
    capture, jls = _metered(few, FITTED[:3])
    done = run_cli("report", capture, "--power", jls, "--fit-power-model", tmp_path / "few.json")
    assert done.code == 3 and "at least" in done.err
