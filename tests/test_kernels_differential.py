"""The compiled kernels (``tracer._kernels``) against their pure-Python reference, call by call.

Every kernel call of the real pipeline (TPIU deframer, ITM decoder, telemetry decoder, packet
listings) goes through :func:`differential`: it runs the C kernel and the Python reference on
copies of the same arguments and asserts the same return value and the same contents of every
array afterwards (state, counters, output columns, tables, scratch space: a stray write shows).
The streams: random bytes, random packet streams in random splits, TPIU-formatted streams,
generated telemetry with random damage, the real captures of ``tests/data/corpus`` and the demo
capture. Then the single source of truth of the tables, and the fallback without the extension.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import session_streams
import telemetry_streams
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from itm_encoder import FULL_SYNC, encode_stream, tpiu_frames
from telemetry_encoder import TelemetryEncoder
from test_itm_properties import packets as packet_lists

from tracer import native
from tracer.capture.reader import open_capture
from tracer.decode import (
    ItmDecoder,
    PacketBatch,
    PacketKind,
    TpiuDeframer,
    TpiuMode,
    TraceDecoder,
    itm_kernel,
    tpiu_kernel,
)
from tracer.decode.packets import KIND_COUNT
from tracer.export import packets_text
from tracer.telemetry import kernel as telemetry_kernel
from tracer.telemetry.decoder import TelemetryDecoder

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
REAL_STREAMS = [
    *sorted((CORPUS / "novakov_rtos_trace").glob("*.trace")),
    CORPUS / "sigrok_stm32f105" / "trace_example_swo_tpiu.bin",
    CORPUS / "sigrok_stm32f105" / "trace_example_itm_stream1.bin",
    ROOT / "captures" / "demo.trace",
]
# ``calls`` is reset at the start of every example (its patched kernels stay the same).
HEALTH = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)


def _plain(value: Any) -> Any:
    """A kernel's return value with numpy scalars as Python ints."""
    if isinstance(value, tuple):
        return tuple(int(v) for v in value)
    return None if value is None else int(value)


class Calls:
    """Counts the differential calls per kernel (a test checks that its kernels really ran)."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}

    def reset(self) -> None:
        """Forget the counts (a new example)."""
        self.count.clear()

    def differential(
        self, name: str, compiled: Callable[..., Any], reference: Callable[..., Any]
    ) -> Callable[..., Any]:
        """A kernel that runs both implementations on copies of its arguments and compares all."""

        def call(*args: Any) -> Any:
            theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            got = compiled(*args)
            want = reference(*theirs)
            assert _plain(got) == _plain(want), name
            for i, (mine, ref) in enumerate(zip(args, theirs)):
                if isinstance(mine, np.ndarray):
                    assert mine.dtype == ref.dtype, (name, i)
                    assert np.array_equal(mine, ref), (name, i, _first_difference(mine, ref))
            self.count[name] = self.count.get(name, 0) + 1
            return got

        return call


def _first_difference(a: np.ndarray, b: np.ndarray) -> tuple[Any, ...]:
    where = np.argwhere(a != b)
    return (*tuple(where[0].tolist()), a[tuple(where[0])], b[tuple(where[0])]) if len(where) else ()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Route every kernel call through the differential check (the compiled kernels must be built)."""
    recorder = Calls()
    for module_name, name in native.KERNELS:
        module = sys.modules[module_name]
        compiled = getattr(module, f"{name}_native")
        assert compiled is not None, f"{module_name}.{name}: tracer._kernels is not built (pip install -e . builds it)"
        monkeypatch.setattr(module, name, recorder.differential(name, compiled, getattr(module, f"{name}_python")))
    return recorder


def _format_both(batch: PacketBatch) -> None:
    """List a batch in both formats (the formatter kernel runs through the differential check)."""
    for fmt in ("ndjson", "text"):
        packets_text.format_batch(batch, fmt)


def _cut_points(length: int, cuts: list[int]) -> list[int]:
    return sorted({min(c, length) for c in cuts} | {0, length})


# -- random streams ---------------------------------------------------------------------------------
@SETTINGS
@given(st.binary(max_size=600), st.lists(st.integers(0, 600), max_size=8), st.booleans())
def test_random_bytes(calls: Calls, data: bytes, cuts: list[int], hold: bool) -> None:
    calls.reset()
    decoder = ItmDecoder(hold_timestamps=hold)
    batches = []
    points = _cut_points(len(data), cuts)
    for i, (a, b) in enumerate(itertools.pairwise(points)):
        if i == 2:
            batches.append(decoder.gap(7))  # bytes lost between two pieces: the kernel restarts there
        batches.append(decoder.feed(data[a:b]))
    batches.append(decoder.finish())
    everything = PacketBatch.concat(batches)
    _format_both(everything)
    telemetry = TelemetryDecoder()
    for batch in batches:
        telemetry.feed(batch)
    telemetry.finish()
    assert calls.count.get("decode_itm", 0) >= (1 if data else 0)
    assert calls.count.get("decode_records", 0) >= (1 if len(everything) else 0)


@SETTINGS
@given(packet_lists, st.lists(st.integers(0, 400), max_size=10))
def test_random_packet_streams(calls: Calls, pkts: list[dict[str, Any]], cuts: list[int]) -> None:
    calls.reset()
    data, _ = encode_stream(pkts)
    decoder = ItmDecoder()
    points = _cut_points(len(data), cuts)
    batch = PacketBatch.concat([*(decoder.feed(data[a:b]) for a, b in itertools.pairwise(points)), decoder.finish()])
    _format_both(batch)
    assert calls.count.get("format_packets", 0) == (2 if len(batch) else 0)


@SETTINGS
@given(
    st.lists(st.tuples(st.sampled_from([1, 1, 2, 0x00, 0x7D]), st.integers(0, 255)), max_size=400),
    st.binary(max_size=20),
    st.lists(st.integers(0, 3000), max_size=8),
    st.lists(st.tuples(st.integers(0, 7000), st.sampled_from(["drop", "insert", "sync", "junk"])), max_size=4),
)
def test_tpiu_streams(
    calls: Calls, pairs: list[tuple[int, int]], junk: bytes, cuts: list[int], damage: list[tuple[int, str]]
) -> None:
    """Frames with syncs, half syncs, and slipped bytes, stray syncs and junk inside: the kernel's
    stops (refused frames, full syncs off the grid) and the grid searches run on both."""
    calls.reset()
    frames, _ = tpiu_frames(pairs)
    blob = junk + FULL_SYNC + b"".join(f[:6] + b"\xff\x7f" + f[6:] if i % 3 == 1 else f for i, f in enumerate(frames))
    for at, what in sorted(damage, reverse=True):
        at = min(at, len(blob))
        inserted = {"drop": b"", "insert": b"\x5a", "sync": FULL_SYNC, "junk": b"\x0b\xe3\xff\x11\xf1"}[what]
        blob = blob[:at] + inserted + blob[at + (what == "drop") :]
    points = _cut_points(len(blob), cuts)
    for source in (1, 2):
        deframer = TpiuDeframer(source, alignment=len(junk))
        for a, b in itertools.pairwise(points):
            deframer.feed(blob[a:b])
        deframer.finish()
    for mode in (TpiuMode.ON, TpiuMode.AUTO):
        decoder = TraceDecoder(mode)
        for a, b in itertools.pairwise(points):
            decoder.feed(blob[a:b])
        decoder.finish()
    assert calls.count["deframe"] >= 2


@st.composite
def damaged_telemetry(draw: st.DrawFn) -> bytes:
    """A generated telemetry stream with random bytes flipped, dropped, inserted, or overflows."""
    stream = telemetry_streams.build_stream(inferences=draw(st.integers(1, 3)), layers=3, seed=draw(st.integers(0, 9)))
    data = bytearray(stream.data)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["flip", "drop", "insert", "overflow"]))
        if action == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "drop":
            del data[at : at + draw(st.integers(1, 40))]
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            data[at:at] = b"\x70"
    return bytes(data)


@settings(max_examples=40, deadline=None, suppress_health_check=HEALTH)
@given(damaged_telemetry(), st.lists(st.integers(0, 3000), max_size=6))
def test_damaged_telemetry_with_tiny_tables(calls: Calls, data: bytes, cuts: list[int]) -> None:
    """Tables start one row small, so the kernel stops early and the decoder grows them as often as
    it must; what it decodes is what a decoder with the usual tables decodes. (Damage may leave no
    layer at all: then one call is enough.)"""
    calls.reset()
    itm = ItmDecoder(hold_timestamps=False)
    decoder = TelemetryDecoder()
    _shrink_tables(decoder)
    points = _cut_points(len(data), cuts)
    for a, b in itertools.pairwise(points):
        decoder.feed(itm.feed(data[a:b]))
    decoder.feed(itm.finish())
    decoder.finish()
    spans = decoder.timeline().spans
    assert calls.count["finish_stream"] == 1
    if len(spans) > 1:  # more rows than the table had: the kernel stopped and was called again
        assert calls.count["decode_records"] > 1
    usual, usual_itm = TelemetryDecoder(), ItmDecoder(hold_timestamps=False)
    usual.feed(usual_itm.feed(data))
    usual.feed(usual_itm.finish())
    usual.finish()
    assert np.array_equal(usual.timeline().spans.start, spans.start)
    assert np.array_equal(usual.timeline().spans.end, spans.end)
    assert len(usual.timeline().inferences) == len(decoder.timeline().inferences)


def _shrink_tables(decoder: TelemetryDecoder) -> None:
    """White-box: give a fresh decoder the smallest tables its kernel can start from."""
    k = telemetry_kernel
    tables = decoder._tables
    tables.spans = np.zeros((k.SP_COLS, 1), np.int64)
    tables.infs = np.zeros((k.IN_COLS, k.NEED_INF), np.int64)
    tables.events = np.zeros((k.EV_COLS, 1), np.int64)
    tables.words = np.zeros(k.NEED_WORDS, np.int64)
    tables.text = np.zeros(k.NEED_TEXT, np.uint8)
    tables.text_time = np.zeros(k.NEED_TEXT, np.int64)
    tables.dwt = k.new_dwt_table(1)


def _hardware_stream() -> bytes:
    """Records between DWT exception and data trace, local timestamps and an overflow (a SWO
    stream's mix: the kernel times hardware packets from the records and stamps around them)."""
    enc = TelemetryEncoder()
    enc.target_info(1_000, 100_000_000, 1, marker_cost_q4=0)
    for n in range(3):
        t = 2_000 + 10_000 * n
        enc.local_timestamp(50 + n)
        enc.inference_begin(t, n)
        enc.layer_begin(t + 10, 0, 1)
        enc.exception(16 + n, 1)
        enc.local_timestamp(7)
        enc.data_address(1, 0x2000_0000 + n)
        enc.data_value(1, 0xABCD, write=bool(n & 1), size=2)
        enc.data_pc(0, 0x0800_0100)
        enc.exception(16 + n, 2)
        enc.isr_enter(t + 20, 18)
        enc.isr_exit(t + 30, 18)
        if n == 1:
            enc.overflow()
        enc.layer_end(t + 900, 0)
        enc.local_timestamp(1 << 20)
        enc.inference_end(t + 1_000)
    return bytes(enc.out)


def _restarting_stream() -> bytes:
    """Boots of a target: one cut mid-layer by a restart whose clock starts again (time back), one
    whose sequence starts again with the time behind, one that sends TARGET_INFO out of sequence."""
    enc = TelemetryEncoder()
    t = 10_000
    for boot in range(3):
        if boot:
            enc.sequence = 0
        if boot != 1:
            enc.target_info(t, 100_000_000, 1)
        enc.local_timestamp(9)
        for _ in range(2):
            enc.inference_begin(t + 100)
            enc.layer_begin(t + 200, 0)
            enc.exception(16, 1)
            enc.layer_end(t + 900, 0)
            enc.inference_end(t + 1_000)
            t += 2_000
        enc.inference_begin(t + 100)
        enc.layer_begin(t + 200, 0)  # cut by the next boot
        t = [50, 5_000_000][boot % 2]
    return bytes(enc.out)


def test_generated_telemetry_streams(calls: Calls) -> None:
    """The tests' telemetry streams (every record kind, ISR marks, console text, DWT packets and
    local timestamps, a target that restarts), whole and split."""
    streams = [
        session_streams.build_stream(inferences=6, layers=4).data,
        telemetry_streams.build_stream(inferences=4, layers=3).data,
        _hardware_stream(),
        _restarting_stream(),
    ]
    for data in streams:
        for splits in ([], [17, 500, 501, 2000]):
            timeline = telemetry_streams.decode(data, splits)
    assert timeline.stream is not None and len(timeline.stream.restarts) == 2
    assert calls.count["decode_records"] >= 16 and calls.count["finish_stream"] == 8


@pytest.mark.parametrize("path", REAL_STREAMS, ids=lambda p: p.name)
def test_real_streams(calls: Calls, path: Path) -> None:
    """Captures from real targets and the demo: packets, listings, records, all through both kernels
    (the raw traces' first 24 KB: the pure-Python kernels take about 10 µs a byte)."""
    trace = TraceDecoder(TpiuMode.AUTO, hold_timestamps=False)
    with open_capture(path) as reader:
        if reader.is_capture:  # its chunks, as recorded (the demo: raw ITM, says its header)
            assert reader.metadata.tpiu is False
            trace = TraceDecoder(TpiuMode.OFF, hold_timestamps=False)
            batches = [*(trace.feed(chunk.data, chunk.lost_before) for chunk in reader.chunks()), trace.finish()]
        else:
            data = path.read_bytes()[:24_000]
            batches = [*(trace.feed(data[i : i + 4096]) for i in range(0, len(data), 4096)), trace.finish()]
        telemetry = TelemetryDecoder()
        for batch in batches:
            _format_both(batch.slice(0, 300))  # listing in pure Python costs ~0.3 ms a packet
            telemetry.feed(batch)
        telemetry.finish()
    assert calls.count["decode_itm"] >= 1 and calls.count["format_packets"] >= 2
    if "tpiu" in path.name:
        assert trace.formatted and calls.count["deframe"] >= 1
    if path.parent.name == "captures":
        assert telemetry.published_inferences > 0


# -- formatter on any valid column values ------------------------------------------------------------
@st.composite
def batches(draw: st.DrawFn) -> PacketBatch:
    """Packets with arbitrary column values where the contract allows any (every kind, 64-bit values)."""
    n = draw(st.integers(1, 16))
    batch = PacketBatch.empty(n)
    u64 = st.integers(0, (1 << 64) - 1)
    batch.offset[:] = draw(st.lists(st.integers(0, (1 << 63) - 1), min_size=n, max_size=n))
    batch.kind[:] = draw(st.lists(st.sampled_from([int(k) for k in PacketKind]), min_size=n, max_size=n))
    batch.a[:] = draw(st.lists(u64, min_size=n, max_size=n))
    batch.b[:] = draw(st.lists(u64, min_size=n, max_size=n))
    batch.b[batch.kind == PacketKind.EXCEPTION] %= 4  # the action's name is looked up
    batch.c[:] = draw(st.lists(st.integers(0, 255), min_size=n, max_size=n))
    batch.flags[:] = draw(st.lists(st.integers(0, 255), min_size=n, max_size=n))
    batch.ts[:] = draw(st.lists(st.integers(-1, (1 << 63) - 1), min_size=n, max_size=n))
    return batch


@settings(max_examples=30, deadline=None, suppress_health_check=HEALTH)
@given(batches())
def test_formatter_on_any_values(calls: Calls, batch: PacketBatch) -> None:
    calls.reset()
    _format_both(batch)
    ndjson = packets_text.format_batch(batch, "ndjson")
    assert [json.loads(line) for line in ndjson.splitlines()] == list(batch.records())
    assert calls.count["format_packets"] == 3


@pytest.mark.usefixtures("kernels")
def test_ndjson_is_the_records_json_on_a_real_capture() -> None:
    """Both implementations write exactly ``json.dumps`` of each packet record."""
    data = (CORPUS / "novakov_rtos_trace" / "queue_demo.trace").read_bytes()[:6000]
    decoder = ItmDecoder()
    batch = PacketBatch.concat([decoder.feed(data), decoder.finish()])
    expected = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in batch.records())
    assert packets_text.format_batch(batch, "ndjson") == expected


# -- one source of truth for the tables --------------------------------------------------------------
def test_a_record_type_added_in_python_reaches_the_compiled_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new record type needs an entry in ``wire.MIN_WORDS`` only: the C kernel reads the table
    from the Python module when it is built. Here type 0x30 is made to need 5 words."""
    compiled = sys.modules["tracer._kernels"]
    table = telemetry_kernel.MIN_WORDS_TABLE.copy()
    table[0x30] = 5
    kernel = compiled.TelemetryKernel({**vars(telemetry_kernel), "MIN_WORDS_TABLE": table})
    monkeypatch.setattr(telemetry_kernel, "MIN_WORDS_TABLE", table)  # the Python reference reads it too
    for words, accepted in ((4, False), (5, True)):
        enc = TelemetryEncoder()
        enc.record(0x30, 1000, list(range(1, words)))
        itm = ItmDecoder()
        batch = PacketBatch.concat([itm.feed(bytes(enc.out)), itm.finish()])
        results = []
        for decode in (kernel.decode_records, telemetry_kernel.decode_records_python):
            decoder = TelemetryDecoder()
            monkeypatch.setattr(telemetry_kernel, "decode_records", decode)
            decoder.feed(batch)
            results.append((decoder.records_accepted, decoder.loss.damaged_records))
        assert results[0] == results[1] == ((1, 0) if accepted else (0, 1)), (words, results)


def test_stale_compiled_kernels_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """A layout constant that differs from the compiled one (an old in-place build): the module
    falls back to the Python reference and says so once."""
    compiled = sys.modules["tracer._kernels"]
    constants = {**vars(itm_kernel), "S_TS": itm_kernel.S_TS + 1}
    with pytest.raises(ValueError, match="S_TS"):
        compiled.ItmKernel(constants)
    assert native.compiled("ItmKernel", constants) is None
    assert native.compiled("ItmKernel", constants) is None
    assert capsys.readouterr().err.count("tracer._kernels does not match") == 1
    assert native.compiled("ItmKernel", dict(vars(itm_kernel))) is not None


def test_kernels_refuse_wrong_arrays() -> None:
    """Wrong dtypes or short arrays raise a clear error instead of writing past an array."""
    state = itm_kernel.new_state()
    counts = np.zeros(KIND_COUNT, np.int64)
    out = PacketBatch.empty(4).columns()
    with pytest.raises(ValueError, match="room for len"):
        itm_kernel.decode_itm_native(np.zeros(10, np.uint8), 0, state, counts, False, *out)
    with pytest.raises(TypeError, match="out_a"):
        itm_kernel.decode_itm_native(
            np.zeros(2, np.uint8), 0, state, counts, False, out[0], out[1], out[2].view(np.int64), *out[3:]
        )
    with pytest.raises(TypeError, match="state"):
        itm_kernel.decode_itm_native(b"\x01\x02", 0, state.astype(np.int32), counts, False, *out)
    k = telemetry_kernel
    tel_state, pend, pmu = k.new_state()
    tel_state[k.S_PEND_TYPE], tel_state[k.S_PEND_GOT], tel_state[k.S_PEND_COUNT] = 1, 5, 3  # not a decoder's
    batch = PacketBatch.empty(1)
    tables = (
        np.zeros((k.SP_COLS, 8), np.int64),
        np.zeros((k.IN_COLS, 2 * k.NEED_INF), np.int64),
        np.zeros((k.EV_COLS, 8), np.int64),
        np.zeros(128, np.int64),
        np.zeros(8, np.uint8),
        np.zeros(8, np.int64),
        k.new_dwt_table(8),
    )
    with pytest.raises(ValueError, match="does not fit"):
        k.decode_records_native(
            batch.kind, batch.a, batch.b, batch.c, batch.flags, batch.ts, batch.offset, 0, tel_state, pend, pmu, *tables
        )
    with pytest.raises(ValueError, match="too small"):
        tpiu_kernel.deframe_native(
            np.zeros(64, np.uint8),
            0,
            tpiu_kernel.new_state(),
            np.zeros(16, np.uint8),
            1,
            np.zeros(8, np.uint8),
            np.zeros(128, np.int64),
            np.zeros(128, np.int64),
            tpiu_kernel.ALL_VALID,
        )


def test_without_the_extension_the_python_kernels_run_and_say_so_once(tmp_path: Path) -> None:
    """No ``tracer._kernels`` (no compiler at install time): one notice, the same output."""
    capture = ROOT / "captures" / "demo.trace"
    code = (
        "import sys; sys.modules['tracer._kernels'] = None\n"  # an import of it now fails
        "from tracer.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    args = ["report", str(capture), "--format", "json"]
    fallback = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, check=False
    )
    compiled = subprocess.run(
        [sys.executable, "-m", "tracer", *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert fallback.returncode == compiled.returncode == 0, fallback.stderr
    notices = [line for line in fallback.stderr.splitlines() if "pure-Python kernels" in line]
    assert len(notices) == 1 and "tracer._kernels is not built" in notices[0]
    assert "pure-Python" not in compiled.stderr
    assert json.loads(fallback.stdout) == json.loads(compiled.stdout)


def test_the_compiled_kernels_release_the_gil() -> None:
    """While a long kernel call runs in one thread, another keeps running Python code (a live
    screen stays responsive): its longest pause is far shorter than the call. Held, the GIL would
    stop it for the whole call."""
    import threading
    import time

    frame = bytes([0x03]) + bytes(range(1, 15)) + b"\x00"  # ID 1, then data
    buf = np.frombuffer(frame * (4 << 20), np.uint8)  # 64 MiB
    out = np.empty(buf.shape[0] + 16, np.uint8)
    call = {}

    def work() -> None:
        args = (
            tpiu_kernel.new_state(),
            np.zeros(16, np.uint8),
            1,
            out,
            np.zeros(128, np.int64),
            np.zeros(128, np.int64),
            tpiu_kernel.ALL_VALID,
        )
        time.sleep(0.05)  # the other thread is spinning by now
        start = time.perf_counter()
        tpiu_kernel.deframe_native(buf, 0, *args)
        call["seconds"] = time.perf_counter() - start

    worker = threading.Thread(target=work)
    worker.start()
    longest, last = 0.0, time.perf_counter()
    while worker.is_alive():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    assert longest < call["seconds"] / 2, (longest, call)
