"""Windows made on a thread of their own, ahead of the caller's analysis: the same windows, in the
same order, as made on the caller's thread, and the bytes read told on the caller's thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fleet_streams import CLOCK_HZ, Build, encode_build

import tracer.pipeline.capture as pipeline_capture
import tracer.pipeline.windows as windows
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.pipeline.analyse import analyse_file
from tracer.pipeline.windows import read_windows


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    """300 inferences with an interrupt inside pool3, in 16 KiB chunks."""
    path = tmp_path / "ahead.trace"
    data = encode_build(Build(isr=(3, 900), noise_pct=2.0), 300, seed=7)
    with CaptureWriter(
        path, CaptureMetadata(source="test://ahead", tpiu=False, cpu_hz=CLOCK_HZ), flush_bytes=1 << 14
    ) as writer:
        for at in range(0, len(data), 1 << 14):
            writer.write(data[at : at + (1 << 14)])
    return path


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of about 200 executions, 16 KiB decoded at a time, progress told every 32 KiB."""
    monkeypatch.setattr(windows, "WHOLE_BYTES", 0)
    monkeypatch.setattr(windows, "WINDOW_SPANS", 200)
    monkeypatch.setattr(windows, "PROGRESS_BYTES", 1 << 15)
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 1 << 14)


def _windows(path: Path, cores: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list[tuple[int, bool]]]:
    monkeypatch.setattr(windows, "usable_cores", lambda: cores)
    told: list[tuple[int, bool]] = []
    parts = list(
        read_windows(
            path, on_progress=lambda done: told.append((done, threading.current_thread() is threading.main_thread()))
        )
    )
    return parts, told


@pytest.mark.usefixtures("small")
def test_windows_made_ahead_are_those_made_in_step(capture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two cores (windows made ahead) and one give the same windows: rows, facts, loss."""
    ahead, _ = _windows(capture, 2, monkeypatch)
    in_step, _ = _windows(capture, 1, monkeypatch)
    assert len(ahead) == len(in_step) >= 5
    for (mine, my_facts), (theirs, their_facts) in zip(ahead, in_step):
        assert mine.inferences.number.tolist() == theirs.inferences.number.tolist()
        for column in ("cycles", "isr_cycles", "layer", "start", "end"):
            assert np.array_equal(getattr(mine.spans, column), getattr(theirs.spans, column)), column
        assert len(mine.isrs) == len(theirs.isrs)
        assert mine.loss == theirs.loss
        assert (my_facts.bytes, my_facts.records, my_facts.warnings) == (
            their_facts.bytes,
            their_facts.records,
            their_facts.warnings,
        )


@pytest.mark.usefixtures("small")
def test_windows_are_made_on_a_thread_of_their_own(capture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On two cores the windows come from their own thread, which has ended when the reading has."""
    monkeypatch.setattr(windows, "usable_cores", lambda: 2)
    names = [{t.name for t in threading.enumerate()} for _ in read_windows(capture)]
    assert all("tracer-windows" in seen for seen in names)
    assert "tracer-windows" not in {t.name for t in threading.enumerate()}


@pytest.mark.usefixtures("small")
def test_bytes_read_are_told_on_the_callers_thread(capture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """on_progress runs on the caller's thread, the bytes never go back, the last is every byte."""
    parts, told = _windows(capture, 2, monkeypatch)
    assert len(told) >= len(parts)
    assert all(on_caller for _, on_caller in told)
    done = [d for d, _ in told]
    assert done == sorted(done)
    assert done[-1] == parts[-1][1].bytes


@pytest.mark.usefixtures("small")
def test_a_failing_progress_stops_the_reading(capture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A progress display that raises (a session told to stop) ends the reading with its error, and
    no thread is left behind."""
    before = threading.active_count()

    def stop(done: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        analyse_file(capture, progress=lambda _label: _Raising(stop))
    assert threading.active_count() == before


class _Raising:
    def __init__(self, update: Callable[[int], None]) -> None:
        self.update = update

    def __enter__(self) -> _Raising:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
