"""``pyocd://`` tested at pyOCD's probe boundary, with pyOCD's own classes doing the work.

No debug probe is attached in CI. ``FakeProbe`` stands in for a ``DebugProbe`` and ``FakeTarget``
for a ``SoCTarget`` whose memory is a dictionary of 32-bit words (the target's RAM and its ITM,
DWT and TPIU registers). Their methods have exactly the signatures of the installed pyOCD's
``DebugProbe`` and ``SoCTarget`` methods (checked with ``inspect.signature``). Everything above
them is pyOCD's real code: ``coresight.itm.ITM`` and ``coresight.tpiu.TPIU`` program the fake
registers as on a board, and ``debug.rtt.GenericRTTControlBlock`` finds and reads a real SEGGER
RTT control block laid out in the fake RAM.
"""

from __future__ import annotations

import inspect
import struct
from pathlib import Path
from typing import Any

import pytest
from pyocd.core import exceptions as pyocd_errors
from pyocd.core.memory_map import MemoryMap, RamRegion
from pyocd.core.soc_target import SoCTarget
from pyocd.coresight.itm import ITM
from pyocd.coresight.tpiu import TPIU
from pyocd.probe.debug_probe import DebugProbe

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter
from tracer.errors import SourceUnavailable, UsageError
from tracer.pipeline.record import record
from tracer.sources.polling import samples_from_notes
from tracer.sources.pyocd_probe import PyocdSource
from tracer.sources.url import SourceUrl

RAM = 0x2000_0000
ITM_BASE, TPIU_BASE, DEMCR = 0xE000_0000, 0xE004_0000, 0xE000_EDFC


class FakeTarget:
    """Target memory as words; ITM/TPIU are pyOCD's real component classes on this 'AP'."""

    def __init__(self, swo_uart: bool = True) -> None:
        self.words: dict[int, int] = {}
        self.fail = False
        if swo_uart:
            self.words[TPIU_BASE + TPIU.DEVID] = TPIU.DEVID_NRZ_MASK
        self.itm = ITM(self, addr=ITM_BASE)
        self.tpiu = TPIU(self, addr=TPIU_BASE)
        self.tpiu.init()

    # SoCTarget's memory interface
    def read32(self, addr, now=True):
        self._check()
        return self.words.get(addr, 0)

    def write32(self, addr, value):
        self._check()
        self.words[addr] = value & 0xFFFFFFFF

    def read_memory_block32(self, addr, size):
        return [self.read32(addr + 4 * i) for i in range(size)]

    def read_memory_block8(self, addr, size):
        self._check()
        return list(self.raw(addr, size))

    def write_memory_block8(self, addr, data):
        for i, byte in enumerate(data):
            word = (addr + i) & ~3
            shift = 8 * ((addr + i) & 3)
            self.words[word] = (self.words.get(word, 0) & ~(0xFF << shift)) | (byte << shift)

    def get_memory_map(self):
        return MemoryMap(RamRegion(start=RAM, length=0x4000))

    def get_first_child_of_type(self, klass, filter=None):  # noqa: A002 - pyocd's own parameter name
        found = {ITM: self.itm, TPIU: self.tpiu}.get(klass)
        if found is not None and filter is not None and not getattr(found, filter):
            return None
        return found

    # helpers (not pyOCD API)
    def _check(self) -> None:
        if self.fail:
            raise pyocd_errors.ProbeDisconnected("probe disconnected")

    def raw(self, addr: int, size: int) -> bytes:
        return b"".join(self.words.get(a & ~3, 0).to_bytes(4, "little") for a in range(addr & ~3, addr + size + 4, 4))[
            addr & 3 : (addr & 3) + size
        ]


class FakeProbe:
    """A probe with an SWO capture buffer."""

    def __init__(self, swo: bool = True, chunks: list[bytes] | None = None) -> None:
        self._caps = {DebugProbe.Capability.SWO} if swo else set()
        self.chunks = list(chunks or [])
        self.calls: list[tuple[str, Any]] = []

    @property
    def capabilities(self):
        return self._caps

    @property
    def unique_id(self):
        return "0240000034544e45"

    @property
    def description(self):
        return "DAPLink CMSIS-DAP"

    def swo_start(self, baudrate):
        self.calls.append(("swo_start", baudrate))

    def swo_stop(self):
        self.calls.append(("swo_stop", None))

    def swo_read(self):
        return bytearray(self.chunks.pop(0)) if self.chunks else bytearray()


class FakeSession:
    """What PyocdSource uses of a pyOCD Session."""

    def __init__(self, probe: FakeProbe, target: FakeTarget) -> None:
        self.probe, self.target = probe, target
        self.opened = self.closed = False

    def open(self, init_board=True):
        self.opened = True

    def close(self):
        self.closed = True


def test_fakes_match_pyocd_signatures() -> None:
    for fake, real, names in (
        (FakeProbe, DebugProbe, ["swo_start", "swo_stop", "swo_read"]),
        (
            FakeTarget,
            SoCTarget,
            [
                "read32",
                "write32",
                "read_memory_block32",
                "read_memory_block8",
                "write_memory_block8",
                "get_memory_map",
                "get_first_child_of_type",
            ],
        ),
    ):
        for name in names:
            assert list(inspect.signature(getattr(real, name)).parameters) == list(
                inspect.signature(getattr(fake, name)).parameters
            ), (real.__name__, name)
    for prop in ("capabilities", "unique_id", "description"):
        assert isinstance(inspect.getattr_static(DebugProbe, prop), property)
        assert isinstance(inspect.getattr_static(FakeProbe, prop), property)
    from pyocd.core.session import Session

    assert list(inspect.signature(Session.open).parameters) == list(inspect.signature(FakeSession.open).parameters)


def make(url: str, probe: FakeProbe, target: FakeTarget) -> tuple[PyocdSource, FakeSession, list[Any]]:
    session = FakeSession(probe, target)
    asked: list[Any] = []

    def factory(uid: str | None, name: str | None, options: dict[str, Any]) -> FakeSession:
        asked.append((uid, name, options))
        return session

    return PyocdSource(SourceUrl.parse(url), session_factory=factory, sleep=lambda s: None), session, asked


def test_swo_set_up_as_pyocd_swv_reader_does() -> None:
    chunks = [bytes([0x01, i]) for i in range(40)]
    target = FakeTarget()
    src, session, asked = make("pyocd://0240?target=stm32h743zitx&cpu=64M&swo=2M", FakeProbe(chunks=chunks), target)
    src.open()
    data = b"".join(src.read(65536, 0.0) for _ in range(60))
    src.close()
    assert data == b"".join(chunks)
    assert asked == [("0240", "stm32h743zitx", {"connect_mode": "attach"})]
    words = target.words
    assert words[DEMCR] & (1 << 24)  # TRCENA set by ITM.init
    assert words[ITM_BASE + ITM.TCR] & ITM.TCR_ITMENA_MASK
    assert words[ITM_BASE + ITM.TERn] == 0xFFFFFFFF
    assert words[TPIU_BASE + TPIU.SPPR] == TPIU.SPPR_TXMODE_NRZ and words[TPIU_BASE + TPIU.FFCR] == 0
    assert words[TPIU_BASE + TPIU.ACPR] == 64_000_000 // 2_000_000 - 1
    assert ("swo_start", 2_000_000) in session.probe.calls and session.probe.calls[-1] == ("swo_stop", None)
    assert session.closed
    meta = src.metadata()
    assert (meta["swo_hz"], meta["cpu_hz"], meta["tpiu"], meta["ts_prescaler"]) == (2_000_000, 64_000_000, False, 1)


def test_probe_without_swo_is_refused() -> None:
    src, session, _ = make("pyocd://?target=x&cpu=64M&swo=2M", FakeProbe(swo=False), FakeTarget())
    with pytest.raises(SourceUnavailable, match="cannot receive SWO"):
        src.open()
    assert session.closed


def test_target_without_swo_uart() -> None:
    src, _, _ = make("pyocd://?target=x&cpu=64M&swo=2M", FakeProbe(), FakeTarget(swo_uart=False))
    with pytest.raises(SourceUnavailable, match="UART"):
        src.open()


def test_swo_rate_the_core_cannot_make() -> None:
    src, _, _ = make("pyocd://?target=x&cpu=64M&swo=1.7M", FakeProbe(), FakeTarget())
    src.open()  # 64M//1.7M = 37 -> 1.7297 MHz, 1.7% off: accepted
    src.close()
    src, _, _ = make("pyocd://?target=x&cpu=10M&swo=4M", FakeProbe(), FakeTarget())  # 10/2 = 5 MHz: 25% off
    with pytest.raises(UsageError, match="within 3%"):
        src.open()


def write_rtt_block(target: FakeTarget, at: int, up_data: bytes, size: int = 64, wr_start: int = 0) -> int:
    """Lay out a SEGGER RTT control block with 2 up-buffers and 1 down-buffer; return buffer 1's descriptor."""
    name = RAM + 0x800
    target.write_memory_block8(name, b"Terminal\0")
    buf0, buf1, down = RAM + 0x900, RAM + 0xA00, RAM + 0xB00
    header = b"SEGGER RTT".ljust(16, b"\0") + struct.pack("<ii", 2, 1)
    desc0 = struct.pack("<6I", name, buf0, size, 0, 0, 0)
    # Buffer 1 holds up_data written from wr_start, wrapping around the end of the ring.
    ring = bytearray(size)
    for i, byte in enumerate(up_data):
        ring[(wr_start + i) % size] = byte
    wr = (wr_start + len(up_data)) % size
    desc1 = struct.pack("<6I", 0, buf1, size, wr, wr_start, 0)
    desc_down = struct.pack("<6I", 0, down, 16, 0, 0, 0)
    target.write_memory_block8(at, header + desc0 + desc1 + desc_down)
    target.write_memory_block8(buf1, bytes(ring))
    return at + 24 + 24


def test_rtt_through_pyocds_control_block_search() -> None:
    target = FakeTarget()
    payload = bytes(range(1, 51))
    desc1 = write_rtt_block(target, RAM + 0x400, payload, wr_start=40)  # wraps past the end
    src, _, _ = make("pyocd://?target=x&rtt=1&rtt_buffer=1", FakeProbe(), target)
    src.open()
    assert src.read(65536, 0.0) == payload
    assert src.read(65536, 0.0) == b""
    # pyOCD moved the read offset to the write offset, as the firmware expects.
    wr, rd = struct.unpack("<II", target.raw(desc1 + 12, 8))
    assert wr == rd == (40 + len(payload)) % 64
    assert src.metadata()["rtt_buffer"] == 1
    src.close()


def test_rtt_control_block_missing() -> None:
    src, _, _ = make("pyocd://?target=x&rtt=1", FakeProbe(), FakeTarget())
    with pytest.raises(SourceUnavailable, match="Control block not found"):
        src.open()


def test_probe_disconnect_mid_capture_keeps_bytes(tmp_path: Path) -> None:
    target = FakeTarget()
    write_rtt_block(target, RAM + 0x400, b"x" * 30)
    src, _, _ = make("pyocd://?target=x&rtt=1&rtt_buffer=1", FakeProbe(), target)
    src.open()
    path = tmp_path / "lost.trace"
    with CaptureWriter(path, CaptureMetadata(source=src.url)) as writer:
        writer.write(src.read(65536, 0.0))
        target.fail = True
        result = record(src, writer)
    src.close()
    assert result.ended == "lost" and "disconnected" in result.message
    with open_capture(path) as reader:
        assert reader.read_stream() == b"x" * 30


def test_memory_polling_reads_through_the_target() -> None:
    target = FakeTarget()
    target.write32(RAM + 0x10, 4096)  # arena used
    target.write32(0xE000_1004, 99)  # DWT CYCCNT
    for i in range(8):
        target.write32(RAM + 0x100 + 4 * i, 0xCAFEF00D if i < 6 else 1)
    src, _, _ = make(
        f"pyocd://?target=x&arena={RAM + 0x10:#x}&stack=isr@{RAM + 0x100:#x}:32&paint=0xCAFEF00D", FakeProbe(), target
    )
    src.open()
    src.read(65536, 0.0)
    arena, stacks = samples_from_notes(src.drain_events())
    src.close()
    assert [(a.used, a.size) for a in arena] == [(4096, None)]
    assert [(s.stack, s.high_water, s.size) for s in stacks] == [("isr", 8, 32)]
