"""The findings on the live/replay screen are ``tracer check``'s, made by the same code on the
session's window: equal to the gate's on a replay that has been fully read, computed about once a
second on a bounded window while data flows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from analysis_helpers import analyse, findings_of
from hypothesis import given, settings
from hypothesis import strategies as st
from session_streams import DEMO_BUDGET, DEMO_CAPTURE, build_stream, write_capture

from tracer.analysis.findings import memory as memory_rules
from tracer.base.columns import LazyRecords
from tracer.base.timeline import ArenaSample, InferenceTimeline, StackSample
from tracer.budget import load_budget
from tracer.pipeline.capture import decode_capture
from tracer.session.engine import Session, SessionOptions
from tracer.session.memory import MemoryTracker


class FrozenClock:
    """A monotonic clock that does not move (the findings' once-a-second pace, made visible)."""

    def __call__(self) -> float:
        return 0.0


def replay(path: Path, budget: Path | None = None, **options: object) -> Session:
    session = Session.replay(
        str(path),
        budget=load_budget([budget]) if budget else None,
        options=SessionOptions(**{"speed": None, **options}),
    )
    session.run()
    assert session.ended, session.snapshot().status
    return session


def checked(run_cli, capture: Path, budget: Path | None = None) -> list[dict]:
    """What ``tracer check CAPTURE [--budget FILE] --format json`` finds."""
    done = run_cli("check", capture, *(["--budget", budget] if budget else []), "--format", "json")
    assert done.code in (0, 1), done.err
    return json.loads(done.out)["findings"]


def test_findings_on_screen_are_tracer_checks_on_the_demo_capture(run_cli) -> None:
    """The window held the whole capture: the rules ran on it (not on the file again) and found
    what the CI gate finds, message, evidence and fix included."""
    session = replay(DEMO_CAPTURE, DEMO_BUDGET)
    diagnosis = session.snapshot().diagnosis
    assert diagnosis.whole and diagnosis.scope == "all 20 inferences"
    assert [f.to_json() for f in diagnosis.findings] == checked(run_cli, DEMO_CAPTURE, DEMO_BUDGET)
    assert [f.id for f in diagnosis.findings] == ["cpu-operators"]
    # The layers table compares with the gate's budget matching: the same predictions.
    report = json.loads(run_cli("report", DEMO_CAPTURE, "--budget", DEMO_BUDGET, "--format", "json").out)
    snap = session.snapshot()
    for layer in report["layers"]:
        assert snap.layer(layer["index"]).predicted == pytest.approx(layer["predicted_cycles"], abs=1e-3)


def test_a_capture_longer_than_the_window_ends_with_the_gate_on_the_whole_capture(run_cli) -> None:
    session = replay(DEMO_CAPTURE, DEMO_BUDGET, ring=5)
    diagnosis = session.snapshot().diagnosis
    assert diagnosis.whole and diagnosis.scope == "the whole capture"
    assert [f.to_json() for f in diagnosis.findings] == checked(run_cli, DEMO_CAPTURE, DEMO_BUDGET)


def test_findings_without_a_budget_on_a_synthetic_capture(tmp_path: Path, run_cli) -> None:
    path = write_capture(tmp_path / "s.trace", build_stream(inferences=60).data)
    session = replay(path)
    assert session.snapshot().diagnosis.scope == "all 60 inferences"
    assert [f.to_json() for f in session.snapshot().findings] == checked(run_cli, path)


def test_the_rules_run_at_most_once_a_second_and_once_more_at_the_end(tmp_path: Path) -> None:
    """On a clock that does not move, a whole replay runs the rules twice: with the first
    inferences, and when the stream ends."""
    path = write_capture(tmp_path / "s.trace", build_stream(inferences=200).data, chunk=512)
    session = Session.replay(str(path), options=SessionOptions(speed=None), clock=FrozenClock())
    session.run()
    assert session.ended and session.analyses == 2


def test_the_window_is_the_tail_of_the_whole_timeline(tmp_path: Path) -> None:
    """With 300 inferences through a ring of 32, the timeline the rules see holds exactly the
    last 32 inferences of the capture, their spans (interrupt time included), and the events and
    interrupt slices from the ring's horizon on."""
    path = write_capture(tmp_path / "s.trace", build_stream(inferences=300).data)
    session = replay(path, ring=32)
    window = session.window_timeline()
    whole = decode_capture(path).timeline
    assert session.snapshot().diagnosis.scope == "the whole capture"  # the last run: the capture read again
    tail = slice(len(whole.inferences) - 32, None)
    for column in ("number", "start", "end", "complete", "input_crc", "output_crc"):
        assert np.array_equal(getattr(window.inferences, column), getattr(whole.inferences, column)[tail]), column
    first = int(window.inferences.number[0])
    mine = whole.spans.inference >= first
    for column in ("inference", "layer", "start", "end", "complete", "isr_cycles", "pmu"):
        assert np.array_equal(getattr(window.spans, column), getattr(whole.spans, column)[mine]), column
    assert window.spans.pmu_names == whole.spans.pmu_names
    assert int(window.spans.isr_cycles.sum()) > 0  # the synthetic stream has interrupts in layer 3
    horizon = session.held.ring.horizon
    assert horizon is not None and horizon < int(window.inferences.start[0])
    assert list(window.cache_ops) == [op for op in whole.cache_ops if op.cycle >= horizon]
    assert list(window.npu_jobs) == [job for job in whole.npu_jobs if job.start >= horizon]
    assert list(window.marks) == [m for m in whole.marks if m.cycle >= horizon]
    assert list(window.crcs) == [c for c in whole.crcs if c.cycle >= horizon]
    assert list(window.isrs) == [s for s in whole.isrs if s.start >= horizon]
    assert window.loss == whole.loss and window.labels == whole.labels and window.clock_hz == whole.clock_hz
    assert window.layers == whole.layers


# -- memory: a few reports decide every figure ----------------------------------------------------


reports = st.lists(
    st.tuples(st.booleans(), st.integers(0, 2), st.integers(0, 20_000), st.integers(1, 16_384), st.booleans()),
    min_size=1,
    max_size=60,
)


@settings(max_examples=80, deadline=None)
@given(reports, st.lists(st.integers(1, 10), min_size=1, max_size=8))
def test_the_deciding_memory_reports_give_the_whole_streams_verdicts(rows: list, cuts: list[int]) -> None:
    """Arena and stack reports in any order and any split into feeds: the memory rules and the
    report's memory section are the same on the few reports the tracker keeps as on all of them."""
    arena_all: list[ArenaSample] = []
    stack_all: list[StackSample] = []
    tracker = MemoryTracker()
    names = {0: "main", 1: "handler", 2: "task"}
    at = 0
    feeds: list[list] = []
    for cut in cuts * 20:
        if at >= len(rows):
            break
        feeds.append(rows[at : at + cut])
        at += cut
    cycle = 0
    for feed in feeds:
        arena_rows, stack_rows = [], []
        for is_arena, stack_id, used, size, ok in feed:
            cycle += 10
            if is_arena:
                arena_rows.append((cycle, used, size, -1))
            else:
                stack_rows.append((cycle, stack_id, min(used, size), size, int(ok)))
        arena = LazyRecords(lambda c, u, s, i: ArenaSample(c, u, s, None), _columns(arena_rows, 4))
        stacks = LazyRecords(
            lambda c, i, hw, size, ok: StackSample(c, names[i], hw, size, bool(ok)), _columns(stack_rows, 5)
        )
        arena_all += list(arena)
        stack_all += list(stacks)
        tracker.add_arena(arena)
        tracker.add_stacks(stacks)
    kept_arena, kept_stacks = tracker.deciding_samples()
    assert len(kept_arena) <= 2 and len(kept_stacks) <= 4 * 3
    everything = InferenceTimeline(arena=arena_all, stacks=stack_all)
    kept = InferenceTimeline(arena=kept_arena, stacks=kept_stacks)

    def verdicts(timeline: InferenceTimeline) -> tuple:
        found = findings_of(timeline, memory_rules.RULES)
        return [f.to_json() for f in found], analyse(timeline).memory.to_json()

    assert verdicts(kept) == verdicts(everything)


def _columns(rows: list[tuple], width: int) -> list[np.ndarray]:
    return [np.array([r[i] for r in rows], np.int64) for i in range(width)]


def test_a_session_asked_to_stop_gives_up_reading_the_whole_capture_again() -> None:
    """Quitting at the end of a long replay does not wait for the gate's pass over the whole file."""
    session = replay(DEMO_CAPTURE, DEMO_BUDGET, ring=2)
    before = session.snapshot().diagnosis
    assert before.scope == "the whole capture"
    session.stop()
    session._diagnose(final=True)  # the pass the worker makes when a replay ends
    after = session.snapshot()
    assert after.diagnosis is before and not any("failed" in w for w in after.status.warnings)
