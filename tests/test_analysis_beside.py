"""The jitter of a long capture is analysed on a thread of its own beside the rest of the analysis
(:class:`tracer.analysis.beside.Beside`), and read in windows it measures each window on a thread
of its own, in order (:class:`tracer.analysis.beside.InOrder`): the same analysis, and every exit
clean.
"""

from __future__ import annotations

import json
import threading
import traceback
from pathlib import Path

import pytest
from telemetry_streams import build_stream

import tracer.analysis.analyze as analyze_module
import tracer.analysis.windowed as windowed_module
from tracer.analysis.analyze import analyze
from tracer.analysis.beside import Beside, InOrder
from tracer.analysis.jitter import WindowedJitter
from tracer.analysis.windowed import analyze_windows
from tracer.base.facts import InputFacts
from tracer.budget import load_budget
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.export.report_json import report_object
from tracer.pipeline import capture as pipeline_capture
from tracer.pipeline.capture import decode_capture
from tracer.pipeline.windows import read_windows

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"


def _failing() -> int:
    raise ValueError("from the work")


def test_beside_gives_the_value_on_a_thread_of_its_own() -> None:
    seen: list[str] = []

    def work() -> int:
        seen.append(threading.current_thread().name)
        return 42

    with Beside(work, name="tracer-test-beside") as beside:
        assert beside.result() == 42
    assert seen == ["tracer-test-beside"]
    assert not any(t.name == "tracer-test-beside" for t in threading.enumerate())


def test_beside_unthreaded_runs_on_the_callers_thread_once() -> None:
    seen: list[str] = []

    def work() -> int:
        seen.append(threading.current_thread().name)
        return 7

    with Beside(work, threaded=False) as beside:
        assert seen == []  # not before it is asked for
        assert beside.result() == 7
        assert beside.result() == 7
    assert seen == [threading.current_thread().name]


@pytest.mark.parametrize("threaded", [True, False])
def test_beside_raises_the_works_exception_with_its_traceback(threaded: bool) -> None:
    with Beside(_failing, threaded) as beside, pytest.raises(ValueError, match="from the work") as raised:
        beside.result()
    assert "_failing" in "".join(traceback.format_tb(raised.value.__traceback__))


def test_beside_thread_has_ended_when_the_caller_fails() -> None:
    release = threading.Event()

    def work() -> int:
        release.wait(5)
        return 1

    with pytest.raises(KeyError), Beside(work, name="tracer-test-caller-fails"):
        release.set()
        raise KeyError("the caller's own work failed")
    assert not any(t.name == "tracer-test-caller-fails" for t in threading.enumerate())


def _report(monkeypatch: pytest.MonkeyPatch, beside_spans: int) -> tuple[str, list[str]]:
    """The demo capture's report against its budget, and the threads its jitter was analysed on."""
    threads: list[str] = []
    jitter = analyze_module.analyse_jitter

    def recorded(*args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread().name)
        return jitter(*args, **kwargs)

    monkeypatch.setattr(analyze_module, "analyse_jitter", recorded)
    monkeypatch.setattr(analyze_module, "BESIDE_SPANS", beside_spans)
    monkeypatch.setattr(analyze_module, "usable_cores", lambda: 2)
    decoded = decode_capture(DEMO)
    facts = InputFacts("capture", decoded.metadata.source, str(DEMO), decoded.stream_bytes, decoded.host_seconds)
    budget = load_budget([str(ROOT / "captures" / "demo_budget.toml")])
    return json.dumps(report_object(analyze(decoded.timeline, facts, budget)), sort_keys=True), threads


def test_analysis_beside_is_the_analysis_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    beside, threads = _report(monkeypatch, 0)
    assert threads == ["tracer-jitter"]
    alone, threads = _report(monkeypatch, 10**12)
    assert threads == [threading.current_thread().name]
    assert beside == alone
    assert '"jitter"' in beside


# -- InOrder: the windows' jitter measures on a thread of their own, in order ----------------------


def test_in_order_runs_the_calls_in_order_on_its_thread() -> None:
    seen: list[tuple[int, str]] = []
    with InOrder(name="tracer-test-in-order") as calls:
        for i in range(20):
            calls.call(lambda i=i: seen.append((i, threading.current_thread().name)))
        calls.wait()
    assert [i for i, _ in seen] == list(range(20))
    assert {name.rsplit("_", 1)[0] for _, name in seen} == {"tracer-test-in-order"}
    assert not any(t.name.startswith("tracer-test-in-order") for t in threading.enumerate())


def test_in_order_keeps_at_most_depth_calls_waiting() -> None:
    release = threading.Event()
    started: list[int] = []

    def slow(i: int) -> None:
        started.append(i)
        release.wait(5)

    with InOrder(depth=2) as calls:
        calls.call(slow, 0)
        calls.call(slow, 1)
        given = threading.Event()
        caller = threading.Thread(target=lambda: (calls.call(slow, 2), given.set()))
        caller.start()
        assert not given.wait(0.2)  # the third waits for the first to be done
        release.set()
        caller.join(5)
        assert given.is_set()
        calls.wait()
    assert started == [0, 1, 2]


def test_in_order_raises_a_calls_failure_and_unthreaded_runs_at_once() -> None:
    with InOrder() as calls, pytest.raises(ValueError, match="from the work"):
        calls.call(_failing)
        calls.wait()
    seen: list[str] = []
    with InOrder(threaded=False) as calls:
        calls.call(lambda: seen.append(threading.current_thread().name))
        assert seen == [threading.current_thread().name]


def test_windows_jitter_measured_on_its_thread_is_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture of 40 inferences read in windows of 7 layer executions: the jitter measures every
    window on a thread of its own, in order, and the report is the one made on one thread."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)  # batches of about 200 bytes: many windows
    path = tmp_path / "windows.trace"
    with CaptureWriter(path, CaptureMetadata(source="test", tpiu=False, cpu_hz=100_000_000), flush_bytes=128) as writer:
        writer.write(build_stream(inferences=40, layers=4, seed=3).data)
    measured_on: list[str] = []
    measure = WindowedJitter.measure

    def recorded(self, timeline):  # type: ignore[no-untyped-def]
        measured_on.append(threading.current_thread().name)
        return measure(self, timeline)

    monkeypatch.setattr(WindowedJitter, "measure", recorded)

    def report(cores: int) -> str:
        monkeypatch.setattr(windowed_module, "usable_cores", lambda: cores)
        windows = lambda: read_windows(path, whole_bytes=0, window_spans=7)  # noqa: E731
        return json.dumps(report_object(analyze_windows(windows)), sort_keys=True)

    one = report(1)
    assert set(measured_on) == {threading.current_thread().name} and len(measured_on) > 10
    measured_on.clear()
    two = report(2)
    assert {name.rsplit("_", 1)[0] for name in measured_on} == {"tracer-jitter"}
    assert one == two and '"jitter"' in one
