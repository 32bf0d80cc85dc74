"""The TPIU (CoreSight formatter) deframer and the detection of formatted streams.

Frames are built by the test-side formatter in ``itm_encoder.py`` (independent of the decoder),
with immediate and delayed ID changes, null-ID padding, trigger bytes, full syncs between frames
and half syncs inside them.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
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
    assert deframer.feed(f) == bytes([0x11, 0x23, 0x33, 0x45, 0x55, 0x66, 0x77, 0x89, 0x99, 0xAA, 0xBB, 0xCD, 0xDD, 0xEE])
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
def test_deframe_gives_each_source_its_bytes(pairs: list[tuple[int, int]], data: st.DataObject, cuts: list[int]) -> None:
    frames, carried = tpiu_frames(pairs)
    expected = per_source(carried)
    blob = data.draw(with_syncs(frames))
    points = sorted({min(c, len(blob)) for c in cuts} | {0, len(blob)})
    for source in (1, 2, 3):
        deframer = TpiuDeframer(source)
        got = b"".join(deframer.feed(blob[a:b]) for a, b in zip(points, points[1:]))
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
            pkts.append({"type": "swit", "addr": rnd.randrange(8), "size": rnd.choice([1, 2, 4]), "value": rnd.getrandbits(8)})
        elif roll < 0.6:
            pkts.append({"type": "pc_sample", "pc": 0x08000000 + 2 * rnd.getrandbits(18)})
        elif roll < 0.75:
            pkts.append({"type": "exception", "number": rnd.randrange(16, 80), "action": rnd.choice(["enter", "exit", "return"])})
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
    paths = [*sorted((CORPUS / "novakov_rtos_trace").glob("*.trace")), CORPUS / "sigrok_stm32f105" / "trace_example_itm_stream1.bin"]
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
