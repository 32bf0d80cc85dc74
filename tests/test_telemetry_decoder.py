"""The telemetry decoder on streams with known content: values, time, splits, incremental use."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from telemetry_encoder import SlotSpec, TelemetryEncoder, encode_inferences
from telemetry_streams import CLOCK_HZ, build_stream, complete_and_exact, decode

from tracer.base.timeline import Engine
from tracer.decode.itm import ItmDecoder, decode_bytes
from tracer.telemetry.decoder import TelemetryDecoder, _first_rows
from tracer.telemetry.tables import last_row
from tracer.telemetry.wire import RecordType, TimeSource, header_word

# Every test here runs on the compiled kernels and on the pure-Python reference (conftest.kernels).
pytestmark = pytest.mark.usefixtures("kernels")


def test_clean_stream_decodes_exactly() -> None:
    """Every inference complete, every span and time as encoded; descriptions, PMU and memory too."""
    stream = build_stream(inferences=5, layers=4)
    tl = decode(stream.data)
    assert tl.clock_hz == CLOCK_HZ and tl.clock_source == "dwt"
    assert tl.inferences.number.tolist() == [0, 1, 2, 3, 4]
    assert tl.inferences.complete.all() and not tl.loss.any
    assert complete_and_exact(tl, stream.truth) == dict.fromkeys(range(5), True)
    assert tl.layers[0].name == "layer0" and tl.layers[0].engine is Engine.NPU and tl.layers[1].op == "ADD"
    assert tl.spans.pmu_names == ("PMU_CYCLES", "NPU_ACTIVE", "AXI0_RD_DATA_BEAT_RECEIVED")
    npu = tl.spans.where(tl.spans.layer == 2)
    assert npu.pmu[:, 0].tolist() == [902] * 5 and npu.pmu[:, 1].tolist() == [802] * 5
    cpu = tl.spans.where(tl.spans.layer == 1)
    assert (cpu.pmu == -1).all()  # no snapshot: no PMU values, not zeros
    assert tl.inferences.input_crc.tolist() == [0xABCD0000 + n for n in range(5)]
    assert tl.arena[0].used == 4096 and tl.arena[0].size == 8192
    assert [s.high_water for s in tl.stacks] == [1000, 1001, 1002, 1003, 1004]
    assert len(tl.npu_jobs) == 10 and all(j.end > j.start for j in tl.npu_jobs)
    assert [c.text for c in tl.console] == ["boot", "done"]
    assert tl.target.marker_cost_cycles == 12.0


@pytest.mark.parametrize("seed", range(5))
def test_any_split_of_the_bytes_gives_the_same_timeline(seed: int) -> None:
    """Feeding the stream in random pieces (down to one byte) changes nothing."""
    stream = build_stream(inferences=4, layers=3, seed=seed)
    whole = decode(stream.data)
    rng = random.Random(seed)
    splits = rng.sample(range(1, len(stream.data)), k=min(200, len(stream.data) - 1))
    pieces = decode(stream.data, splits)
    for column in ("number", "start", "end", "complete", "input_crc", "output_crc"):
        assert np.array_equal(getattr(whole.inferences, column), getattr(pieces.inferences, column))
    for column in ("inference", "layer", "start", "end", "complete", "pmu"):
        assert np.array_equal(getattr(whole.spans, column), getattr(pieces.spans, column))
    assert [c.text for c in whole.console] == [c.text for c in pieces.console]


def test_incremental_use_publishes_inferences_as_they_close() -> None:
    """take() hands each inference out once, only after its end record arrived."""
    stream = build_stream(inferences=3, layers=2)
    itm = ItmDecoder(hold_timestamps=False)
    decoder = TelemetryDecoder()
    end_of_first = stream.record_bytes(stream.records_of(0, RecordType.INFERENCE_END)[0])[1]
    decoder.feed(itm.feed(stream.data[: end_of_first - 1]))
    assert len(decoder.take().inferences) == 0 and len(decoder.timeline().inferences) == 0
    # One byte past the end record: its last word ends in zero bytes, which the ITM decoder
    # holds until it knows they do not start a sync packet.
    decoder.feed(itm.feed(stream.data[end_of_first - 1 : end_of_first + 1]))
    first = decoder.take()
    assert first.inferences.number.tolist() == [0] and first.inferences.complete.all()
    spans = first.spans
    assert list(zip(spans.layer.tolist(), spans.cycles.tolist())) == [
        (layer, e - s) for layer, s, e in stream.truth[0].spans
    ]
    decoder.feed(itm.feed(stream.data[end_of_first + 1 :]))
    assert decoder.take().inferences.number.tolist() == [1, 2]
    assert len(decoder.take().inferences) == 0
    decoder.finish()
    assert len(decoder.timeline().inferences) == 3


def test_open_inference_at_the_end_is_incomplete() -> None:
    """A capture that stops inside an inference reports it, incomplete, at finish()."""
    stream = build_stream(inferences=2, layers=3)
    last_layer_end = stream.record_bytes(stream.records_of(1, RecordType.LAYER_END)[1])[1]
    tl = decode(stream.data[:last_layer_end])
    assert tl.inferences.complete.tolist() == [True, False]
    assert tl.inferences.problems[1] == ("the capture ended during this inference",)
    assert len(tl.spans.where(tl.spans.inference == 1)) == 2 and not tl.spans.complete[-1]


def test_32_bit_wrap_and_long_idle_between_inferences() -> None:
    """Records carry 32-bit times: the decoder unwraps them; inference begins re-anchor 64-bit time,
    so an idle time longer than 2^32 cycles between inferences is exact too."""
    enc = TelemetryEncoder()
    enc.target_info((1 << 32) - 500, CLOCK_HZ, TimeSource.DWT)
    starts = [(1 << 32) - 300, (5 << 32) + 123, (5 << 32) + 0xFFFF_FF00]
    for t in starts:
        enc.inference_begin(t)
        enc.layer_begin(t + 50, 0)
        enc.layer_end(t + 50 + 700, 0)  # crosses a 2^32 boundary for the first and last
        enc.inference_end(t + 800)
    tl = decode(bytes(enc))
    assert tl.inferences.start.tolist() == starts
    assert tl.inferences.latency.tolist() == [800, 800, 800]
    assert tl.spans.cycles.tolist() == [700, 700, 700]
    assert tl.stream.time_reanchored == 1  # the idle time of more than 2^32 cycles


def test_firmware_restart_keeps_inference_numbers_unique() -> None:
    """Numbers going back (the board reset) continue after the last one instead of colliding."""
    first = build_stream(inferences=3, layers=2)
    second = build_stream(inferences=2, layers=2, start=10_000_000)
    tl = decode(first.data + second.data)
    assert tl.inferences.number.tolist() == [0, 1, 2, 3, 4]
    assert tl.inferences.complete.all()
    assert len(set(tl.spans.inference.tolist())) == 5


def test_calibration_pairs_and_reserved_mark_ids_are_not_layers() -> None:
    """trc_measure_marker_cost() markers (layer 0xFFFF) never become spans."""
    enc = TelemetryEncoder()
    for i in range(5):
        enc.layer_begin(100 + 10 * i, 0xFFFF)
        enc.layer_end(105 + 10 * i, 0xFFFF)
    enc.mark(200, 0xFFFFFF01)
    enc.mark(201, 42)
    tl = decode(bytes(enc))
    assert len(tl.spans) == 0 and len(tl.inferences) == 0
    assert tl.stream.calibration_pairs == 5
    assert [m.id for m in tl.marks] == [42]


def test_unknown_record_types_are_kept_for_later_stages() -> None:
    """A checked record of a type this decoder does not assemble (an ISR mark) is kept as it is."""
    enc = TelemetryEncoder()
    enc.inference_begin(1000)
    enc.record(RecordType.ISR_ENTER, 1100, [15])
    enc.record(0x3E, 1150, [1, 2, 3])
    enc.inference_end(1200)
    tl = decode(bytes(enc))
    assert tl.inferences.complete.tolist() == [True]
    assert [(r.type, r.cycle, r.inference, r.words) for r in tl.records] == [
        (RecordType.ISR_ENTER, 1100, 0, (15,)),
        (0x3E, 1150, 0, (1, 2, 3)),
    ]


def test_records_with_extra_words_are_accepted() -> None:
    """Later wire versions may append words: known types with more words still decode."""
    enc = TelemetryEncoder()
    enc.record(RecordType.ARENA, 50, [100, 200, 7, 8])
    tl = decode(bytes(enc))
    assert tl.arena[0].used == 100 and tl.arena[0].size == 200 and not tl.loss.any


def test_bulk_encoder_matches_the_record_encoder() -> None:
    """encode_inferences (the benchmark's) writes the bytes TelemetryEncoder writes."""
    template = [
        SlotSpec(RecordType.INFERENCE_BEGIN, 0, ("hi", "inference")),
        SlotSpec(RecordType.LAYER_BEGIN, 10, (1 << 16,)),
        SlotSpec(RecordType.LAYER_END, 500, (0,), jitter=13),
        SlotSpec(RecordType.INFERENCE_END, 600, ("inference", 0)),
    ]
    bulk = encode_inferences(template, 40, 1000, start=(1 << 32) - 7000, first_number=3, first_sequence=250)
    enc = TelemetryEncoder(sequence=250)
    for n in range(40):
        base = (1 << 32) - 7000 + n * 1000
        enc.inference_begin(base, 3 + n)
        enc.layer_begin(base + 10, 0, 1)
        enc.layer_end(base + 500 + (n * 7919) % 14, 0)
        enc.inference_end(base + 600, 0, 3 + n)
    assert bulk == bytes(enc)


def test_header_layout() -> None:
    """Type bits 0-5, count 6-11, sequence 12-19, check 20-31 (the C library's numbers)."""
    head = header_word(RecordType.LAYER_END, 0x5A, [1, 2])
    assert head & 0x3F == 0x0B and (head >> 6) & 0x3F == 2 and (head >> 12) & 0xFF == 0x5A
    assert header_word(RecordType.LAYER_END, 0x5A, [1, 3]) >> 20 != head >> 20
    # One bit flipped anywhere in the payload always changes the check.
    for bit in range(64):
        words = [1 ^ (1 << bit) if bit < 32 else 1, 2 ^ (1 << (bit - 32)) if bit >= 32 else 2]
        assert header_word(RecordType.LAYER_END, 0x5A, words) >> 20 != head >> 20, bit


def test_text_packets_of_every_size() -> None:
    """Console text arrives in 1, 2 and 4 byte packets; lines split on newline, CR dropped."""
    enc = TelemetryEncoder()
    enc.text("ab\r\ncde")
    enc.text("f\n")
    tl = decode(bytes(enc))
    assert [c.text for c in tl.console] == ["ab", "cdef"]
    packets = decode_bytes(bytes(enc))
    assert sorted(set(packets.c.tolist())) == [1, 2, 4]


def test_per_layer_records_behave_like_lists() -> None:
    """Cache operations, NPU jobs, arena and stack samples: len, index, slice, iterate, compare."""
    stream = build_stream(inferences=3, layers=4)
    tl = decode(stream.data)
    jobs = tl.npu_jobs
    assert len(jobs) == 6 and jobs[-1] == list(jobs)[5] and jobs[1:3] == list(jobs)[1:3]
    assert [j.inference for j in jobs] == [0, 0, 1, 1, 2, 2] and [j.job for j in jobs[:2]] == [0, 2]
    with pytest.raises(IndexError):
        jobs[6]
    assert tl.stacks[0].stack == "main" and tl.arena[0].inference is None
    assert len(tl.cache_ops) == 0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 70), min_size=1, max_size=20_000),
    st.sets(st.integers(0, 70), max_size=8),
    st.booleans(),
)
def test_first_rows_of_new_layers(values: list[int], known: set[int], late: bool) -> None:
    """The layers a timeline learns from its spans, each with its first span row, as np.unique says
    (``late``: every first occurrence after the stretches read first)."""
    column = np.array(values, np.int64)
    if late:
        column = np.concatenate([np.zeros(10_000, np.int64), column])
    indices, first = np.unique(column, return_index=True)
    expected = [(v, at) for v, at in zip(indices.tolist(), first.tolist()) if v not in known]
    assert sorted(_first_rows(column, known)) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=300), st.integers(0, 3), st.integers(0, 5_000))
def test_last_row_is_the_last_that_holds(values: list[int], wanted: int, tail: int) -> None:
    """What ``discard_taken`` looks for from the end (in ever longer stretches) is the last row
    where it holds, however far from the end (``tail`` rows where it does not), or -1."""
    column = np.array(values + [9] * tail, np.int64)
    expected = max((i for i, v in enumerate(values) if v == wanted), default=-1)
    assert last_row(column, lambda part: part == wanted) == expected


@given(
    time=st.integers(-(1 << 63), (1 << 63) - 1),
    offset=st.integers(-(1 << 63), (1 << 63) - 1),
)
def test_end_time_wraps_at_64_bits_without_a_warning(time: int, offset: int) -> None:
    """A hostile stream can push the time and the sessions' offset near the 64-bit limit: the end
    time wraps as the kernel's times do (two's complement), with no numpy overflow warning (the
    fuzz campaign met one).
    """
    import warnings

    import tracer.telemetry.kernel as k

    decoder = TelemetryDecoder()
    decoder._state[k.S_TIME], decoder._state[k.S_TIME_OFFSET], decoder._state[k.S_HAVE_TIME] = time, offset, 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        end = decoder.end_time
    wrapped = np.array([time], np.int64) + np.array([offset], np.int64)  # (int64 arrays wrap silently)
    assert end == int(wrapped[0])


def test_layers_and_counters_first_seen_in_later_windows_are_learned() -> None:
    """A stream read in windows (take, the timeline without rows, discard, as windows.py does) learns
    the engine of layers without a description and the PMU counters used from each span row once:
    layers and counters that first appear late, after rows were discarded, are learned as a decoder
    that keeps everything learns them."""
    enc = TelemetryEncoder()
    enc.target_info(1_000, CLOCK_HZ, TimeSource.DWT)  # no layer descriptions, no PMU configuration
    t = 2_000
    for i in range(12):
        enc.inference_begin(t, i)
        for layer in range(2 + i // 3):  # a new layer every third inference
            npu = layer % 2
            enc.layer_begin(t + 10, layer, npu)
            if npu:  # more counters in later inferences
                enc.pmu_snapshot(t + 500, 400 + layer, [7] * (1 + i // 4))
            enc.layer_end(t + 600, layer)
            t += 700
        enc.inference_end(t + 5)
        t += 100
    data = bytes(enc.out)
    whole = decode(data)
    itm = ItmDecoder(hold_timestamps=False)
    decoder = TelemetryDecoder()
    for at in range(0, len(data), 300):
        decoder.feed(itm.feed(data[at : at + 300]))
        decoder.take()
        decoder.timeline(rows=False)
        decoder.discard_taken()
    decoder.feed(itm.finish())
    decoder.finish()
    last = decoder.take()
    windowed = decoder.timeline(rows=False)
    assert {i: info.engine for i, info in windowed.layers.items()} == {
        i: info.engine for i, info in whole.layers.items()
    }
    assert len(whole.layers) == 5 and whole.layers[3].engine is Engine.NPU and whole.layers[4].engine is Engine.CPU
    assert list(windowed.pmu_units) == list(whole.pmu_units) == list(whole.spans.pmu_names)
    assert last.spans.pmu_names == whole.spans.pmu_names and len(whole.spans.pmu_names) == 4
