"""The jitter of a long capture is analysed on a thread of its own beside the rest of the analysis
(:class:`tracer.base.beside.Beside`): the same analysis, and every exit clean.
"""

from __future__ import annotations

import json
import threading
import traceback
from pathlib import Path

import pytest

import tracer.analysis.analyze as analyze_module
from tracer.analysis.analyze import analyze
from tracer.base.beside import Beside
from tracer.base.facts import InputFacts
from tracer.budget import load_budget
from tracer.export.report_json import report_object
from tracer.pipeline.capture import decode_capture

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
