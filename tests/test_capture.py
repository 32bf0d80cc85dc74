"""The ``.trace`` capture: crash-safe writing, reading back after cuts and damage, raw files."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from itm_encoder import encode_stream

from tracer.capture import CaptureMetadata, CaptureReader, CaptureWriter, open_capture
from tracer.capture.format import CHUNK_HEAD, HEADER_PREFIX, MAGIC
from tracer.decode import PacketBatch, PacketKind
from tracer.errors import CaptureError
from tracer.pipeline.capture import decode_reader


def _stream(n: int = 600) -> bytes:
    """A valid ITM stream of ``n`` SW packets with timestamps (about 5.5 bytes per packet)."""
    pkts = []
    for i in range(n):
        pkts.append({"type": "swit", "addr": i % 5, "size": 4, "value": 0x01010101 * (i % 200)})
        pkts.append({"type": "lts", "delta": 1 + i % 6, "tc": 0, "format": 2})
    return encode_stream(pkts)[0]


class Clock:
    """A host clock that advances 1 ms per reading."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000_000_000

    def __call__(self) -> int:
        self.now += 1_000_000
        return self.now


def _write(path: Path, data: bytes, piece: int = 100, flush_bytes: int = 256) -> CaptureWriter:
    metadata = CaptureMetadata(source="tcp://localhost:3443", cpu_hz=160_000_000)
    with CaptureWriter(path, metadata, flush_bytes=flush_bytes, clock=Clock(), flush_interval=1e9) as writer:
        for i in range(0, len(data), piece):
            writer.write(data[i : i + piece])
    return writer


def _chunk_starts(blob: bytes) -> list[int]:
    """File positions of the chunk heads of a capture, parsed from the layout."""
    (length,) = struct.unpack_from("<I", blob, len(MAGIC) + 2)
    pos = len(MAGIC) + HEADER_PREFIX.size + length + 4
    starts = []
    while pos < len(blob):
        starts.append(pos)
        (size,) = struct.unpack_from("<I", blob, pos + CHUNK_HEAD.size - 12)
        pos += CHUNK_HEAD.size + size
    assert pos == len(blob)
    return starts


def test_write_and_read_back(tmp_path: Path) -> None:
    data = _stream()
    path = tmp_path / "a.trace"
    writer = _write(path, data)
    assert writer.file_size == path.stat().st_size
    with open_capture(path) as reader:
        assert reader.is_capture and reader.kind == "capture"
        chunks = list(reader.chunks())
        assert reader.warnings == []
    assert b"".join(c.data for c in chunks) == data
    assert [c.offset for c in chunks] == [256 * i for i in range(len(chunks))]
    assert all(c.verified and c.lost_before == 0 and c.host_ns for c in chunks)
    hosts = [c.host_ns for c in chunks]
    assert hosts == sorted(hosts)


def test_metadata_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "m.trace"
    meta = CaptureMetadata(
        source="serial:///dev/ttyACM0?baud=2000000",
        tpiu=True,
        tpiu_id=2,
        cpu_hz=480_000_000,
        swo_hz=2_000_000,
        ts_prescaler=16,
        ts_clock="swo",
        firmware_hash="ab12",
        elf_build_id="cd34",
        notes="bring-up, board 3",
        extra={"launcher": {"kind": "fvp", "model": "FVP_Corstone_SSE-300"}, "simulated_npu": True},
    )
    with CaptureWriter(path, meta) as writer:
        writer.write(b"\x01\x22")
        writer.note({"event": "reconnect", "after_s": 1.5})
        writer.update_metadata({"elf_build_id": "ef56", "board": "MPS3"})
        writer.write(b"\x01\x23")
    with open_capture(path) as reader:
        assert reader.read_stream() == b"\x01\x22\x01\x23"
        got = reader.metadata
        assert reader.events == [(2, {"event": "reconnect", "after_s": 1.5})]
    assert got.source == meta.source and got.tpiu is True and got.tpiu_id == 2
    assert (got.cpu_hz, got.swo_hz, got.ts_prescaler, got.ts_clock) == (480_000_000, 2_000_000, 16, "swo")
    assert got.firmware_hash == "ab12" and got.notes == "bring-up, board 3"
    assert got.elf_build_id == "ef56"  # the METADATA chunk's patch applies
    assert got.extra == {
        "launcher": {"kind": "fvp", "model": "FVP_Corstone_SSE-300"},
        "simulated_npu": True,
        "board": "MPS3",
    }
    assert got.created and got.tool.startswith("tracer ")


def test_writer_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "x.trace"
    path.write_bytes(b"keep me")
    from tracer.errors import UsageError

    with pytest.raises(UsageError, match="exists"):
        CaptureWriter(path, CaptureMetadata())
    assert path.read_bytes() == b"keep me"
    with CaptureWriter(path, CaptureMetadata(), overwrite=True) as writer:
        writer.write(b"\x70")
    assert open_capture(path).read_stream() == b"\x70"


def test_cut_at_every_byte_reads_back_everything_before_the_cut(tmp_path: Path) -> None:
    """A crash can stop the file anywhere: every cut gives a prefix of the stream, and says so."""
    data = _stream(120)
    path = tmp_path / "full.trace"
    _write(path, data, piece=37, flush_bytes=64)
    blob = path.read_bytes()
    starts = _chunk_starts(blob)
    header_end = starts[0]
    boundaries = {*starts, len(blob)}
    best_so_far = 0
    for cut in range(len(blob) + 1):
        reader = CaptureReader.from_bytes(blob[:cut], name="cut.trace")
        got = reader.read_stream()
        assert data.startswith(got), cut
        assert len(got) >= best_so_far  # more file never gives fewer bytes
        best_so_far = len(got)
        # Everything in whole chunks before the cut is back; the cut chunk's bytes are kept too.
        whole = sum(1 for s in starts if s < cut) - 1
        assert len(got) >= 64 * max(0, min(whole, len(starts))) or cut < header_end
        if cut == 0:
            assert reader.warnings == [] and not reader.is_capture
        elif cut in boundaries and cut >= header_end:
            assert reader.warnings == [], cut
        else:
            assert reader.is_capture, cut
            assert len(reader.warnings) == 1, (cut, reader.warnings)
            assert f"truncated at byte {cut}" in str(reader.warnings[0]), (cut, reader.warnings)
    assert best_so_far == len(data)


def test_cut_capture_decodes_what_it_can(tmp_path: Path) -> None:
    data = _stream(200)
    path = tmp_path / "c.trace"
    _write(path, data, flush_bytes=128)
    blob = path.read_bytes()
    cut = tmp_path / "cut.trace"
    cut.write_bytes(blob[: len(blob) - 50])
    with open_capture(cut) as reader:
        decoder, batches = decode_reader(reader)
        PacketBatch.concat(list(batches))  # decode it all: the stats fill in as batches are read
        assert reader.warnings
    assert decoder.itm.stats.packets[PacketKind.SWIT] >= 150
    assert decoder.itm.stats.reserved == 0


def _flip(blob: bytes, at: int) -> bytes:
    return blob[:at] + bytes([blob[at] ^ 0x40]) + blob[at + 1 :]


@pytest.mark.parametrize("where", ["payload", "head"])
def test_damaged_chunk_is_skipped_and_reported(tmp_path: Path, where: str) -> None:
    data = _stream(100)
    path = tmp_path / "d.trace"
    _write(path, data, flush_bytes=100)
    blob = path.read_bytes()
    starts = _chunk_starts(blob)
    victim = 2
    at = starts[victim] + (CHUNK_HEAD.size + 10 if where == "payload" else 20)
    reader = CaptureReader.from_bytes(_flip(blob, at), name="d.trace")
    chunks = list(reader.chunks())
    got = b"".join(c.data for c in chunks)
    assert got == data[: 100 * victim] + data[100 * (victim + 1) :]
    assert len(reader.warnings) == 1
    warning = reader.warnings[0]
    assert "corrupt chunk at byte" in str(warning)
    expected_at = starts[victim] + CHUNK_HEAD.size if where == "payload" else starts[victim]
    assert warning.position == expected_at and f"byte {expected_at}" in str(warning)
    after = next(c for c in chunks if c.offset == 100 * (victim + 1))
    assert after.lost_before == 100


def test_two_damaged_chunks_in_a_row_count_their_bytes_once(tmp_path: Path) -> None:
    data = _stream(100)
    path = tmp_path / "d2.trace"
    _write(path, data, flush_bytes=100)
    blob = path.read_bytes()
    starts = _chunk_starts(blob)
    damaged = _flip(_flip(blob, starts[1] + CHUNK_HEAD.size + 3), starts[2] + CHUNK_HEAD.size + 3)
    chunks = list(CaptureReader.from_bytes(damaged).chunks())
    after = next(c for c in chunks if c.offset == 300)
    assert after.lost_before == 200


def test_decoder_gets_a_gap_and_resumes(tmp_path: Path) -> None:
    """Chunks of 120 bytes (20 whole packets): losing one, the decoder resumes exactly after it."""
    data = _stream(100)
    path = tmp_path / "g.trace"
    _write(path, data, flush_bytes=120)
    blob = path.read_bytes()
    starts = _chunk_starts(blob)
    reader = CaptureReader.from_bytes(_flip(blob, starts[3] + CHUNK_HEAD.size + 1))
    decoder, batches = decode_reader(reader)
    recs = list(PacketBatch.concat(list(batches)).records())
    assert [r for r in recs if r["type"] == "gap"] == [{"offset": 360, "type": "gap", "ts": None, "lost_bytes": 120}]
    assert decoder.itm.stats.gaps == 1 and decoder.itm.stats.lost_bytes == 120
    assert decoder.itm.stats.reserved == 0
    clean = list(PacketBatch.concat(list(decode_reader(CaptureReader.from_bytes(blob))[1])).records())
    # Before the gap: the same packets (those cut off from their timestamp by the gap lose it).
    before = [r for r in recs if r["offset"] < 360 and r["type"] != "gap"]
    assert [dict(r, ts=None) for r in before] == [dict(r, ts=None) for r in clean if r["offset"] < 360]
    assert [r["ts"] for r in before[:-1]] == [r["ts"] for r in clean[: len(before) - 1]]
    # After it: the packets of the surviving bytes, offsets counted in decoded bytes, time
    # accumulated without the lost timestamps.
    after = [r for r in recs if r["offset"] >= 360 and r["type"] != "gap"]
    lost_ticks = sum(r["delta"] for r in clean if r["type"] == "lts" and 360 <= r["offset"] < 480)
    expected_after = [
        dict(r, offset=r["offset"] - 120, ts=None if r["ts"] is None else r["ts"] - lost_ticks)
        for r in clean
        if r["offset"] >= 480
    ]
    assert after == expected_after


def test_damaged_header_keeps_the_chunks(tmp_path: Path) -> None:
    data = _stream(50)
    path = tmp_path / "h.trace"
    _write(path, data)
    blob = path.read_bytes()
    damaged = _flip(blob, len(MAGIC) + HEADER_PREFIX.size + 5)  # inside the JSON
    reader = CaptureReader.from_bytes(damaged, name="h.trace")
    assert reader.read_stream() == data
    assert any("fails its checksum" in str(w) for w in reader.warnings)
    assert reader.metadata.cpu_hz is None  # nothing guessed
    damaged_len = blob[:10] + struct.pack("<I", 9999) + blob[14:]  # the JSON length itself
    reader = CaptureReader.from_bytes(damaged_len, name="h.trace")
    assert reader.read_stream() == data


def test_raw_files_read_as_raw(tmp_path: Path) -> None:
    data = _stream(300)
    path = tmp_path / "swv_raw_file.trace"  # pyOCD and Orbuculum raw files end in .trace too
    path.write_bytes(data)
    with open_capture(path) as reader:
        assert not reader.is_capture and reader.kind == "raw"
        assert reader.read_stream() == data
        assert reader.warnings == []
        assert reader.metadata.source.startswith("file://")


def test_raw_itm_that_starts_like_the_magic_is_raw(tmp_path: Path) -> None:
    """``89`` is a valid ITM header (SW port 17); a raw file starting 89 'T' 'R' 'C'... is raw."""
    near_magic = MAGIC[:-1] + b"\x0b"
    for blob in (b"\x89\x22\x01\x33" + _stream(5), near_magic + _stream(5)):
        path = tmp_path / "raw.bin"
        path.write_bytes(blob)
        with open_capture(path) as reader:
            assert not reader.is_capture
            assert reader.read_stream() == blob


def test_missing_and_directory_are_capture_errors(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="no such file"):
        open_capture(tmp_path / "nope.trace")
    with pytest.raises(CaptureError, match="directory"):
        open_capture(tmp_path)


def test_export_raw_gives_the_exact_stream(tmp_path: Path, run_cli) -> None:
    data = _stream(400)
    path = tmp_path / "e.trace"
    _write(path, data)
    out = tmp_path / "e.swo"
    result = run_cli("export", path, "--format", "raw", "-o", out)
    assert result.code == 0, result.err
    assert out.read_bytes() == data
    # and a raw file exports to itself
    again = tmp_path / "again.swo"
    assert run_cli("export", out, "--format", "raw", "-o", again).code == 0
    assert again.read_bytes() == data


def test_chunk_checksums_cover_the_payload(tmp_path: Path) -> None:
    path = tmp_path / "k.trace"
    _write(path, b"\x01\x22" * 10)
    blob = path.read_bytes()
    start = _chunk_starts(blob)[0]
    fields = CHUNK_HEAD.unpack(blob[start : start + CHUNK_HEAD.size])
    assert fields[0] == b"TRCK"
    payload = blob[start + CHUNK_HEAD.size :]
    assert fields[6] == len(payload) and fields[7] == zlib.crc32(payload)
    header_json = json.loads(blob[len(MAGIC) + HEADER_PREFIX.size : start - 4])
    assert header_json["cpu_hz"] == 160_000_000
