"""``tracer demo --power`` on QEMU: the firmware's real trc_sync_pin records, a simulated
Joulescope JLS beside the capture (pyjls), and the report attributing it, labelled simulated;
``tracer report --power`` gives the same numbers from the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracer.pipeline.load import load_timeline
from tracer.telemetry.wire import RecordType

pytestmark = pytest.mark.qemu
pytest.importorskip("pyjls")


def test_demo_power_end_to_end(qemu_build: Path, tmp_path: Path, run_cli) -> None:
    build = qemu_build  # the session's build folder: make finds it up to date
    capture = tmp_path / "demo.trace"
    done = run_cli("demo", "--power", "--inferences", "12", "-o", capture, "--format", "json", "--build-dir", build)
    assert done.code == 0, done.err
    assert (tmp_path / "demo.jls").exists() and "SIMULATED power recording" in done.err
    energy = json.loads(done.out)["energy"]
    assert energy["simulated"] is True and energy["recording"]["meter"] == "simulated meter (JLS)"
    assert energy["sync"]["method"] == "sync pin" and energy["sync"]["pairs"] == 12
    assert energy["sync"]["drift_ppm"] == pytest.approx(120, abs=60)
    timeline, _ = load_timeline(str(capture))
    assert len([r for r in timeline.records if r.type == RecordType.SYNC_PIN]) == 12
    for layer in energy["layers"]:  # the demo's model: NPU 60 + 8 (i % 4) mW, CPU 26 + 4 (i % 3) mW
        i = layer["index"]
        model = 60.0 + 8.0 * (i % 4) if layer["engine"] == "npu" else 26.0 + 4.0 * (i % 3)
        if layer["method"] == "integrated":
            assert layer["power_mw"] == pytest.approx(model, rel=0.02), layer
    again = run_cli("report", capture, "--power", tmp_path / "demo.jls")
    assert again.code == 0, again.err
    assert "Energy (SIMULATED meter)" in again.out
