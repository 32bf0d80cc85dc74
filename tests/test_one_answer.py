"""One capture, one answer: every path that reads a capture gives the same numbers (a differential
oracle).

The paths: ``tracer report`` read whole; ``tracer report`` read in windows forced small (a few
hundred layer executions); the compare digest and the rows ``ingest`` writes; the session behind
``replay`` and ``live`` run to the end as fast as it can, at a paced speed that the screen changes
while it plays (a replay's pieces change size with the speed), and with seeks into the capture
before and while it plays; the session behind ``live`` recording a source, with seeks into the
recording while it grows (back, to the live edge, past it). The numbers: inference counts,
per-layer execution counts and cycle statistics, the loss counters and the findings.

The inputs: every capture and log in ``tests/data``, the shipped demo capture, and captures built
here with 10,000 inferences, target restarts, dropped bytes and a damaged chunk.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from one_answer import (
    MeteredSource,
    as_session_numbers,
    assert_one_answer,
    recording_live,
    replayed,
    report_numbers,
    run_report,
    session_numbers,
    speed_changes,
)
from session_streams import CLOCK_HZ, build_stream

from tracer.capture.format import ChunkKind
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter, encode_chunk, encode_header
from tracer.session.engine import Session

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SMALL_WINDOW = 300  # layer executions per window, when windows are forced


# -- the inputs -------------------------------------------------------------------------------------
def shipped_inputs() -> list[Path]:
    """Every capture, raw trace and log the project ships."""
    found = [ROOT / "captures" / "demo.trace", ROOT / "captures" / "demo_sampling.trace"]
    found += sorted((DATA / "scenarios").glob("*.trace"))
    found += sorted((DATA / "corpus").rglob("*.trace"))
    found += sorted((DATA / "corpus").rglob("*.bin"))
    found += sorted((DATA / "logs").glob("*.log"))
    found += sorted((DATA / "etdump").glob("*.etdp"))
    return found


def _write(path: Path, data: bytes, chunk: int = 16 * 1024) -> Path:
    meta = CaptureMetadata(source="synthetic://one-answer", tpiu=False, cpu_hz=CLOCK_HZ)
    with CaptureWriter(path, meta, overwrite=True, flush_bytes=chunk) as writer:
        for at in range(0, len(data), chunk):
            writer.write(data[at : at + chunk], host_ns=1_000_000_000 + at * 100)
    return path


def _with_gaps(path: Path, data: bytes, gaps: list[tuple[int, int]], chunk: int = 8 * 1024) -> Path:
    """A capture of ``data`` whose stream offsets skip ``(at, length)`` stretches: bytes the probe
    dropped (the chunk after a gap starts at a later stream offset)."""
    meta = CaptureMetadata(source="synthetic://one-answer-gaps", tpiu=False, cpu_hz=CLOCK_HZ)
    blob = bytearray(encode_header(meta))
    cuts = sorted(gaps)
    at = 0
    host = 1_000_000_000
    while at < len(data):
        end = min(len(data), at + chunk)
        for start, _length in cuts:
            if at < start < end:
                end = start
        blob += encode_chunk(ChunkKind.DATA, data[at:end], host, at)
        host += 1_000_000
        at = end
        for start, length in cuts:
            if start == at:
                at += length
    path.write_bytes(bytes(blob))
    return path


def _damage_one_chunk(path: Path, which: int) -> Path:
    """Flip a byte in the payload of data chunk ``which``: its checksum no longer holds."""
    blob = bytearray(path.read_bytes())
    with open_capture(path) as reader:
        chunks = list(reader.chunks())
    target = chunks[which]
    # The payload is found by its bytes (the reader does not expose file offsets).
    at = blob.find(target.data[:64], len(encode_header(CaptureMetadata())))
    assert at > 0
    blob[at + 32] ^= 0xFF
    path.write_bytes(bytes(blob))
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Captures built here: long, restarting, with dropped bytes, with a damaged chunk."""
    folder = tmp_path_factory.mktemp("one-answer")
    long = build_stream(inferences=10_000, layers=4, seed=3, text=False, gap=50)
    first = build_stream(inferences=30, seed=4)
    again = build_stream(inferences=25, seed=5, first=0)
    cut = build_stream(inferences=400, seed=6, cut_last=True)
    return {
        "long": _write(folder / "long.trace", long.data),
        "restart": _write(folder / "restart.trace", first.data + again.data),
        "gaps": _with_gaps(folder / "gaps.trace", cut.data, [(20_000, 333), (61_000, 4_000), (90_001, 17)]),
        "damaged": _damage_one_chunk(_write(folder / "damaged.trace", cut.data, chunk=4096), 5),
    }


# -- every path ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", shipped_inputs(), ids=lambda p: p.name)
def test_every_path_says_what_the_report_says_of_a_shipped_input(run_cli, path: Path, tmp_path: Path) -> None:
    assert_one_answer(run_cli, path, tmp_path, session=path.suffix in (".trace", ".bin"))


@pytest.mark.parametrize("name", ["long", "restart", "gaps", "damaged"])
def test_every_path_says_what_the_report_says_of_a_built_capture(
    run_cli, built: dict[str, Path], name: str, tmp_path: Path
) -> None:
    assert_one_answer(run_cli, built[name], tmp_path)


def test_a_replay_whosespeed_changes_mid_chunk_feeds_every_byte_once(run_cli, built: dict[str, Path]) -> None:
    """The defect of a 10,000-inference replay taken to max speed with ``+``: the piece size,
    read twice per piece, fed a chunk's bytes again (lost records, damage, more inferences than
    the capture holds)."""
    path = built["long"]
    expected = as_session_numbers(report_numbers(run_report(run_cli, path)))
    got = session_numbers(replayed(path, 1.0, speed_changes))
    assert got["inferences"] == expected["inferences"] == (10_000, 10_000)
    assert got["loss"] == expected["loss"]
    assert got == expected


def _inference_rows(run_cli, path: Path) -> dict[int, tuple[int, ...]]:
    """Per inference number (first of each), its layer cycles in order, from ``--per-inference``."""
    report = run_report(run_cli, path, "--per-inference")
    rows: dict[int, tuple[int, ...]] = {}
    for inference in report["per_inference"]:
        rows.setdefault(inference["number"], tuple(s["cycles"] for s in inference["layers"]))
    return rows


def test_seeks_before_and_while_playing_read_the_inference_the_report_lists(run_cli, built: dict[str, Path]) -> None:
    path = built["long"]
    expected = as_session_numbers(report_numbers(run_report(run_cli, path)))
    truth = _inference_rows(run_cli, path)
    seen: list[tuple[int, Any]] = []

    def seeks(session: Session) -> None:
        index = session.index
        assert index is not None
        # Past the end, before the index is built: answered at once, with nothing.
        assert session.seek(10**9) is None
        for _ in range(600):
            if index.ready:
                break
            threading.Event().wait(0.05)
        assert index.ready and index.count == 10_000
        for ordinal in (9_000, 10, 9_999, 5_000, 10_000, -1):
            stretch = session.seek(ordinal)
            seen.append((ordinal, stretch))
            session.faster()

    session = replayed(path, 1.0, seeks)
    assert session_numbers(session) == expected
    for ordinal, stretch in seen:
        if not 0 <= ordinal < 10_000:
            assert stretch is None, ordinal
            continue
        assert stretch is not None, ordinal
        record = stretch.record(ordinal)  # numbers are ordinals in this capture (no restart)
        assert record is not None, ordinal
        assert tuple(int(s.cycles) for s in record.inference.layers) == truth[ordinal], ordinal


# -- a live recording ------------------------------------------------------------------------------
def _settled(session: Session, source: MeteredSource) -> int:
    """Wait until the session has decoded every byte let through; the inferences it has seen."""
    assert source.drained.wait(30)
    index = session.index
    assert index is not None
    for _ in range(600):
        if session.decoder.bytes == source.read_bytes:
            break
        threading.Event().wait(0.05)
    assert session.decoder.bytes == source.read_bytes
    # The decoder counts a piece's bytes as it decodes it; the session folds and indexes it next,
    # then counts its version up (and again at each idle turn): two counts on, it is all folded.
    version = session.version
    for _ in range(600):
        if session.version >= version + 2:
            break
        threading.Event().wait(0.05)
    snap = session.snapshot()
    assert snap.inferences == index.count
    return snap.inferences


def _cycles(stretch: Any, ordinal: int) -> tuple[int, ...]:
    assert stretch is not None, ordinal
    record = stretch.at_ordinal(ordinal)
    assert record is not None, ordinal
    return tuple(int(s.cycles) for s in record.inference.layers)


def test_seeks_during_a_live_recording_read_what_the_report_of_the_recording_says(
    run_cli, built: dict[str, Path], tmp_path: Path
) -> None:
    """``tracer live`` on a source (a capture replayed through ``file://``, let through in bursts):
    while it records, seeks go back into what is recorded (beyond the ring) and to the live edge,
    and a seek past the edge says at once what the recording holds so far; at the end the
    session's numbers are the report's of the recording (and of the capture it was fed from)."""
    path = built["long"]
    truth = _inference_rows(run_cli, path)
    source = MeteredSource(path)
    recording = tmp_path / "live.trace"
    session = recording_live(source, recording)
    try:
        index = session.index
        assert index is not None and index.live
        for share in (0.25, 0.5):
            source.allow(int(path.stat().st_size * share) - source.read_bytes)
            seen = _settled(session, source)
            assert 1_000 < seen < 10_000 and index.count == seen and not index.ready
            assert session.snapshot().ring_stretch.first_ordinal > 10  # the first inferences left the ring
            for ordinal in (0, 10, seen // 2, seen - 1):  # back into the recording; the live edge
                assert _cycles(session.seek(ordinal), ordinal) == truth[ordinal], ordinal
            at_once = time.monotonic()
            assert session.seek(seen) is None and session.seek(10**9) is None
            said = index.missing(seen)
            assert time.monotonic() - at_once < 1.0
            assert said == (
                f"no inference #{seen} recorded yet: the capture holds #0 to #{seen - 1} so far "
                f"({seen:,} inferences; live, still recording)"
            )
        source.allow(10**12)
        while not session.ended:  # seeks while the recording grows
            ordinal = index.count // 3
            assert _cycles(session.seek(ordinal), ordinal) == truth[ordinal]
        assert session.wait_done(30)
        assert index.ready and index.count == 10_000
        assert _cycles(session.seek(9_999), 9_999) == truth[9_999]
        assert index.missing(10_000) == "no inference #10000 in the capture: it holds #0 to #9999 (10,000 inferences)"
        got = session_numbers(session)
    finally:
        session.close()
    expected = as_session_numbers(report_numbers(run_report(run_cli, recording)))
    assert got == expected
    assert expected == as_session_numbers(report_numbers(run_report(run_cli, path)))
