"""The TPIU (CoreSight formatter) deframer and the detection of formatted streams.

Frames are built by the test-side formatter in ``itm_encoder.py`` (independent of the decoder),
with immediate and delayed ID changes, null-ID padding, trigger bytes, full syncs between frames
and half syncs inside them.
"""

from __future__ import annotations

import itertools
import os
import random
from pathlib import Path

import pytest
import tpiu_streams
from hypothesis import given, settings
from hypothesis import strategies as st
from itm_encoder import FULL_SYNC, HALF_SYNC, NULL_ID, TRIGGER_ID, encode_stream, per_source, tpiu_frames

from tracer.decode import TpiuDeframer, TpiuMode, TraceDecoder, decode_bytes
from tracer.decode.tpiu import frame_alignment, looks_formatted

# Every test here runs on the compiled kernels and on the pure-Python reference (conftest.kernels).
pytestmark = pytest.mark.usefixtures("kernels")

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


def frame(*slots: int, aux: int = 0) -> bytes:
    """A frame from 15 bytes and the aux byte."""
    assert len(slots) == 15
    return bytes(slots) + bytes([aux])


# -- vectors ----------------------------------------------------------------------------------------
def test_immediate_id_change_and_data_bits_from_aux() -> None:
    # ID 1, then data: even bytes carry bits 7:1, their bit 0 comes from the aux byte.
    f = frame(0x03, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, aux=0b0101_0110)
    deframer = TpiuDeframer(1)
    assert deframer.feed(f) == bytes(
        [0x11, 0x23, 0x33, 0x45, 0x55, 0x66, 0x77, 0x89, 0x99, 0xAA, 0xBB, 0xCD, 0xDD, 0xEE]
    )
    assert deframer.stats.id_bytes == {1: 14}


def test_delayed_id_change_keeps_the_next_byte_for_the_old_source() -> None:
    f1 = frame(0x03, 0xA1, *([0x00] * 13), aux=0)  # ID 1: A1, then 13 zero bytes
    f2 = frame(0x05, 0xB1, 0x10, 0x20, *([0x00] * 11), aux=0b1)  # delayed change to ID 2: B1 is still ID 1
    deframer = TpiuDeframer(1)
    out = deframer.feed(f1 + f2)
    assert out == bytes([0xA1]) + bytes(13) + bytes([0xB1])
    assert TpiuDeframer(2).feed(f1 + f2)[:2] == bytes([0x10, 0x20])


def test_id_change_in_the_last_slot_applies_to_the_next_frame() -> None:
    f1 = frame(0x03, 0x01, *([0x02] * 12), 0x05, aux=0)  # byte 14: change to ID 2, no data in this frame
    f2 = frame(0x42, 0x43, *([0x00] * 13), aux=0)
    assert TpiuDeframer(2).feed(f1 + f2) == bytes([0x42, 0x43]) + bytes(13)
    assert TpiuDeframer(1).feed(f1 + f2) == bytes([0x01]) + bytes([0x02] * 12)


def test_null_and_trigger_ids_are_counted_not_delivered() -> None:
    frames, carried = tpiu_frames([(1, 0x41), (NULL_ID, 0), (TRIGGER_ID, 0x99), (1, 0x42)])
    deframer = TpiuDeframer(1)
    assert deframer.feed(b"".join(frames)) == b"\x41\x42"
    counts = {k: len(v) for k, v in per_source(carried).items()}
    assert deframer.stats.id_bytes == counts and counts[TRIGGER_ID] == 1


def test_full_sync_realigns_and_half_sync_is_dropped() -> None:
    frames, _ = tpiu_frames([(1, b) for b in range(40)])
    blob = b"\x12\x34\x56" + FULL_SYNC  # a cut frame, then a sync
    for f in frames:
        blob += f[:6] + HALF_SYNC + f[6:] + FULL_SYNC
    deframer = TpiuDeframer(1, alignment=3)
    assert deframer.feed(blob) == bytes(range(40))
    assert deframer.stats.full_syncs == 1 + len(frames)
    assert deframer.stats.half_syncs == len(frames)
    assert deframer.stats.skipped == 3


def test_partial_frame_at_the_end_is_reported() -> None:
    frames, _ = tpiu_frames([(1, b) for b in range(20)])
    decoder = TraceDecoder(TpiuMode.ON)
    decoder.feed(b"".join(frames)[:-5])
    decoder.finish()
    assert any("inside a TPIU frame (11 bytes" in w for w in decoder.warnings)


# -- properties -------------------------------------------------------------------------------------
pairs_strategy = st.lists(
    st.tuples(st.sampled_from([1, 1, 1, 2, 3, NULL_ID, TRIGGER_ID]), st.integers(0, 255)), max_size=300
)


@st.composite
def with_syncs(draw: st.DrawFn, frames: list[bytes]) -> bytes:
    out = bytearray()
    for f in frames:
        if draw(st.integers(0, 4)) == 0:
            out += FULL_SYNC
        for j in range(0, 16, 2):
            if draw(st.integers(0, 9)) == 0:
                out += HALF_SYNC
            out += f[j : j + 2]
    return bytes(out)


@settings(max_examples=int(os.environ.get("TRACER_FUZZ_EXAMPLES", "300")), deadline=None)
@given(pairs_strategy, st.data(), st.lists(st.integers(0, 5000), max_size=10))
def test_deframe_gives_each_source_its_bytes(
    pairs: list[tuple[int, int]], data: st.DataObject, cuts: list[int]
) -> None:
    frames, carried = tpiu_frames(pairs)
    expected = per_source(carried)
    blob = data.draw(with_syncs(frames))
    points = sorted({min(c, len(blob)) for c in cuts} | {0, len(blob)})
    for source in (1, 2, 3):
        deframer = TpiuDeframer(source)
        got = b"".join(deframer.feed(blob[a:b]) for a, b in itertools.pairwise(points))
        assert got == expected.get(source, b"")
        assert deframer.stats.frames == len(frames)
        assert deframer.stats.id_bytes == {k: len(v) for k, v in expected.items()}
        assert deframer.partial_frame_bytes == 0


def _realistic_frames(seed: int, packets: int = 1500) -> tuple[bytes, bytes]:
    """ITM on ID 1 interleaved with ETM-like bytes on ID 2 and null padding, as frames."""
    rnd = random.Random(seed)
    pkts = []
    for _ in range(packets):
        roll = rnd.random()
        if roll < 0.4:
            pkts.append(
                {"type": "swit", "addr": rnd.randrange(8), "size": rnd.choice([1, 2, 4]), "value": rnd.getrandbits(8)}
            )
        elif roll < 0.6:
            pkts.append({"type": "pc_sample", "pc": 0x08000000 + 2 * rnd.getrandbits(18)})
        elif roll < 0.75:
            pkts.append(
                {
                    "type": "exception",
                    "number": rnd.randrange(16, 80),
                    "action": rnd.choice(["enter", "exit", "return"]),
                }
            )
        else:
            pkts.append({"type": "lts", "delta": rnd.randrange(1, 3000), "tc": 0})
    itm, _ = encode_stream(pkts)
    pairs: list[tuple[int, int]] = []
    i = 0
    while i < len(itm):
        run = rnd.randrange(1, 30)
        pairs += [(1, b) for b in itm[i : i + run]]
        i += run
        pairs += [(2, rnd.getrandbits(8)) for _ in range(rnd.randrange(0, 20))]
    frames, _ = tpiu_frames(pairs)
    return b"".join(frames), itm


def test_alignment_search_finds_every_shift_without_a_sync(kernels: str) -> None:
    native = kernels == "native"  # the pure-Python kernels try fewer cases (conftest.kernels)
    for seed in range(4) if native else (0,):
        blob, itm = _realistic_frames(seed)
        for shift in range(16) if native else (0, 5, 10, 15):
            junk = bytes(random.Random(shift).getrandbits(8) & 0xFE for _ in range(shift))
            assert frame_alignment(junk + blob) == shift, (seed, shift)
        decoder = TraceDecoder(TpiuMode.AUTO)
        got = list(decoder.feed(junk + blob).records()) + list(decoder.finish().records())
        assert got == list(decode_bytes(itm).records())


def test_raw_itm_is_not_taken_for_tpiu(kernels: str) -> None:
    native = kernels == "native"
    for seed in range(6) if native else (0,):
        _, itm = _realistic_frames(seed, packets=3000)
        assert frame_alignment(itm[:65536]) is None, seed
    paths = [
        *sorted((CORPUS / "novakov_rtos_trace").glob("*.trace")),
        CORPUS / "sigrok_stm32f105" / "trace_example_itm_stream1.bin",
    ]
    for path in paths if native else paths[-2:]:
        assert not looks_formatted(path.read_bytes()[:65536]), path.name
    if native:
        noise = random.Random(7).randbytes(65536)
        assert frame_alignment(noise) is None


def test_printf_only_itm_is_not_tpiu() -> None:
    """Port-0 1-byte writes of text: every even byte is ``01`` (a change to the null ID)."""
    text = b"layer 3 conv2d took 18234 cycles\n" * 200
    itm = b"".join(b"\x01" + bytes([c]) for c in text)
    assert frame_alignment(itm[:65536]) is None
    two_ports = b"".join((b"\x01" if i % 3 else b"\x09") + bytes([c]) for i, c in enumerate(text))
    assert frame_alignment(two_ports[:65536]) is None


def test_auto_mode_decides_once_on_the_first_64_kib(kernels: str) -> None:
    blob, itm = _realistic_frames(11, packets=30000 if kernels == "native" else 16000)
    assert len(blob) > (2 if kernels == "native" else 1) * 65536
    decoder = TraceDecoder(TpiuMode.AUTO)
    got = []
    for i in range(0, len(blob), 4096):
        got += list(decoder.feed(blob[i : i + 4096]).records())
    got += list(decoder.finish().records())
    assert decoder.formatted
    assert got == list(decode_bytes(itm).records())
    assert decoder.stats_json()["tpiu"]["frames"] == len(blob) // 16


# -- real-world defects (issue 16): bytes before the first sync, slipped bytes, ETM without ITM --
def _damage_window(values: list[int], packets: int) -> tuple[int, int]:
    """(packets lost, values in between that are not the stream's) when ``values`` is 0..packets-1
    with one contiguous stretch damaged: the longest exact prefix and suffix, and what is left."""
    head = 0
    while head < len(values) and values[head] == head:
        head += 1
    tail = 0
    while tail < len(values) - head and values[-1 - tail] == packets - 1 - tail:
        tail += 1
    return packets - head - tail, len(values) - head - tail


def _swit_values(
    data: bytes,
    mode: TpiuMode = TpiuMode.AUTO,
    tpiu_id: int = 1,
    chunk: int = 1 << 20,
) -> tuple[list[int], TraceDecoder]:
    decoder = TraceDecoder(mode, tpiu_id)
    records = []
    for i in range(0, len(data), chunk):
        records += list(decoder.feed(data[i : i + chunk]).records())
    records += list(decoder.finish().records())
    return [r["value"] for r in records if r["type"] == "swit"], decoder


@pytest.mark.parametrize("sync_every", [5, 20])
def test_frames_before_the_first_full_sync_are_kept(kernels: str, sync_every: int) -> None:
    """A stream framed from byte 0 whose first full sync comes after 5 or 20 frames (80 or 320
    bytes): those frames are deframed like the rest, and every packet keeps its ITM offset."""
    packets = 3000 if kernels == "native" else 400
    for sync_first in (False, True):
        blob = tpiu_streams.numbered_stream(3, packets, sync_every)
        blob = (FULL_SYNC if sync_first else b"") + blob  # a sync at byte 0 changes nothing
        itm = TpiuDeframer(1, 0).feed(blob)
        expected = list(decode_bytes(itm).records())
        for mode in (TpiuMode.AUTO, TpiuMode.ON):
            decoder = TraceDecoder(mode)
            got = list(decoder.feed(blob).records()) + list(decoder.finish().records())
            assert got == expected, (mode, sync_first)
            stats = decoder.stats_json()["tpiu"]
            assert stats["skipped_bytes"] == stats["unframed_bytes"] == 0
            assert not [w for w in decoder.warnings if "TPIU" in w]
        values = [r["value"] for r in expected if r["type"] == "swit"]
        assert values == list(range(packets))


@pytest.mark.parametrize("kind", ["drop", "insert"])
@pytest.mark.parametrize("sync_every", [16, 0], ids=["syncs", "no-syncs"])
def test_a_slipped_byte_costs_a_few_packets_not_the_rest(kernels: str, kind: str, sync_every: int) -> None:
    """One byte dropped or inserted (a UART SWO link) misaligns every later frame. The deframer
    re-aligns on the next full sync, or by searching the frame grid when frames stop holding up:
    a few packets around the slip are lost, counted and placed, everything after comes back; and
    in auto mode a slip inside the first 64 KiB does not turn the stream into raw ITM."""
    native = kernels == "native"
    packets = 16000 if native else 1200
    blob = tpiu_streams.numbered_stream(2, packets, sync_every)
    cuts = (30_000, 30_001, 100_000, 100_007) if native else (5_000, 5_003)
    for cut in cuts:
        data = tpiu_streams.slipped(blob, cut, kind)
        values, decoder = _swit_values(data, chunk=4096 if cut % 2 else 1 << 20)
        assert decoder.formatted
        # A few packets around the slip are lost; the ITM decoder restarts after the hole and may
        # read one or two packets out of the middle of one (as after any capture gap).
        lost, misread = _damage_window(values, packets)
        assert lost <= 6 and misread <= 2, (cut, lost, misread)
        stats = decoder.stats_json()["tpiu"]
        assert stats["realignments"] == 1
        region = stats["unframed"][-1]
        assert cut - 2 * 16 <= region["offset"] <= cut + 16 and 0 < region["length"] <= 32, region
        assert region["resumed"] == ("full sync" if sync_every else "frame search")
        assert stats["unframed_bytes"] == sum(u["length"] for u in stats["unframed"])
        warning = next(w for w in decoder.warnings if "could not be framed" in w)
        assert f"stream offsets {region['offset']}..{region['offset'] + region['length']}" in warning
        assert decoder.stats_json()["gaps"] == 1  # the ITM stream was told it has a hole


def test_a_full_sync_off_the_grid_realigns_exactly() -> None:
    """Junk inside the stream, then a full sync at an odd offset: the cut frame's bytes are the
    unframed ones, named with their positions, and the frames after the sync come back whole."""
    frames, _ = tpiu_frames([(1, b) for b in range(200)])
    blob = b"".join(frames[:3]) + frames[3][:7] + FULL_SYNC + b"".join(frames[4:])
    before, through = (len(TpiuDeframer(1, 0).feed(b"".join(frames[:n]))) for n in (3, 4))
    # The frames after the sync carry no ID change: the stream's only source goes on.
    assert TpiuDeframer(1, 0).feed(blob) == bytes(range(before)) + bytes(range(through, 200))
    deframer = TpiuDeframer(1, 0)
    pieces = deframer.feed_pieces(blob)
    assert [p.lost_before for p in pieces] == [None, 7]
    assert [u.to_json() for u in deframer.stats.unframed] == [
        {"offset": 48, "length": 7, "why": "frames lost alignment", "resumed": "full sync"}
    ]
    assert deframer.stats.realignments == 1 and deframer.stats.full_syncs == 1


def test_a_capture_gap_keeps_the_counts_and_finds_the_grid_again(kernels: str) -> None:
    """Bytes lost between two capture chunks, not a multiple of a frame: the frames after the gap
    are found again (no full sync needed), and the counts go on from before the gap."""
    packets = 3000 if kernels == "native" else 500
    blob = tpiu_streams.numbered_stream(5, packets)
    cut, lost = 20_000 if kernels == "native" else 4_000, 37
    decoder = TraceDecoder(TpiuMode.AUTO)
    records = list(decoder.feed(blob[:cut]).records())
    records += list(decoder.feed(blob[cut + lost :], lost_before=lost).records()) + list(decoder.finish().records())
    values = [r["value"] for r in records if r["type"] == "swit"]
    # The 37 bytes and the frames they cut (at most a frame on each side) held about 10 packets.
    lost, misread = _damage_window(values, packets)
    assert 0 < lost <= 10 and misread <= 2, (lost, misread)
    stats = decoder.stats_json()["tpiu"]
    assert stats["frames"] >= (len(blob) - lost) // 16 - 4  # counted across the gap, not from it
    assert stats["unframed"][-1]["why"] == "capture gap" and stats["unframed"][-1]["offset"] >= cut + lost


def _etm_only() -> bytes:
    """The STM32F105 capture with its ITM source replaced by null padding (``without_source``):
    frames, ETM bytes on ID 2 and trigger bytes as recorded."""
    return tpiu_streams.without_source((CORPUS / "sigrok_stm32f105" / "trace_example_swo_tpiu.bin").read_bytes(), 1)


def test_etm_only_capture_is_framed_at_its_true_start_for_every_shift(kernels: str) -> None:
    """No full sync, ETM on ID 2 and no ITM: the even starts all read valid IDs, so the rules of
    the format (byte 14's auxiliary bit is zero under an ID) and zero padding under the null ID
    must pick the start, whichever ID is asked for. Asking for ID 1 says it carries nothing."""
    stream = _etm_only()
    recorded_etm = TpiuDeframer(2, 0).feed((CORPUS / "sigrok_stm32f105" / "trace_example_swo_tpiu.bin").read_bytes())
    assert TpiuDeframer(2, 0).feed(stream) == recorded_etm and len(recorded_etm) == 760
    for shift in range(16) if kernels == "native" else (0, 3, 10):
        junk = bytes(random.Random(shift).getrandbits(8) & 0xFE for _ in range(shift))
        for tpiu_id in (1, 2):
            assert frame_alignment(junk + stream, tpiu_id) == shift, (shift, tpiu_id)
            for mode in (TpiuMode.AUTO, TpiuMode.ON):
                decoder = TraceDecoder(mode, tpiu_id, packets=False)
                decoder.feed(junk + stream)
                decoder.finish()
                assert decoder.deframer is not None and decoder.deframer.stats.alignment == shift
                assert decoder.itm.stats.bytes == (len(recorded_etm) if tpiu_id == 2 else 0)
                if tpiu_id == 1:
                    assert any("TPIU source ID 1 carries no bytes" in w and "ID(s) 2" in w for w in decoder.warnings)


def test_equally_plausible_starts_are_reported_not_guessed_silently() -> None:
    """Two sources of 7-bit non-ITM bytes, no padding, no sync: the eight even starts read the
    same IDs and keep every rule; the decoder says so and names them."""
    rnd = random.Random(3)
    pairs: list[tuple[int, int]] = []
    while len(pairs) < 6000:
        source = rnd.choice([2, 3])
        pairs += [(source, rnd.getrandbits(7)) for _ in range(rnd.randrange(1, 12))]
    frames, _ = tpiu_frames(pairs)
    decoder = TraceDecoder(TpiuMode.AUTO, tpiu_id=2, packets=False)
    decoder.feed(b"".join(frames))
    decoder.finish()
    assert any("alignment is ambiguous" in w and "2, 4, 6, 8, 10, 12, 14" in w for w in decoder.warnings), (
        decoder.warnings
    )


@settings(max_examples=int(os.environ.get("TRACER_FUZZ_EXAMPLES", "300")) // 3, deadline=None)
@given(
    st.integers(0, 50),
    st.lists(st.tuples(st.integers(0, 9000), st.sampled_from(["drop", "insert"])), max_size=3),
    st.lists(st.integers(0, 9000), max_size=8),
    st.sampled_from([0, 4, 16]),
)
def test_any_split_of_a_slipped_stream_gives_the_same_packets(
    seed: int, slips: list[tuple[int, str]], cuts: list[int], sync_every: int
) -> None:
    """Searches for the grid look at a fixed window, so where the stream is cut into chunks never
    changes what comes out, slips and all: the bytes, where the breaks are, and the counts."""
    blob = tpiu_streams.numbered_stream(seed, 500, sync_every)
    for at, kind in sorted(slips, reverse=True):
        blob = tpiu_streams.slipped(blob, min(at, len(blob)), kind)

    def segments(points: list[int]) -> tuple[list[tuple[int | None, bytes]], dict[str, object]]:
        deframer = TpiuDeframer(1, None, strict=True)
        pieces = [p for a, b in itertools.pairwise(points) for p in deframer.feed_pieces(blob[a:b])]
        pieces += deframer.finish()
        out: list[tuple[int | None, bytes]] = []
        for piece in pieces:  # pieces are cut where the chunks are; breaks are where they are
            if out and piece.lost_before is None:
                out[-1] = (out[-1][0], out[-1][1] + piece.data)
            else:
                out.append((piece.lost_before, piece.data))
        return out, deframer.stats.to_json()

    points = sorted({min(c, len(blob)) for c in cuts} | {0, len(blob)})
    assert segments(points) == segments([0, len(blob)])
