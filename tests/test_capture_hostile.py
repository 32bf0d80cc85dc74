"""Captures nobody should have to trust: headers of the wrong shape, absurd values, chunks out of
order, offsets that jump, chunk kinds from the future, data chunks of bounded size (docs/limits.md,
docs/decoder.md "Captures")."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from test_capture import _stream

from tracer.capture import CaptureMetadata, CaptureReader, CaptureWriter
from tracer.capture.format import CHUNK_HEAD, CRC, HEADER_PREFIX, MAGIC, VERSION, ChunkKind
from tracer.capture.writer import encode_chunk, encode_header

ROOT = Path(__file__).resolve().parent.parent


def _header(body: bytes) -> bytes:
    return MAGIC + HEADER_PREFIX.pack(VERSION, len(body)) + body + CRC.pack(zlib.crc32(body))


def _chunks(data: bytes, size: int, start: int = 0) -> list[bytes]:
    return [encode_chunk(ChunkKind.DATA, data[i : i + size], 1_000 + i, start + i) for i in range(0, len(data), size)]


def _capture(body: bytes, data: bytes, size: int = 500) -> bytes:
    return _header(body) + b"".join(_chunks(data, size))


def _meta_json(**changes: object) -> bytes:
    meta = CaptureMetadata(source="tcp://localhost:3443", cpu_hz=160_000_000).stamped().to_json()
    meta.update(changes)
    return json.dumps(meta).encode()


# -- the header --------------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "shape"), [(b"[1, 2]", "a list"), (b"null", "null"), (b"3", "a number")])
def test_header_that_is_not_an_object_is_ignored_with_a_warning(body: bytes, shape: str) -> None:
    data = _stream(100)
    reader = CaptureReader.from_bytes(_capture(body, data), name="h.trace")
    assert reader.read_stream() == data
    assert reader.metadata.cpu_hz is None
    body_at = len(MAGIC) + HEADER_PREFIX.size
    assert [str(w) for w in reader.warnings] == [
        f"h.trace: capture header at byte {body_at} is {shape}, not a JSON object; metadata ignored"
    ]


def test_header_nested_100000_deep_is_ignored_with_a_warning() -> None:
    data = _stream(100)
    reader = CaptureReader.from_bytes(_capture(b"[" * 100_000 + b"]" * 100_000, data), name="h.trace")
    assert reader.read_stream() == data
    (warning,) = reader.warnings
    assert "nested more than 64 levels deep" in str(warning) and "metadata ignored" in str(warning)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("fast", "'fast'"),
        (1.5e8, "150000000.0"),
        (1, "1"),
        (-5, "-5"),
        (0, "0"),
        (0.4, "0.4"),
        (float("inf"), "inf"),
        (float("nan"), "nan"),
        (10**30, str(10**30)),
    ],
)
def test_header_cpu_hz_out_of_range_is_ignored_and_said(value: object, shown: str) -> None:
    data = _stream(50)
    reader = CaptureReader.from_bytes(_capture(_meta_json(cpu_hz=value), data), name="h.trace")
    assert reader.read_stream() == data
    assert reader.metadata.cpu_hz is None
    assert reader.metadata.source == "tcp://localhost:3443"  # the rest of the header is kept
    (warning,) = reader.warnings
    assert f"'cpu_hz' is {shown}: expected a whole number of Hz from 1 kHz to 10 GHz; ignored" in str(warning)


def test_header_cpu_hz_of_5000_digits_is_refused_where_it_is() -> None:
    body = _meta_json().replace(b'"cpu_hz": 160000000', b'"cpu_hz": ' + b"9" * 5000)
    reader = CaptureReader.from_bytes(_capture(body, _stream(20)), name="h.trace")
    (warning,) = reader.warnings
    assert "a number of 5000 characters (at most 100)" in str(warning)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("tpiu", "yes"),
        ("tpiu_id", 500),
        ("ts_prescaler", 3),
        ("swo_hz", -1),
        ("source", ["x"]),
        ("notes", {"a": 1}),
        ("ts_clock", "sundial"),
        ("elf_build_id", 12),
    ],
)
def test_every_known_header_key_is_checked(key: str, value: object) -> None:
    reader = CaptureReader.from_bytes(_capture(_meta_json(**{key: value}), _stream(20)), name="h.trace")
    (warning,) = reader.warnings
    assert f"'{key}' is " in str(warning) and "ignored" in str(warning)
    assert getattr(reader.metadata, key) == getattr(CaptureMetadata(), key)


def test_report_of_a_capture_with_a_nan_clock_says_unknown_not_nan(tmp_path: Path, run_cli) -> None:
    """The demo's stream without its target-info record: the clock comes from the header only."""
    from telemetry_encoder import TelemetryEncoder
    from telemetry_streams import build_stream

    original = TelemetryEncoder.target_info
    TelemetryEncoder.target_info = lambda self, *a, **k: None
    try:
        data = build_stream(inferences=3, layers=3).data
    finally:
        TelemetryEncoder.target_info = original
    for value in ("fast", float("nan"), 1.5e8, -5):
        path = tmp_path / "c.trace"
        path.write_bytes(_capture(_meta_json(cpu_hz=value), data))
        for verb in (
            ["report"],
            ["check"],
            ["export", "--format", "perfetto", "-o", tmp_path / "x.pftrace"],
            ["export", "--format", "chrome-json", "-o", tmp_path / "x.json"],
        ):
            result = run_cli(*verb, path)
            assert result.code == 0, (value, verb, result.err)
            assert "Traceback" not in result.err and "nan mhz" not in result.out.lower(), (value, verb)
            assert "'cpu_hz'" in result.err


# -- chunks ------------------------------------------------------------------------------------


def test_event_and_metadata_chunks_nested_deep_are_ignored_with_a_warning() -> None:
    data = _stream(50)
    deep = b"[" * 100_000 + b"]" * 100_000
    blob = (
        _header(_meta_json())
        + encode_chunk(ChunkKind.EVENT, deep, 5, 0)
        + encode_chunk(ChunkKind.METADATA, b'{"a":' * 100_000 + b"1" + b"}" * 100_000, 6, 0)
        + b"".join(_chunks(data, 100))
    )
    reader = CaptureReader.from_bytes(blob, name="e.trace")
    assert reader.read_stream() == data
    messages = [str(w) for w in reader.warnings]
    assert len(messages) == 2
    assert all("nested more than 64 levels deep" in m for m in messages)
    assert "event" in messages[0] and "metadata" in messages[1]
    assert reader.metadata.cpu_hz == 160_000_000


def test_metadata_chunk_with_a_bad_value_keeps_the_header_value() -> None:
    blob = _header(_meta_json()) + encode_chunk(ChunkKind.METADATA, b'{"cpu_hz": "fast", "elf": "a.elf"}', 6, 0)
    reader = CaptureReader.from_bytes(blob + b"".join(_chunks(_stream(20), 100)), name="e.trace")
    reader.read_stream()
    assert reader.metadata.cpu_hz == 160_000_000 and reader.metadata.extra["elf"] == "a.elf"
    assert any("'cpu_hz' is 'fast'" in str(w) for w in reader.warnings)


def test_writer_splits_data_into_chunks_of_at_most_16_kib(tmp_path: Path) -> None:
    """A 206 KB write (a file:// import) becomes 13 chunks: damage to one loses at most 16 KiB."""
    data = bytes(range(256)) * 806  # 206,336 bytes
    path = tmp_path / "w.trace"
    with CaptureWriter(path, CaptureMetadata(source="file://x")) as writer:
        writer.write(data)
    chunks = list(CaptureReader.from_bytes(path.read_bytes()).chunks())
    assert [len(c.data) for c in chunks] == [16384] * 12 + [len(data) - 12 * 16384]
    assert b"".join(c.data for c in chunks) == data
    with pytest.raises(ValueError, match="16384"):
        CaptureWriter(tmp_path / "big.trace", CaptureMetadata(), flush_bytes=1 << 20)


def test_record_of_a_file_source_writes_16_kib_chunks(tmp_path: Path, run_cli) -> None:
    raw = tmp_path / "raw.swo"
    data = _stream(40_000)
    assert len(data) > 200_000
    raw.write_bytes(data)
    out = tmp_path / "r.trace"
    result = run_cli("record", f"file://{raw}", "-o", out)
    assert result.code == 0, result.err
    chunks = list(CaptureReader.from_bytes(out.read_bytes()).chunks())
    assert max(len(c.data) for c in chunks) <= 16384
    # 8 corrupted bytes in the middle lose one chunk, not the capture
    blob = bytearray(out.read_bytes())
    middle = len(blob) // 2
    blob[middle : middle + 8] = b"\xa5" * 8
    damaged = CaptureReader.from_bytes(bytes(blob), name="r.trace")
    kept = damaged.read_stream()
    assert len(data) - 2 * 16384 <= len(kept) < len(data)


def test_swapped_chunks_keep_every_byte_and_say_what_happened() -> None:
    data = _stream(300)
    parts = _chunks(data, 400)
    parts[2], parts[3] = parts[3], parts[2]
    reader = CaptureReader.from_bytes(_header(_meta_json()) + b"".join(parts), name="s.trace")
    chunks = list(reader.chunks())
    assert b"".join(c.data for c in chunks) == data
    assert all(c.lost_before == 0 for c in chunks)
    (warning,) = reader.warnings
    assert "out of order" in str(warning) and "repeat" not in str(warning)


def test_chunk_far_out_of_order_is_dropped_as_late_not_called_a_repeat() -> None:
    data = _stream(1200)
    parts = _chunks(data, 100)
    late = parts.pop(1)
    parts.append(late)  # 100 chunks later: beyond the reorder window
    reader = CaptureReader.from_bytes(_header(_meta_json()) + b"".join(parts), name="s.trace")
    chunks = list(reader.chunks())
    assert b"".join(c.data for c in chunks) == data[:100] + data[200:]
    assert chunks[1].lost_before == 100
    assert any("bytes 100..200" in str(w) and "out of order" in str(w) for w in reader.warnings)
    assert not any("repeat" in str(w) for w in reader.warnings)


def test_repeated_chunk_is_dropped_and_called_a_repeat() -> None:
    data = _stream(200)
    parts = _chunks(data, 300)
    parts.insert(3, parts[1])
    reader = CaptureReader.from_bytes(_header(_meta_json()) + b"".join(parts), name="s.trace")
    assert reader.read_stream() == data
    (warning,) = reader.warnings
    assert "again" in str(warning) and "300..600" in str(warning)


def test_stream_offset_jumping_by_2_62_is_not_believed() -> None:
    data = _stream(200)
    first, second = data[:500], data[500:]
    blob = _header(_meta_json()) + b"".join(_chunks(first, 250)) + b"".join(_chunks(second, 250, start=2**62))
    reader = CaptureReader.from_bytes(blob, name="j.trace")
    chunks = list(reader.chunks())
    assert b"".join(c.data for c in chunks) == data
    assert [c.offset for c in chunks] == list(range(0, len(data), 250))  # contiguous again
    assert sum(c.lost_before for c in chunks) == 0  # no file bytes lie between: nothing lost
    (warning,) = reader.warnings
    assert "jump" in str(warning) and str(2**62) in str(warning)


def test_unknown_chunk_kind_with_a_valid_checksum_is_skipped_by_name() -> None:
    data = _stream(100)
    parts = _chunks(data, 200)
    future = bytearray(encode_chunk(ChunkKind.EVENT, b"from a newer tracer", 9, 200))
    future[4] = 7  # kind 7, then the head checksum made right again
    future[CHUNK_HEAD.size - 4 : CHUNK_HEAD.size] = struct.pack("<I", zlib.crc32(bytes(future[: CHUNK_HEAD.size - 4])))
    parts.insert(1, bytes(future))
    reader = CaptureReader.from_bytes(_header(_meta_json()) + b"".join(parts), name="k.trace")
    assert reader.read_stream() == data
    (warning,) = reader.warnings
    assert "kind 7" in str(warning) and "checksum" not in str(warning)


def test_old_captures_read_as_before() -> None:
    """A capture written with chunks of up to 256 KiB (the shipped demo before it was re-made) reads
    the same."""
    blob = (ROOT / "tests" / "data" / "old_captures" / "demo-2026-11-30.trace").read_bytes()
    reader = CaptureReader.from_bytes(blob, name="demo-2026-11-30.trace")
    chunks = list(reader.chunks())
    assert reader.warnings == []
    assert sum(len(c.data) for c in chunks) == 44939
    assert reader.metadata.cpu_hz == 32_000_000


def test_header_round_trip_still_works(tmp_path: Path) -> None:
    meta = CaptureMetadata(
        source="serial:///dev/ttyACM0",
        tpiu=True,
        tpiu_id=2,
        cpu_hz=480_000_000,
        swo_hz=2_000_000,
        ts_prescaler=4,
        extra={"launcher": {"machine": "x"}},
    )
    blob = encode_header(meta.stamped())
    reader = CaptureReader.from_bytes(blob)
    assert reader.warnings == []
    assert reader.metadata.cpu_hz == 480_000_000 and reader.metadata.extra["launcher"] == {"machine": "x"}


def test_a_gap_mostly_covered_by_a_damaged_chunk_is_believed() -> None:
    """Found by the campaign: a damaged 15,363-byte chunk, 5,731 unreadable bytes, then the next
    chunk 25,839 bytes on, in a file of 23,331 bytes: a loss, not a jump (only the 10,476 bytes no
    damaged chunk accounts for must fit in the file)."""
    from tracer.capture.order import DataChunk, StreamOrder

    said: list[str] = []
    order = StreamOrder(lambda position, message: said.append(message), file_size=23_331)
    order.damaged(0, 15_363)
    order.skipped(5_731)
    given = order.add(DataChunk(21_796, 25_839, b"x" * 1_499, 7)) + order.finish()
    assert [(g.offset, g.lost_before) for g in given] == [(25_839, 25_839)]
    assert not any("jump" in m for m in said)
