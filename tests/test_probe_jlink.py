"""``jlink://`` tested at pylink's boundary.

No J-Link is attached in CI, so ``FakeJLink`` stands in for ``pylink.JLink``: a model of a probe
with an SWO buffer, RTT up-buffers and target memory. Every method of the fake has exactly the
signature of the installed pylink-square's ``JLink`` method of the same name (checked below with
``inspect.signature``), and the fake uses pylink's real ``enums`` and ``errors``; its ``swo_read``
allocates its buffer the way pylink does, so a zero-length read fails as it does in pylink.
"""

from __future__ import annotations

import ctypes
import inspect
import types
from pathlib import Path
from typing import Any, ClassVar

import pylink
import pytest

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter
from tracer.errors import SourceUnavailable, UsageError
from tracer.pipeline.record import record
from tracer.sources.base import SourceLost
from tracer.sources.jlink import JLinkSource
from tracer.sources.polling import samples_from_notes
from tracer.sources.url import SourceUrl


class FakeClock:
    """A monotonic clock that advances only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 1e-3)


class FakeJLink:
    """A J-Link and its target (see the module docstring). Class attributes configure the next instance."""

    supported: ClassVar[list[int]] = [6_000_000, 4_000_000, 3_000_000, 2_000_000, 1_000_000]
    swo_chunks: ClassVar[list[bytes]] = []
    rtt_chunks: ClassVar[list[bytes]] = []
    rtt_search_failures = 0
    memory: ClassVar[dict[int, int]] = {}
    fail_after_reads: int | None = None
    no_dll = False
    instances: ClassVar[list[FakeJLink]] = []

    def __init__(
        self,
        lib=None,
        log=None,
        detailed_log=None,
        error=None,
        warn=None,
        unsecure_hook=None,
        serial_no=None,
        ip_addr=None,
        open_tunnel=False,
        use_tmpcpy=None,
    ):
        if FakeJLink.no_dll:
            raise TypeError("Expected to be given a valid DLL.")
        self.calls: list[tuple[str, Any]] = []
        self.swo = bytearray()
        self._swo_chunks = list(FakeJLink.swo_chunks)
        self._rtt_chunks = list(FakeJLink.rtt_chunks)
        self._rtt_failures = FakeJLink.rtt_search_failures
        self.reads = 0
        self.overflows = 0
        FakeJLink.instances.append(self)

    # connection
    def open(self, serial_no=None, ip_addr=None):
        self.calls.append(("open", (serial_no, ip_addr)))

    def close(self):
        self.calls.append(("close", None))

    def set_tif(self, interface):
        self.calls.append(("set_tif", interface))

    def connect(self, chip_name, speed="auto", verbose=False):
        self.calls.append(("connect", (chip_name, speed)))

    # SWO
    def swo_supported_speeds(self, cpu_speed, num_speeds=3):
        self.calls.append(("swo_supported_speeds", (cpu_speed, num_speeds)))
        return list(FakeJLink.supported)[:num_speeds]

    def swo_enable(self, cpu_speed, swo_speed=9600, port_mask=1):
        self.calls.append(("swo_enable", (cpu_speed, swo_speed, port_mask)))

    def swo_flush(self, num_bytes=None):
        self.calls.append(("swo_flush", num_bytes))

    def swo_stop(self):
        self.calls.append(("swo_stop", None))

    def _tick(self) -> None:
        self.reads += 1
        if FakeJLink.fail_after_reads is not None and self.reads > FakeJLink.fail_after_reads:
            raise pylink.errors.JLinkException("Emulator is not connected")

    def swo_num_bytes(self):
        self._tick()
        if not self.swo and self._swo_chunks:
            self.swo += self._swo_chunks.pop(0)
        return len(self.swo)

    def swo_read(self, offset, num_bytes, remove=False):
        buf = (ctypes.c_uint8 * num_bytes)(0)  # as pylink: raises for num_bytes == 0
        del buf
        data = bytes(self.swo[offset : offset + num_bytes])
        if remove:
            del self.swo[: len(data)]
        return list(data)

    # RTT
    def rtt_start(self, block_address=None):
        self.calls.append(("rtt_start", block_address))

    def rtt_stop(self):
        self.calls.append(("rtt_stop", None))

    def rtt_get_num_up_buffers(self):
        if self._rtt_failures > 0:
            self._rtt_failures -= 1
            raise pylink.errors.JLinkRTTException(-2)
        return 3

    def rtt_read(self, buffer_index, num_bytes):
        self._tick()
        self.calls.append(("rtt_read", buffer_index))
        if not self._rtt_chunks:
            return []
        chunk = self._rtt_chunks.pop(0)
        if chunk == b"OVERFLOW":
            self.overflows += 2
            return []
        return list(chunk[:num_bytes])

    def rtt_get_status(self):
        status = pylink.structs.JLinkRTTerminalStatus()
        status.HostOverflowCount = self.overflows
        return status

    # memory
    def memory_read32(self, addr, num_words, zone=None):
        return [FakeJLink.memory.get(addr + 4 * i, 0) for i in range(num_words)]


@pytest.fixture(autouse=True)
def fresh_fake() -> None:
    FakeJLink.swo_chunks = []
    FakeJLink.rtt_chunks = []
    FakeJLink.rtt_search_failures = 0
    FakeJLink.memory = {}
    FakeJLink.fail_after_reads = None
    FakeJLink.no_dll = False
    FakeJLink.instances = []
    FakeJLink.supported = [6_000_000, 4_000_000, 3_000_000, 2_000_000, 1_000_000]


FAKE_PYLINK = types.SimpleNamespace(JLink=FakeJLink, enums=pylink.enums, errors=pylink.errors)


def source(url: str, clock: FakeClock | None = None) -> JLinkSource:
    clock = clock or FakeClock()
    return JLinkSource(SourceUrl.parse(url), pylink=FAKE_PYLINK, sleep=clock.sleep, clock=clock)


def read_all(src: JLinkSource, rounds: int = 50) -> bytes:
    return b"".join(src.read(65536, 0.01) for _ in range(rounds))


def test_fake_matches_pylink_signatures() -> None:
    """Every method the fake offers has pylink.JLink's exact signature."""
    names = [n for n, v in vars(FakeJLink).items() if callable(v) and not n.startswith("_")] + ["__init__"]
    assert len(names) > 15
    for name in names:
        real = inspect.signature(getattr(pylink.JLink, name))
        fake = inspect.signature(getattr(FakeJLink, name))
        assert list(real.parameters) == list(fake.parameters), name
        for param in real.parameters:
            assert real.parameters[param].default == fake.parameters[param].default, (name, param)


def test_pylink_zero_length_read_really_fails() -> None:
    """The pitfall the source guards against: pylink's buffer of 0 bytes cannot be built."""
    with pytest.raises(IndexError):
        (ctypes.c_uint8 * 0)(0)


def test_swo_bytes_arrive_in_order_and_speed_is_chosen() -> None:
    chunks = [bytes(range(i, i + 100)) for i in range(0, 150, 10)]
    FakeJLink.swo_chunks = chunks
    src = source("jlink://600012345?device=STM32H743ZI&cpu=480M&swo=2M")
    src.open()
    data = read_all(src)
    src.close()
    assert data == b"".join(chunks)
    fake = FakeJLink.instances[0]
    assert ("open", (600012345, None)) in fake.calls
    assert ("set_tif", pylink.enums.JLinkInterfaces.SWD) in fake.calls
    assert ("connect", ("STM32H743ZI", "auto")) in fake.calls
    assert ("swo_enable", (480_000_000, 2_000_000, 0xFFFFFFFF)) in fake.calls
    assert ("swo_stop", None) in fake.calls and fake.calls[-1] == ("close", None)
    meta = src.metadata()
    assert (meta["swo_hz"], meta["cpu_hz"], meta["tpiu"], meta["ts_prescaler"]) == (2_000_000, 480_000_000, False, 1)


def test_swo_speed_is_the_fastest_supported_within_three_percent() -> None:
    FakeJLink.supported = [12_000_000, 7_000_000, 5_000_000]
    src = source("jlink://1?device=X&cpu=100M")  # 100M/7M=14.3 -> 7.14 MHz (2%), 12M -> 12.5 (4%)
    src.open()
    assert src.swo_hz == 7_000_000
    src.close()


def test_no_swo_speed_fits() -> None:
    FakeJLink.supported = [30_000_000, 15_000_000]
    src = source("jlink://1?device=X&cpu=100M&swo=20M")
    with pytest.raises(UsageError, match="within 3%"):
        src.open()
    assert FakeJLink.instances[0].calls[-1] == ("close", None)


def test_open_by_ip_and_jtag() -> None:
    src = source("jlink://ip=192.168.1.40?device=Cortex-M55&cpu=100M&iface=jtag&speed=4000")
    src.open()
    fake = FakeJLink.instances[0]
    assert ("open", (None, "192.168.1.40")) in fake.calls
    assert ("set_tif", pylink.enums.JLinkInterfaces.JTAG) in fake.calls
    assert ("connect", ("Cortex-M55", 4000)) in fake.calls
    src.close()


def test_missing_dll_and_bad_urls() -> None:
    FakeJLink.no_dll = True
    with pytest.raises(SourceUnavailable, match="J-Link software"):
        source("jlink://1?device=X&rtt=1").open()
    with pytest.raises(UsageError, match="device"):
        source("jlink://1?rtt=1")
    with pytest.raises(UsageError, match="serial number"):
        source("jlink://abc?device=X&rtt=1")
    with pytest.raises(UsageError, match="core clock"):
        source("jlink://1?device=X&swo=2M")
    with pytest.raises(UsageError, match="say what to read"):
        source("jlink://1?device=X")


def test_rtt_waits_for_the_control_block_and_reports_overflow() -> None:
    FakeJLink.rtt_search_failures = 3
    FakeJLink.rtt_chunks = [b"hello ", b"OVERFLOW", b"world"]
    src = source("jlink://1?device=X&rtt=1&rtt_buffer=1&rtt_address=0x20000400")
    src.open()
    data = read_all(src, 10)
    events = src.drain_events()
    src.close()
    assert data == b"hello world"
    fake = FakeJLink.instances[0]
    assert ("rtt_start", 0x20000400) in fake.calls and ("rtt_read", 1) in fake.calls
    assert events == [{"event": "probe overflow", "probe": "jlink", "transport": "rtt", "count": 2, "total": 2}]


def test_rtt_control_block_never_found() -> None:
    FakeJLink.rtt_search_failures = 10**6
    with pytest.raises(SourceUnavailable, match="no RTT control block"):
        source("jlink://1?device=X&rtt=1").open()


def test_rtt_buffer_out_of_range() -> None:
    with pytest.raises(UsageError, match="up-buffers"):
        source("jlink://1?device=X&rtt_buffer=5").open()


def test_probe_lost_mid_capture_keeps_every_byte(tmp_path: Path) -> None:
    chunks = [b"A" * 1000, b"B" * 1000, b"C" * 1000, b"D" * 1000]
    FakeJLink.swo_chunks = chunks
    FakeJLink.fail_after_reads = 4
    src = source("jlink://1?device=X&cpu=480M&swo=2M")
    src.open()
    path = tmp_path / "lost.trace"
    with CaptureWriter(path, CaptureMetadata(source=src.url)) as writer:
        result = record(src, writer)
    src.close()
    assert result.ended == "lost" and "not connected" in result.message
    with open_capture(path) as reader:
        assert reader.read_stream() == b"".join(chunks)
        assert reader.events[-1][1]["event"] == "source lost"


def test_read_raises_source_lost() -> None:
    FakeJLink.fail_after_reads = 0
    src = source("jlink://1?device=X&cpu=480M&swo=2M")
    src.open()
    with pytest.raises(SourceLost):
        src.read()


class Symbols:
    """A stand-in symbol table (the ELF path is tested in test_elf.py)."""

    table: ClassVar[dict[str, tuple[int, int]]] = {
        "arena_used_bytes": (0x2100_0004, 4),
        "main_stack": (0x2100_0100, 64),
    }

    def symbol(self, name: str) -> Any:
        if name not in self.table:
            return None
        address, size = self.table[name]
        return types.SimpleNamespace(address=address, size=size)


def test_memory_polling_records_arena_and_stack_samples(tmp_path: Path) -> None:
    paint = 0xDEADBEEF
    FakeJLink.memory = {0x2100_0004: 12345, 0xE000_1004: 777}
    for i in range(16):  # 64-byte stack: 10 words still painted at the low end -> 24 bytes used
        FakeJLink.memory[0x2100_0100 + 4 * i] = paint if i < 10 else i
    clock = FakeClock()
    src = source("jlink://1?device=X&arena=arena_used_bytes&arena_size=64k&stack=main@main_stack&poll_hz=20", clock)
    src.attach_elf(Symbols())
    src.open()
    path = tmp_path / "poll.trace"
    with CaptureWriter(path, CaptureMetadata(source=src.url)) as writer:
        record(src, writer, duration=0.5, clock=clock)
    src.close()
    with open_capture(path) as reader:
        list(reader.chunks())
        notes = [event for _offset, event in reader.events]
    arena, stacks = samples_from_notes(notes)
    assert len(arena) >= 5 and {(a.used, a.size) for a in arena} == {(12345, 65536)}
    assert {(s.stack, s.high_water, s.size, s.canary_ok) for s in stacks} == {("main", 24, 64, True)}
    assert notes[0]["cyccnt"] == 777


def test_polling_symbol_without_elf_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--elf"):
        source("jlink://1?device=X&arena=arena_used_bytes").open()
