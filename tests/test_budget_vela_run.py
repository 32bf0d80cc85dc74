"""Budgets generated here by the real Vela (PyPI ``ethos-u-vela``, in the ``test`` extra) from
tests/data/vela/tiny_int8.tflite: the per-layer predictions must add up to Vela's own total."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.base.timeline import Engine
from tracer.budget import load_budget

MODEL = Path(__file__).parent / "data" / "vela" / "tiny_int8.tflite"
# The Vela flags the sample budgets in tests/data/vela were made with, per configuration.
CONFIGS = {
    "u55-128": ("ethos-u55-128", "Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "u65-256": ("ethos-u65-256", "Ethos_U65_High_End", "Dedicated_Sram"),
}


def _vela() -> list[str]:
    script = Path(sys.executable).with_name("vela")
    if script.exists():
        return [str(script)]
    found = shutil.which("vela")
    assert found, "vela is not installed: pip install -e '.[test]' installs ethos-u-vela"
    return [found]


def _run_vela(tmp_path: Path, config: str, legacy: bool = False) -> Path:
    accel, system, memory = CONFIGS[config]
    model = tmp_path / MODEL.name
    shutil.copyfile(MODEL, model)
    out = tmp_path / f"out_{config}{'_legacy' if legacy else ''}"
    cmd = [
        *_vela(),
        str(model),
        "--config",
        "Arm/vela.ini",
        "--accelerator-config",
        accel,
        "--system-config",
        system,
        "--memory-mode",
        memory,
        "--output-dir",
        str(out),
        "--verbose-performance",
        "--enable-debug-db",
    ]
    if legacy:
        cmd.append("--debug-force-legacy-core")
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("legacy", [False, True], ids=["regor", "legacy"])
def test_vela_run_sums_to_its_total(tmp_path: Path, config: str, legacy: bool) -> None:
    """Per-layer CSV + summary (+ debug DB) of a fresh Vela run: the layers sum to cycles_total."""
    out = _run_vela(tmp_path, config, legacy)
    per_layer = out / "tiny_int8_per-layer.csv"
    summary = next(out.glob("tiny_int8_summary_*.csv"))
    alone = load_budget([per_layer, summary])
    total = alone.model.cycles_total
    assert total is not None and total > 0
    assert alone.layer_cycles_total == pytest.approx(total, abs=0.5)
    exact = load_budget([per_layer, summary, out / "tiny_int8_debug.xml"])
    assert exact.layer_cycles_total == pytest.approx(total, abs=0.5)
    assert not any("does not fit" in n for n in exact.notes), exact.notes
    # The debug database names every operator of the model by its index; L2Norm stays on the CPU.
    assert [la.index for la in exact.layers if la.engine is Engine.CPU] == [4]
    assert {la.index for la in exact.layers} >= {0, 1, 2, 3, 4, 5, 7, 8}
    assert exact.model.clock_hz in (500_000_000, 1_000_000_000)
