"""A capture read in windows (bounded memory) gives the numbers of the same capture read whole.

The windows' size is made small here (a few hundred executions) so that a small capture is read in
many windows; what compare and ingest keep of it must not change.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fleet_streams import LAYERS, Build

import tracer.pipeline.capture as pipeline_capture
import tracer.pipeline.windows as windows
from tracer.pipeline.digest import digest_file
from tracer.pipeline.load import load_timeline
from tracer.pipeline.windows import read_windows


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    """600 inferences with an interrupt inside pool3 and noisy cycles, in 16 KiB chunks."""
    from fleet_streams import CLOCK_HZ, encode_build

    from tracer.capture.metadata import CaptureMetadata
    from tracer.capture.writer import CaptureWriter

    path = tmp_path / "long.trace"
    data = encode_build(Build(isr=(3, 900), noise_pct=2.0), 600, seed=4)
    with CaptureWriter(
        path, CaptureMetadata(source="test://windows", tpiu=False, cpu_hz=CLOCK_HZ), flush_bytes=1 << 14
    ) as writer:
        for at in range(0, len(data), 1 << 14):
            writer.write(data[at : at + (1 << 14)])
    return path


def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read every capture in windows of about 400 executions (decoding 16 KiB at a time)."""
    monkeypatch.setattr(windows, "WHOLE_BYTES", 0)
    monkeypatch.setattr(windows, "WINDOW_SPANS", 400)
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 1 << 14)


def test_windows_hold_every_row_once(capture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Concatenated, the windows' inferences, spans and interrupt time are the whole capture's."""
    small_windows(monkeypatch)
    parts = list(read_windows(capture))
    assert len(parts) >= 5
    whole, facts = load_timeline(capture)
    numbers = np.concatenate([tl.inferences.number for tl, _ in parts])
    assert numbers.tolist() == whole.inferences.number.tolist()
    for column in ("cycles", "isr_cycles", "layer", "inference"):
        joined = np.concatenate([getattr(tl.spans, column) for tl, _ in parts])
        assert joined.tolist() == getattr(whole.spans, column).tolist(), column
    last = parts[-1][1]
    assert (last.bytes, last.records, last.kind) == (facts.bytes, facts.records, facts.kind)
    assert all(len(tl.layers) == len(LAYERS) for tl, _ in parts)


def test_a_digest_read_in_windows_is_the_whole_one(capture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-layer cycles, interrupt time, PMU sums, latency, memory marks and findings are the same."""
    whole = digest_file(str(capture))
    small_windows(monkeypatch)
    parts = digest_file(str(capture))
    assert set(parts.samples) == set(whole.samples)
    for index, samples in whole.samples.items():
        mine = parts.samples[index]
        assert np.sort(mine.cycles).tolist() == np.sort(samples.cycles).tolist()
        assert mine.pmu == samples.pmu
        assert (mine.isr_cycles is None) == (samples.isr_cycles is None)
        if samples.isr_cycles is not None:
            assert int(mine.isr_cycles.sum()) == int(samples.isr_cycles.sum()) == 600 * 900
    assert np.sort(parts.latency).tolist() == np.sort(whole.latency).tolist()
    assert (parts.inferences, parts.complete, parts.arena_used, dict(parts.stacks)) == (
        whole.inferences,
        whole.complete,
        whole.arena_used,
        dict(whole.stacks),
    )
    assert {f.key for f in parts.findings} == {f.key for f in whole.findings}
    assert parts.names == whole.names == (str(capture),)


def test_ingest_in_windows_writes_the_same_rows(capture: Path, tmp_path: Path, monkeypatch, run_cli) -> None:
    """The dataset of a capture ingested in windows has the rows and statistics of one ingested whole."""
    from tracer.fleet.dataset import Dataset

    assert run_cli("ingest", capture, "-o", tmp_path / "whole", "--workers", "1").code == 0
    small_windows(monkeypatch)
    assert run_cli("ingest", capture, "-o", tmp_path / "windows", "--workers", "1").code == 0
    a, b = Dataset.open(tmp_path / "whole"), Dataset.open(tmp_path / "windows")
    drop = ["capture_id", "date"]
    for table in ("layers", "stacks", "labels"):
        assert a.table(table).drop_columns(drop).to_pylist() == b.table(table).drop_columns(drop).to_pylist(), table
    keep = ["inferences", "complete", "latency_p50", "latency_p99", "arena_used", "model", "layer_count"]
    assert a.table("captures", keep).to_pylist() == b.table("captures", keep).to_pylist()
    for table in ("layer_executions", "inferences", "pmu"):
        assert a.table(table).drop_columns(drop).to_pylist() == b.table(table).drop_columns(drop).to_pylist(), table
    assert b.table("layer_executions").num_rows == 600 * len(LAYERS)
