"""Byte vectors for every ITM/DWT packet type and field of the ``--format ndjson`` contract.

Vectors come from the packet tables (Armv7-M ARM D4, Armv8-M ARM F1; tabled in docs/decoder.md)
and from other decoders' unit tests (rtic-scope/itm, the Orbcode-style Rust decoder, sigrok), plus
the known bugs of other decoders, each pinned by a test named after it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tracer.decode import ItmDecoder, PacketKind, decode_bytes

# Every test here runs on the compiled kernels and on the pure-Python reference (conftest.kernels).
pytestmark = pytest.mark.usefixtures("kernels")


def decode(hex_bytes: str) -> list[dict[str, Any]]:
    """All packets of a stream, as contract records."""
    return list(decode_bytes(bytes.fromhex(hex_bytes)).records())


def fields(hex_bytes: str) -> list[dict[str, Any]]:
    """Records without ``offset`` and ``ts``."""
    return [{k: v for k, v in rec.items() if k not in ("offset", "ts")} for rec in decode(hex_bytes)]


def one(hex_bytes: str) -> dict[str, Any]:
    """The single packet of a one-packet stream, without ``offset`` and ``ts``."""
    recs = fields(hex_bytes)
    assert len(recs) == 1, recs
    return recs[0]


# -- synchronization, overflow ---------------------------------------------------------------------
def test_sync_packet() -> None:
    assert decode("00 00 00 00 00 80") == [{"offset": 0, "type": "sync", "ts": None}]


def test_sync_with_extra_zeros_starts_at_the_first_zero() -> None:
    assert decode("01 22 00 00 00 00 00 00 00 80 01 33") == [
        {"offset": 0, "type": "swit", "ts": None, "port": 0, "size": 1, "value": 0x22},
        {"offset": 2, "type": "sync", "ts": None},
        {"offset": 10, "type": "swit", "ts": None, "port": 0, "size": 1, "value": 0x33},
    ]


def test_four_zeros_and_80_are_not_a_sync() -> None:
    decoder = ItmDecoder()
    batch = decoder.feed(bytes.fromhex("00 00 00 00 80"))
    recs = list(batch.records()) + list(decoder.finish().records())
    assert recs == [{"offset": 4, "type": "reserved", "ts": None, "header": 0x80}]
    assert decoder.stats.padding == 4
    assert decoder.stats.reserved == 1


def test_sync_resets_the_stimulus_page() -> None:
    recs = fields("28 01 22 00 00 00 00 00 80 01 33")
    assert [r.get("port") for r in recs if r["type"] == "swit"] == [2 * 32, 0]


def test_overflow() -> None:
    assert one("70") == {"type": "overflow"}


def test_stream_starts_synced_at_byte_0() -> None:
    # Most SWO streams carry no sync packet: the first byte is a header.
    assert [r["type"] for r in fields("01 41 0E 0F 10")] == ["swit", "exception"]


# -- local timestamps ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", range(1, 7))
def test_lts_format_2(value: int) -> None:
    assert one(f"{value << 4:02x}") == {"type": "lts", "delta": value, "tc": 0}


def test_lts2_value_3_is_a_timestamp() -> None:
    """``30`` is LTS2 with value 3 (sometimes listed as a pyOCD divergence; it is not)."""
    assert one("30") == {"type": "lts", "delta": 3, "tc": 0}


@pytest.mark.parametrize("tc", range(4))
def test_lts_format_1_every_tc(tc: int) -> None:
    header = 0xC0 | tc << 4
    assert one(f"{header:02x} 05") == {"type": "lts", "delta": 5, "tc": tc}
    assert one(f"{header:02x} C9 01") == {"type": "lts", "delta": 0xC9, "tc": tc}
    assert one(f"{header:02x} 85 82 01") == {"type": "lts", "delta": 0x4105, "tc": tc}
    assert one(f"{header:02x} FF FF FF 7F") == {"type": "lts", "delta": (1 << 28) - 1, "tc": tc}


def test_lts_is_lsb_first_pyocd_bug() -> None:
    """pyOCD assembles multi-byte local timestamps MSB-first; ``D0 85 82 01`` is 0x4105, TC=1."""
    assert one("D0 85 82 01") == {"type": "lts", "delta": 0x4105, "tc": 1}


def test_lts_tc3_header_does_not_desync() -> None:
    """pyOCD takes ``F0`` (LTS1, TC=3) for a reserved header and desyncs on its payload."""
    assert fields("F0 85 02 01 22") == [
        {"type": "lts", "delta": 0x105, "tc": 3},
        {"type": "swit", "port": 0, "size": 1, "value": 0x22},
    ]


def test_lts_with_zero_value_and_non_minimal_length() -> None:
    assert one("C0 00") == {"type": "lts", "delta": 0, "tc": 0}
    assert one("C0 81 80 00") == {"type": "lts", "delta": 1, "tc": 0}


def test_lts_stamps_the_packets_before_it_and_accumulates() -> None:
    assert decode("01 41 01 42 C0 0A 0E 0F 10 20 01 43") == [
        {"offset": 0, "type": "swit", "ts": 10, "port": 0, "size": 1, "value": 0x41},
        {"offset": 2, "type": "swit", "ts": 10, "port": 0, "size": 1, "value": 0x42},
        {"offset": 4, "type": "lts", "ts": 10, "delta": 10, "tc": 0},
        {"offset": 6, "type": "exception", "ts": 12, "number": 15, "action": "enter"},
        {"offset": 9, "type": "lts", "ts": 12, "delta": 2, "tc": 0},
        {"offset": 10, "type": "swit", "ts": None, "port": 0, "size": 1, "value": 0x43},
    ]


def test_lts_over_long_continuation_is_malformed() -> None:
    """A fifth continuation byte is not allowed: the packet is counted as malformed."""
    decoder = ItmDecoder()
    recs = [*decoder.feed(bytes.fromhex("E0 85 85 85 85 01 22")).records(), *decoder.finish().records()]
    assert recs == [
        {"offset": 0, "type": "reserved", "ts": None, "header": 0xE0, "malformed": True},
        {"offset": 5, "type": "swit", "ts": None, "port": 0, "size": 1, "value": 0x22},
    ]
    assert decoder.stats.reserved == 1


@pytest.mark.parametrize("header", ["80", "90", "A0", "B0"])
def test_reserved_80_90_a0_b0_are_not_timestamps(header: str) -> None:
    """Lenient decoders (OpenCSD, Orbuculum, sigrok, pyswo) read these as LTS1 and eat a payload."""
    assert fields(f"{header} 05 3F") == [
        {"type": "reserved", "header": int(header, 16)},
        {"type": "dwt_event", "counters": 0x3F},
    ]


# -- global timestamps ---------------------------------------------------------------------------
def test_gts1_one_to_four_bytes() -> None:
    assert one("94 05") == {"type": "gts1", "value": 5, "wrap": False, "clkch": False, "global": None}
    assert one("94 85 01") == {"type": "gts1", "value": 0x85, "wrap": False, "clkch": False, "global": None}
    assert one("94 81 82 03") == {
        "type": "gts1",
        "value": 1 | 2 << 7 | 3 << 14,
        "wrap": False,
        "clkch": False,
        "global": None,
    }
    assert one("94 FF FF FF 1F")["value"] == (1 << 26) - 1


def test_gts1_wrap_and_clkch() -> None:
    """rtic-scope's vector: ``94 80 A0 84 60`` is TS 0b0000100_0100000_0000000 with Wrap and ClkCh."""
    assert one("94 80 A0 84 60") == {"type": "gts1", "value": 0x11000, "wrap": True, "clkch": True, "global": None}
    assert one("94 80 A0 84 40") == {"type": "gts1", "value": 0x11000, "wrap": True, "clkch": False, "global": None}
    assert one("94 80 A0 84 20") == {"type": "gts1", "value": 0x11000, "wrap": False, "clkch": True, "global": None}


def test_gts2_48_and_64_bit() -> None:
    v48 = 0x3D | 0x74 << 7 | 0x11 << 14 | 0x01 << 21
    assert one("B4 BD F4 91 01") == {"type": "gts2", "value": v48, "global": None}
    v64 = v48 | 0x74 << 28 | 0x07 << 35
    assert one("B4 BD F4 91 81 F4 07") == {"type": "gts2", "value": v64, "global": None}


def test_gts1_and_gts2_are_not_swapped() -> None:
    """pyswo decodes ``B4`` as GTS1 and ``94`` as GTS2."""
    assert [r["type"] for r in fields("94 05 B4 81 80 80 01")] == ["gts1", "gts2"]


def test_global_timestamp_merge_and_compression() -> None:
    """Global = GTS2 << 26 | GTS1; a short GTS1 replaces only its low bits (7 per byte)."""
    lo = 0x2ABCDEF & ((1 << 26) - 1)
    full = f"94 {lo & 0x7F | 0x80:02x} {lo >> 7 & 0x7F | 0x80:02x} {lo >> 14 & 0x7F | 0x80:02x} {lo >> 21:02x}"
    recs = fields(f"{full} B4 85 80 80 00 94 11 94 81 02")
    assert recs[0]["global"] is None  # no GTS2 yet
    hi = 5
    assert recs[1] == {"type": "gts2", "value": hi, "global": hi << 26 | lo}
    assert recs[2]["global"] == hi << 26 | (lo & ~0x7F) | 0x11
    assert recs[3]["global"] == hi << 26 | (lo & ~0x3FFF) | 1 | 2 << 7


def test_global_timestamp_wrap_waits_for_the_next_gts2() -> None:
    lo_bytes = "80 80 80 40"  # value 0, Wrap
    recs = fields(f"94 80 80 80 00 B4 81 80 80 00 94 {lo_bytes} 94 05 B4 82 80 80 00 94 06")
    assert recs[1]["global"] == 1 << 26
    assert recs[2]["wrap"] is True and recs[2]["global"] is None
    assert recs[3]["global"] is None  # high bits stale until the GTS2
    assert recs[4]["global"] == 2 << 26 | 5
    assert recs[5]["global"] == 2 << 26 | 6


def test_global_timestamp_unknown_after_sync() -> None:
    recs = fields("94 80 80 80 00 B4 81 80 80 00 94 05 00 00 00 00 00 80 94 06")
    assert recs[2]["global"] == 1 << 26 | 5
    assert recs[3]["type"] == "sync"
    assert recs[4]["global"] is None


@pytest.mark.parametrize("payload", ["81 80 00", "81 80 80 80 00", "81 80 80 80 80 80 00"])
def test_gts2_of_wrong_length_is_malformed(payload: str) -> None:
    recs = fields(f"B4 {payload} 01 22")
    assert recs[0] == {"type": "reserved", "header": 0xB4, "malformed": True}
    assert recs[-1] == {"type": "swit", "port": 0, "size": 1, "value": 0x22}


def test_gts1_over_long_is_malformed() -> None:
    assert fields("94 80 80 80 80 01 22") == [
        {"type": "reserved", "header": 0x94, "malformed": True},
        {"type": "swit", "port": 0, "size": 1, "value": 0x22},
    ]


# -- extension, stimulus pages ---------------------------------------------------------------------
@pytest.mark.parametrize("page", range(8))
def test_stimulus_page_change(page: int) -> None:
    header = 0x08 | page << 4
    recs = fields(f"{header:02x} 93 11 22 33 44 F9 07")
    assert recs == [
        {"type": "extension", "sh": 0, "ex": page, "page": page},
        {"type": "swit", "port": page * 32 + 18, "size": 4, "value": 0x44332211},
        {"type": "swit", "port": page * 32 + 31, "size": 1, "value": 0x07},
    ]


def test_page_0_extension_is_one_byte_orbuculum_bug() -> None:
    """Orbuculum parses ``08`` as a multi-byte I-sync packet and desyncs."""
    assert fields("38 08 01 22 05 10") == [
        {"type": "extension", "sh": 0, "ex": 3, "page": 3},
        {"type": "extension", "sh": 0, "ex": 0, "page": 0},
        {"type": "swit", "port": 0, "size": 1, "value": 0x22},
        {"type": "dwt_event", "counters": 0x10},
    ]


def test_hardware_extension_is_not_a_page() -> None:
    """SH (header bit 2) = 1: an extension for the hardware source; the page stays."""
    assert fields("18 3C 01 22") == [
        {"type": "extension", "sh": 0, "ex": 1, "page": 1},
        {"type": "extension", "sh": 1, "ex": 3},
        {"type": "swit", "port": 32, "size": 1, "value": 0x22},
    ]


def test_multi_byte_extension() -> None:
    assert one("88 22") == {"type": "extension", "sh": 0, "ex": 0x22 << 3}
    assert one("A8 93 82 23") == {"type": "extension", "sh": 0, "ex": 2 | 0x13 << 3 | 0x02 << 10 | 0x23 << 17}
    assert one("FC FF FF FF FF") == {"type": "extension", "sh": 1, "ex": 0xFFFFFFFF}  # 4th byte: 8 bits
    assert one("8C 80 80 80 80") == {"type": "extension", "sh": 1, "ex": 1 << 31}
    # A multi-byte stimulus extension is not a page change.
    assert fields("98 00 01 22")[1] == {"type": "swit", "port": 0, "size": 1, "value": 0x22}


# -- software source -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("hex_bytes", "port", "size", "value"),
    [
        ("01 22", 0, 1, 0x22),
        ("93 11 22 33 44", 18, 4, 0x44332211),
        ("F2 99 12", 30, 2, 0x1299),
        ("8B 03 0F 3F FF", 17, 4, 0xFF3F0F03),
        ("FB FF FF FF FF", 31, 4, 0xFFFFFFFF),
        ("09 00", 1, 1, 0),
    ],
)
def test_software_packets(hex_bytes: str, port: int, size: int, value: int) -> None:
    assert one(hex_bytes) == {"type": "swit", "port": port, "size": size, "value": value}


# -- hardware source (DWT) -----------------------------------------------------------------------
@pytest.mark.parametrize("bit", range(6))
def test_dwt_event_counter_bits(bit: int) -> None:
    """CPI 1, EXC 2, SLEEP 4, LSU 8, FOLD 16 (Orbuculum masks it away with 0x2F), CYC 32."""
    assert one(f"05 {1 << bit:02x}") == {"type": "dwt_event", "counters": 1 << bit}


def test_dwt_event_fold_bit_orbuculum_bug() -> None:
    assert one("05 3F") == {"type": "dwt_event", "counters": 0x3F}
    assert one("05 10")["counters"] & 0x10


@pytest.mark.parametrize(
    ("hex_bytes", "number", "action"),
    [
        ("0E 0F 10", 15, "enter"),
        ("0E 0F 20", 15, "exit"),
        ("0E 00 30", 0, "return"),
        ("0E 20 30", 32, "return"),
        ("0E 42 11", 0x142, "enter"),  # 9-bit number: byte 1 bit 0 is bit 8
        ("0E FF 21", 511, "exit"),
        ("0E 2C 10", 44, "enter"),
    ],
)
def test_exception_trace(hex_bytes: str, number: int, action: str) -> None:
    assert one(hex_bytes) == {"type": "exception", "number": number, "action": action}


def test_exception_function_0_is_malformed() -> None:
    assert fields("0E 0F 00 01 22") == [
        {"type": "reserved", "header": 0x0E, "malformed": True},
        {"type": "swit", "port": 0, "size": 1, "value": 0x22},
    ]


def test_pc_sample_and_sleep() -> None:
    assert one("17 8C 02 00 08") == {"type": "pc_sample", "pc": 0x0800028C}
    assert one("15 00") == {"type": "pc_sleep", "prohibited": False}
    assert one("15 FF") == {"type": "pc_sleep", "prohibited": True}  # Armv8-M: sample prohibited
    assert one("15 12") == {"type": "reserved", "header": 0x15, "malformed": True}


def test_pmu_overflow() -> None:
    assert one("1D 42") == {"type": "pmu_overflow", "counters": 0x42}


@pytest.mark.parametrize("comparator", range(4))
def test_data_trace_pc_1_2_4_bytes(comparator: int) -> None:
    n = comparator << 4
    assert one(f"{0x47 | n:02x} 8C 02 00 08") == {
        "type": "data_pc",
        "comparator": comparator,
        "pc": 0x0800028C,
        "size": 4,
    }
    assert one(f"{0x46 | n:02x} 02 43") == {"type": "data_pc", "comparator": comparator, "pc": 0x4302, "size": 2}
    assert one(f"{0x45 | n:02x} 40") == {"type": "data_pc", "comparator": comparator, "pc": 0x40, "size": 1}


@pytest.mark.parametrize("comparator", range(4))
def test_data_trace_match(comparator: int) -> None:
    """Armv8-M: a 1-byte PC packet with bit 0 set (PCs are halfword aligned) is a match packet."""
    assert one(f"{0x45 | comparator << 4:02x} 01") == {"type": "data_match", "comparator": comparator}


@pytest.mark.parametrize("comparator", range(4))
def test_data_trace_address_1_2_4_bytes(comparator: int) -> None:
    n = comparator << 4
    assert one(f"{0x4E | n:02x} 10 10") == {"type": "data_addr", "comparator": comparator, "address": 0x1010, "size": 2}
    assert one(f"{0x4D | n:02x} 40") == {"type": "data_addr", "comparator": comparator, "address": 0x40, "size": 1}
    assert one(f"{0x4F | n:02x} 02 04 08 10") == {
        "type": "data_addr",
        "comparator": comparator,
        "address": 0x10080402,
        "size": 4,
    }


@pytest.mark.parametrize("comparator", range(4))
@pytest.mark.parametrize("write", [False, True])
@pytest.mark.parametrize(
    ("size", "payload", "value"), [(1, "AB", 0xAB), (2, "CD AB", 0xABCD), (4, "00 01 00 00", 0x100)]
)
def test_data_trace_value(comparator: int, write: bool, size: int, payload: str, value: int) -> None:
    """Header bit 3 (discriminator bit 0, WnR) is 1 for a write (pyOCD, sigrok and rtic-scope agree)."""
    header = 0x84 | comparator << 4 | int(write) << 3 | {1: 1, 2: 2, 4: 3}[size]
    assert one(f"{header:02x} {payload}") == {
        "type": "data_value",
        "comparator": comparator,
        "value": value,
        "write": write,
        "size": size,
    }


def test_data_value_87_is_a_read() -> None:
    """``87 00 01 00 00`` (in the STM32F105 capture) has WnR = 0: a read, not a write."""
    assert one("87 00 01 00 00") == {"type": "data_value", "comparator": 0, "value": 0x100, "write": False, "size": 4}
    assert one("8F 00 01 00 00")["write"] is True


# -- reserved and malformed ----------------------------------------------------------------------
@pytest.mark.parametrize("header", [h for h in range(256) if h & 0x0F == 0x04 and h not in (0x94, 0xB4)])
def test_reserved_x100_headers(header: int) -> None:
    assert fields(f"{header:02x} 01 22") == [
        {"type": "reserved", "header": header},
        {"type": "swit", "port": 0, "size": 1, "value": 0x22},
    ]


def _undefined_hardware_headers() -> list[int]:
    """Hardware headers with a reserved discriminator, or a size the discriminator does not have."""
    defined = {(0, 1), (1, 2), (2, 4), (2, 1), (3, 1)}
    out = []
    for disc in range(32):
        for ss, size in ((1, 1), (2, 2), (3, 4)):
            if 8 <= disc <= 23 or (disc, size) in defined:
                continue
            out.append(disc << 3 | 4 | ss)
    return out


@pytest.mark.parametrize("header", _undefined_hardware_headers())
def test_undefined_hardware_discriminators_are_reserved(header: int) -> None:
    """The payload (of the size the header says) goes with the reserved header."""
    size = {1: 1, 2: 2, 3: 4}[header & 3]
    payload = " ".join(["5A"] * size)
    assert fields(f"{header:02x} {payload} 01 22") == [
        {"type": "reserved", "header": header},
        {"type": "swit", "port": 0, "size": 1, "value": 0x22},
    ]


def test_every_header_byte_decodes_without_error() -> None:
    for header in range(1, 256):
        decoder = ItmDecoder()
        decoder.feed(bytes([header]) + bytes(range(0x81, 0x88)) + b"\x01")
        decoder.finish()


# -- a sync packet is found even inside a damaged packet ---------------------------------------------
def test_sync_hidden_in_a_damaged_packet() -> None:
    """A stray 4-byte SW header swallows four of the sync's zeros: the sync is still found."""
    decoder = ItmDecoder()
    recs = [*decoder.feed(bytes.fromhex("03 00 00 00 00 00 80 01 22")).records(), *decoder.finish().records()]
    assert recs == [
        {"offset": 0, "type": "reserved", "ts": None, "header": 0x03, "malformed": True},
        {"offset": 1, "type": "sync", "ts": None},
        {"offset": 7, "type": "swit", "ts": None, "port": 0, "size": 1, "value": 0x22},
    ]
    assert decoder.stats.resyncs == 1


def test_zero_payload_before_a_whole_sync_is_kept() -> None:
    """A valid packet ending in zeros, then a full sync: both are kept."""
    assert fields("03 00 00 00 00 00 00 00 00 00 80") == [
        {"type": "swit", "port": 0, "size": 4, "value": 0},
        {"type": "sync"},
    ]
    assert fields("C0 00 00 00 00 00 00 80") == [{"type": "lts", "delta": 0, "tc": 0}, {"type": "sync"}]


@pytest.mark.parametrize("damaged", ["C0", "C0 85", "94 81", "0E 00", "8C", "B4 81 80 80"])
def test_sync_hidden_after_other_damaged_packets(damaged: str) -> None:
    recs = fields(f"{damaged} 00 00 00 00 00 80 01 22")
    assert recs[0]["type"] == "reserved" and recs[0]["malformed"]
    assert recs[-2:] == [{"type": "sync"}, {"type": "swit", "port": 0, "size": 1, "value": 0x22}]


def test_truncated_packet_at_end_is_reported() -> None:
    decoder = ItmDecoder()
    recs = [*decoder.feed(bytes.fromhex("01 22 03 11 22")).records(), *decoder.finish().records()]
    assert [r["type"] for r in recs] == ["swit"]
    assert decoder.truncated_at == 2
    assert decoder.stats.truncated_bytes == 3


def test_counts_per_kind() -> None:
    decoder = ItmDecoder()
    decoder.feed(bytes.fromhex("01 22 70 05 10 80 0E 0F 10 10"))
    decoder.finish()
    assert decoder.stats.packet_counts() == {
        "overflow": 1,
        "lts": 1,
        "swit": 1,
        "dwt_event": 1,
        "exception": 1,
        "reserved": 1,
    }
    assert decoder.stats.packets[PacketKind.RESERVED] == 1
