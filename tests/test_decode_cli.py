"""``tracer decode``, ``export`` and ``record`` through the CLI, as a user runs them.

``record`` is tested black-box: real sockets (a local TCP server thread) and pyserial's own
``socket://`` and ``loop://`` handlers; the capture written must hold exactly what was sent.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from itm_encoder import encode_stream

from tracer.capture import CaptureMetadata, CaptureWriter, open_capture
from tracer.decode import decode_bytes

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
QUEUE_DEMO = CORPUS / "novakov_rtos_trace" / "queue_demo.trace"
STM32_SWO = CORPUS / "sigrok_stm32f105" / "trace_example_swo_tpiu.bin"

# The ndjson contract (docs/decoder.md, "What it decodes"): fields per type, besides offset/type/ts.
CONTRACT: dict[str, set[str]] = {
    "sync": set(),
    "overflow": set(),
    "lts": {"delta", "tc"},
    "gts1": {"value", "wrap", "clkch"},
    "gts2": {"value"},
    "extension": {"sh", "ex"},
    "swit": {"port", "size", "value"},
    "dwt_event": {"counters"},
    "exception": {"number", "action"},
    "pc_sample": {"pc"},
    "pc_sleep": {"prohibited"},
    "data_pc": {"comparator", "pc", "size"},
    "data_addr": {"comparator", "address", "size"},
    "data_value": {"comparator", "value", "write", "size"},
    "data_match": {"comparator"},
    "pmu_overflow": {"counters"},
    "reserved": {"header"},
}
# Compatible extensions: the merged global timestamp, the page of a page change, a malformed
# packet's flag, and the capture-level gap marker.
OPTIONAL: dict[str, set[str]] = {
    "gts1": {"global"},
    "gts2": {"global"},
    "extension": {"page"},
    "reserved": {"malformed"},
}
TYPES: dict[str, Any] = {
    "delta": int,
    "tc": int,
    "value": int,
    "wrap": bool,
    "clkch": bool,
    "global": (int, type(None)),
    "sh": int,
    "ex": int,
    "page": int,
    "port": int,
    "size": int,
    "counters": int,
    "number": int,
    "action": str,
    "pc": int,
    "prohibited": bool,
    "comparator": int,
    "address": int,
    "write": bool,
    "header": int,
    "malformed": bool,
}


def _every_packet_type() -> bytes:
    pkts = [
        {"type": "sync", "zeros": 6},
        {"type": "overflow"},
        {"type": "lts", "delta": 3, "tc": 0, "format": 2},
        {"type": "lts", "delta": 0x4105, "tc": 1},
        {"type": "gts1", "value": 5, "wrap": False, "clkch": False},
        {"type": "gts1", "value": 0x123456, "wrap": True, "clkch": True, "nbytes": 4},
        {"type": "gts2", "value": 7, "nbytes": 4},
        {"type": "extension", "sh": 0, "ex": 2},
        {"type": "extension", "sh": 1, "ex": 0x1234},
        {"type": "swit", "addr": 5, "size": 4, "value": 0xDEADBEEF},
        {"type": "dwt_event", "counters": 0x3F},
        {"type": "exception", "number": 0x142, "action": "enter"},
        {"type": "pc_sample", "pc": 0x08000100},
        {"type": "pc_sleep", "prohibited": True},
        {"type": "data_pc", "comparator": 1, "pc": 0x100, "size": 2},
        {"type": "data_addr", "comparator": 2, "address": 0x40, "size": 1},
        {"type": "data_match", "comparator": 3},
        {"type": "data_value", "comparator": 0, "value": 0x1234, "write": True, "size": 2},
        {"type": "pmu_overflow", "counters": 0x42},
        {"type": "reserved", "header": 0xA0},
        {"type": "lts", "delta": 9, "tc": 3},
    ]
    return encode_stream(pkts)[0] + bytes.fromhex("E0 85 85 85 85 01 22")  # + a malformed packet


def test_ndjson_fields_are_the_contract(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "all.bin"
    path.write_bytes(_every_packet_type())
    result = run_cli("decode", path, "--format", "ndjson")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    recs = [json.loads(line) for line in lines]
    assert {r["type"] for r in recs} == set(CONTRACT)
    for rec in recs:
        keys = set(rec) - {"offset", "type", "ts"}
        required, optional = CONTRACT[rec["type"]], OPTIONAL.get(rec["type"], set())
        assert required <= keys <= required | optional, rec
        assert isinstance(rec["offset"], int) and (rec["ts"] is None or isinstance(rec["ts"], int))
        for key in keys:
            assert isinstance(rec[key], TYPES[key]), (key, rec)
    assert recs == list(decode_bytes(path.read_bytes()).records())
    assert all(" " not in line for line in lines)  # compact, one object per line


def test_ndjson_on_a_corpus_trace(run_cli) -> None:
    result = run_cli("decode", QUEUE_DEMO, "--format", "ndjson")
    assert result.code == 0
    recs = [json.loads(line) for line in result.out.splitlines()]
    assert len(recs) == 4281 + 1173 + 3108 + 1 + 1 + 1
    offsets = [r["offset"] for r in recs]
    assert offsets == sorted(offsets)
    assert recs[2] == {"offset": 3, "type": "exception", "ts": 133, "number": 0, "action": "return"}


def test_text_format(run_cli) -> None:
    result = run_cli("decode", QUEUE_DEMO)
    assert result.code == 0
    lines = result.out.splitlines()
    assert len(lines) == 4281 + 1173 + 3108 + 3
    assert lines[2].split() == ["3", "133", "exception", "number=0", "action=return"]
    sw = next(line for line in lines if "swit" in line)
    assert "port=8" in sw and "value=0xdeadbeef" in sw


def test_stats_format(run_cli) -> None:
    result = run_cli("decode", STM32_SWO, "--format", "stats")
    assert result.code == 0
    stats = json.loads(result.out)
    assert stats["bytes"] == 7856
    assert stats["packets"] == {
        "overflow": 14,
        "swit": 97,
        "exception": 16,
        "pc_sample": 393,
        "data_pc": 9,
        "data_addr": 26,
        "data_value": 31,
    }
    assert stats["overflows"] == 14 and stats["resyncs"] == 0 and stats["reserved"] == 0
    assert stats["tpiu"]["frames"] == 491
    assert stats["tpiu"]["ids"] == {"0": 3149, "1": 2619, "2": 760, "125": 8}


def test_tpiu_options(run_cli) -> None:
    off = json.loads(run_cli("decode", STM32_SWO, "--format", "stats", "--tpiu", "off").out)
    assert "tpiu" not in off and off["reserved"] > 0  # frames read as ITM are garbage
    on = json.loads(run_cli("decode", STM32_SWO, "--format", "stats", "--tpiu", "on").out)
    assert on["packets"]["pc_sample"] == 393
    etm = json.loads(run_cli("decode", STM32_SWO, "--format", "stats", "--tpiu", "on", "--tpiu-id", "2").out)
    assert etm["itm_bytes"] == 760
    raw = json.loads(run_cli("decode", QUEUE_DEMO, "--format", "stats", "--tpiu", "auto").out)
    assert "tpiu" not in raw and raw["reserved"] == 1


def test_output_file(tmp_path: Path, run_cli) -> None:
    out = tmp_path / "packets.ndjson"
    result = run_cli("decode", QUEUE_DEMO, "--format", "ndjson", "-o", out)
    assert result.code == 0 and result.out == ""
    assert len(out.read_text().splitlines()) == 8565


def _capture(path: Path, data: bytes, chunk: int = 200) -> list[int]:
    with CaptureWriter(path, CaptureMetadata(source="test"), flush_bytes=chunk, flush_interval=1e9) as writer:
        writer.write(data)
    blob = path.read_bytes()
    return [i for i in range(len(blob)) if blob.startswith(b"TRCK", i)]


def test_truncated_capture_decodes_what_it_can(tmp_path: Path, run_cli) -> None:
    data = QUEUE_DEMO.read_bytes()
    path = tmp_path / "q.trace"
    _capture(path, data)
    blob = path.read_bytes()
    cut = tmp_path / "cut.trace"
    cut.write_bytes(blob[: len(blob) * 2 // 3])
    result = run_cli("decode", cut, "--format", "stats")
    assert result.code == 0
    stats = json.loads(result.out)
    assert 0.6 * len(data) < stats["bytes"] < 0.7 * len(data)
    assert stats["reserved"] == 1  # as in the whole trace: the cut hides nothing
    assert f"truncated at byte {len(cut.read_bytes())}" in result.err
    assert result.err.startswith("tracer: warning: ")


def test_partly_corrupt_capture_decodes_what_it_can(tmp_path: Path, run_cli) -> None:
    data = QUEUE_DEMO.read_bytes()
    path = tmp_path / "q.trace"
    heads = _capture(path, data)
    blob = bytearray(path.read_bytes())
    blob[heads[40] + 50] ^= 0xFF  # a payload byte of chunk 40
    blob[heads[80] + 5] ^= 0xFF  # a head byte of chunk 80
    path.write_bytes(blob)
    result = run_cli("decode", path, "--format", "stats")
    assert result.code == 0, result.err
    stats = json.loads(result.out)
    assert stats["gaps"] == 2 and stats["lost_bytes"] == 400
    assert stats["bytes"] == len(data) - 400
    assert result.err.count("corrupt chunk at byte") == 2
    assert (
        f"corrupt chunk at byte {heads[40] + 36}" in result.err and f"corrupt chunk at byte {heads[80]}" in result.err
    )
    ndjson = run_cli("decode", path, "--format", "ndjson")
    assert ndjson.code == 0
    gaps = [json.loads(line) for line in ndjson.out.splitlines() if '"gap"' in line]
    assert [g["lost_bytes"] for g in gaps] == [200, 200]


def test_random_bytes_exit_0(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "noise.bin"
    path.write_bytes(os.urandom(200_000))
    for fmt in ("stats", "ndjson", "text"):
        result = run_cli("decode", path, "--format", fmt)
        assert result.code == 0, result.err
        assert "Traceback" not in result.err
    stats = json.loads(run_cli("decode", path, "--format", "stats").out)
    assert stats["reserved"] > 0 and sum(stats["packets"].values()) > 10_000


def test_empty_file_says_so(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "empty.trace"
    path.write_bytes(b"")
    result = run_cli("decode", path)
    assert result.code == 0
    assert result.out == ""
    assert "empty" in result.err


def test_missing_file_exits_3(tmp_path: Path, run_cli) -> None:
    result = run_cli("decode", tmp_path / "nope.trace")
    assert result.code == 3
    assert result.err.count("\n") == 1 and "no such file" in result.err
    assert "Traceback" not in result.err
    assert run_cli("export", tmp_path / "nope.trace", "--format", "raw", "-o", tmp_path / "x").code == 3


def test_directory_exits_3(tmp_path: Path, run_cli) -> None:
    result = run_cli("decode", tmp_path)
    assert result.code == 3 and "directory" in result.err


def test_bad_options_exit_2(run_cli) -> None:
    assert run_cli("decode", QUEUE_DEMO, "--format", "xml").code == 2
    assert run_cli("decode", QUEUE_DEMO, "--tpiu", "maybe").code == 2


@pytest.mark.parametrize("verb", ["record", "live"])
@pytest.mark.parametrize("bad", ["0", "112", "x"])
def test_record_and_live_refuse_a_tpiu_id_out_of_range(run_cli, tmp_path: Path, verb: str, bad: str) -> None:
    """0 is padding and 0x70 up are reserved: a usage error before any source is opened."""
    out = tmp_path / "never.trace"
    done = run_cli(verb, f"file://{QUEUE_DEMO}", "-o", out, "--tpiu-id", bad)
    assert done.code == 2 and "--tpiu-id" in done.err and not out.exists()


def test_decode_help_teaches(run_cli) -> None:
    result = run_cli("decode", "--help")
    assert result.code == 0
    for word in ("--format", "--tpiu", "--tpiu-id", "examples:", "ndjson", "stats"):
        assert word in result.out


# -- record -----------------------------------------------------------------------------------------
class TraceServer:
    """A raw trace server on localhost: accepts one client, sends the data in pieces at once, closes.

    Sending the moment the client connects checks that pyserial's ``socket://`` handler, which
    drains what already arrived at the end of its ``open()``, loses nothing (tracer keeps it).
    """

    def __init__(self, data: bytes, piece: int = 1000) -> None:
        self.data = data
        self.piece = piece
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            for i in range(0, len(self.data), self.piece):
                conn.sendall(self.data[i : i + self.piece])
        self.sock.close()

    def join(self) -> None:
        self.thread.join(timeout=10)


@pytest.mark.parametrize("scheme", ["tcp", "socket"])
def test_record_network_source_until_end_of_stream(tmp_path: Path, run_cli, scheme: str) -> None:
    data = QUEUE_DEMO.read_bytes() * 4
    server = TraceServer(data)
    out = tmp_path / f"{scheme}.trace"
    url = f"{scheme}://127.0.0.1:{server.port}"
    result = run_cli("record", url, "-o", out, "--cpu-hz", "48M")
    server.join()
    assert result.code == 0, result.err
    with open_capture(out) as reader:
        assert reader.is_capture
        assert reader.read_stream() == data
        assert reader.warnings == []
        assert reader.metadata.source == url and reader.metadata.cpu_hz == 48_000_000
    stats = json.loads(run_cli("decode", out, "--format", "stats").out)
    assert stats["packets"]["swit"] == 4 * 1173


def test_record_file_source(tmp_path: Path, run_cli) -> None:
    out = tmp_path / "copy.trace"
    result = run_cli("record", f"file://{STM32_SWO}", "-o", out)
    assert result.code == 0, result.err
    with open_capture(out) as reader:
        assert reader.read_stream() == STM32_SWO.read_bytes()
    # Re-recording a capture keeps its stream (and its metadata).
    again = tmp_path / "again.trace"
    assert run_cli("record", f"file://{out}", "-o", again).code == 0
    assert open_capture(again).read_stream() == STM32_SWO.read_bytes()


def test_record_loop_source_for_a_duration(tmp_path: Path, run_cli) -> None:
    """pyserial's ``loop://`` never ends and carries nothing nobody wrote: a clean empty capture."""
    out = tmp_path / "loop.trace"
    result = run_cli("record", "loop://", "-o", out, "--duration", "0.3")
    assert result.code == 0, result.err
    with open_capture(out) as reader:
        assert reader.is_capture and reader.read_stream() == b"" and reader.warnings == []
        assert reader.metadata.source == "loop://"


def test_record_unreachable_and_missing_sources(tmp_path: Path, run_cli) -> None:
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    result = run_cli("record", f"tcp://127.0.0.1:{port}", "-o", tmp_path / "x.trace")
    assert result.code == 4 and "Traceback" not in result.err
    result = run_cli("record", f"file://{tmp_path / 'nope.bin'}", "-o", tmp_path / "y.trace")
    assert result.code == 3 and "no such file" in result.err
