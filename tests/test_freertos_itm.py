"""FreeRTOS task events in another firmware's ITM encoding (the Novakov corpus traces) become the
task lane: the slices equal the ones the test-side interpreter of that protocol
(``novakov_rtos_events``, checked against the traces' published expected output) gives."""

from __future__ import annotations

import struct
from pathlib import Path

import novakov_rtos_events as rtos
import pytest
from telemetry_encoder import TelemetryEncoder

from tracer.decode.itm import ItmDecoder, decode_bytes
from tracer.pipeline.capture import decode_capture
from tracer.telemetry.freertos_itm import TIME_LABEL, FreeRtosItmReader
from tracer.telemetry.tasks import cpu_share

NOVAKOV = Path(__file__).resolve().parent / "data" / "corpus" / "novakov_rtos_trace"
TRACES = sorted(p.stem for p in NOVAKOV.glob("*.trace"))


def oracle_slices(data: bytes) -> list[tuple[int, int, int]]:
    """(task, start, end) from the test-side interpreter: switched in until switched out or the
    next switch in."""
    out, current = [], None
    for e in rtos.rtos_events(rtos.messages(decode_bytes(data))):
        if e.name == "TaskSwitchedIn":
            if current:
                out.append((*current, e.timestamp))
            current = (e.fields[0][1].address, e.timestamp)
        elif e.name == "TaskSwitchedOut" and current and current[0] == e.fields[0][1].address:
            out.append((*current, e.timestamp))
            current = None
    return out


@pytest.mark.parametrize("name", TRACES)
def test_corpus_traces_get_their_task_lane(name: str) -> None:
    """decode_capture gives every trace the interpreter's slices, named; the idle task has most
    of the CPU in these demos; shares add up to 1; the time unit is said."""
    path = NOVAKOV / f"{name}.trace"
    tl = decode_capture(path).timeline
    expected = oracle_slices(path.read_bytes())
    assert [(s.task, s.start, s.end) for s in tl.tasks] == expected
    if not expected:  # itm_time_tester has no RTOS records
        assert "tasks" not in tl.labels
        return
    assert tl.labels["tasks"] == TIME_LABEL and all(s.complete for s in tl.tasks)
    assert all(s.name for s in tl.tasks) and "IDLE" in tl.task_names.values()
    share = cpu_share(tl.tasks)
    assert next(iter(share.values())).name == "IDLE"
    assert sum(s.share for s in share.values()) == pytest.approx(1.0)


def test_any_split_gives_the_same_lane() -> None:
    """Fed in 97-byte pieces, the reader gives the slices of the whole stream."""
    data = (NOVAKOV / "queue_demo.trace").read_bytes()
    reader, decoder = FreeRtosItmReader(), ItmDecoder(hold_timestamps=False)
    for i in range(0, len(data), 97):
        reader.feed(decoder.feed(data[i : i + 97]))
    reader.feed(decoder.finish())
    assert [(s.task, s.start, s.end) for s in reader.slices()[0]] == oracle_slices(data)


def _swit(port: int, value: int) -> bytes:
    return struct.pack("<BI", (port << 3) | 3, value)


def test_an_overflow_inside_a_slice_makes_it_incomplete() -> None:
    """A switch may hide behind lost trace data: the slice holding the overflow is incomplete."""
    enc = TelemetryEncoder()
    for task in (0x2000_0100, 0x2000_0200, 0x2000_0100):
        enc.out += _swit(3, 0xBE01) + _swit(2, task) + _swit(3, 0xEF01)
        enc.local_timestamp(100)
        if task == 0x2000_0200:
            enc.overflow()
            enc.local_timestamp(50)
    reader, decoder = FreeRtosItmReader(), ItmDecoder(hold_timestamps=False)
    reader.feed(decoder.feed(bytes(enc)))
    reader.feed(decoder.finish())
    slices, _ = reader.slices()
    assert [(s.task, s.start, s.end, s.complete) for s in slices] == [
        (0x2000_0100, 100, 200, True),
        (0x2000_0200, 200, 350, False),
    ]
