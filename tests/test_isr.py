"""Interrupt slices: from the firmware's ISR marks and from DWT exception trace (nesting, exits lost
to an overflow and repaired, 32-bit counter wrap, timestamps, any split of the stream), and each
layer's time split into its own time and the handlers'. Streams are built with our encoder from
the wire-format reference; the STM32F105 capture is a real SWO recording."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from telemetry_encoder import TelemetryEncoder
from timeline_views import inference_view

from tracer.base.timeline import InferenceTimeline, IsrSlice
from tracer.decode.itm import ItmDecoder, decode_bytes
from tracer.pipeline.capture import decode_capture
from tracer.telemetry.decoder import TelemetryDecoder
from tracer.telemetry.isr import BASIS_OFFSET, HandlerTime, exception_name
from tracer.telemetry.wire import RecordType, TimeSource

CORPUS = Path(__file__).resolve().parent / "data" / "corpus" / "sigrok_stm32f105"
ENTER, EXIT, RETURN = 1, 2, 3


def decode(data: bytes) -> InferenceTimeline:
    decoder = TelemetryDecoder()
    decoder.feed(decode_bytes(data))
    decoder.finish()
    return decoder.timeline()


def decode_split(data: bytes, cuts: list[int]) -> InferenceTimeline:
    """Feed the bytes in pieces through both incremental decoders (hold_timestamps=False, as
    tracer report does)."""
    itm = ItmDecoder(hold_timestamps=False)
    decoder = TelemetryDecoder()
    at = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        decoder.feed(itm.feed(data[at:cut]))
        decoder.timeline()  # reading in between must not change anything
        at = cut
    decoder.feed(itm.finish())
    decoder.finish()
    return decoder.timeline()


def one_layer(enc: TelemetryEncoder, begin: int, end: int, layer: int = 0) -> None:
    enc.layer_begin(begin, layer)
    enc.layer_end(end, layer)


def slices(timeline: InferenceTimeline) -> list[tuple[int, int, int, int, bool]]:
    return [(s.start, s.end, s.exception, s.depth, s.repaired) for s in timeline.isrs]


def test_marks_give_slices_and_split_the_layer_time() -> None:
    """An ISR inside a layer: the slice, its name, and the layer's own time without it."""
    enc = TelemetryEncoder()
    enc.target_info(0, 100_000_000, TimeSource.DWT)
    enc.isr_info(10, 18, "S32K_TIMER")
    enc.inference_begin(100)
    enc.layer_begin(1000, 0)
    enc.isr_enter(1500, 18)
    enc.isr_exit(2700, 18)
    enc.layer_end(5000, 0)
    enc.layer_begin(5100, 1)
    enc.layer_end(6000, 1)
    enc.inference_end(6100)
    tl = decode(bytes(enc))
    assert slices(tl) == [(1500, 2700, 18, 0, False)]
    assert tl.isrs[0].name == "S32K_TIMER"
    assert tl.spans.isr_cycles.tolist() == [1200, 0]
    span = inference_view(tl, 0).layers[0]
    assert (span.cycles, span.isr_cycles, span.own_cycles) == (4000, 1200, 2800)
    # The marks stay available as records (the live session pairs them itself).
    assert [r.type for r in tl.records if r.type in (RecordType.ISR_ENTER, RecordType.ISR_EXIT)] == [0x28, 0x29]
    assert tl.isr_sources.names == {18: "S32K_TIMER"}


def test_nested_marks_count_once_in_the_layer() -> None:
    """A handler preempted by another: depths 0 and 1, and the layer loses the outer one's time only."""
    enc = TelemetryEncoder()
    enc.inference_begin(0)
    enc.layer_begin(1000, 0)
    enc.isr_enter(2000, 18)
    enc.isr_enter(2300, 15)
    enc.isr_exit(2400, 15)
    enc.isr_exit(3000, 18)
    enc.layer_end(9000, 0)
    enc.inference_end(9100)
    tl = decode(bytes(enc))
    assert sorted(slices(tl)) == [(2000, 3000, 18, 0, False), (2300, 2400, 15, 1, False)]
    assert tl.spans.isr_cycles.tolist() == [1000]
    assert tl.isrs[1].name == "SysTick"


def test_mark_exit_records_lost_are_counted_not_guessed() -> None:
    """An exit without entry and an entry never closed are counted; nothing is invented."""
    enc = TelemetryEncoder()
    enc.inference_begin(0)
    enc.layer_begin(100, 0)
    enc.isr_exit(150, 20)  # its entry was never seen
    enc.isr_enter(200, 21)  # never closed
    enc.layer_end(900, 0)
    enc.inference_end(1000)
    tl = decode(bytes(enc))
    assert len(tl.isrs) == 0 and tl.spans.isr_cycles.tolist() == [0]
    assert tl.isr_sources.marks.counters.unmatched_exits == 1
    assert tl.isr_sources.marks.counters.dropped_open == 1


def test_wrap_of_the_32_bit_counter_inside_a_layer_and_inside_an_isr() -> None:
    """The layer and the handler both straddle 2^32: durations are exact."""
    base = (1 << 32) - 3000
    enc = TelemetryEncoder()
    enc.target_info(base - 10_000, 480_000_000, TimeSource.DWT)
    enc.inference_begin(base - 5000)
    enc.layer_begin(base - 1000, 0)
    enc.isr_enter(base + 2500, 18)  # 500 cycles before the wrap
    enc.isr_exit(base + 3700, 18)  # 700 after
    enc.layer_end(base + 6000, 0)
    enc.inference_end(base + 6500)
    tl = decode(bytes(enc))
    assert slices(tl) == [(base + 2500, base + 3700, 18, 0, False)]
    assert tl.spans.cycles.tolist() == [7000] and tl.spans.isr_cycles.tolist() == [1200]
    assert tl.inferences.complete.all()


def _exception_stream(with_timestamps: bool = True, prescale: int = 1) -> bytes:
    """Records and DWT exception packets: a layer with a nested pair of handlers, then one whose
    exit is lost to an overflow. With timestamps, the packets of each moment are followed by a
    local timestamp (as the ITM sends them; ticks of ``prescale`` cycles)."""
    enc = TelemetryEncoder()
    now = {"t": 0}

    def stamp(t: int) -> None:
        if with_timestamps:
            enc.local_timestamp((t - now["t"]) // prescale)
        now["t"] = t

    enc.target_info(100, 200_000_000, TimeSource.DWT)
    stamp(100)
    enc.inference_begin(1000, sync=False)
    stamp(1000)
    enc.layer_begin(2000, 0)
    stamp(2000)
    enc.exception(20, ENTER)
    stamp(2500)
    enc.exception(21, ENTER)  # preempts 20
    stamp(2900)
    enc.exception(21, EXIT)
    enc.exception(20, RETURN)
    stamp(3200)
    enc.exception(20, EXIT)
    enc.exception(0, RETURN)
    stamp(3800)
    enc.layer_end(5000, 0)
    stamp(5000)
    enc.layer_begin(6000, 1)
    stamp(6000)
    enc.exception(44, ENTER)
    stamp(7000)
    enc.overflow()  # its exit is lost
    enc.exception(0, RETURN)
    stamp(7800)
    enc.layer_end(9000, 1)
    stamp(9000)
    enc.inference_end(10000)
    stamp(10000)
    return bytes(enc)


def test_exception_trace_with_timestamps_nesting_and_a_repaired_exit() -> None:
    """Exact cycles from the local timestamps; nesting; the lost exit closed at the return and
    marked repaired; the layer split into own and handler time."""
    data = _exception_stream()
    tl = decode(data)
    assert sorted(slices(tl)) == [
        (2500, 3800, 20, 0, False),
        (2900, 3200, 21, 1, False),
        (7000, 7800, 44, 0, True),
    ]
    assert tl.spans.isr_cycles.tolist() == [1300, 800]
    facts = tl.isr_sources.exception_trace.to_json()
    assert facts["repaired"] == 1 and facts["repaired_after_overflow"] == 1 and facts["packets"] == 8
    assert "isr_time" not in tl.labels  # cycles, from timestamps
    assert {s.name for s in tl.isrs} == {"IRQ4", "IRQ5", "IRQ28"}
    # The overflow marks the inference incomplete (loss is never silent), the slices remain.
    assert not tl.inferences.complete[0]


def test_timestamp_prescale_is_measured_between_records() -> None:
    """Timestamp ticks of 4 cycles (ITM_TCR.TSPrescale): the ratio is found from the records."""
    data = _exception_stream(prescale=4)
    tl = decode(data)
    assert sorted(slices(tl))[0] == (2500, 3800, 20, 0, False)
    assert tl.isr_sources.exception_trace.cycles_per_timestamp_tick == 4.0


def test_without_timestamps_exception_packets_are_placed_by_order() -> None:
    """No local timestamps: each packet at the record before it; the label says so."""
    data = _exception_stream(with_timestamps=False)
    tl = decode(data)
    assert sorted(slices(tl)) == [(2000, 2000, 20, 0, False), (2000, 2000, 21, 1, False), (6000, 6000, 44, 0, True)]
    assert "order only" in tl.labels["isr_time"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=400), max_size=12))
def test_any_split_gives_the_same_slices(cuts: list[int]) -> None:
    """Stamps wait for the next timestamp inside the decoder, so chunk boundaries change nothing."""
    data = _exception_stream()
    whole = decode(data)
    split = decode_split(data, [c % len(data) for c in cuts])
    assert slices(split) == slices(whole)
    assert split.spans.isr_cycles.tolist() == whole.spans.isr_cycles.tolist()


def test_marks_win_over_exception_trace_for_the_same_exception() -> None:
    """Both sources for exception 20: the exact marks count, the trace's slices of it do not."""
    enc = TelemetryEncoder()
    enc.inference_begin(0)
    enc.layer_begin(100, 0)
    enc.isr_enter(200, 20)
    enc.exception(20, ENTER)
    enc.exception(20, EXIT)
    enc.exception(0, RETURN)
    enc.isr_exit(300, 20)
    enc.exception(22, ENTER)
    enc.exception(22, EXIT)
    enc.exception(0, RETURN)
    enc.layer_end(900, 0)
    enc.inference_end(1000)
    tl = decode(bytes(enc))
    assert slices(tl) == [(200, 300, 20, 0, False), (300, 300, 22, 0, False)]


def test_gap_drops_open_handlers_and_unmatched_exits_are_counted() -> None:
    """A capture gap: what was open has no known end; an exit with no entry is only counted."""
    enc = TelemetryEncoder()
    enc.inference_begin(0)
    enc.exception(30, ENTER)
    first = bytes(enc)
    enc2 = TelemetryEncoder(sequence=enc.sequence)
    enc2.exception(31, EXIT)
    enc2.exception(0, RETURN)
    itm = ItmDecoder(hold_timestamps=False)
    decoder = TelemetryDecoder()
    decoder.feed(itm.feed(first))
    decoder.feed(itm.gap(100))
    decoder.feed(itm.feed(bytes(enc2)))
    decoder.feed(itm.finish())
    decoder.finish()
    tl = decoder.timeline()
    assert len(tl.isrs) == 0
    facts = tl.isr_sources.exception_trace.to_json()
    assert facts["dropped_open"] == 1 and facts["unmatched_exits"] == 1


def test_stm32f105_capture_repairs_the_exits_lost_to_overflows() -> None:
    """The real SWO capture (TPIU-formatted): IRQ 28 (exception 44) entered, ITM overflow, then
    "returned to Thread" with no exit, eight times: eight repaired slices. No records and no
    timestamps, so the slices are in stream byte offsets, and the label says so."""
    tl = decode_capture(CORPUS / "trace_example_swo_tpiu.bin").timeline
    assert len(tl.isrs) == 8
    assert {(s.exception, s.name, s.depth, s.repaired) for s in tl.isrs} == {(44, "IRQ28", 0, True)}
    assert tl.isrs[0].start == 217 and tl.isrs[0].end == 275  # the enter and return packets' offsets
    assert BASIS_OFFSET in tl.labels["isr_time"]
    facts = tl.isr_sources.exception_trace.to_json()
    assert facts["repaired"] == 8 and facts["repaired_after_overflow"] == 8 and facts["unmatched_exits"] == 0
    # Its DWT data trace: comparator 0 watches 0x1010 (address offset packets), writes of 0x100.
    first = tl.data_trace[0].to_json()
    assert (first["comparator"], first["address"], first["address_bits"], first["value"], first["write"]) == (
        0,
        0x1010,
        16,
        0x100,
        True,
    )
    # The same slices from the TPIU payload alone.
    plain = decode_capture(CORPUS / "trace_example_itm_stream1.bin").timeline
    assert slices(plain) == slices(tl)


def test_handler_time_index_counts_overlaps_once() -> None:
    """The union index: nested and overlapping slices, queries inside and across them."""
    index = HandlerTime.of(
        [IsrSlice(10, 20, 16), IsrSlice(12, 15, 17, depth=1), IsrSlice(18, 30, 18), IsrSlice(50, 60, 16)]
    )
    starts = np.array([0, 15, 25, 40, 55, 0])
    ends = np.array([100, 25, 55, 45, 56, 5])
    assert index.inside(starts, ends).tolist() == [30, 10, 10, 0, 1, 0]


def test_exception_names() -> None:
    """Architecture names below 16, IRQn above, the firmware's names first."""
    assert exception_name(15) == "SysTick" and exception_name(3) == "HardFault"
    assert exception_name(16) == "IRQ0" and exception_name(44) == "IRQ28"
    assert exception_name(44, {44: "USART1"}) == "USART1"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 60), st.integers(0, 5)), max_size=60))
def test_random_exception_packets_never_break_the_invariants(events: list[tuple[int, int, int]]) -> None:
    """Any sequence of exception, overflow and timestamp packets: no crash, ends after starts,
    depths never negative, handler time within each span's length."""
    enc = TelemetryEncoder()
    enc.inference_begin(0, sync=False)
    enc.layer_begin(10, 0)
    for what, number, delta in events:
        if what == 0:
            enc.overflow()
        else:
            enc.exception(number, what)
        if delta:
            enc.local_timestamp(delta)
    enc.layer_end(1 << 20, 0)
    enc.inference_end((1 << 20) + 5)
    tl = decode(bytes(enc))
    for s in tl.isrs:
        assert s.end >= s.start and s.depth >= 0
    assert (tl.spans.isr_cycles >= 0).all() and (tl.spans.isr_cycles <= tl.spans.cycles).all()


def test_a_live_session_can_drop_old_slices() -> None:
    """discard_isrs keeps memory flat: slices that ended before a cycle go, later ones stay."""
    enc = TelemetryEncoder()
    enc.inference_begin(0)
    for k in range(10):
        enc.isr_enter(1000 * k + 100, 18)
        enc.isr_exit(1000 * k + 200, 18)
    enc.inference_end(20_000)
    decoder = TelemetryDecoder()
    decoder.feed(decode_bytes(bytes(enc)))
    assert len(decoder.timeline().isrs) == 10
    assert decoder.discard_isrs(5000) == 5
    assert [s.start for s in decoder.timeline().isrs] == [5100, 6100, 7100, 8100, 9100]


def test_discarding_old_isrs_also_forgets_old_data_trace_accesses() -> None:
    """A live session calls discard_isrs(horizon): data-trace accesses before it go too, so memory
    stays flat on a long stream with DWT data trace on; later accesses stay."""
    enc = TelemetryEncoder()
    for n, t in enumerate((1_000, 50_000)):
        enc.inference_begin(t)
        enc.data_address(0, 0x0040, size=2)
        enc.data_value(0, 0x100 + n, write=True)
        one_layer(enc, t + 10, t + 500)
        enc.inference_end(t + 1_000)
    decoder = TelemetryDecoder()
    decoder.feed(decode_bytes(bytes(enc)))
    decoder.finish()
    assert [a.value for a in decoder.timeline().data_trace] == [0x100, 0x101]
    decoder.discard_isrs(10_000)
    assert [a.value for a in decoder.timeline().data_trace] == [0x101]
