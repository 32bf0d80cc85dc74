"""The demo's RTOS tasks, its data-dependent layer and the masked time of the trc ring, measured
on QEMU mps3-an547 (Cortex-M55) with the firmware built by arm-none-eabi-gcc.

- task-preemption: a real context switch through PendSV puts the sensor task inside layer 2 in
  inferences 2 and 6; the host's task lane and per-span preemption account for every cycle.
- data-dependent: the detection post-process (layer 10) reports its work; more work, more time.
- masked time: the measurement build (``make masked``) under ``-icount shift=5``, where SysTick
  advances 1.024 ticks per instruction, reports the longest masked section of each kind.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from demo_runs import record_demo

from tracer.base.timeline import InferenceTimeline
from tracer.pipeline.capture import decode_capture
from tracer.telemetry.tasks import cpu_share

pytestmark = pytest.mark.qemu

INFERENCES = 8
TICKS_PER_INSTRUCTION_SHIFT5 = 32e-9 * 32e6  # -icount shift=5: 32 ns per instruction, SysTick 32 MHz
MASKED_TARGET = 50  # instructions with interrupts masked per record, at most


def _record(elf: Path, scenario: str, path: Path, inferences: int = INFERENCES, shift: int = 0) -> InferenceTimeline:
    assert record_demo(elf, inferences, scenario, path, icount_shift=shift) == 0
    return decode_capture(path).timeline


@pytest.fixture(scope="module")
def preemption(
    qemu_build: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[InferenceTimeline, InferenceTimeline]:
    """The task-preemption scenario, recorded twice."""
    tmp = tmp_path_factory.mktemp("tasks")
    elf = qemu_build / "demo" / "tracer_demo.elf"
    return _record(elf, "task-preemption", tmp / "a.trace"), _record(elf, "task-preemption", tmp / "b.trace")


def test_the_sensor_task_preempts_layer_2_through_a_real_context_switch(preemption) -> None:
    """Two named tasks; the sensor task holds the CPU exactly inside layer 2 of inferences 2 and
    6, right after the timer interrupt that woke it; the layer's extra time is the sensor's slice
    plus the interrupt, to the cycle."""
    tl, _ = preemption
    assert not tl.loss.any and tl.inferences.complete.all()
    assert sorted(tl.task_names.values()) == ["inference", "sensor"]
    sensor = [s for s in tl.tasks if s.name == "sensor"]
    assert len(sensor) == 2 and all(s.complete for s in tl.tasks)
    spans, facts = tl.spans, tl.span_facts
    rows = facts.rows_for(spans)
    pw2 = spans.layer == 2
    took = facts.preempted_cycles()[rows]
    assert np.flatnonzero(took > 0).tolist() == np.flatnonzero(pw2 & np.isin(spans.inference, [2, 6])).tolist()
    for s in sensor:
        inside = np.flatnonzero(pw2 & (spans.start <= s.start) & (s.end <= spans.end))
        assert len(inside) == 1
        row = int(inside[0])
        assert took[row] == s.cycles  # no interrupt ran inside the sensor's slice
        timer = [i for i in tl.isrs if spans.start[row] <= i.start < s.start]
        assert [i.name for i in timer] == ["S32K_TIMER"] and s.start - timer[0].end < 200  # woken by it
        own = spans.cycles[row] - spans.isr_cycles[row] - took[row]
        others = spans.cycles[pw2 & ~np.isin(spans.inference, [2, 6])]
        assert abs(own - np.median(others)) <= 20  # PendSV and the switch records: a few dozen cycles
    assert set(facts.task[rows].tolist()) == {next(k for k, v in tl.task_names.items() if v == "inference")}
    share = cpu_share(tl.tasks)
    assert sum(x.cycles for x in share.values()) == tl.tasks[-1].end - tl.tasks[0].start
    assert 0 < share[sensor[0].task].share < 0.05


def test_task_preemption_runs_are_cycle_identical(preemption) -> None:
    """Two runs give the same spans, task slices and preemption to the cycle."""
    a, b = preemption
    assert a.tasks == b.tasks
    for column in ("inference", "layer", "start", "end"):
        assert np.array_equal(getattr(a.spans, column), getattr(b.spans, column)), column
    assert np.array_equal(a.span_facts.preempted, b.span_facts.preempted)


def test_the_post_process_reports_its_work_and_takes_longer_with_more(qemu_build: Path, tmp_path: Path) -> None:
    """Layer 10 (detect10) reports candidates on every span; frames with an object have more of
    them than the frames around them; more work never takes less time; and the layer is a
    fraction of a percent of the inference."""
    tl = _record(qemu_build / "demo" / "tracer_demo.elf", "data-dependent", tmp_path / "dd.trace", inferences=9)
    assert tl.layers[10].name == "detect10" and tl.layers[10].op == "DETECTION_POSTPROCESS"
    spans = tl.spans.where(tl.spans.layer == 10)
    work = tl.span_facts.work[tl.span_facts.rows_for(spans)]
    assert len(spans) == 9 and (work >= 0).all()
    with_object = np.isin(spans.inference, [2, 5, 8])
    assert work[with_object].min() > np.median(work[~with_object])
    order = np.lexsort((spans.cycles, work))
    assert np.all(np.diff(spans.cycles[order]) >= 0)  # sorted by work, the cycles do not go down
    share = spans.cycles / tl.inferences.latency[np.searchsorted(tl.inferences.number, spans.inference)]
    assert share.max() < 0.005 and np.median(share) < 0.0025


def test_masked_time_per_record_is_at_most_50_instructions(qemu_build: Path, tmp_path: Path) -> None:
    """The measurement build runs the task-preemption scenario (interrupts, a task switch, every
    record kind), fills the ring on purpose to take the drop path, then drains on emit for a
    while: the longest reservation plus the longest commit, and the two instructions that mask
    and unmask, stay within 50 instructions in both drain modes."""
    tl = _record(qemu_build / "demo" / "tracer_demo_masked.elf", "task-preemption", tmp_path / "m.trace", shift=5)
    text = "\n".join(c.text for c in tl.console)
    ticks = {(m, s): int(t) for m, s, t in re.findall(r"MASKED drain=(\w+) site=(\w+) longest_ticks=(\d+)", text)}
    sections = {
        (m, s): int(n)
        for m, s, n in re.findall(r"MASKED drain=(\w+) site=(\w+) longest_ticks=\d+ sections=(\d+)", text)
    }
    drops = int(re.search(r"drops_measured=(\d+)", text).group(1))
    assert drops > 0 and sections[("on_emit", "reserve")] > 100
    # Every record of the capture, and every dropped one, went through one reservation.
    assert sections[("deferred", "reserve")] + sections[("on_emit", "reserve")] == tl.stream.records + drops

    def instructions(mode: str, site: str) -> float:
        return (ticks[(mode, site)] - ticks[("deferred", "empty")]) / TICKS_PER_INSTRUCTION_SHIFT5

    for mode in ("deferred", "on_emit"):
        per_record = instructions(mode, "reserve") + instructions(mode, "commit") + 2
        assert per_record <= MASKED_TARGET, (mode, per_record)
        assert 10 < instructions(mode, "reserve") <= MASKED_TARGET  # measured something, a plausible amount
    for site in ("raw", "drain"):
        assert instructions("deferred", site) <= MASKED_TARGET
