"""Sampling the Ethos-U through a probe (``npu=`` on ``jlink://`` and ``pyocd://``), at the library boundary.

No probe is attached in CI. The fakes are those of ``test_probe_jlink.py`` (``FakeJLink``: every
method with pylink's exact signature) and ``test_probe_pyocd.py`` (``FakeTarget``/``FakeSession``:
pyOCD's signatures), checked there and again here for the methods NPU polling uses. An NPU that
walks a command stream is modelled by changing QREAD between reads; a slow probe by a clock each
read advances. Checked: the registers read (U55 and U85 layouts, one block read for STATUS ..
QSIZE), the batched notes in a real capture file, the rate asked for and achieved (reported by
``tracer record``), option errors, and that polled samples are placed on a DWT time line by
CYCCNT (or left out, with a warning, when they cannot be).
"""

from __future__ import annotations

import inspect
import types
from pathlib import Path
from typing import Any

import pylink
import pytest
from pyocd.core.soc_target import SoCTarget
from sample_streams import TelemetryEncoder, npu_profile
from telemetry_streams import decode
from test_probe_jlink import FAKE_PYLINK, FakeClock, FakeJLink, source
from test_probe_pyocd import FakeProbe, FakeTarget, make

from tracer.budget.command_stream import CommandStream, StreamOperation
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter
from tracer.errors import UsageError
from tracer.pipeline.record import record
from tracer.sources.npu_polling import NpuPoller, parse_npu_spec
from tracer.telemetry.probe_samples import probe_npu_records
from tracer.telemetry.record_facts import add_records
from tracer.telemetry.samples import samples_from_records
from tracer.telemetry.wire import TimeSource

NPU = 0x4810_2000
QREADS = [328, 484, 484, 628, 744, 904, 1016, 1156, 1160]


@pytest.fixture(autouse=True)
def fresh_fake() -> None:
    FakeJLink.memory = {}
    FakeJLink.swo_chunks = []
    FakeJLink.fail_after_reads = None
    FakeJLink.no_dll = False
    FakeJLink.instances = []


def npu_registers(base: int, qread: int, status: int = 1, pmu: int = 0) -> dict[int, int]:
    regs = {
        base + 0x004: status,
        base + 0x010: 0x1000_3000,
        base + 0x018: qread,
        base + 0x020: 1164,
        base + pmu + 0x1A0: 0x89AB_CDEF,
        base + pmu + 0x1A4: 0x12,
    }
    regs.update({base + pmu + 0x300 + 4 * i: 10 * (i + 1) for i in range(8)})
    regs[0xE000_1004] = 4242
    return regs


class WalkingJLink(FakeJLink):
    """A J-Link whose target's NPU moves on through the stream at every STATUS..QSIZE block read,
    and whose every read takes ``read_seconds`` of the test's clock (a probe's USB round trip)."""

    clock: FakeClock | None = None
    read_seconds = 0.0
    blocks = 0

    def memory_read32(self, addr, num_words, zone=None):
        if addr == NPU + 0x004:
            FakeJLink.memory.update(npu_registers(NPU, QREADS[WalkingJLink.blocks % len(QREADS)]))
            WalkingJLink.blocks += 1
        if WalkingJLink.clock is not None:
            WalkingJLink.clock.now += WalkingJLink.read_seconds
        return super().memory_read32(addr, num_words, zone)


def walking_source(url: str, clock: FakeClock, read_seconds: float = 0.0) -> Any:
    WalkingJLink.clock, WalkingJLink.read_seconds, WalkingJLink.blocks = clock, read_seconds, 0
    fake = types.SimpleNamespace(JLink=WalkingJLink, enums=pylink.enums, errors=pylink.errors)
    from tracer.sources.jlink import JLinkSource
    from tracer.sources.url import SourceUrl

    return JLinkSource(SourceUrl.parse(url), pylink=fake, sleep=clock.sleep, clock=clock)


def test_fakes_used_have_the_real_signatures() -> None:
    assert list(inspect.signature(pylink.JLink.memory_read32).parameters) == list(
        inspect.signature(WalkingJLink.memory_read32).parameters
    )
    assert list(inspect.signature(SoCTarget.read_memory_block32).parameters) == list(
        inspect.signature(FakeTarget.read_memory_block32).parameters
    )


def notes_of(path: Path) -> list[dict[str, Any]]:
    with open_capture(path) as reader:
        list(reader.chunks())
        return [event for _offset, event in reader.events]


def test_jlink_polls_the_npu_at_the_rate_asked_and_says_so(tmp_path: Path) -> None:
    clock = FakeClock()
    src = walking_source(f"jlink://1?device=X&npu={NPU:#x}&npu_hz=200&npu_counters=4", clock)
    src.open()
    path = tmp_path / "npu.trace"
    with CaptureWriter(path, CaptureMetadata(source=src.url)) as writer:
        record(src, writer, duration=1.0, clock=clock)
    summary = src.npu_sampling
    src.close()
    notes = notes_of(path)
    batches = [n for n in notes if n["event"] == "npu samples"]
    qreads = [q for b in batches for q in b["qread"]]
    assert len(qreads) == summary.samples and 190 <= len(qreads) <= 201
    assert qreads[: len(QREADS)] == QREADS  # every block read saw the NPU one step further
    first = batches[0]
    assert first["npu"] == 55 and first["base"] == NPU
    assert set(first["status"]) == {1} and set(first["qsize"]) == {1164} and set(first["qbase"]) == {0x1000_3000}
    assert set(first["pmu_cycles"]) == {(0x12 << 32) | 0x89AB_CDEF} and first["counters"][0] == [10, 20, 30, 40]
    assert set(first["cyccnt"]) == {4242}
    assert summary.requested_hz == 200 and summary.achieved_hz == pytest.approx(200, rel=0.02)
    assert any(n["event"] == "npu sampling" for n in notes)


def test_a_slow_probe_reports_the_rate_it_achieved(tmp_path: Path) -> None:
    """Each read costs 2 ms: asked 1 kHz, four reads per poll (block, PMCCNTR, counters, CYCCNT)
    allow about 125 Hz, and that is what is reported."""
    clock = FakeClock()
    src = walking_source(f"jlink://1?device=X&npu={NPU:#x}&npu_hz=1k&npu_counters=2", clock, read_seconds=0.002)
    src.open()
    with CaptureWriter(tmp_path / "slow.trace", CaptureMetadata(source=src.url)) as writer:
        record(src, writer, duration=1.0, clock=clock)
    summary = src.npu_sampling
    src.close()
    assert summary.requested_hz == 1000
    assert 100 <= summary.achieved_hz <= 126 and summary.read_share > 0.9
    assert "Hz achieved of 1,000 Hz asked" in summary.sentence()


def test_pyocd_polls_a_u85_through_the_target() -> None:
    target = FakeTarget()
    for address, value in npu_registers(NPU, 904, pmu=0x1000).items():
        target.write32(address, value)
    src, _, _ = make(f"pyocd://?target=x&npu={NPU:#x}&npu_kind=85&npu_counters=8&npu_cycles=1", FakeProbe(), target)
    src.open()
    src.read(65536, 0.0)
    notes = src.drain_events()
    src.close()
    (batch,) = [n for n in notes if n["event"] == "npu samples"]
    assert batch["npu"] == 85 and batch["qread"] == [904]
    assert batch["pmu_cycles"] == [(0x12 << 32) | 0x89AB_CDEF]  # PMCCNTR at 0x11A0 on the U85
    assert batch["counters"] == [[10 * (i + 1) for i in range(8)]]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("npu_kind=70", "55, 65 or 85"),
        ("npu_counters=5", "0 to 4"),
        ("npu_hz=0", "npu_hz"),
        ("npu_hz=200k", "npu_hz"),
        ("npu_counters=x", "npu_counters"),
    ],
)
def test_bad_npu_options_are_usage_errors(options: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        source(f"jlink://1?device=X&npu={NPU:#x}&{options}").open()


def test_npu_symbol_needs_the_elf() -> None:
    with pytest.raises(UsageError, match="--elf"):
        parse_npu_spec({"npu": "ETHOSU_BASE"}, None, "jlink://1")
    symbols = types.SimpleNamespace(
        symbol=lambda name: types.SimpleNamespace(address=NPU) if name == "npu_base" else None
    )
    spec = parse_npu_spec({"npu": "npu_base", "npu_hz": "2k"}, symbols)
    assert spec is not None and spec.base == NPU and spec.hz == 2000


def dwt_timeline(wraps: int = 1) -> tuple[Any, list[tuple[int, int]]]:
    """Two inferences with one NPU layer each, on a DWT time line past ``wraps`` wraps of 2^32."""
    enc = TelemetryEncoder()
    t = wraps * (1 << 32) + 1_000_000
    enc.target_info(t, 100_000_000, TimeSource.DWT)
    enc.layer_info(t + 1, 0, 1, "ethos-u", "job")
    spans = []
    for _ in range(2):
        t += 100_000
        enc.inference_begin(t)
        enc.layer_begin(t + 100, 0, 1)
        enc.layer_end(t + 10_100, 0)
        spans.append((t + 100, t + 10_100))
        enc.inference_end(t + 10_200)
        t += 10_300
    return decode(bytes(enc)), spans


def polled_notes(times: list[int], qreads: list[int], hz: float = 1000.0) -> list[dict[str, Any]]:
    n = len(times)
    return [
        {
            "event": "npu samples",
            "npu": 55,
            "base": NPU,
            "qread": qreads,
            "status": [1] * n,
            "qbase": [0x1000_3000] * n,
            "qsize": [308] * n,
            "pmu_cycles": [None] * n,
            "counters": [[]] * n,
            "cyccnt": [t & 0xFFFF_FFFF for t in times],
            "host_time": [1000.0 + k * 1e-4 for k in range(n)],
        },
        {"event": "npu sampling", "requested_hz": hz},
    ]


def test_polled_samples_are_placed_by_cyccnt_and_split_into_operations() -> None:
    timeline, spans = dwt_timeline()
    times, qreads = [], []
    for start, _end in spans:  # 100 samples per job: the first 30 on op 0, the next 70 on op 1
        for k in range(100):
            times.append(start + 50 + 99 * k)
            qreads.append(200 if k < 30 else 300)
    records, warnings = probe_npu_records(polled_notes(times, qreads), timeline)
    assert warnings == [] and [r.cycle for r in records[1:]] == times
    samples = samples_from_records(records)
    assert samples.info[0].how == "probe" and samples.info[0].period_cycles == 100_000
    stream = CommandStream(
        1,
        tuple(StreamOperation(o, f"op{k}", "Conv2D", k, "Conv2D", None, None) for k, o in enumerate([100, 200, 300])),
        "test.xml",
    )
    add_records(timeline, records)  # (as decode_capture adds a probe's samples)
    prof = npu_profile(timeline, [stream])
    assert prof is not None and prof.mapped
    assert [op.samples for op in prof.jobs[0].operators] == [60, 140, 0]


def test_samples_that_cannot_be_placed_are_left_out_with_a_reason() -> None:
    timeline, spans = dwt_timeline()
    outside = [spans[0][1] + 20_000 + k for k in range(10)]  # between the jobs: never inside an NPU layer
    records, warnings = probe_npu_records(polled_notes(outside, [200] * 10), timeline)
    assert records == [] and "do not put the running samples inside" in warnings[0]
    timeline.clock_source = "systick"
    records, warnings = probe_npu_records(polled_notes(outside, [200] * 10), timeline)
    assert records == [] and "not DWT CYCCNT" in warnings[0]


def test_record_prints_the_achieved_rate(tmp_path: Path, run_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tracer.sources.jlink._load_pylink", lambda: FAKE_PYLINK)
    FakeJLink.memory = npu_registers(NPU, 484)
    done = run_cli(
        "record", f"jlink://1?device=X&npu={NPU:#x}&npu_hz=50", "-o", tmp_path / "r.trace", "--duration", "0.3"
    )
    assert done.code == 0, done.err
    assert "NPU polling:" in done.err and "Hz achieved of 50 Hz asked" in done.err


def test_poller_batches_and_summarises_once_a_second() -> None:
    clock = FakeClock()
    memory = npu_registers(NPU, 628)
    poller = NpuPoller(
        parse_npu_spec({"npu": str(NPU), "npu_hz": "10"}),
        lambda a, n: [memory.get(a + 4 * i, 0) for i in range(n)],
        clock=clock,
        wall_clock=lambda: 5.0,
    )
    for _ in range(25):
        if poller.due():
            poller.poll()
        clock.now += 0.1
    notes = poller.drain()
    assert [n["event"] for n in notes] == ["npu samples", "npu sampling"]
    assert len(notes[0]["qread"]) == 25 and notes[1]["samples"] == 25
    assert notes[1]["achieved_hz"] == pytest.approx(10.0)
    assert poller.drain() == []  # nothing new, and the summary waits a second
