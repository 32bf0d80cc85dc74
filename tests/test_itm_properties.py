"""Property tests of the ITM/DWT decoder against the test-side encoder (``itm_encoder.py``).

Random packet sequences are encoded, decoded and compared field by field, timestamps included;
any split of the byte stream must give the same packets; random bytes never raise; and damage
before a sync packet never reaches past it.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from itm_encoder import FULL_SYNC, HALF_SYNC, SIZE_CODE, encode_stream, min_groups, per_source, tpiu_frames

from tracer.decode import ItmDecoder, PacketBatch, TpiuMode, TraceDecoder, decode_bytes

# Every test here runs on the compiled kernels and on the pure-Python reference (conftest.kernels).
pytestmark = pytest.mark.usefixtures("kernels")

Packet = dict[str, Any]

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
comparator = st.integers(0, 3)
SIZES = {1: u8, 2: u16, 4: u32}


@st.composite
def lts(draw: st.DrawFn) -> Packet:
    if draw(st.booleans()):
        return {"type": "lts", "delta": draw(st.integers(1, 6)), "tc": 0, "format": 2}
    delta = draw(st.integers(0, (1 << 28) - 1) | st.integers(0, 300))
    nbytes = draw(st.integers(min_groups(delta), 4))
    return {"type": "lts", "delta": delta, "tc": draw(st.integers(0, 3)), "nbytes": nbytes}


@st.composite
def gts1(draw: st.DrawFn) -> Packet:
    nbytes = draw(st.integers(1, 4))
    if nbytes < 4:
        return {"type": "gts1", "value": draw(st.integers(0, (1 << 7 * nbytes) - 1)), "wrap": False, "clkch": False}
    value = draw(st.integers(0, (1 << 26) - 1))
    return {"type": "gts1", "value": value, "wrap": draw(st.booleans()), "clkch": draw(st.booleans()), "nbytes": 4}


@st.composite
def gts2(draw: st.DrawFn) -> Packet:
    if draw(st.booleans()):
        return {"type": "gts2", "value": draw(st.integers(0, (1 << 22) - 1)), "nbytes": 4}
    return {"type": "gts2", "value": draw(st.integers(0, (1 << 38) - 1)), "nbytes": 6}


@st.composite
def extension(draw: st.DrawFn) -> Packet:
    sh = draw(st.integers(0, 1))
    if draw(st.booleans()):
        return {"type": "extension", "sh": sh, "ex": draw(st.integers(0, 7))}
    ex = draw(st.integers(0, 0xFFFFFFFF) | st.integers(0, 0x3FF))
    least = 4 if ex >= 1 << 24 else max(1, (ex.bit_length() - 3 + 6) // 7)
    return {"type": "extension", "sh": sh, "ex": ex, "nbytes": draw(st.integers(least, 4))}


@st.composite
def swit(draw: st.DrawFn) -> Packet:
    size = draw(st.sampled_from([1, 2, 4]))
    return {"type": "swit", "addr": draw(st.integers(0, 31)), "size": size, "value": draw(SIZES[size])}


@st.composite
def data_trace(draw: st.DrawFn) -> Packet:
    kind = draw(st.sampled_from(["data_pc", "data_addr", "data_value", "data_match"]))
    n = draw(comparator)
    if kind == "data_match":
        return {"type": kind, "comparator": n}
    size = draw(st.sampled_from([1, 2, 4]))
    value = draw(SIZES[size])
    if kind == "data_pc":
        return {"type": kind, "comparator": n, "pc": value & ~1 if size == 1 else value, "size": size}
    if kind == "data_addr":
        return {"type": kind, "comparator": n, "address": value, "size": size}
    return {"type": kind, "comparator": n, "value": value, "write": draw(st.booleans()), "size": size}


@st.composite
def reserved(draw: st.DrawFn) -> Packet:
    one_byte = [0x80, 0x90, 0xA0, 0xB0] + [h for h in range(256) if h & 0x0F == 0x04 and h not in (0x94, 0xB4)]
    if draw(st.booleans()):
        header = draw(st.sampled_from(one_byte))
        return {"type": "reserved", "header": header}
    disc = draw(st.sampled_from([4, 5, 6, 7, *range(24, 32)]))
    size = draw(st.sampled_from([1, 2, 4]))
    header = disc << 3 | 4 | SIZE_CODE[size]
    payload = draw(st.binary(min_size=size, max_size=size))
    return {"type": "reserved", "header": header, "raw": bytes([header]) + payload}


hardware = st.one_of(
    st.builds(lambda c: {"type": "dwt_event", "counters": c}, u8),
    st.builds(
        lambda n, a: {"type": "exception", "number": n, "action": a},
        st.integers(0, 511),
        st.sampled_from(["enter", "exit", "return"]),
    ),
    st.builds(lambda pc: {"type": "pc_sample", "pc": pc}, u32),
    st.builds(lambda p: {"type": "pc_sleep", "prohibited": p}, st.booleans()),
    st.builds(lambda c: {"type": "pmu_overflow", "counters": c}, u8),
    data_trace(),
)

packet = st.one_of(
    st.builds(lambda z: {"type": "sync", "zeros": z}, st.integers(5, 9)),
    st.just({"type": "overflow"}),
    lts(),
    gts1(),
    gts2(),
    extension(),
    swit(),
    hardware,
    reserved(),
)
packets = st.lists(packet, max_size=60)


def records(batch: PacketBatch) -> list[Packet]:
    return list(batch.records())


def feed_split(data: bytes, cuts: list[int], decoder: ItmDecoder | TraceDecoder | None = None) -> list[Packet]:
    """Decode ``data`` fed in pieces cut at ``cuts``."""
    decoder = decoder or ItmDecoder()
    out: list[Packet] = []
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    for a, b in itertools.pairwise(points):
        out += records(decoder.feed(data[a:b]))
    return out + records(decoder.finish())


# TRACER_FUZZ_EXAMPLES=20000 runs a long fuzzing session; the default keeps the suite fast.
EXAMPLES = int(os.environ.get("TRACER_FUZZ_EXAMPLES", "300"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(packets)
def test_round_trip(pkts: list[Packet]) -> None:
    """Every packet, field, offset and timestamp comes back; nothing else is reported."""
    data, expected = encode_stream(pkts)
    decoder = ItmDecoder()
    got = records(decoder.feed(data)) + records(decoder.finish())
    assert got == expected
    assert decoder.stats.truncated_bytes == 0
    assert decoder.stats.padding == 0
    assert decoder.stats.resyncs == _resyncs(expected)


def _resyncs(recs: list[Packet]) -> int:
    """Sync packets that follow a reserved packet (since the previous sync)."""
    count, damaged = 0, False
    for r in recs:
        if r["type"] == "reserved":
            damaged = True
        elif r["type"] == "sync" and damaged:
            count, damaged = count + 1, False
    return count


@SETTINGS
@given(packets, st.lists(st.integers(0, 400), max_size=12))
def test_any_split_gives_the_same_packets(pkts: list[Packet], cuts: list[int]) -> None:
    data, expected = encode_stream(pkts)
    assert feed_split(data, cuts) == expected


@SETTINGS
@given(packets, st.integers(1, 7))
def test_byte_by_byte_and_small_chunks(pkts: list[Packet], step: int) -> None:
    data, expected = encode_stream(pkts)
    assert feed_split(data, list(range(0, len(data), step))) == expected


@SETTINGS
@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=8))
def test_random_bytes_never_raise_and_are_accounted(data: bytes, cuts: list[int]) -> None:
    decoder = ItmDecoder()
    got = feed_split(data, cuts, decoder)
    assert got == records(decode_bytes(data))  # split invariance holds for garbage too
    offsets = [r["offset"] for r in got]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    assert all(0 <= o < len(data) for o in offsets)
    assert decoder.stats.reserved == sum(r["type"] == "reserved" for r in got)
    assert decoder.stats.packets.sum() == len(got)
    if data:
        assert got or decoder.stats.padding or decoder.stats.truncated_bytes


def _after(recs: list[Packet], offset: int) -> list[Packet]:
    """Records after ``offset``, with offsets made relative to it and ts relative to the first one."""
    tail = [r for r in recs if r["offset"] > offset]
    ref = next((r["ts"] for r in tail if r["ts"] is not None), None)
    out = []
    for r in tail:
        r = dict(r, offset=r["offset"] - offset)
        if r["ts"] is not None:
            r["ts"] -= ref
        out.append(r)
    return out


@st.composite
def damage(draw: st.DrawFn, length: int) -> tuple[list[tuple[int, bytes]], list[tuple[int, int]]]:
    """Random insertions and deletions within ``length`` bytes."""
    inserts = draw(st.lists(st.tuples(st.integers(0, length), st.binary(min_size=1, max_size=6)), max_size=4))
    deletes = draw(st.lists(st.tuples(st.integers(0, max(0, length - 1)), st.integers(1, 4)), max_size=3))
    return inserts, deletes


def _apply(data: bytes, inserts: list[tuple[int, bytes]], deletes: list[tuple[int, int]]) -> bytes:
    keep = bytearray(data)
    for at, count in sorted(deletes, reverse=True):
        del keep[at : at + count]
    for at, blob in sorted(inserts, reverse=True):
        at = min(at, len(keep))
        keep[at:at] = blob
    return bytes(keep)


@settings(max_examples=EXAMPLES + 100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets, packets, st.data())
def test_damage_before_a_sync_does_not_reach_past_it(
    before: list[Packet], after: list[Packet], data: st.DataObject
) -> None:
    """Inject or drop bytes before a sync packet: everything after the sync decodes as the original."""
    head, _ = encode_stream(before)
    body, _ = encode_stream([{"type": "sync", "zeros": 5}, *after])
    original = records(decode_bytes(head + body))
    inserts, deletes = data.draw(damage(len(head)))
    damaged_head = _apply(head, inserts, deletes)
    assume(damaged_head != head)
    decoder = ItmDecoder()
    got = feed_split(damaged_head + body, data.draw(st.lists(st.integers(0, 600), max_size=6)), decoder)
    sync_end = len(head) + 5  # the sync's 0x80
    damaged_sync_end = len(damaged_head) + 5
    assert _after(got, damaged_sync_end) == _after(original, sync_end)
    # The sync itself is found and ends right there.
    syncs = [r for r in got if r["type"] == "sync" and r["offset"] <= damaged_sync_end - 5]
    assert syncs and syncs[-1]["offset"] + 5 <= damaged_sync_end
    # Damage that the decoder noticed before the sync is closed by a resync.
    noticed = any(r["type"] == "reserved" and r["offset"] < damaged_sync_end for r in got)
    if noticed:
        assert decoder.stats.resyncs >= 1


def test_damage_is_counted() -> None:
    """A concrete case: a reserved header before a sync gives one reserved packet and one resync."""
    data, _ = encode_stream([{"type": "swit", "addr": 1, "size": 2, "value": 7}])
    stream = data + b"\xa0" + bytes(5) + b"\x80" + b"\x01\x22"
    decoder = ItmDecoder()
    decoder.feed(stream)
    decoder.finish()
    assert decoder.stats.reserved == 1
    assert decoder.stats.resyncs == 1


@st.composite
def tpiu_stream(draw: st.DrawFn) -> tuple[list[Packet], list[tuple[int, int]]]:
    """ITM packets on source 1, interleaved with other sources, null padding and triggers."""
    pkts = draw(packets)
    itm, _ = encode_stream(pkts)
    pairs: list[tuple[int, int]] = []
    i = 0
    while i < len(itm):
        run = draw(st.integers(1, 20))
        pairs += [(1, b) for b in itm[i : i + run]]
        i += run
        other = draw(st.sampled_from([None, 2, 3, 0x00, 0x7D]))
        if other is not None:
            pairs += [(other, b) for b in draw(st.binary(min_size=1, max_size=8))]
    return pkts, pairs


@st.composite
def formatted(draw: st.DrawFn, frames: list[bytes]) -> bytes:
    """Frames as a port delivers them: a misaligned start, full syncs, half-sync filler."""
    out = bytearray(draw(st.binary(max_size=15).map(lambda b: b.replace(b"\xff", b"\x00"))))
    out += FULL_SYNC
    for frame in frames:
        if draw(st.integers(0, 5)) == 0:
            out += FULL_SYNC
        for j in range(0, 16, 2):
            if draw(st.integers(0, 9)) == 0:
                out += HALF_SYNC
            out += frame[j : j + 2]
    return bytes(out)


@SETTINGS
@given(tpiu_stream(), st.data(), st.lists(st.integers(0, 2000), max_size=8))
def test_tpiu_formatted_stream_decodes_like_raw(
    stream: tuple[list[Packet], list[tuple[int, int]]], data: st.DataObject, cuts: list[int]
) -> None:
    """ITM inside TPIU frames gives the same packets as the raw stream, whatever the split.

    The frames mix in other sources, null-ID padding, trigger bytes, immediate and delayed ID
    changes, a misaligned start, full syncs between frames and half syncs inside them.
    """
    pkts, pairs = stream
    itm, expected = encode_stream(pkts)
    frames, carried = tpiu_frames(pairs)
    sources = per_source(carried)
    assert sources.get(1, b"") == itm
    blob = data.draw(formatted(frames))
    for mode in (TpiuMode.ON, TpiuMode.AUTO):
        decoder = TraceDecoder(mode, tpiu_id=1)
        got = feed_split(blob, cuts, decoder)
        if mode is TpiuMode.AUTO and decoder.deframer is None:
            assert len(frames) < 4  # too short to tell; read as raw
            continue
        assert got == expected
        assert decoder.deframer is not None
        assert decoder.deframer.stats.id_bytes == {k: len(v) for k, v in sources.items()}
        assert decoder.deframer.stats.frames == len(frames)


@settings(max_examples=max(100, EXAMPLES // 2), deadline=None)
@given(packets)
def test_differential_against_pyocd(pkts: list[Packet]) -> None:
    """pyOCD's SWOParser agrees on the packets it decodes correctly (not its known bugs)."""
    from pyocd.trace import events
    from pyocd.trace.swo import SWOParser

    supported = [
        p
        for p in pkts
        if p["type"] in ("swit", "exception", "pc_sample", "dwt_event")
        or (p["type"] == "lts" and (p.get("format") == 2 or (p["tc"] < 3 and p["nbytes"] == 1)))
    ]
    data, expected = encode_stream(supported)

    class Sink:
        def __init__(self) -> None:
            self.events: list[Any] = []

        def receive(self, event: Any) -> None:
            self.events.append(event)

    class Core:
        def exception_number_to_name(self, number: int) -> str:
            return str(number)

    sink = Sink()
    SWOParser(Core(), sink).parse(data)
    theirs = []
    for e in sink.events:
        if isinstance(e, events.TraceITMEvent):
            theirs.append(("swit", e.port, e.width, e.data, e.timestamp))
        elif isinstance(e, events.TraceExceptionEvent):
            theirs.append(("exception", e.exception_number, e.action, e.timestamp))
        elif isinstance(e, events.TracePeriodicPC):
            theirs.append(("pc_sample", e.pc, e.timestamp))
        elif isinstance(e, events.TraceEventCounter):
            theirs.append(("dwt_event", e.counter_mask, e.timestamp))
    ours = []
    stamped = [r for r in expected if r["ts"] is not None]  # pyOCD holds unstamped events back
    for r in stamped:
        if r["type"] == "swit":
            ours.append(("swit", r["port"], r["size"], r["value"], r["ts"]))
        elif r["type"] == "exception":
            ours.append(("exception", r["number"], {"enter": 1, "exit": 2, "return": 3}[r["action"]], r["ts"]))
        elif r["type"] == "pc_sample":
            ours.append(("pc_sample", r["pc"], r["ts"]))
        elif r["type"] == "dwt_event":
            ours.append(("dwt_event", r["counters"], r["ts"]))
    assert records(decode_bytes(data)) == expected
    assert theirs == ours


def test_numpy_input_and_offsets_argument() -> None:
    data, expected = encode_stream([{"type": "swit", "addr": 3, "size": 4, "value": 1}, {"type": "overflow"}])
    decoder = ItmDecoder()
    got = records(decoder.feed(np.frombuffer(data, np.uint8), offset=0)) + records(decoder.finish())
    assert got == expected
