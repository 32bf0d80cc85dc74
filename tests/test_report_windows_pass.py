"""The second pass over a capture read in windows reads only the windows it needs, and the report
stays the capture's whole report.

The first pass keeps each layer's cycles per window and each inference's PMU counters, so a window
without a jitter outlier against the capture's medians, without an execution over its budget limit
(and no task lane, NPU samples or per-inference profiles in console text, which need every window)
is not read again; the second pass ends after the last window it needs. Streams from the reference
encoder (:mod:`jitter_streams`), windows of about a hundred layer executions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from check_streams import budget_toml
from jitter_streams import stream
from test_report_windows import SPANS, write

import tracer.pipeline.capture as pipeline_capture
from tracer.analysis.analyze import analyze
from tracer.analysis.jitter import JitterAccumulator
from tracer.budget import load_budget
from tracer.export.report_json import report_object
from tracer.pipeline.analyse import analyse_windows
from tracer.pipeline.load import load_timeline
from tracer.pipeline.windows import read_windows

LENGTHS = [4000, 6000, 3000]
INFERENCES = 240  # 720 executions: windows of about a hundred


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decode 4 KiB at a time, so that a window can close every hundred executions."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 1 << 12)


def slow(*numbers: int, layer: int = 1, by: int = 3000):
    """An extra that makes ``layer`` slower by ``by`` cycles in the inferences ``numbers``."""
    return lambda n, index, enc, t: by if n in numbers and index == layer else 0


def read_counted(path: Path, budget: Path | None = None) -> tuple[dict, dict, list[int]]:
    """The report read whole, the report read in windows, and the windows each pass read."""
    loaded = load_budget([budget]) if budget is not None else None
    whole = report_object(analyze(*load_timeline(path), loaded))
    passes: list[int] = []

    def windows() -> Iterator:
        passes.append(0)
        for window in read_windows(path, whole_bytes=0, window_spans=SPANS):
            passes[-1] += 1
            yield window

    parts = report_object(analyse_windows(windows, loaded))
    return whole, parts, passes


def same(whole: dict, parts: dict) -> bool:
    return json.dumps(whole) == json.dumps(parts)


def test_no_second_pass_without_outliers(tmp_path: Path) -> None:
    """Every execution as long as its layer's others: one pass, the same report (each
    inference's PMU counters too, which the first pass keeps)."""
    data = stream(INFERENCES, LENGTHS, npu=(1,), pmu=lambda n, index, length: [length, length - n, n, 2 * n, 7])
    whole, parts, passes = read_counted(write(tmp_path / "run.trace", data))
    assert len(passes) == 1 and passes[0] >= 5
    assert parts["pmu"]["per_inference"] and same(whole, parts)


def test_the_second_pass_ends_after_the_last_outlier(tmp_path: Path) -> None:
    """Outliers in the first window only: the second pass reads that window and stops; the first
    three inferences are the warm-up runs, as read whole."""
    data = stream(INFERENCES, LENGTHS, extra=slow(0, 1, 2, 10))
    whole, parts, passes = read_counted(write(tmp_path / "run.trace", data))
    assert passes[1] == 1 < passes[0]
    layer = whole["jitter"]["layers"][1]
    assert layer["outliers"] == 4 and layer["warm_up_runs"] == 3
    assert same(whole, parts)


@pytest.mark.parametrize("numbers", [(40, 41, 42), (150,), (40, 150, 239)])
def test_windows_between_outliers_are_skipped_the_same(tmp_path: Path, numbers: tuple[int, ...]) -> None:
    """Outliers after a first window without any (in the capture's first quarter too: not a
    warm-up, the run of slow executions broke at the first one): the windows without outliers are
    skipped, yet the warm-up, causes and every outlier's inference are the whole capture's."""
    whole, parts, passes = read_counted(
        write(tmp_path / "run.trace", stream(INFERENCES, LENGTHS, extra=slow(*numbers)))
    )
    assert len(passes) == 2 and (passes[1] < passes[0] or max(numbers) == INFERENCES - 1)
    layer = whole["jitter"]["layers"][1]
    assert layer["outliers"] == len(numbers) and layer["warm_up_runs"] == 0
    assert same(whole, parts)


def test_a_skipped_window_ends_the_warm_up(tmp_path: Path) -> None:
    """The second window starts with slow runs in the capture's first quarter, after a first
    window without any: not warm-up runs (the run of slow executions broke in the first window,
    which the second pass skips)."""

    def starts(data: bytes) -> list[int]:
        path = write(tmp_path / f"starts{len(list(tmp_path.iterdir()))}.trace", data)
        return [int(w.inferences.number[0]) for w, _ in read_windows(path, whole_bytes=0, window_spans=SPANS)]

    second = starts(stream(INFERENCES, LENGTHS))[1]
    assert second + 3 <= INFERENCES // 4
    data = stream(INFERENCES, LENGTHS, extra=slow(second, second + 1, second + 2))
    assert starts(data)[1] == second  # (the slow runs do not move the windows)
    whole, parts, passes = read_counted(write(tmp_path / "run.trace", data))
    layer = whole["jitter"]["layers"][1]
    assert layer["outliers"] == 3 and layer["warm_up_runs"] == 0 and passes[1] == 2
    assert same(whole, parts)


def test_skipping_gives_what_judging_every_window_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same report whether the windows without outliers are skipped or judged."""
    path = write(tmp_path / "run.trace", stream(INFERENCES, LENGTHS, extra=slow(0, 1, 70, 200, layer=2)))
    _, skipped, passes = read_counted(path)
    monkeypatch.setattr(JitterAccumulator, "windows_with_outliers", lambda self: [True] * len(self._windows))
    _, judged, every = read_counted(path)
    assert passes[1] < every[1] == every[0]
    assert same(skipped, judged)


def test_an_execution_over_its_budget_limit_brings_its_window_back(tmp_path: Path) -> None:
    """A budget limit only inferences 100 to 102 of layer 0 exceed, by less than makes them
    outliers: their window is read again, and the p99 finding lists those inferences."""
    path = write(tmp_path / "run.trace", stream(INFERENCES, LENGTHS, extra=slow(100, 101, 102, layer=0, by=600)))
    budget = budget_toml(
        tmp_path / "budget.toml",
        [(f"l{i}", "CONV_2D", "cpu", length) for i, length in enumerate(LENGTHS)],
        clock_hz=100_000_000,
    )
    whole, parts, passes = read_counted(path, budget)
    assert not any(layer["outliers"] for layer in whole["jitter"]["layers"])
    (finding,) = [f for f in whole["findings"] if f["id"] == "layer-p99-over-budget"]
    assert "100" in json.dumps(finding) and len(passes) == 2 and passes[1] < passes[0]
    assert same(whole, parts)
