"""``tracer report/check/export --power``: a capture with SYNC_PIN records (our encoder) and the
recording a simulated meter made of it, written as a real JLS (pyjls) and as a PPK2 CSV; the
report's energy section follows the schema; a recording that does not belong exits 3 in words."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from power_streams import sync_capture as _capture

from tracer.pipeline.load import load_timeline
from tracer.power.simulate import Meter, PowerModel, SimulatedRecording, write_jls

pytest.importorskip("pyjls")
ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
MODEL = PowerModel({0: 40.0, 1: 95.0, 2: 25.0}, other_mw=12.0, idle_mw=2.0)


@pytest.fixture(scope="module")
def run_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, SimulatedRecording]:
    tmp = tmp_path_factory.mktemp("energy")
    capture = _capture(tmp / "run.trace")
    timeline, _ = load_timeline(str(capture))
    rec = SimulatedRecording(timeline, MODEL, Meter(100_000, drift_ppm=-90, white_mw=1.0, seed=4))
    jls = tmp / "run.jls"
    write_jls(str(jls), rec)
    csv = tmp / "ppk.csv"
    with csv.open("w") as f:
        f.write("Timestamp(ms),Current(uA),D0-D7\n")
        for chunk in rec.chunks(50_000):
            k = chunk.first + np.arange(len(chunk))
            bits = np.where(chunk.digital & 1, "10000000", "00000000")
            for ms, ua, b in zip(k * 0.01, chunk.power / 3.0 * 1e6, bits):
                f.write(f"{ms:.2f},{ua:.4f},{b}\n")
    return capture, jls, csv, rec


def test_report_json_energy_from_jls(run_files, run_cli) -> None:
    capture, jls, _, _ = run_files
    done = run_cli("report", capture, "--power", jls, "--format", "json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    errors = list(jsonschema.validators.validator_for(SCHEMA)(SCHEMA).iter_errors(report))
    assert not errors, [e.message for e in errors]
    energy = report["energy"]
    assert energy["simulated"] is True and energy["sync"]["pairs"] == 40
    assert energy["sync"]["drift_ppm"] == pytest.approx(-90, abs=40)
    layer1 = energy["layers"][1]
    assert layer1["engine"] == "npu" and layer1["method"] == "integrated"
    assert layer1["power_mw"] == pytest.approx(95.0, rel=0.01)
    assert energy["layers"][2]["method"] == "fitted"  # 300 cycles: 0.6 of a sample
    assert set(energy["inference"]["engines_uj"]) == {"cpu", "npu"}


def test_report_text_energy_from_ppk2_csv(run_files, run_cli) -> None:
    capture, _, csv, _ = run_files
    done = run_cli("report", capture, "--power", csv, "--supply-voltage", "3.0")
    assert done.code == 0, done.err
    assert "Energy: PPK2 CSV" in done.out
    assert "aligned by sync pin on digital input 0: 40 edges" in done.out
    line = next(ln for ln in done.out.splitlines() if ln.startswith("1  layer1"))
    assert " npu " in line and "integrated" in line


def test_ppk2_csv_without_voltage_exit_2(run_files, run_cli) -> None:
    capture, _, csv, _ = run_files
    done = run_cli("report", capture, "--power", csv)
    assert done.code == 2 and "--supply-voltage" in done.err


def test_recording_of_another_run_exit_3(run_files, run_cli, tmp_path: Path) -> None:
    _, jls, _, _ = run_files
    other = _capture(tmp_path / "other.trace", seed=9)
    done = run_cli("report", other, "--power", jls)
    assert done.code == 3
    assert "do not follow the sync pin marks on a straight line" in done.err
    assert "Traceback" not in done.err


def test_export_perfetto_power_lane(run_files, run_cli, tmp_path: Path) -> None:
    """The Perfetto trace (read back with Perfetto's own schema) has a power counter track whose
    values during layer 1 are its power (95 mW, simulated) and during idle about 2 mW."""
    from perfetto_reader import read_trace

    capture, jls, _, _ = run_files
    out = tmp_path / "run.perfetto"
    done = run_cli("export", capture, "--power", jls, "--format", "perfetto", "-o", out)
    assert done.code == 0, done.err
    trace = read_trace(out.read_bytes())
    lane = trace.counters["Power (uW, simulated meter)"]
    layer1 = [s for s in trace.slices if s.name == "layer1"]
    assert len(lane) > 40 * 6
    values = dict(lane)
    during = [values[s.start] for s in layer1 if s.start in values]
    assert len(during) == 40 and all(abs(v - 95_000) < 3_000 for v in during)
    assert lane[-1][1] == 0  # the end of the measured time


def test_compare_energy_with_intervals(run_files, run_cli, tmp_path: Path) -> None:
    """The same run recorded twice: once with layer1 drawing 15 % more (a regression, exit 1), once
    with other noise only (unchanged)."""
    capture, jls, _, _ = run_files
    timeline, _ = load_timeline(str(capture))
    hungrier = PowerModel({0: 40.0, 1: 95.0 * 1.15, 2: 25.0}, other_mw=12.0, idle_mw=2.0)
    more = tmp_path / "more.jls"
    write_jls(str(more), SimulatedRecording(timeline, hungrier, Meter(100_000, drift_ppm=60, white_mw=1.0, seed=8)))
    same = tmp_path / "same.jls"
    write_jls(str(same), SimulatedRecording(timeline, MODEL, Meter(100_000, drift_ppm=10, white_mw=1.0, seed=9)))
    done = run_cli("compare", capture, capture, "--base-power", jls, "--new-power", more, "--format", "json")
    assert done.code == 1, done.err
    energy = json.loads(done.out)["energy"]
    layer1 = next(c for c in energy["layers"] if c["index"] == 1)
    assert layer1["verdict"] == "more energy" and layer1["change_pct"] == pytest.approx(15, abs=1)
    lo, hi = layer1["interval_pct"]
    assert lo < 15 < hi and lo > 10
    assert "layer1" in energy["regressions"] and "inference" in energy["regressions"]
    done = run_cli("compare", capture, capture, "--base-power", jls, "--new-power", same)
    assert done.code == 0, done.out
    assert "layer1: " in done.out and "unchanged" in done.out and "(SIMULATED meter)" in done.out


def test_compare_power_needs_both_sides(run_files, run_cli) -> None:
    capture, jls, _, _ = run_files
    done = run_cli("compare", capture, capture, "--base-power", jls)
    assert done.code == 2 and "--base-power and --new-power go together" in done.err
