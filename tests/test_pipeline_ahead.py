"""Reading and ITM decoding run ahead on a thread of their own: same results, clean exits.

:class:`tracer.pipeline.ahead.RunAhead` alone (order, the producer's exception with its traceback,
Ctrl-C in the consumer, an early exit: never a thread left behind), then ``decode_capture`` with one
thread and with two on damaged captures cut into many small batches: the same report, warnings,
statistics and progress calls, and the reader closed on every exit; then ``read_windows`` the same
way (and a caller that stops reading windows early).
"""

from __future__ import annotations

import json
import struct
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from telemetry_encoder import TelemetryEncoder
from telemetry_streams import build_stream, cut

from tracer.analysis.analyze import analyze
from tracer.base.facts import InputFacts
from tracer.capture.format import CHUNK_HEAD, CHUNK_MARKER
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import CaptureReader
from tracer.capture.writer import CaptureWriter
from tracer.errors import CaptureError
from tracer.export.report_json import report_object
from tracer.pipeline import capture as pipeline_capture
from tracer.pipeline import windows as pipeline_windows
from tracer.pipeline.ahead import RunAhead
from tracer.pipeline.analyse import analyse_windows
from tracer.pipeline.capture import DecodedCapture, decode_capture
from tracer.pipeline.windows import read_windows
from tracer.telemetry.decoder import TelemetryDecoder
from tracer.telemetry.wire import RecordType, TimeSource

NAME = "tracer-run-ahead"


def no_thread_left() -> bool:
    return not any(t.name == NAME for t in threading.enumerate())


class Counting:
    """A producer that records how far it went and whether it was closed, on which thread."""

    def __init__(self, n: int | None, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at
        self.made = 0
        self.closed_on: str | None = None

    def __iter__(self) -> Iterator[int]:
        try:
            i = 0
            while self.n is None or i < self.n:
                if i == self.fail_at:
                    failing_producer_step(i)
                self.made += 1
                yield i
                i += 1
        finally:
            self.closed_on = threading.current_thread().name


def failing_producer_step(i: int) -> None:
    raise ValueError(f"bad item {i}")


def test_items_arrive_in_order_and_the_thread_ends() -> None:
    """Every item, in order, with a consumer slower than the producer and a queue of one."""
    source = Counting(50)
    with RunAhead(iter(source), depth=1) as ahead:
        got = []
        for item in ahead:
            got.append(item)
            if item % 10 == 0:
                time.sleep(0.002)
    assert got == list(range(50))
    assert no_thread_left() and source.closed_on == NAME


def test_the_producers_exception_is_raised_in_the_consumer_with_its_traceback() -> None:
    """The items before it arrive; then the producer's own exception, its frames in the traceback."""
    got = []
    with pytest.raises(ValueError, match="bad item 7") as caught, RunAhead(iter(Counting(20, fail_at=7))) as ahead:
        for item in ahead:
            got.append(item)  # noqa: PERF402  # one by one: those before the failure are kept
    assert got == list(range(7))
    frames = [frame.name for frame in traceback.extract_tb(caught.value.__traceback__)]
    assert "failing_producer_step" in frames and "__iter__" in frames
    assert no_thread_left()


def test_ctrl_c_in_the_consumer_stops_an_endless_producer() -> None:
    """KeyboardInterrupt in the consumer's loop: the producer stops at once, its generator is closed
    on its own thread, no thread is left and the interrupt reaches the caller."""
    source = Counting(None)  # never ends by itself
    with pytest.raises(KeyboardInterrupt), RunAhead(iter(source), depth=2) as ahead:
        for item in ahead:
            if item == 5:
                raise KeyboardInterrupt
    assert no_thread_left()
    assert source.closed_on == NAME
    assert source.made <= 5 + 1 + 2 + 1  # the items consumed, then at most the queue's and one in hand


def test_leaving_early_stops_the_producer() -> None:
    """A consumer that stops reading (``break``) while the producer is blocked on the full queue."""
    source = Counting(None)
    with RunAhead(iter(source), depth=1) as ahead:
        for _ in ahead:
            time.sleep(0.05)  # the producer is now waiting on the full queue
            break
    assert no_thread_left() and source.closed_on == NAME


def test_one_core_runs_the_producer_inline() -> None:
    """``threaded=False``: no thread at all, the same items, the generator closed on an early exit."""
    source = Counting(None)
    with RunAhead(iter(source), threaded=False) as ahead:
        for item in ahead:
            assert no_thread_left()
            if item == 3:
                break
    assert source.made == 4 and source.closed_on == threading.current_thread().name


# -- decode_capture: one thread and two give the same results -------------------------------------


def damaged_capture(tmp_path: Path) -> Path:
    """A capture with a dropped record, a corrupt chunk (a gap and a reader warning) and a cut end."""
    stream = build_stream(inferences=30, layers=4)
    record = stream.records_of(3, RecordType.LAYER_END)[0]
    data = cut(stream.data, *stream.record_bytes(record))
    data = data[:-3]  # the last record cut short: a truncation warning
    path = tmp_path / "damaged.trace"
    with CaptureWriter(path, CaptureMetadata(source="test", tpiu=False, cpu_hz=100_000_000), flush_bytes=128) as w:
        w.write(data)
    blob = bytearray(path.read_bytes())
    marker = -1
    for _ in range(9):
        marker = blob.find(CHUNK_MARKER, marker + 1)
    blob[marker + CHUNK_HEAD.size + 50] ^= 0xFF
    path.write_bytes(bytes(blob))
    return path


def decode(path: Path, threads: int) -> tuple[DecodedCapture, list[int], str]:
    progress: list[int] = []
    decoded = decode_capture(path, progress.append, threads=threads)
    facts = InputFacts("capture", "test", str(path), decoded.stream_bytes, decoded.host_seconds, decoded.warnings)
    return decoded, progress, json.dumps(report_object(analyze(decoded.timeline, facts)))


@pytest.mark.usefixtures("kernels")
def test_two_threads_decode_exactly_as_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of about 200 bytes (dozens of them): the report, warnings, counts and progress calls
    of the overlapped run are those of the plain one."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)
    path = damaged_capture(tmp_path)
    one, progress_one, report_one = decode(path, threads=1)
    two, progress_two, report_two = decode(path, threads=2)
    assert one.threads == 1 and two.threads == 2
    assert len(progress_one) > 20 and progress_one == progress_two
    assert progress_one == sorted(progress_one) and progress_one[-1] == one.stream_bytes
    assert report_one == report_two
    assert one.warnings == two.warnings and any("checksum" in w for w in one.warnings)
    assert any("truncated" in w for w in one.warnings)
    assert (one.records, one.stream_bytes, one.host_seconds) == (two.records, two.stream_bytes, two.host_seconds)
    assert one.timeline.loss == two.timeline.loss and one.timeline.loss.gaps == 1
    assert no_thread_left()


RTOS_TRACES = sorted((Path(__file__).resolve().parent / "data" / "corpus" / "novakov_rtos_trace").glob("*.trace"))


def pc_sampled_stream(path: Path) -> Path:
    """Telemetry with DWT PC sample packets between its records (raw SWO bytes)."""
    from sample_streams import TelemetryEncoder, dwt_pc_sample

    from tracer.telemetry.wire import TimeSource

    enc = TelemetryEncoder()
    enc.target_info(0, 100_000_000, TimeSource.DWT)
    enc.layer_info(1, 0, 0, "ADD", "a")
    t = 1_000
    for n in range(40):
        enc.inference_begin(t)
        enc.layer_begin(t + 10, 0)
        for pc in (0x100 + 4 * (n % 5), 0x200, None):
            dwt_pc_sample(enc, pc)
        enc.layer_end(t + 500, 0)
        dwt_pc_sample(enc, 0x900)
        enc.inference_end(t + 510)
        t += 1_000
    path.write_bytes(bytes(enc))
    return path


@pytest.mark.parametrize("name", [p.name for p in RTOS_TRACES] + ["dwt-pc-samples"])
def test_what_is_read_beside_the_records_is_the_same_on_two_threads(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read whole on two threads, the FreeRTOS task lane and the DWT PC samples are read on the
    producer's thread, ahead of the record assembly (``TelemetryDecoder.read_beside``): in batches
    of about 200 bytes, the tasks, the records and the report are those of one thread."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)
    path = pc_sampled_stream(tmp_path / "pcs.bin") if name == "dwt-pc-samples" else RTOS_TRACES[0].with_name(name)
    one, _, report_one = decode(path, threads=1)
    two, _, report_two = decode(path, threads=2)
    assert two.threads == 2
    assert one.timeline.tasks == two.timeline.tasks and one.timeline.task_names == two.timeline.task_names
    assert one.timeline.records == two.timeline.records
    assert report_one == report_two
    if name == "dwt-pc-samples":
        assert sum(r.type == RecordType.PC_SAMPLE for r in two.timeline.records) == 40 * 3
    elif name != "itm_time_tester.trace":  # (that one times ITM packets: it switches no task)
        assert two.timeline.tasks
    assert no_thread_left()


class Watched(CaptureReader):
    """A capture reader that remembers being closed and can fail after some chunks."""

    closed = False
    fail_after: int | None = None

    def chunks(self):  # type: ignore[no-untyped-def]  # the parent's generator, passed through
        for i, chunk in enumerate(super().chunks()):
            if i == self.fail_after:
                raise CaptureError("disk went away")
            yield chunk

    def close(self) -> None:
        self.closed = True
        super().close()


def watched(path: Path, fail_after: int | None = None) -> Watched:
    reader = Watched.from_bytes(path.read_bytes(), name=path.name)
    assert isinstance(reader, Watched)
    reader.fail_after = fail_after
    return reader


def test_a_read_error_on_the_producer_thread_reaches_the_caller(tmp_path: Path, monkeypatch) -> None:
    """The reader fails mid-capture on the producer thread: the caller gets that error, no thread is
    left, the reader is closed."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)
    reader = watched(damaged_capture(tmp_path), fail_after=12)
    with pytest.raises(CaptureError, match="disk went away") as caught:
        decode_capture(reader, threads=2)
    assert "chunks" in [f.name for f in traceback.extract_tb(caught.value.__traceback__)]
    assert reader.closed and no_thread_left()


def test_ctrl_c_during_decoding_stops_the_producer(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C arrives in the caller (here: from the progress callback) mid-capture: the interrupt
    propagates, the producer stops, the reader is closed."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)
    reader = watched(damaged_capture(tmp_path))
    calls = []

    def progress(done: int) -> None:
        calls.append(done)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        decode_capture(reader, progress, threads=2)
    assert len(calls) == 3 and reader.closed and no_thread_left()


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 2), (8, 2)])
def test_the_cores_decide_the_threads(tmp_path: Path, monkeypatch, cores: int, threads: int) -> None:
    """Left to itself, decode_capture overlaps only when the process may run on two cores or more."""
    monkeypatch.setattr(pipeline_capture, "usable_cores", lambda: cores)
    assert decode_capture(damaged_capture(tmp_path)).threads == threads
    assert no_thread_left()


# -- read_windows: the windowed read of a large capture overlaps the same way ----------------------


def windowed_report(path: Path, monkeypatch: pytest.MonkeyPatch, cores: int) -> tuple[str, list[int]]:
    monkeypatch.setattr(pipeline_windows, "usable_cores", lambda: cores)
    progress: list[int] = []
    windows = lambda: read_windows(path, progress.append, whole_bytes=0, window_spans=7)  # noqa: E731
    report = json.dumps(report_object(analyse_windows(windows)))
    return report, progress


def test_windows_read_on_two_threads_are_those_read_on_one(tmp_path: Path, monkeypatch) -> None:
    """A damaged capture read in windows of 7 layer executions, from batches of about 200 bytes:
    the report (warnings, loss, every window's rows) and the progress calls are the same (the bytes
    read are told with each window, and every 400 bytes without one)."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)
    monkeypatch.setattr(pipeline_windows, "PROGRESS_BYTES", 400)
    path = damaged_capture(tmp_path)
    one, progress_one = windowed_report(path, monkeypatch, cores=1)
    two, progress_two = windowed_report(path, monkeypatch, cores=2)
    assert one == two and "checksum" in one
    assert len(progress_one) > 20 and progress_one == progress_two
    assert no_thread_left()


def test_leaving_the_windows_early_stops_the_producer(tmp_path: Path, monkeypatch) -> None:
    """A caller that takes the first window and drops the rest: the producer thread ends."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)
    monkeypatch.setattr(pipeline_windows, "usable_cores", lambda: 2)
    windows = read_windows(damaged_capture(tmp_path), whole_bytes=0, window_spans=7)
    timeline, _ = next(windows)
    assert len(timeline.inferences) and not no_thread_left()  # the producer is still ahead
    windows.close()
    assert no_thread_left()


def freertos_capture(tmp_path: Path) -> Path:
    """Telemetry inferences with FreeRTOS ITM task switches between them (what the decoder reads
    beside the records), in a capture of many small chunks.
    """
    enc = TelemetryEncoder()
    enc.target_info(1_000, 100_000_000, TimeSource.DWT)
    t = 2_000
    for n in range(40):
        task = 0x2000_0100 if n % 2 else 0x2000_0200
        enc.out += _swit(3, 0xBE01) + _swit(2, task) + _swit(3, 0xEF01)  # task switched in
        enc.local_timestamp(100)
        enc.inference_begin(t, n)
        for layer in range(3):
            enc.layer_begin(t + 10 + 100 * layer, layer)
            enc.layer_end(t + 90 + 100 * layer, layer)
        enc.inference_end(t + 400)
        t += 1_000
    path = tmp_path / "freertos.trace"
    with CaptureWriter(path, CaptureMetadata(source="test", tpiu=False, cpu_hz=100_000_000), flush_bytes=128) as w:
        w.write(bytes(enc.out))
    return path


def _swit(port: int, value: int) -> bytes:
    return struct.pack("<BI", (port << 3) | 3, value)


def test_windows_pick_what_is_beside_the_records_ahead(tmp_path: Path, monkeypatch) -> None:
    """Read in windows on two threads, the packets read beside the records (FreeRTOS task switches)
    are picked out on the producer's thread and read in step with the records: every window as on
    one thread."""
    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 200)
    path = freertos_capture(tmp_path)
    picked_on: set[str] = set()
    pick = TelemetryDecoder.pick_beside

    def recorded(batch):  # type: ignore[no-untyped-def]
        picked_on.add(threading.current_thread().name)
        return pick(batch)

    monkeypatch.setattr(TelemetryDecoder, "pick_beside", staticmethod(recorded))

    def windows(cores: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
        monkeypatch.setattr(pipeline_windows, "usable_cores", lambda: cores)
        return [
            (len(timeline.inferences), [(s.task, s.start, s.end) for s in timeline.tasks])
            for timeline, _ in read_windows(path, whole_bytes=0, window_spans=7)
        ]

    one = windows(1)
    assert picked_on == {threading.current_thread().name}
    picked_on.clear()
    two = windows(2)
    assert picked_on == {NAME}
    assert one == two
    assert len(one) > 5 and sum(n for n, _ in one) == 40
    assert any(tasks for _, tasks in one)
    assert no_thread_left()
