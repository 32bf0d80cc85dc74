"""Packet batches decoded into buffers given back and lent again (tracer.decode.pool).

The pool alone (a buffer given back is lent again, a foreign batch is not taken, a batch never
given back is not kept); the ITM and trace decoders with a pool give the packets they give
without one, on any split, with gaps and TPIU frames, while reusing a handful of buffers; and
``decode_capture`` and ``read_windows`` never read a batch after giving it back: every buffer
given back is overwritten with garbage at once, and the reports stay those of decoding into
fresh memory.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from telemetry_streams import build_stream
from test_pipeline_ahead import damaged_capture, decode, windowed_report
from tpiu_streams import numbered_stream

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter
from tracer.decode.itm import ItmDecoder
from tracer.decode.packets import PacketBatch
from tracer.decode.pool import KEEP, BatchPool
from tracer.decode.stream import TraceDecoder
from tracer.decode.tpiu import TpiuMode
from tracer.pipeline import capture as pipeline_capture
from tracer.pipeline.stream import StreamDecoder
from tracer.telemetry.wire import RecordType, TimeSource


def test_a_buffer_given_back_is_lent_again() -> None:
    pool = BatchPool()
    first = pool.lend(1000)
    assert len(first) >= 1000 and pool.lent == 1
    assert pool.give_back(first.slice(0, 10))  # a slice of it gives the whole buffer back
    assert pool.lent == 0 and pool.free == 1
    again = pool.lend(900)
    assert np.shares_memory(again.kind, first.kind) and np.shares_memory(again.ts, first.ts)
    assert not pool.give_back(first.copy())  # not lent: nothing to take back
    assert pool.give_back(again) and not pool.give_back(again)  # (once)


def test_too_small_buffers_are_dropped_and_never_given_back_ones_not_kept() -> None:
    pool = BatchPool()
    small = pool.lend(10)
    pool.give_back(small)
    big = pool.lend(len(small) + 1)
    assert not np.shares_memory(big.kind, small.kind) and pool.free == 0
    del big
    assert pool.lent == 0  # lent buffers are held weakly: a lost batch is garbage collected
    many = [pool.lend(10) for _ in range(KEEP + 3)]
    for batch in many:
        pool.give_back(batch)
    assert pool.free == KEEP


def same(a: PacketBatch, b: PacketBatch) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a.columns(), b.columns(), strict=True))


@pytest.mark.parametrize("seed", range(6))
def test_itm_batches_in_reused_buffers_are_those_of_fresh_ones(seed: int) -> None:
    """Random splits and gaps, each batch given back as soon as it is copied: the packets of a
    decoder without a pool, and (packets not held for their timestamps) a few buffers for dozens
    of batches."""
    rnd = random.Random(seed)
    data = build_stream(inferences=20, layers=3).data
    hold = bool(seed % 2)
    plain, pooled = ItmDecoder(hold_timestamps=hold), ItmDecoder(hold_timestamps=hold, pool=BatchPool())
    want: list[PacketBatch] = []
    got: list[PacketBatch] = []
    buffers: list[np.ndarray] = []  # (kept alive: their ids stay distinct)
    at = 0
    while at < len(data):
        step = rnd.randrange(1, 200)
        if rnd.random() < 0.05:
            want.append(plain.gap(7))
            batch = pooled.gap(7)
        else:
            want.append(plain.feed(data[at : at + step]))
            batch = pooled.feed(data[at : at + step])
            at += step
        got.append(batch.copy())
        buffers.append(batch.kind if batch.kind.base is None else batch.kind.base)
        pooled.give_back(batch)
    want.append(plain.finish())
    got.append(pooled.finish())
    assert same(PacketBatch.concat(got), PacketBatch.concat(want))
    assert len(got) > 40
    if not hold:  # (held packets leave in batches joined from several: new memory)
        assert len({id(b) for b in buffers}) <= len(buffers) // 4


@pytest.mark.parametrize("seed", range(4))
def test_tpiu_frames_and_lost_bytes_decode_the_same_with_reused_buffers(seed: int) -> None:
    rnd = random.Random(seed)
    data = numbered_stream(seed, 3000, sync_every=7)
    plain = TraceDecoder(TpiuMode.ON, 1, hold_timestamps=False)
    pooled = TraceDecoder(TpiuMode.ON, 1, hold_timestamps=False, reuse_batches=True)
    want, got = [], []
    at = 0
    while at < len(data):
        step = rnd.randrange(1, 5000)
        lost = 16 if rnd.random() < 0.1 else 0
        want.append(plain.feed(data[at : at + step], lost))
        batch = pooled.feed(memoryview(bytearray(data[at : at + step])), lost)
        got.append(batch.copy())
        pooled.give_back(batch)
        at += step
    want.append(plain.finish())
    got.append(pooled.finish())
    assert pooled.formatted and same(PacketBatch.concat(got), PacketBatch.concat(want))
    assert plain.warnings == pooled.warnings and plain.stats_json() == pooled.stats_json()


@pytest.fixture
def garbage_on_give_back(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every buffer given back is overwritten with garbage at once: a batch read after it was
    given back reads nonsense. Returns whether each batch given back was a buffer taken back."""
    given: list[bool] = []
    give_back = BatchPool.give_back

    def poisoning(self: BatchPool, batch: PacketBatch) -> bool:
        # Before the pool has it: a later batch may take its memory as soon as it has.
        for column in batch.columns():
            whole = column if column.base is None else column.base
            whole[:] = np.iinfo(whole.dtype).max if whole.dtype != np.uint8 else 0x5A
        taken = give_back(self, batch)
        given.append(taken)
        return taken

    monkeypatch.setattr(BatchPool, "give_back", poisoning)
    return given


def fresh_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """``decode_capture`` and ``read_windows`` decode into fresh memory (no batch given back)."""
    init = StreamDecoder.__init__

    def fresh(self, *args, **kwargs):  # type: ignore[no-untyped-def]  # StreamDecoder's own signature
        kwargs["reuse_batches"] = False
        init(self, *args, **kwargs)

    monkeypatch.setattr(StreamDecoder, "__init__", fresh)


def late_pc_samples_capture(tmp_path: Path) -> Path:
    """Telemetry in chunks of 64 bytes whose DWT PC samples start right at a chunk's start, after
    the begin of the first layer they sample (in the chunks before): the PC sample collector reads
    that layer's begin from the batch before the first with PC samples, which it kept (zero
    padding before the layer begin puts the chunk boundary there)."""
    from sample_streams import TelemetryEncoder, dwt_pc_sample

    enc = TelemetryEncoder()
    enc.target_info(0, 100_000_000, TimeSource.DWT)
    enc.layer_info(1, 0, 0, "ADD", "a")
    t = 1_000
    for n in range(12):
        enc.inference_begin(t)
        before = len(enc.out)
        enc.layer_begin(t + 10, 0)
        if n == 0:
            enc.out = enc.out[:before] + bytes(-len(enc.out) % 64) + enc.out[before:]
        for pc in (0x100 + 4 * (n % 5), 0x200):
            dwt_pc_sample(enc, pc)
        enc.layer_end(t + 500, 0)
        enc.inference_end(t + 510)
        t += 1_000
    path = tmp_path / "pcs.trace"
    with CaptureWriter(path, CaptureMetadata(source="test", tpiu=False, cpu_hz=100_000_000), flush_bytes=64) as w:
        w.write(bytes(enc))
    return path


@pytest.mark.usefixtures("kernels")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("capture", ["damaged", "dwt-pc-samples"])
def test_decode_capture_never_reads_a_batch_given_back(
    capture: str, threads: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, garbage_on_give_back: list[bool]
) -> None:
    """Including the batch the PC sample collector keeps until it sees the next (the DWT PC
    samples start after the first batch of about 200 bytes)."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 64)  # (a batch per chunk of 64 bytes)
    path = damaged_capture(tmp_path) if capture == "damaged" else late_pc_samples_capture(tmp_path)
    reused, progress_reused, report_reused = decode(path, threads=threads)
    assert sum(garbage_on_give_back) > 10
    with monkeypatch.context() as m:
        fresh_batches(m)
        fresh, progress_fresh, report_fresh = decode(path, threads=threads)
    assert report_reused == report_fresh and progress_reused == progress_fresh
    assert reused.timeline.records == fresh.timeline.records and reused.warnings == fresh.warnings
    if capture == "dwt-pc-samples":
        samples = [r for r in fresh.timeline.records if r.type == RecordType.PC_SAMPLE]
        assert len(samples) == 12 * 2 and all(r.cycle >= 0 for r in samples)  # (all placed in their span)


@pytest.mark.usefixtures("kernels")
def test_read_windows_never_reads_a_batch_given_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, garbage_on_give_back: list[bool]
) -> None:
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)
    path = damaged_capture(tmp_path)
    reused, progress_reused = windowed_report(path, monkeypatch, cores=2)
    assert sum(garbage_on_give_back) > 10
    fresh_batches(monkeypatch)
    fresh, progress_fresh = windowed_report(path, monkeypatch, cores=2)
    assert json.loads(reused) == json.loads(fresh) and progress_reused == progress_fresh


def test_chunks_joined_in_one_reused_buffer_decode_as_the_whole_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunks fed together are joined in the same memory each time: a decoder that kept a
    view of them past a feed would read the next feed's bytes there."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)
    data = build_stream(inferences=10, layers=3).data
    path = tmp_path / "chunks.trace"
    with CaptureWriter(path, CaptureMetadata(source="test", tpiu=False, cpu_hz=100_000_000), flush_bytes=64) as w:
        w.write(data)
    with open_capture(path) as reader:
        _, batches = pipeline_capture.decode_reader(reader, TpiuMode.OFF, None, hold_timestamps=False)
        got = [batch.copy() for batch in batches]
    whole = ItmDecoder(hold_timestamps=False)
    assert len(got) > 10 and same(PacketBatch.concat(got), PacketBatch.concat([whole.feed(data), whole.finish()]))
