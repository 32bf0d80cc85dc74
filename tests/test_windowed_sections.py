"""Sections of the analysis computed over the windows of a capture equal those of the capture read whole.

Real streams from the reference encoder (noisy cycles, an interrupt inside a layer, PMU snapshots,
arena and stack reports) and the demo capture of the QEMU target, read in windows of a few hundred
executions (``whole_bytes=0``), each window analysed on its own and the sections merged by
:class:`tracer.analysis.windowed.WindowedSections`: per-layer statistics, latency, PMU and memory
must be the whole capture's, to the last digit of their report JSON.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tracer.pipeline.capture as pipeline_capture
from fleet_streams import CLOCK_HZ, Build, encode_build
from tracer.analysis.analyze import analyze
from tracer.analysis.windowed import WindowedSections
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.export.report_json import report_object
from tracer.pipeline.load import load_timeline
from tracer.pipeline.windows import read_windows

DEMO = Path(__file__).resolve().parent.parent / "captures" / "demo.trace"


def write(path: Path, build: Build, inferences: int, seed: int) -> Path:
    data = encode_build(build, inferences, seed=seed)
    with CaptureWriter(path, CaptureMetadata(source="test://windowed", tpiu=False, cpu_hz=CLOCK_HZ),
                       flush_bytes=1 << 14) as writer:  # fmt: skip
        for at in range(0, len(data), 1 << 14):
            writer.write(data[at : at + (1 << 14)])
    return path


def sections_in_windows(path: Path, window_spans: int) -> tuple[int, dict]:
    merged = WindowedSections()
    count = 0
    for timeline, facts in read_windows(path, whole_bytes=0, window_spans=window_spans):
        merged.add(analyze(timeline, facts))
        count += 1
    report = {
        "layers": {i: (s.cycles.to_json() if s.cycles else None, s.excluded, s.pmu_mean)
                   for i, s in merged.layers().items()},
        "latency": (lambda lat: lat.to_json() if lat else None)(merged.latency()),
        "pmu": merged.pmu().to_json(),
        "memory": merged.memory().to_json(),
        "stacks": merged.memory().stacks,
    }  # fmt: skip
    return count, report


def sections_whole(path: Path) -> dict:
    analysis = analyze(*load_timeline(path))
    report = report_object(analysis)
    assert report["inferences"]["latency_cycles"] == (analysis.latency.to_json() if analysis.latency else None)
    return {
        "layers": {i: (s.cycles.to_json() if s.cycles else None, s.excluded, s.pmu_mean)
                   for i, s in analysis.layers.items()},
        "latency": report["inferences"]["latency_cycles"],
        "pmu": report["pmu"],
        "memory": report["memory"],
        "stacks": analysis.memory.stacks,
    }  # fmt: skip


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decode 16 KiB at a time, so that windows can close every few hundred executions."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 1 << 14)


@pytest.mark.parametrize(
    "build, seed",
    [(Build(isr=(3, 900), noise_pct=2.0), 4), (Build(noise_pct=8.0, beats_pct=(1, 20.0), arena_used=52_000), 9)],
)
def test_sections_from_windows_are_the_whole_captures(tmp_path: Path, build: Build, seed: int) -> None:
    """Noisy cycles, interrupts, PMU snapshots, arena and stacks: every merged section is exact."""
    path = write(tmp_path / "long.trace", build, 600, seed)
    windows, merged = sections_in_windows(path, 400)
    assert windows >= 5
    whole = sections_whole(path)
    assert merged["layers"] and merged["pmu"]["per_inference"]
    for section in whole:
        assert merged[section] == whole[section], section


def test_demo_capture_in_windows(tmp_path: Path) -> None:
    """The QEMU demo capture, cut in windows of 60 executions, gives its whole sections."""
    windows, merged = sections_in_windows(DEMO, 60)
    assert windows >= 3
    whole = sections_whole(DEMO)
    for section in whole:
        assert merged[section] == whole[section], section
