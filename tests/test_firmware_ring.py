"""The trc ring and the records for work-aware timing and RTOS tasks, on the host.

The library is built with the host gcc (``make host``) and linked with the programs in
``tests/firmware_harness`` (``harness_ring.c``, ``harness_records.c``); their bytes are decoded
by the telemetry decoder. FreeRTOS is mimicked the way its tasks.c expands the trace macros, and
Zephyr's hooks are compiled against a stand-in ``<zephyr/kernel.h>`` with Zephyr's signatures
(neither RTOS's sources are here); the register blocks of the Armv8.1-M PMU and the DWT are
arrays laid out as the architecture's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from firmware_host import HARNESS, link_harness, printed_facts, run
from telemetry_streams import decode

from tracer.base.timeline import InferenceTimeline
from tracer.telemetry.tasks import cpu_share

RING_BYTES = 1024  # the library's default TRC_RING_BYTES
MASK32 = 0xFFFFFFFF


def _build(host_lib: Path, out: Path, *sources: str) -> Path:
    return link_harness(
        host_lib, out / Path(sources[0]).stem, *(HARNESS / s for s in sources), include=(HARNESS / "stubs",)
    )


@pytest.fixture(scope="module")
def ring(host_lib: Path, tmp_path_factory: pytest.TempPathFactory):
    """Run ``harness_ring MODE``: (bytes, facts) per mode."""
    tmp = tmp_path_factory.mktemp("ring")
    exe = _build(host_lib, tmp, "harness_ring.c")

    def run_mode(mode: str) -> tuple[bytes, dict[str, str]]:
        out = tmp / f"{mode}.bin"
        done = run([str(exe), mode, str(out)])
        return out.read_bytes(), printed_facts(done.stdout)

    return run_mode


@pytest.fixture(scope="module")
def records(host_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[InferenceTimeline, dict[str, str]]:
    """``harness_records`` decoded: (timeline, facts)."""
    tmp = tmp_path_factory.mktemp("records")
    exe = _build(host_lib, tmp, "harness_records.c", "zephyr_hooks.c")
    out = tmp / "records.bin"
    done = run([str(exe), str(out)])
    return decode(out.read_bytes()), printed_facts(done.stdout)


# -- the ring -------------------------------------------------------------------------------------
def test_a_full_ring_drops_whole_records_and_the_host_sees_the_gap(ring) -> None:
    """Deferred drain, 100 layer records into 1024 bytes: the ones that fit go out whole after the
    flush, the rest are dropped and counted; the inference they belong to is incomplete with the
    exact number lost, and the next inference (complete) carries the firmware's drop count."""
    data, facts = ring("full")
    sync_and_begin = 10 + 20
    fit = (RING_BYTES - sync_and_begin) // 15
    assert int(facts["pending_before_flush"]) == sync_and_begin + 15 * fit
    assert int(facts["dropped_before_flush"]) == 100 - fit == int(facts["dropped"])
    assert facts["left_after_flush"] == "0"
    tl = decode(data)
    assert tl.loss.damaged_records == 0 and tl.loss.orphan_packets == 0  # nothing cut on the wire
    assert tl.loss.lost_records == 100 - fit and tl.stream.firmware_dropped_records == 100 - fit
    assert tl.inferences.complete.tolist() == [False, True]
    assert tl.inferences.problems[0] == (f"{100 - fit} record(s) lost (sequence gap)",)
    assert len(tl.spans.where(tl.spans.inference == 0)) == fit // 2  # the pairs that made it


def test_more_than_255_drops_in_a_row_still_show_a_gap(ring) -> None:
    """300 drops in a row: sequence numbers advance for 255 of them only, so the gap is never a
    multiple of 256 (invisible); the firmware's DROPPED record gives the true total."""
    data, facts = ring("long_drop")
    assert facts["dropped"] == "300"
    tl = decode(data)
    assert tl.loss.lost_records == 255 and tl.stream.firmware_dropped_records == 300
    assert tl.inferences.complete.tolist() == [False, True]
    assert [m.id for m in tl.marks] == list(range(RING_BYTES // 15))


def test_console_text_that_finds_the_ring_full_is_counted(ring) -> None:
    """Text has no sequence number: when even a drain cannot make room, its bytes are counted."""
    _, facts = ring("text_full")
    assert facts["text_dropped"] == "5"  # one 4-character packet: header byte + 4
    assert int(facts["dropped"]) == 100 - RING_BYTES // 15


def test_a_consumer_taking_spans_sends_exactly_what_the_writer_sends(ring) -> None:
    """A DMA or TX-empty interrupt taking the ring in spans of at most 7 bytes (records cut
    anywhere, one span sent only in part and offered again, one span out at a time) puts the
    same bytes on the wire as the software writer; it was kicked when records were waiting."""
    writer, _ = ring("writer")
    consumer, facts = ring("consumer")
    assert consumer == writer
    assert "second_span_while_out" not in facts
    assert int(facts["kicks"]) > 0 and facts["pending"] == "0"
    tl = decode(consumer)
    assert tl.inferences.complete.tolist() == [True] and len(tl.spans) == 5 and not tl.loss.any


def test_records_emitted_inside_the_transport_or_the_clock_never_interleave(ring) -> None:
    """A record emitted while another is being sent waits for it; one emitted between another's
    clock read and its reservation comes first and lends that record its time, so the wire stays
    in time order."""
    data, _ = ring("nested")
    tl = decode(data)
    assert not tl.loss.any and tl.inferences.complete.tolist() == [True]
    marks = {m.id: m.cycle for m in tl.marks}
    spans = tl.spans
    assert spans.end[0] < marks[0x1E57] < spans.start[1]  # sent after the layer end it interrupted
    assert spans.end[1] == marks[0xC10C]  # the layer end stamped no earlier than the mark before it
    assert np.all(np.diff([m.cycle for m in tl.marks]) > 0)


# -- work counts, CPU counters, tasks ---------------------------------------------------------------
def test_the_documented_npu_pmu_flag_marks_the_pmu_simulated(records) -> None:
    """trc_pmu_config(..., TRC_INFO_NPU_PMU_SIMULATED) labels the NPU PMU simulated, on a target
    whose own info does not say so."""
    tl, _ = records
    assert tl.labels.get("npu_pmu") == "simulated"


def test_work_counts_and_pmu_counters_land_on_their_spans(records) -> None:
    """INST_RETIRED from a chained pair of 16-bit counters (across a carry) and the extra event,
    per span; the work count on the span that reported it."""
    tl, facts = records
    assert facts["pmu_events"] == "2"
    # Even counters count the events, odd ones CHAIN (0x1E); counting on, event counters reset.
    assert facts["pmu_evtyper"] == "8,1e,24,1e" and facts["cntenset"] == "f" and facts["ctrl"] == "3"
    sf = tl.span_facts
    assert sf is not None and sf.malformed == 0
    rows = sf.rows_for(tl.spans)
    first = tl.spans.inference == 0
    assert sf.counter("INST_RETIRED")[rows[first]].tolist() == [0x20010 - 0x1FFF0, 0]
    assert sf.counter("STALL_BACKEND")[rows[first]].tolist() == [75, 0]
    assert sf.work[rows].tolist() == [-1, 17, -1]


def test_dwt_counters_give_their_change_modulo_256(records) -> None:
    """DWT counters are 8 bits: the records hold their values at begin and end, the host gives
    the change modulo 256 (named so), never a total it cannot know."""
    tl, facts = records
    assert facts["dwt_counters"] == "5" and int(facts["dwt_ctrl"], 16) == 0x1F << 17
    sf = tl.span_facts
    row = sf.rows_for(tl.spans.where(tl.spans.inference == 1))[0]
    assert sf.counter("DWT_CPI_MOD256")[row] == (4 - 250) % 256
    assert sf.counter("DWT_LSU_MOD256")[row] == 2
    assert "INST_RETIRED" in sf.counter_names and sf.counter("INST_RETIRED")[row] == -1


def test_freertos_and_zephyr_hooks_make_the_task_lane(records) -> None:
    """traceTASK_CREATE / traceTASK_SWITCHED_IN / traceTASK_DELETE and Zephyr's user hooks give
    named task slices; the sensor task's slice inside layer 1 is that span's preemption."""
    tl, facts = records
    infer, sensor, zthread = (int(facts[k]) & MASK32 for k in ("tcb_infer", "tcb_sensor", "zthread"))
    lane = [(s.task, s.name) for s in tl.tasks]
    assert lane == [(infer, "inference"), (sensor, "sensor"), (infer, "inference"), (zthread, "zephyr_main")]
    assert all(s.complete for s in tl.tasks)
    assert tl.tasks[-1].end == int(facts["clock"])  # the last slice ends with the capture's last record
    assert tl.task_names == {infer: "inference", sensor: "sensor", zthread: "zephyr_main"}
    sf = tl.span_facts
    rows = sf.rows_for(tl.spans)
    assert sf.task[rows].tolist() == [infer, infer, infer]
    took = dict(zip(sf.task_ids, sf.preempted[rows[1]].tolist()))
    assert took[sensor] == tl.tasks[1].cycles == 1000 + 10 and took[infer] == 0
    assert sf.preempted_cycles()[rows].tolist() == [0, took[sensor], 0]
    share = cpu_share(tl.tasks)
    assert sum(s.cycles for s in share.values()) == tl.tasks[-1].end - tl.tasks[0].start
    assert share[sensor].share == pytest.approx(1010 / (tl.tasks[-1].end - tl.tasks[0].start))


# -- loss and the task lane (streams written by the Python encoder) ---------------------------------
def _task_stream(lose_inside: bool, lose_between: bool) -> bytes:
    from telemetry_encoder import TelemetryEncoder

    from tracer.telemetry.wire import RecordType, TimeSource

    enc = TelemetryEncoder()
    enc.target_info(0, 1_000_000, TimeSource.DWT)
    enc.record(RecordType.TASK_INFO, 5, [0xA, 1 | (4 << 16), int.from_bytes(b"main", "little")])
    enc.record(RecordType.TASK_INFO, 6, [0xB, 7 | (3 << 16), int.from_bytes(b"irq", "little")])
    enc.record(RecordType.TASK_SWITCH, 10, [0xA])
    t = 100
    for n in range(3):
        enc.inference_begin(t)
        enc.layer_begin(t + 10, 0)
        enc.record(RecordType.TASK_SWITCH, t + 20, [0xB])
        if lose_inside and n == 1:
            enc.sequence = (enc.sequence + 1) & 0xFF  # a record lost inside inference 1
        enc.record(RecordType.TASK_SWITCH, t + 50, [0xA])
        enc.layer_end(t + 60, 0)
        enc.inference_end(t + 70)
        if lose_between and n == 1:
            enc.sequence = (enc.sequence + 1) & 0xFF  # lost between inferences: no inference shows it
        t += 100
    enc.time_sync(t)
    return bytes(enc)


def test_slices_that_may_hide_a_lost_switch_are_incomplete() -> None:
    """A task slice overlapping an inference with lost records is incomplete and left out of the
    CPU shares; the complete ones still add up."""
    tl = decode(_task_stream(lose_inside=True, lose_between=False))
    assert tl.inferences.complete.tolist() == [True, False, True]
    bad = [(s.start, s.end) for s in tl.tasks if not s.complete]
    assert bad == [(150, 220), (220, 250), (250, 320)]  # inference 1 runs from 200 to 270
    share = cpu_share(tl.tasks)
    assert sum(s.cycles for s in share.values()) == sum(s.cycles for s in tl.tasks if s.complete)
    took = tl.span_facts.preempted_cycles()[tl.span_facts.rows_for(tl.spans)]
    assert took.tolist() == [30, 30, 30]  # task 0xB, 20..50 into each layer


def test_loss_no_inference_shows_makes_every_slice_incomplete() -> None:
    """Records lost between inferences cannot be placed: no slice is trusted."""
    tl = decode(_task_stream(lose_inside=False, lose_between=True))
    assert tl.loss.lost_records == 1 and tl.inferences.complete.all()
    assert tl.tasks and not any(s.complete for s in tl.tasks) and cpu_share(tl.tasks) == {}
