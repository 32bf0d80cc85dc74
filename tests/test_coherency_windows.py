"""Coherency read in windows finds what the capture read whole finds, wherever the windows cut.

Real streams from the reference encoder, written as .trace captures and read in windows of a few
layer executions (decoded 128 bytes at a time, so a window can close after any execution): NPU
jobs whose buffers are declared in some inferences only, CPU write and read marks, cleans and
invalidates (some left out, some of ranges that are not whole cache lines, of each kind), DWT
data-trace writes into a job's input, outputs that differ for the same input. Most windows of a
real capture declare no buffer, and their checks are cut short (the accumulator only counts their
jobs): a declaration alone in the window before, in the window itself or in the one after must
still be checked as read whole.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from telemetry_encoder import TelemetryEncoder

import tracer.pipeline.capture as pipeline_capture
from tracer.analysis.analyze import analyze
from tracer.analysis.coherency import MISSING_INVALIDATE, SHORT_NOTE, CoherencyAccumulator, CoherencyAnalysis
from tracer.base.firmware_marks import NPU_READS, NPU_WRITES
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.pipeline.analyse import analyse_windows
from tracer.pipeline.load import load_timeline
from tracer.pipeline.windows import read_windows
from tracer.telemetry.wire import TimeSource

INPUT, OUTPUT = 0x31000000, 0x31001000
CLEAN, INVALIDATE, CLEAN_INVALIDATE = 1, 2, 3
# The cache operation after an inference's job: none, an aligned invalidate of the output, or one
# of a range that is not whole lines (two ranges, each of the three kinds).
OPS: list[tuple[int, int, int] | None] = [
    None,
    (INVALIDATE, OUTPUT, 2048),
    (INVALIDATE, OUTPUT, 2000),
    (INVALIDATE, OUTPUT + 8, 64),
    (CLEAN, OUTPUT + 8, 64),
    (CLEAN_INVALIDATE, OUTPUT, 2000),
]


class Inference(NamedTuple):
    """What the firmware does in one inference."""

    declares: int = 0  # the input and output (trc_npu_buffer) of: 0 no job, 1 its job, 2 the next inference's
    writes: bool = False  # a CPU write mark on the input before the job
    cleans: bool = False  # the input cleaned before the job
    op: int = 0  # the cache operation after the job: an index into OPS
    reads: int = 0  # the CPU reads the output: 0 not, 1 after the job, 2 only at the next inference's start
    data_write: bool = False  # a DWT data-trace write into the input while the job runs
    output: int = 0  # the output CRC (the input CRC is always the same)


def stream(inferences: Sequence[Inference]) -> bytes:
    """Two layers per inference: an NPU job (id ``n % 3``) in layer 0, the CPU in layer 1."""
    enc = TelemetryEncoder()
    enc.target_info(0, 100_000_000, TimeSource.DWT)
    enc.layer_info(1, 0, 1, "ethos-u", "npu0")
    enc.layer_info(2, 1, 0, "SOFTMAX", "softmax")
    for n, inf in enumerate(inferences):
        t = 1000 + n * 100_000
        job = n % 3
        if n and inferences[n - 1].reads == 2:
            enc.cpu_read(t - 50, OUTPUT, 2048)
        if inf.writes:
            enc.cpu_write(t, INPUT, 4096)
        enc.inference_begin(t + 100)
        enc.buffer_crc(t + 150, 0, 0xCAFE0001, 4096)
        if inf.declares:
            owner = job if inf.declares == 1 else (n + 1) % 3  # (the next job with that id owns them)
            enc.npu_buffer(t + 200, owner, NPU_READS, INPUT, 4096)
            enc.npu_buffer(t + 210, owner, NPU_WRITES, OUTPUT, 2048)
        enc.layer_begin(t + 300, 0, 1)
        if inf.cleans:
            enc.cache_op(t + 400, CLEAN, INPUT, 4096)
        enc.npu_job_begin(t + 500, job)
        if inf.data_write:
            enc.data_pc(0, 0x0800028C)
            enc.data_address(0, 0x0040, size=2)
            enc.data_value(0, 0x100, write=True)
        enc.npu_job_end(t + 5000, job)
        if (op := OPS[inf.op]) is not None:
            enc.cache_op(t + 5100, *op)
        enc.layer_end(t + 5200, 0)
        if inf.reads == 1:
            enc.cpu_read(t + 5300, OUTPUT, 2048)
        enc.layer_begin(t + 5400, 1, 0)
        enc.layer_end(t + 6000, 1)
        enc.buffer_crc(t + 6050, 1, 0x11 + inf.output, 10)
        enc.inference_end(t + 6100)
    return bytes(enc)


@pytest.fixture(autouse=True)
def small_chunks() -> Iterator[None]:
    """Decode 128 bytes at a time, so that a window can close after any layer execution."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline_capture, "FEED_BYTES", 128)
        yield


def whole_and_windows(inferences: Sequence[Inference], spans: int) -> tuple[CoherencyAnalysis, CoherencyAnalysis]:
    """Coherency of the stream read whole, and read in windows of about ``spans`` executions."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.trace"
        with CaptureWriter(path, CaptureMetadata(source="test://coherency", tpiu=False), flush_bytes=128) as writer:
            writer.write(stream(inferences))
        whole = analyze(*load_timeline(path)).coherency
        parts = analyse_windows(lambda: read_windows(path, whole_bytes=0, window_spans=spans)).coherency
    assert whole is not None and parts is not None
    return whole, parts


def assert_same(whole: CoherencyAnalysis, parts: CoherencyAnalysis, reads_beyond: bool) -> None:
    """The same counts, notes and problems; where the windows checked an output's reads only up to
    the next window's end (said in a note) and the stream reads outputs beyond it, the same
    problems but for missing invalidates.
    """
    counts = (whole.jobs_checked, whole.buffers_declared, whole.cpu_writes, whole.cpu_reads)
    assert (parts.jobs_checked, parts.buffers_declared, parts.cpu_writes, parts.cpu_reads) == counts
    short = [note for note in parts.notes if note.startswith(SHORT_NOTE.split("{}")[0])]
    assert [note for note in parts.notes if note not in short] == whole.notes
    if short and reads_beyond:
        assert [p for p in parts.problems if p.kind != MISSING_INVALIDATE] == [
            p for p in whole.problems if p.kind != MISSING_INVALIDATE
        ]
    else:
        assert parts.problems == whole.problems


@pytest.mark.parametrize("spans", [2, 3, 5])
@pytest.mark.parametrize(("at", "declares"), [(n, 1) for n in range(12)] + [(n, 2) for n in range(11)])
def test_a_declaration_in_one_inference_only(
    at: int, declares: int, spans: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One inference declares buffers, for its own job or for the next inference's (then the window
    before that job's may hold the declaration alone); no input is cleaned, the declared job's
    output is read without an invalidate, and the CPU writes into the input while it runs; the
    other inferences declare nothing and invalidate ranges that are not whole lines. Wherever the
    windows put the declaration (the window checked, the one before it, the one after), the
    problems are those found read whole; and the windows far from it are only counted.
    """
    counted: list[bool] = []
    keeps_nothing = CoherencyAccumulator._keeps_nothing

    def spy(self: CoherencyAccumulator, *args: object) -> bool:
        counted.append(keeps_nothing(self, *args))
        return counted[-1]

    monkeypatch.setattr(CoherencyAccumulator, "_keeps_nothing", spy)
    owner = at + declares - 1  # (the inference whose job the declaration is for)
    inferences = [
        Inference(declares=declares if n == at else 0, writes=True, reads=1, data_write=True)
        if n in (at, owner)
        else Inference(writes=n % 2 == 0, op=(1, 2, 3, 4, 5)[n % 5], output=n % 2)
        for n in range(12)
    ]
    whole, parts = whole_and_windows(inferences, spans)
    kinds = {p.kind for p in whole.problems}
    assert {"missing-clean", "missing-invalidate", "cpu-write-during-npu-job", "unaligned"} <= kinds, kinds
    assert_same(whole, parts, reads_beyond=False)
    assert True in counted and False in counted  # (both kinds of check ran)


inference = st.builds(
    Inference,
    declares=st.integers(0, 2),
    writes=st.booleans(),
    cleans=st.booleans(),
    op=st.integers(0, len(OPS) - 1),
    reads=st.integers(0, 2),
    data_write=st.booleans(),
    output=st.integers(0, 1),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(inference, min_size=1, max_size=14), st.integers(1, 7))
def test_any_cut_finds_what_the_whole_capture_finds(inferences: list[Inference], spans: int) -> None:
    """Declarations, marks, cleans, invalidates (whole lines or not), data-trace writes, outputs
    that differ, in any mix and cut anywhere: the problems found read whole (but the reads of an
    output after the next window, when no job writes it again before: said in a note)."""
    whole, parts = whole_and_windows(inferences, spans)
    assert_same(whole, parts, reads_beyond=any(i.reads for i in inferences))


def test_a_job_the_next_window_holds_early_bounds_no_read_before_it() -> None:
    """Windows of one inference each (where this stream's bytes cut them); inference 2's job
    writes the output, inference 3 declares the buffers of inference 4's job (which writes the
    output again), and the CPU reads the output between them, just before inference 4 begins. The
    decoder hands inference 4's job out early, with inference 3's window, but the read is in
    inference 4's: the check of inference 2's window must not take that job as the end of the
    output's reads. Read whole, the read lacks an invalidate; in windows, either that or a note
    that the reads were checked only up to the next window."""
    inferences = [
        Inference(),
        Inference(data_write=True),
        Inference(declares=1),
        Inference(declares=2, reads=2),
        Inference(),
    ]
    whole, parts = whole_and_windows(inferences, 3)
    assert [(p.kind, p.job, p.inference) for p in whole.problems] == [(MISSING_INVALIDATE, 2, 2)]
    short = [note for note in parts.notes if note.startswith(SHORT_NOTE.split("{}")[0])]
    assert short or parts.problems == whole.problems
    assert_same(whole, parts, reads_beyond=True)
