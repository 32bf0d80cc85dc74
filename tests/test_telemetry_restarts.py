"""A target that starts again inside a capture (a watchdog, a reflash during ``tracer live``): new
sessions on one time line, never loss.

The demo capture's own bytes, repeated, are a target that boots, runs 20 inferences and boots
again; streams built with the test-side encoder (``telemetry_encoder.py``) show each sign of a
restart on its own, and streams that only look like one at first sight.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from telemetry_encoder import TelemetryEncoder
from telemetry_streams import decode

from tracer.base.timeline import InferenceTimeline
from tracer.capture.reader import open_capture
from tracer.decode import ItmDecoder, decode_bytes
from tracer.telemetry.decoder import TelemetryDecoder

# Every test here runs on the compiled kernels and on the pure-Python reference (conftest.kernels).
pytestmark = pytest.mark.usefixtures("kernels")

ROOT = Path(__file__).resolve().parent.parent
CLOCK = 100_000_000


def demo_stream() -> bytes:
    """The ITM bytes of the demo capture (one boot of the QEMU demo)."""
    with open_capture(ROOT / "captures" / "demo.trace") as reader:
        return b"".join(chunk.data for chunk in reader.chunks())


def test_the_demo_booting_three_times_is_three_sessions_not_loss(tmp_path: Path, run_cli) -> None:
    stream = demo_stream()
    one = decode(stream)
    tl = decode(stream * 3)
    per_boot = len(one.inferences)
    # Nothing lost: the sequence starting again at 0 is the restart, not 200-odd missing records.
    assert not tl.loss.any, tl.loss
    assert per_boot == 20 and one.stream is not None and one.stream.sessions == 1
    assert tl.stream is not None and tl.stream.sessions == 3
    restarts = tl.stream.restarts
    assert [r.session for r in restarts] == [1, 2]
    assert [r.reason for r in restarts] == ["sequence_restarted"] * 2
    assert [r.record for r in restarts] == [one.stream.records, 2 * one.stream.records]
    first_header = next(r["offset"] for r in decode_bytes(stream).records() if r["type"] == "swit" and r["port"] == 24)
    assert [r.offset for r in restarts] == [len(stream) + first_header, 2 * len(stream) + first_header]
    # Inference numbers go on (the firmware counts from 0 after each boot) and all are complete.
    assert tl.inferences.number.tolist() == list(range(3 * per_boot))
    assert tl.inferences.complete.all()
    # One time line: sessions follow each other; each is the first boot's run, shifted.
    starts = tl.inferences.start
    assert (np.diff(starts) > 0).all()
    for k, restart in zip((1, 2), restarts):
        session = slice(k * per_boot, (k + 1) * per_boot)
        assert restart.cycle > tl.inferences.end[k * per_boot - 1]
        shift = int(starts[k * per_boot] - one.inferences.start[0])
        assert (tl.inferences.start[session] - shift == one.inferences.start).all()
        assert (tl.inferences.end[session] - shift == one.inferences.end).all()
        assert restart.cycle - shift == restart.target_cycle
    assert (np.diff(tl.spans.start) >= 0).all()
    assert np.array_equal(tl.spans.cycles, np.tile(one.spans.cycles, 3))
    # The report says how many sessions, and where each began.
    path = tmp_path / "three_boots.swo"
    path.write_bytes(stream * 3)
    result = run_cli("report", str(path), "--format", "json")
    capture = json.loads(result.out)["capture"]
    assert capture["sessions"] == 3 and capture["loss"]["lost_records"] == 0
    assert [r["offset"] for r in capture["restarts"]] == [r.offset for r in restarts]
    assert json.loads(result.out)["inferences"]["count"] == 3 * per_boot
    text = run_cli("report", str(path)).out
    assert f"sessions    3: the target restarted at byte {restarts[0].offset:,} (cycle {restarts[0].cycle:,}" in text
    assert "loss        none" in text


def _boot(enc: TelemetryEncoder, t0: int, inferences: int, first_number: int = 0, info: bool = True) -> int:
    """A boot: target info (optionally), then ``inferences`` inferences of two layers; returns the end time."""
    t = t0
    if info:
        enc.target_info(t, CLOCK, 1)
    for n in range(inferences):
        enc.inference_begin(t + 100, first_number + n)
        for layer in range(2):
            enc.layer_begin(t + 200 + 1000 * layer, layer)
            enc.layer_end(t + 900 + 1000 * layer, layer)
        enc.inference_end(t + 2500)
        t += 3000
    return t


def _numbers(tl: InferenceTimeline) -> list[int]:
    return tl.inferences.number.tolist()


def test_a_target_info_out_of_sequence_is_a_restart() -> None:
    """The firmware sends TARGET_INFO once per boot: one arriving with the sequence broken."""
    enc = TelemetryEncoder()
    _boot(enc, 1_000, 2)
    second = TelemetryEncoder(sequence=0)  # the new boot's sequence starts at 0
    _boot(second, 5_000_000, 2)  # its clock even went on (a warm reset): the sequence says it
    tl = decode(bytes(enc.out) + bytes(second.out))
    assert _numbers(tl) == [0, 1, 2, 3] and tl.inferences.complete.all() and not tl.loss.any
    assert tl.stream is not None and [r.reason for r in tl.stream.restarts] == ["target_info"]
    assert tl.stream.restarts[0].cycle == tl.stream.restarts[0].target_cycle == 5_000_000  # no shift needed


def test_time_going_back_is_a_restart_and_the_inference_in_progress_ends_there() -> None:
    """A record with the full time, earlier than the time so far: the target's clock started again.
    The inference it cut is incomplete, for that reason; the new session follows on the time line."""
    enc = TelemetryEncoder()
    end = _boot(enc, 1_000, 2)
    enc.inference_begin(end + 100)  # inference 2 begins, then the watchdog bites
    enc.layer_begin(end + 200, 0)
    _boot(enc, 50, 1, info=False)  # same sequence (a firmware that keeps it), time from 50 again
    tl = decode(bytes(enc.out))
    assert _numbers(tl) == [0, 1, 2, 3]
    assert tl.inferences.complete.tolist() == [True, True, False, True]
    assert tl.inferences.problems[2] == ("the target restarted during this inference",)
    assert (np.diff(tl.inferences.start[tl.inferences.start >= 0]) > 0).all()
    assert tl.stream is not None and [r.reason for r in tl.stream.restarts] == ["time_went_back"]
    restart = tl.stream.restarts[0]
    assert restart.target_cycle == 150 and restart.cycle == end + 200 + 1  # right after the last record
    assert tl.inferences.start[3] == restart.cycle and not tl.loss.any


def test_the_sequence_starting_again_with_the_time_behind_is_a_restart() -> None:
    """No TARGET_INFO after the boot (lost, or never sent) and a record without the full time first:
    sequence 0 out of turn and a time behind the last one."""
    enc = TelemetryEncoder()
    _boot(enc, 1_000_000, 2)
    second = TelemetryEncoder(sequence=0)
    second.layer_begin(300, 0xFFFF)  # the library's marker-cost calibration comes first
    second.layer_end(320, 0xFFFF)
    _boot(second, 400, 1, info=False)
    tl = decode(bytes(enc.out) + bytes(second.out))
    assert _numbers(tl) == [0, 1, 2] and tl.inferences.complete.all() and not tl.loss.any
    assert (np.diff(tl.inferences.start) > 0).all()
    assert tl.stream is not None and [r.reason for r in tl.stream.restarts] == ["sequence_restarted"]


def test_what_only_looks_like_a_restart_is_not_one() -> None:
    """Lost records whose gap ends at sequence 0 with the time going on are loss; TARGET_INFO sent
    again in sequence is not a boot; an idle time longer than 2^32 cycles is a time jump."""
    enc = TelemetryEncoder(sequence=200)
    end = _boot(enc, 1_000, 1)
    enc.sequence = 0  # 255 - 200 - ... records lost: the gap ends at 0
    lost = (0 - (200 + 1 + 6)) & 0xFF
    end = _boot(enc, end + 10, 1, first_number=1, info=False)
    enc.target_info(end + 5, CLOCK, 1)  # sent again, in sequence
    _boot(enc, end + (1 << 33), 1, first_number=2, info=False)  # idle for 2^33 cycles
    tl = decode(bytes(enc.out))
    assert tl.loss.lost_records == lost and _numbers(tl) == [0, 1, 2]
    assert tl.stream is not None and tl.stream.time_reanchored == 1
    assert tl.stream.restarts == () and tl.stream.sessions == 1


def test_take_and_discard_keep_the_sessions() -> None:
    """A live session (or the streaming report) takes rows and forgets them as it goes: sessions,
    unique numbers and the time line come out the same."""
    stream = demo_stream() * 3
    itm = ItmDecoder(hold_timestamps=False)
    decoder = TelemetryDecoder()
    numbers: list[int] = []
    starts: list[int] = []
    held = 0
    for i in range(0, len(stream), 8192):
        decoder.feed(itm.feed(stream[i : i + 8192]))
        rows = decoder.take()
        numbers += rows.inferences.number.tolist()
        starts += rows.inferences.start.tolist()
        decoder.discard_taken()
        held = max(held, decoder.held_rows["inferences"])
    decoder.feed(itm.finish())
    decoder.finish()
    numbers += decoder.take().inferences.number.tolist()
    assert numbers == list(range(60)) and (np.diff(starts) > 0).all()
    assert not decoder.loss.any
    stream_facts = decoder.timeline().stream
    assert stream_facts is not None and [r.session for r in stream_facts.restarts] == [1, 2]
    assert held <= 4  # rows do not pile up
