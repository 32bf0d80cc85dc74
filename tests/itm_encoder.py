"""A test-side ITM/DWT packet encoder and TPIU formatter, written from the packet tables alone.

It shares no code with ``tracer.decode``: it turns the contract's packet records (the dicts of
``tracer decode --format ndjson``, minus ``offset`` and ``ts``) into bytes, and computes what a
correct decoder must report for them (offsets, stimulus ports after page changes, accumulated
local timestamps, merged global timestamps). The property tests compare the decoder with it.

Bit layouts (Armv7-M ARM Appendix D4, Armv8-M ARM Appendix F):
    sync          >= 5 x 00, then 80
    overflow      70
    LTS2          0TTT0000, T = 1..6
    LTS1          11TC0000 + 1..4 bytes of 7 bits, least significant group first, bit 7 = more
    GTS1          94 + 1..4 bytes (7,7,7 bits; 4th byte: bit6 wrap, bit5 clkch, bits4:0 = TS[25:21])
    GTS2          B4 + 4 bytes (TS[47:26]) or 6 bytes (TS[63:26]), 7 bits each
    extension     C EEE 1 S 00 + (if C) bytes of 7 bits, the 4th continuation byte has 8 bits
    SW source     AAAAA 0 SS + 1/2/4 bytes little-endian (SS = 1, 2, 3)
    HW source     AAAAA 1 SS, AAAAA = discriminator ID
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

Packet = dict[str, Any]

SIZE_CODE = {1: 1, 2: 2, 4: 3}


def _le(value: int, size: int) -> bytes:
    return value.to_bytes(size, "little")


def _groups(value: int, count: int) -> bytes:
    """``count`` bytes of 7 bits each, least significant first, continuation bit on all but the last."""
    out = bytearray()
    for j in range(count):
        byte = (value >> (7 * j)) & 0x7F
        if j < count - 1:
            byte |= 0x80
        out.append(byte)
    assert value >> (7 * count) == 0, f"{value:#x} does not fit {count} groups"
    return bytes(out)


def min_groups(value: int) -> int:
    """Fewest 7-bit groups that hold ``value`` (at least one)."""
    return max(1, (value.bit_length() + 6) // 7)


def encode(pkt: Packet) -> bytes:
    """Bytes of one packet. Optional keys choose among valid encodings:

    ``zeros`` (sync: how many 00 bytes), ``nbytes`` (lts/gts1 payload length, gts2 4 or 6,
    extension continuation bytes), ``format`` (lts: 1 or 2), ``addr`` (swit: address within
    the current page; default ``port % 32``), ``raw`` (reserved: the whole packet's bytes).
    """
    kind = pkt["type"]
    if kind == "sync":
        return b"\x00" * pkt.get("zeros", 5) + b"\x80"
    if kind == "overflow":
        return b"\x70"
    if kind == "lts":
        delta, tc = pkt["delta"], pkt["tc"]
        if pkt.get("format", 1) == 2:
            assert tc == 0 and 1 <= delta <= 6
            return bytes([delta << 4])
        n = pkt.get("nbytes", min_groups(delta))
        return bytes([0xC0 | tc << 4]) + _groups(delta, n)
    if kind == "gts1":
        value = pkt["value"]
        n = pkt.get("nbytes", 4 if (pkt["wrap"] or pkt["clkch"]) else min(4, min_groups(value)))
        if n < 4:
            assert not pkt["wrap"] and not pkt["clkch"]
            return b"\x94" + _groups(value, n)
        assert value < 1 << 26
        last = (value >> 21) & 0x1F | (0x40 if pkt["wrap"] else 0) | (0x20 if pkt["clkch"] else 0)
        return b"\x94" + _groups(value & ((1 << 21) - 1), 3)[:2] + bytes([((value >> 14) & 0x7F) | 0x80, last])
    if kind == "gts2":
        n = pkt.get("nbytes", 4 if pkt["value"] < 1 << 22 else 6)
        assert n in (4, 6)
        return b"\xb4" + _groups(pkt["value"], n)
    if kind == "extension":
        ex, sh = pkt["ex"], pkt["sh"]
        n = pkt.get("nbytes", 0 if ex < 8 else 4 if ex >= 1 << 24 else (ex.bit_length() - 3 + 6) // 7)
        header = 0x08 | sh << 2 | (ex & 7) << 4
        if n == 0:
            assert ex < 8
            return bytes([header])
        out = bytearray([header | 0x80])
        rest = ex >> 3
        for j in range(n):
            if j == 3:
                out.append(rest & 0xFF)
                rest >>= 8
                break
            byte = rest & 0x7F
            rest >>= 7
            out.append(byte | (0x80 if j < n - 1 else 0))
        assert rest == 0, f"extension {ex:#x} does not fit {n} bytes"
        return bytes(out)
    if kind == "swit":
        addr = _addr(pkt)
        return bytes([addr << 3 | SIZE_CODE[pkt["size"]]]) + _le(pkt["value"], pkt["size"])
    if kind == "reserved":
        return bytes(pkt.get("raw", bytes([pkt["header"]])))
    return _hardware(pkt)


def _addr(pkt: Packet) -> int:
    """A SW packet's address within the page: ``addr``, or ``port`` modulo 32."""
    return pkt["addr"] if "addr" in pkt else pkt["port"] % 32


def _hw(disc: int, size: int, payload: int) -> bytes:
    return bytes([disc << 3 | 4 | SIZE_CODE[size]]) + _le(payload, size)


def _hardware(pkt: Packet) -> bytes:
    kind = pkt["type"]
    if kind == "dwt_event":
        return _hw(0, 1, pkt["counters"])
    if kind == "exception":
        action = {"enter": 1, "exit": 2, "return": 3}[pkt["action"]]
        number = pkt["number"]
        return _hw(1, 2, (number & 0xFF) | (number >> 8) << 8 | action << 12)
    if kind == "pc_sample":
        return _hw(2, 4, pkt["pc"])
    if kind == "pc_sleep":
        return _hw(2, 1, 0xFF if pkt["prohibited"] else 0x00)
    if kind == "pmu_overflow":
        return _hw(3, 1, pkt["counters"])
    n = pkt.get("comparator", 0)
    if kind == "data_pc":
        assert pkt["size"] != 1 or pkt["pc"] & 1 == 0, "a 1-byte PC with bit 0 set is a match packet"
        return _hw(8 | n << 1, pkt["size"], pkt["pc"])
    if kind == "data_addr":
        return _hw(8 | n << 1 | 1, pkt["size"], pkt["address"])
    if kind == "data_match":
        return _hw(8 | n << 1, 1, 0x01)
    if kind == "data_value":
        return _hw(16 | n << 1 | int(pkt["write"]), pkt["size"], pkt["value"])
    raise ValueError(f"unknown packet type {kind!r}")


@dataclasses.dataclass
class Model:
    """What a correct decoder reports, packet by packet (the decoder's state, re-derived)."""

    page: int = 0
    gts_lo: int = 0
    gts_lo_bits: int = 0  # low bits of the global timestamp known since the last sync
    gts_hi: int | None = None

    def expect(self, pkt: Packet) -> Packet:
        """The contract record of ``pkt`` (without offset and ts), updating the state."""
        rec = {k: v for k, v in pkt.items() if k not in ("zeros", "nbytes", "format", "addr", "raw")}
        kind = pkt["type"]
        if kind == "sync":
            self.page = 0
            self.gts_lo_bits = 0
            self.gts_hi = None
        elif kind == "extension" and pkt["sh"] == 0 and pkt["ex"] < 8 and pkt.get("nbytes", 0) == 0:
            self.page = pkt["ex"]
            rec["page"] = pkt["ex"]
        elif kind == "swit":
            rec["port"] = self.page * 32 + _addr(pkt)
        elif kind == "gts1":
            n = len(encode(pkt)) - 1
            bits = 26 if n == 4 else 7 * n
            mask = (1 << bits) - 1
            self.gts_lo = (self.gts_lo & ~mask) | (pkt["value"] & mask)
            self.gts_lo_bits = max(self.gts_lo_bits, bits)
            if pkt["wrap"]:
                self.gts_hi = None  # the high bits changed; a GTS2 follows
            rec["global"] = self._global()
        elif kind == "gts2":
            self.gts_hi = pkt["value"]
            rec["global"] = self._global()
        return rec

    def _global(self) -> int | None:
        if self.gts_hi is None or self.gts_lo_bits < 26:
            return None
        return self.gts_hi << 26 | self.gts_lo


def encode_stream(packets: Iterable[Packet], start_offset: int = 0) -> tuple[bytes, list[Packet]]:
    """Bytes of ``packets`` and the records a correct decoder gives for them, offsets and ts included.

    A packet's ``ts`` is the sum of all local-timestamp deltas up to and including the first local
    timestamp at or after it; None if no local timestamp follows.
    """
    model = Model()
    out = bytearray()
    records: list[Packet] = []
    acc = 0
    pending: list[Packet] = []
    for pkt in packets:
        rec = {"offset": start_offset + len(out), "type": pkt["type"], "ts": None}
        rec.update(model.expect(pkt))
        out += encode(pkt)
        records.append(rec)
        pending.append(rec)
        if pkt["type"] == "lts":
            acc += pkt["delta"]
            for p in pending:
                p["ts"] = acc
            pending = []
    return bytes(out), records


# -- TPIU (CoreSight formatter) -------------------------------------------------------------------
FULL_SYNC = b"\xff\xff\xff\x7f"
HALF_SYNC = b"\xff\x7f"
NULL_ID = 0x00
TRIGGER_ID = 0x7D


def tpiu_frames(pairs: Iterable[tuple[int, int]], repeat_id: bool = False) -> tuple[list[bytes], list[tuple[int, int]]]:
    """Pack (source ID, byte) pairs into 16-byte frames, as a CoreSight formatter does.

    ``repeat_id``: every frame begins with an ID change, to the source already current or not
    (what many probes' formatters do: each frame says its source).

    Even bytes 0..14 hold an ID change (``ID << 1 | 1``) or a data byte's bits 7:1 (its bit 0 goes
    to aux byte 15, bit ``slot``); odd bytes hold data. An ID can only sit in an even byte, so when
    the source changes at an odd byte the change goes into the even byte before it with its aux bit
    set ("delayed": the odd byte still belongs to the old source). The last frame is completed with
    null-ID padding. Both forms of ID change therefore occur, depending on where the change falls.

    Returns:
        The frames, and the pairs they carry (the input plus the padding).
    """
    items = list(pairs)
    real = len(items)
    frames: list[bytes] = []
    current: int | None = None
    i = 0

    def peek(k: int) -> tuple[int, int]:
        while i + k >= len(items):
            items.append((NULL_ID, 0))
        return items[i + k]

    while i < real:
        frame = bytearray(16)
        aux = 0
        if repeat_id:
            current = None
        for slot in range(8):
            src, byte = peek(0)
            if src != current:  # immediate change; the data byte follows in the odd byte
                frame[2 * slot] = src << 1 | 1
                current = src
                if slot < 7:
                    frame[2 * slot + 1] = byte
                    i += 1
                continue
            nxt_src = peek(1)[0]
            if slot < 7 and nxt_src != current:  # delayed change around the old source's last byte
                frame[2 * slot] = nxt_src << 1 | 1
                aux |= 1 << slot
                frame[2 * slot + 1] = byte
                i += 1
                current = nxt_src
                continue
            frame[2 * slot] = byte & 0xFE
            aux |= (byte & 1) << slot
            i += 1
            if slot < 7:
                frame[2 * slot + 1] = peek(0)[1]
                i += 1
        frame[15] = aux
        frames.append(bytes(frame))
    return frames, items[:i]


def per_source(pairs: Iterable[tuple[int, int]]) -> dict[int, bytes]:
    """The bytes of each source ID, in order."""
    out: dict[int, bytearray] = {}
    for src, byte in pairs:
        out.setdefault(src, bytearray()).append(byte)
    return {k: bytes(v) for k, v in out.items()}
