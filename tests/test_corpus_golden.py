"""Golden tests on real recorded captures (``tests/data/corpus``, see its README for provenance).

* STM32F105 SWO through the TPIU (sigrok): the logic capture's UART decode is the SWO file, which
  deframes to the pure ITM stream and decodes to the packet counts sigrok-test agrees with.
* Ten FreeRTOS ITM traces (Novakov): per-type counts pinned; every RTOS record of the hook
  protocol opens and closes cleanly; the two expected event lists are reproduced byte for byte.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import novakov_rtos_events as rtos
import numpy as np
import pytest

from tracer.decode import ItmDecoder, PacketBatch, PacketKind, TpiuMode, TraceDecoder, decode_bytes
from tracer.decode.tpiu import TpiuDeframer, frame_alignment

# Every test here runs on the compiled kernels and on the pure-Python reference (conftest.kernels).
pytestmark = pytest.mark.usefixtures("kernels")

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
STM32 = CORPUS / "sigrok_stm32f105"
NOVAKOV = CORPUS / "novakov_rtos_trace"


def _decode_all(data: bytes) -> tuple[PacketBatch, ItmDecoder]:
    decoder = ItmDecoder()
    batch = PacketBatch.concat([decoder.feed(data), decoder.finish()])
    return batch, decoder


# -- STM32F105 ------------------------------------------------------------------------------------
def _uart_decode(line: np.ndarray, samples_per_bit: int = 3) -> tuple[bytes, int]:
    """8N1 UART, idle high, sampled at bit centres; returns the bytes and the framing errors."""
    falls = np.flatnonzero((line[:-1] == 1) & (line[1:] == 0)) + 1
    out, errors, resume = bytearray(), 0, 0
    for fall in falls.tolist():
        if fall < resume:
            continue
        centres = fall + samples_per_bit * np.arange(1, 10) + samples_per_bit // 2
        if centres[-1] >= line.shape[0]:
            break
        bits = line[centres]
        errors += int(bits[8] != 1)
        out.append(int(np.dot(bits[:8].astype(np.int64), 1 << np.arange(8))))
        resume = fall + samples_per_bit * 9 + samples_per_bit // 2
    return bytes(out), errors


def test_stm32_logic_capture_is_the_swo_file() -> None:
    """The SWO bytes we decode are what the logic analyser saw (probe 5 = bit 4, 24 MHz, 8 Mbaud)."""
    with zipfile.ZipFile(STM32 / "trace_example.sr") as sr:
        meta = sr.read("metadata").decode()
        assert "samplerate=24 MHz" in meta and "probe5=SWO" in meta
        parts = sorted((n for n in sr.namelist() if n.startswith("logic-1-")), key=lambda n: int(n.rsplit("-", 1)[1]))
        samples = np.frombuffer(b"".join(sr.read(n) for n in parts), np.uint8)
    swo, errors = _uart_decode((samples >> 4) & 1)
    assert errors == 0
    assert swo == (STM32 / "trace_example_swo_tpiu.bin").read_bytes()


def test_stm32_deframes_to_the_itm_stream() -> None:
    swo = (STM32 / "trace_example_swo_tpiu.bin").read_bytes()
    deframer = TpiuDeframer(source_id=1)
    assert deframer.feed(swo) == (STM32 / "trace_example_itm_stream1.bin").read_bytes()
    assert deframer.stats.frames == 491
    assert deframer.stats.id_bytes == {0x00: 3149, 0x01: 2619, 0x02: 760, 0x7D: 8}
    assert deframer.partial_frame_bytes == 0
    # ETM (ID 2) is there too; we only check it is carried whole.
    assert len(TpiuDeframer(source_id=2).feed(swo)) == 760


def test_stm32_packet_counts() -> None:
    """393 PC samples, 97 SW, 31 data value + 26 address + 9 PC, 16 exceptions, 14 overflows."""
    swo = (STM32 / "trace_example_swo_tpiu.bin").read_bytes()
    decoder = TraceDecoder(TpiuMode.AUTO)
    batch = PacketBatch.concat([decoder.feed(swo), decoder.finish()])
    assert decoder.formatted
    assert decoder.itm.stats.packet_counts() == {
        "pc_sample": 393,
        "swit": 97,
        "data_value": 31,
        "data_addr": 26,
        "data_pc": 9,
        "exception": 16,
        "overflow": 14,
    }
    stats = decoder.stats_json()
    assert stats["reserved"] == 0 and stats["resyncs"] == 0 and stats["truncated_bytes"] == 0
    assert stats["tpiu"]["ids"] == {"0": 3149, "1": 2619, "2": 760, "125": 8}
    recs = list(batch.records())
    assert all(r["ts"] is None for r in recs)  # timestamps were off in this capture
    # The firmware prints "On"/"Off" to port 0 and "Sort" to port 1.
    port0 = bytes(r["value"] for r in recs if r["type"] == "swit" and r["port"] == 0)
    assert port0 == b"OnOff" * 5
    port1_text = bytes(r["value"] for r in recs if r["type"] == "swit" and r["port"] == 1 and r["size"] == 1)
    assert port1_text.startswith(b"Sort")


def test_stm32_known_packets() -> None:
    """Watchpoint 0: address offset 0x1010 then a write of 0x100 (``8F``: WnR = 1)."""
    itm = (STM32 / "trace_example_itm_stream1.bin").read_bytes()
    assert itm[140:148] == bytes.fromhex("4E 10 10 8F 00 01 00 00")
    recs = list(decode_bytes(itm).records())
    by_offset = {r["offset"]: r for r in recs}
    assert by_offset[140] == {
        "offset": 140,
        "type": "data_addr",
        "ts": None,
        "comparator": 0,
        "address": 0x1010,
        "size": 2,
    }
    assert by_offset[143] == {
        "offset": 143,
        "type": "data_value",
        "ts": None,
        "comparator": 0,
        "value": 0x100,
        "write": True,
        "size": 4,
    }
    assert all(r["write"] for r in recs if r["type"] == "data_value")
    # IRQ 28 (exception 44) is entered; its exit is lost to an overflow; only the return follows.
    exceptions = [(r["number"], r["action"]) for r in recs if r["type"] == "exception"]
    assert exceptions == [(44, "enter"), (0, "return")] * 8
    first_return = next(r["offset"] for r in recs if r["type"] == "exception" and r["action"] == "return")
    assert any(r["type"] == "overflow" and r["offset"] == first_return - 1 for r in recs)


def test_tpiu_auto_detection_on_the_corpus(kernels: str) -> None:
    """``--tpiu auto`` says "TPIU" for the formatted capture and "not TPIU" for every raw ITM one."""
    assert frame_alignment((STM32 / "trace_example_swo_tpiu.bin").read_bytes()) == 0
    raw = [STM32 / "trace_example_itm_stream1.bin", *sorted(NOVAKOV.glob("*.trace"))]
    assert len(raw) == 11
    for path in raw if kernels == "native" else raw[:2]:  # the pure-Python kernels try fewer (conftest.kernels)
        assert frame_alignment(path.read_bytes()[:65536]) is None, path.name


def test_alignment_search_finds_the_frame_boundary(kernels: str) -> None:
    """The capture started mid-frame, no full sync anywhere: the search still finds the boundary."""
    swo = (STM32 / "trace_example_swo_tpiu.bin").read_bytes()
    itm = list(decode_bytes((STM32 / "trace_example_itm_stream1.bin").read_bytes()).records())
    for shift in range(1, 16) if kernels == "native" else (1, 8, 15):
        junk = bytes((0x5A + 7 * i) & 0xFE for i in range(shift))
        assert frame_alignment(junk + swo) == shift
        decoder = TraceDecoder(TpiuMode.AUTO)
        batch = PacketBatch.concat([decoder.feed(junk + swo), decoder.finish()])
        assert decoder.itm.stats.packet_counts()["pc_sample"] == 393, shift
        assert list(batch.records()) == itm, shift


# -- Novakov FreeRTOS traces ---------------------------------------------------------------------
# Per-type counts, computed once with this decoder and reviewed: 1-2 syncs each (a sync every
# ~0.5 s of the ~10 s captures), reserved headers only in the first 21 bytes (the capture starts
# mid-packet), none after the first sync, and every RTOS record of the hook protocol well formed.
NOVAKOV_COUNTS = {
    "binary_semaphore": {"sync": 2, "lts": 8725, "swit": 4751, "exception": 3974},
    "counting_semaphores": {"sync": 1, "lts": 4254, "swit": 1168, "exception": 3086},
    "counting_semaphores_isr": {
        "sync": 1,
        "lts": 10562,
        "swit": 5938,
        "exception": 4630,
        "data_value": 1,
        "reserved": 2,
    },
    "embo_demo": {"sync": 1, "lts": 15334, "swit": 10298, "exception": 5041, "data_value": 1, "reserved": 1},
    "irq_nested": {"sync": 1, "lts": 8767, "swit": 4776, "exception": 3995, "reserved": 3},
    "itm_time_tester": {"sync": 1, "lts": 4051, "extension": 2, "swit": 1037, "exception": 3018, "reserved": 2},
    "mutex_demo": {"sync": 1, "lts": 8637, "swit": 4760, "exception": 3877, "reserved": 2},
    "queue_demo": {"sync": 1, "lts": 4281, "swit": 1173, "exception": 3108, "data_value": 1, "reserved": 1},
    "task_notify": {"sync": 1, "lts": 5636, "swit": 2232, "exception": 3407, "data_addr": 1, "reserved": 2},
    "task_notify_isr": {"sync": 1, "lts": 6339, "swit": 2682, "exception": 3662, "reserved": 2},
}
# RTOS records (port-3 open/close pairs) per trace.
NOVAKOV_RECORDS = {
    "binary_semaphore": 1138,
    "counting_semaphores": 280,
    "counting_semaphores_isr": 1434,
    "embo_demo": 2470,
    "irq_nested": 1144,
    "itm_time_tester": 0,
    "mutex_demo": 1147,
    "queue_demo": 282,
    "task_notify": 511,
    "task_notify_isr": 611,
}


@pytest.mark.parametrize("name", sorted(NOVAKOV_COUNTS))
def test_novakov_trace_decodes(name: str) -> None:
    data = (NOVAKOV / f"{name}.trace").read_bytes()
    batch, decoder = _decode_all(data)
    assert decoder.stats.packet_counts() == NOVAKOV_COUNTS[name]
    kinds, offsets = batch.kind, batch.offset
    first_sync = int(offsets[kinds == PacketKind.SYNC][0])
    assert not np.any((kinds == PacketKind.RESERVED) & (offsets > first_sync))
    assert np.all(offsets[kinds == PacketKind.RESERVED] < 32)
    assert decoder.stats.resyncs == (1 if NOVAKOV_COUNTS[name].get("reserved") else 0)
    assert decoder.stats.padding == 0
    assert decoder.stats.truncated_bytes <= 2  # the capture ends mid-packet at most
    assert np.all(np.diff(offsets) > 0)
    # Every timestamp is TC=0 (synchronous) and the time runs about 10 s at the core clock.
    assert np.all(batch.b[kinds == PacketKind.LTS] == 0)
    assert 480_000_000 < decoder.accumulated_ts < 485_000_000
    # The hook protocol: every record opens and closes with the same type; none is unknown.
    stats = rtos.ProtocolStats()
    rtos.rtos_events(rtos.messages(batch), stats)
    assert stats == rtos.ProtocolStats(records=NOVAKOV_RECORDS[name])


@pytest.mark.parametrize("name", ["itm_time_tester", "queue_demo"])
def test_novakov_expected_output_reproduced(name: str) -> None:
    """(a) Byte for byte, once Orbuculum's old LTS bug is applied to our timestamps; (b) our own
    timestamps differ from the snapshot's exactly after the packets that bug changes."""
    data = (NOVAKOV / f"{name}.trace").read_bytes()
    expected = (NOVAKOV / f"{name}.expected.txt").read_text()
    batch, _ = _decode_all(data)

    with_bug = rtos.restamp(batch, rtos.orbuculum_lts_bug)
    theirs = rtos.rtos_events(rtos.messages(batch, with_bug))
    assert rtos.render(theirs) == expected

    ours = rtos.rtos_events(rtos.messages(batch))
    buggy = rtos.buggy_lts_packets(batch)
    assert len(buggy) == {"itm_time_tester": 0, "queue_demo": 11}[name]
    for i in buggy:  # three or more payload bytes, and bit 14 clear: the bug sets it
        assert batch.c[i] >= 3 and not batch.a[i] & 1 << 14
    # Same events in the same order; only timestamps differ.
    assert [(e.name, repr(e.fields), repr(e.extra)) for e in ours] == [
        (e.name, repr(e.fields), repr(e.extra)) for e in theirs
    ]
    lts = np.flatnonzero(batch.kind == PacketKind.LTS)
    differing = 0
    for mine, snap in zip(ours, theirs):
        stamping = lts[np.searchsorted(lts, mine.index)]  # the LTS that stamps this event
        bugs_so_far = int(np.searchsorted(buggy, stamping, side="right"))
        assert snap.timestamp - mine.timestamp == (1 << 14) * bugs_so_far
        differing += bugs_so_far > 0
    if name == "queue_demo":
        assert rtos.render(ours) != expected
        assert differing == 3368
    else:
        assert rtos.render(ours) == expected


def test_novakov_decode_is_split_invariant() -> None:
    """The whole trace fed in odd-sized chunks gives the same packets as in one piece."""
    data = (NOVAKOV / "queue_demo.trace").read_bytes()
    whole = decode_bytes(data)
    decoder = ItmDecoder()
    parts = [decoder.feed(data[i : i + 97]) for i in range(0, len(data), 97)]
    split = PacketBatch.concat([*parts, decoder.finish()])
    for a, b in zip(whole.columns(), split.columns(), strict=True):
        assert np.array_equal(a, b)


def test_novakov_stats_through_the_cli(run_cli) -> None:
    result = run_cli("decode", NOVAKOV / "queue_demo.trace", "--format", "stats")
    assert result.code == 0
    stats = json.loads(result.out)
    assert stats["packets"] == NOVAKOV_COUNTS["queue_demo"]
    assert stats["bytes"] == len((NOVAKOV / "queue_demo.trace").read_bytes())
    assert "tpiu" not in stats
