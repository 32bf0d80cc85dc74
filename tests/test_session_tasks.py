"""RTOS tasks on the screen: the session's window carries the task lane and the per-span facts
(work counts, CPU counters, time other tasks took) made from the task and work records it holds,
so the Gantt draws the task lane and the findings on screen are ``tracer check``'s task-aware ones.

The stream is synthetic (the jitter tests' encoder streams): the sensor task takes 6,000 cycles
from layer 1 in inferences 2 and 6, woken by TIMER0; the capture's small chunks make the session
hand the records over piece by piece, as a live stream does.
"""

from __future__ import annotations

import json
from pathlib import Path

from jitter_streams import SENSOR_TASK, stream, task_in_layer, two_tasks
from session_streams import write_capture

from tracer.session.engine import Session, SessionOptions


def replay(path: Path, **options: object) -> Session:
    session = Session.replay(str(path), options=SessionOptions(**{"speed": None, **options}))
    session.run()
    assert session.ended, session.snapshot().status
    return session


def capture(tmp_path: Path) -> Path:
    data = stream(20, [5000, 8000, 4000], task_in_layer(1, (2, 6), 6000, isr=50), setup=two_tasks)
    return write_capture(tmp_path / "tasks.trace", data, chunk=512)


def test_the_window_has_the_task_lane_and_the_gates_task_finding(tmp_path: Path, run_cli) -> None:
    path = capture(tmp_path)
    session = replay(path)
    snap = session.snapshot()
    tasks = snap.events.tasks
    sensor = [t for t in tasks if t.task == SENSOR_TASK]
    assert [(t.cycles, t.name) for t in sensor] == [(6000, "sensor"), (6000, "sensor")]
    assert {t.name for t in tasks} == {"inference", "sensor"}
    diagnosis = snap.diagnosis
    assert diagnosis.whole
    found = [f for f in diagnosis.findings if f.id == "jitter-task-preemption"]
    assert len(found) == 1 and found[0].layer == 1 and sorted(found[0].inferences) == [2, 6]
    checked = json.loads(run_cli("check", path, "--format", "json").out)["findings"]
    assert [f.to_json() for f in diagnosis.findings] == checked


def test_a_ring_smaller_than_the_stream_keeps_the_task_lane_of_its_window(tmp_path: Path) -> None:
    session = replay(capture(tmp_path), ring=8)
    snap = session.snapshot()
    horizon = snap.ring[0].inference.start
    assert snap.events.tasks and all(t.end >= horizon for t in snap.events.tasks)
    sensor = [t for t in snap.events.tasks if t.task == SENSOR_TASK]
    assert sensor == []  # inferences 2 and 6 have left the ring of the last 8
