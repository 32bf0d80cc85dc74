"""Real recordings of the QEMU demo, read in windows, report exactly what they report read whole.

Every scenario of the demo firmware (``tracer demo --scenario ...``) sends what windows must carry
from one to the next: NPU buffer declarations and CPU write/read marks around each NPU job (the
coherency checks look at the inference before each job and at the reads after it), port-0 console
text, and, depending on the scenario, the RTOS task lane (task-preemption), work counts
(data-dependent), interrupts (isr-jitter), a broken stack canary (stack-overflow) or a missing
cache clean (missing-clean), or the sampler's NPU and PC samples (npu-sampling, analysed with
the Vela outputs of its model and the ELF). Each is recorded once, its stream written again in 1 KiB chunks
(the recorder's chunks follow the host's timing), and read in windows of 20 layer executions, so
that a window ends every few inferences; the report JSON is compared section by section with the
one of the capture read whole.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from demo_runs import record_demo

import tracer.pipeline.capture as pipeline_capture
from tracer.analysis.analyze import analyze
from tracer.budget import load_budget
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter
from tracer.elf.inlines import open_locator
from tracer.export.report_json import report_object
from tracer.pipeline.analyse import analyse_windows
from tracer.pipeline.load import load_timeline
from tracer.pipeline.windows import read_windows

pytestmark = pytest.mark.qemu

SCENARIOS = {
    "clean": 12,
    "isr-jitter": 12,
    "missing-clean": 8,
    "stack-overflow": 6,
    "task-preemption": 12,
    "data-dependent": 20,
    "npu-sampling": 12,
}
SPANS = 20  # layer executions per window (the demo runs ten layers per inference)
VELA = Path(__file__).resolve().parent.parent / "firmware_snippets" / "demo" / "model" / "vela"


@pytest.fixture(scope="module")
def recordings(qemu_build: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every scenario recorded once (about a second each)."""
    tmp = tmp_path_factory.mktemp("windows-demo")
    out = {}
    for scenario, runs in SCENARIOS.items():
        path = tmp / f"{scenario}.trace"
        assert record_demo(qemu_build / "demo" / "tracer_demo.elf", runs, scenario, path) == 0, scenario
        out[scenario] = rechunk(path, tmp / f"{scenario}-1k.trace")
    return out


def rechunk(path: Path, out: Path) -> Path:
    """``path``'s stream and metadata in a capture of 1 KiB chunks."""
    with open_capture(path) as reader:
        meta = reader.metadata
        data = b"".join(chunk.data for chunk in reader.chunks())
    with CaptureWriter(out, meta, flush_bytes=1 << 10) as writer:
        for at in range(0, len(data), 1 << 10):
            writer.write(data[at : at + (1 << 10)])
    return out


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_demo_recording_in_windows_is_the_whole_report(
    recordings: dict[str, Path], scenario: str, monkeypatch: pytest.MonkeyPatch, qemu_build: Path
) -> None:
    """Section by section, with many windows; and each scenario's records are really there."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 1 << 10)
    path = recordings[scenario]
    budget = locator = None
    if scenario == "npu-sampling":
        budget = load_budget([*sorted(VELA.glob("sampling_net_*.csv")), VELA / "sampling_net_debug.xml"])
        locator = open_locator(qemu_build / "demo" / "tracer_demo.elf")
    whole = report_object(analyze(*load_timeline(path), budget, locator=locator))
    windows = 0

    def counted(_: object) -> None:
        nonlocal windows
        windows += 1

    parts = report_object(
        analyse_windows(
            lambda: read_windows(path, whole_bytes=0, window_spans=SPANS), budget, on_window=counted, locator=locator
        )
    )
    assert windows >= SCENARIOS[scenario] // 2, windows
    assert whole["capture"]["records"] > 0 and whole["pmu"]["per_inference"]
    ids = {f["id"] for f in whole["findings"]}
    if scenario == "task-preemption":
        assert whole["tasks"]["by_layer"] and whole["tasks"]["slices"] >= 5
    if scenario == "missing-clean":
        assert any("clean" in i or "nondetermin" in i or "coheren" in i for i in ids), ids
    if scenario == "npu-sampling":
        assert whole["npu_operators"]["mapped"] and whole["cpu_hotspots"]["symbolised"]
    if scenario == "stack-overflow":
        assert any(not s["canary_ok"] for s in whole["memory"]["stacks"])
    assert list(parts) == list(whole)
    for section in whole:
        assert json.dumps(parts[section]) == json.dumps(whole[section]), section
