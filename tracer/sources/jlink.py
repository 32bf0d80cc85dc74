"""``jlink://SERIAL?device=NAME&...``: SEGGER J-Link through pylink-square (SWO, RTT, memory polling).

Examples::

    jlink://600012345?device=STM32H743ZI&cpu=480M&swo=2M        SWO (UART), ITM bytes
    jlink://ip=192.168.1.40?device=MIMXRT1176xxxA_M7&rtt=1      RTT up-buffer 0, J-Link over IP
    jlink://?device=Cortex-M55&rtt=1&rtt_buffer=1&elf=app.elf   the only J-Link, RTT buffer 1
    jlink://600012345?device=...&arena=arena_used_bytes&stack=main@main_stack&elf=app.elf
                                                                 poll memory only (10 Hz)
    jlink://?device=Cortex-M55&swo=2M&cpu=32M&npu=0x48102000&npu_hz=2k
                                                                 SWO, and sample the Ethos-U

Further options: ``speed=KHZ`` (interface speed, default auto), ``iface=swd|jtag``,
``ports=0x...`` (ITM stimulus ports J-Link enables, default all), ``rtt_address=ADDR|SYMBOL``.
Facts this follows (see docs/probes.md): J-Link SWO is UART-encoded only; ``swo_enable``
configures the target (``swo_start`` alone does not, pylink issue #81); ``swo_read`` of zero bytes
raises inside pylink, so the byte count is checked first; the RTT control block is searched by the
DLL after ``rtt_start`` and is found when ``rtt_get_num_up_buffers`` stops failing.

pylink is imported only when the source is opened, and can be injected (``pylink=``) the way
pylink's own ``JLink(lib=...)`` takes its DLL: tests pass a module-like object whose ``JLink``
is a fake checked against the real signatures.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tracer.errors import SourceUnavailable, UsageError
from tracer.sources.probe_options import (
    RTT_SEARCH_SECONDS,
    ProbeOptions,
    choose_swo_speed,
    read_within,
    transport_metadata,
)
from tracer.sources.probe_polling import ProbePolling
from tracer.sources.url import SourceUrl

SPEED_CANDIDATES = 64  # how many speeds to ask the DLL for; it lists them fastest first
IDLE_SLEEP = 0.002


def _load_pylink() -> ModuleType:
    try:
        import pylink  # optional backend, imported when opened
    except ImportError:
        raise SourceUnavailable(
            "jlink:// needs pylink-square: pip install 'pylink-square>=1.2,<2' (tracer's jlink extra)"
        ) from None
    return pylink


class JLinkSource(ProbePolling):
    """SWO, RTT or polled memory from a J-Link.

    Args:
        url: The ``jlink://`` URL.
        pylink: The pylink module (or a stand-in with ``JLink``, ``enums`` and ``errors``).
        sleep: Sleep function between empty polls (injectable).
        clock: Monotonic clock (injectable).
    """

    def __init__(
        self,
        url: SourceUrl,
        *,
        pylink: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url.text
        self._parsed = url
        self.options = ProbeOptions.parse(url)
        self.device = url.option("device")
        if not self.device:
            raise UsageError(f"{url.text}: name the target chip, e.g. ?device=STM32H743ZI (J-Link's device name)")
        location = url.location
        self.ip = location[3:] if location.startswith("ip=") else None
        self.serial: int | None = None
        if location and not self.ip:
            try:
                self.serial = int(location)
            except ValueError:
                raise UsageError(f"{url.text}: the J-Link serial number must be digits (or use ip=ADDRESS)") from None
        self._pylink = pylink
        self._sleep = sleep
        self._clock = clock
        self._jlink: Any = None
        self._errors: tuple[type[BaseException], ...] = (Exception,)
        self._symbols: Any = None
        self._events: list[dict[str, Any]] = []
        self._rtt_overflows = 0
        self.swo_hz: int | None = None
        self.cpu_hz: int | None = self.options.cpu_hz

    def attach_elf(self, image: Any) -> None:
        """Use a firmware image for symbol names (``--elf``)."""
        self._symbols = image

    # -- ByteSource ------------------------------------------------------------------------------
    def open(self) -> None:
        """Open the probe, connect to the target, start SWO or RTT and prepare polling."""
        pylink = self._pylink or _load_pylink()
        self._errors = (pylink.errors.JLinkException,)
        self._symbols = self.options.symbols(self._symbols)
        spec = self.options.poll_spec(self._symbols, self.url)  # validate before touching hardware
        npu = self.options.npu_spec(self._symbols, self.url)
        try:
            jlink = pylink.JLink()
        except TypeError:
            raise SourceUnavailable(
                "the SEGGER J-Link software (JLinkARM library) is not installed or not found; "
                "install the J-Link Software and Documentation Pack"
            ) from None
        self._jlink = jlink
        try:
            if self.ip:
                jlink.open(ip_addr=self.ip)
            elif self.serial is not None:
                jlink.open(serial_no=self.serial)
            else:
                jlink.open()
            iface = self.options.raw.get("iface", "swd").lower()
            if iface not in ("swd", "jtag"):
                raise UsageError(f"{self.url}: iface must be swd or jtag")
            jlink.set_tif(pylink.enums.JLinkInterfaces.SWD if iface == "swd" else pylink.enums.JLinkInterfaces.JTAG)
            jlink.connect(self.device, speed=self._speed())
            if self.options.mode == "swo":
                self._start_swo(jlink)
            elif self.options.mode == "rtt":
                self._start_rtt(jlink, pylink)
        except self._errors as exc:
            self.close()
            where = f"ip {self.ip}" if self.ip else f"serial {self.serial}" if self.serial else "the J-Link"
            raise SourceUnavailable(f"{self.url}: {where}: {exc}") from None
        except (UsageError, SourceUnavailable):
            self.close()
            raise
        self._start_polling(spec, npu, self._read_words, self._clock)

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return SWO or RTT bytes (``b""`` if none within ``timeout``)."""
        assert self._jlink is not None, "open() first"

        def fetch() -> bytes:
            self._poll(self._events)
            return self._read_once(max_bytes)

        return read_within(fetch, timeout, self._idle(IDLE_SLEEP), self._errors, self.url, self._clock, self._sleep)

    def close(self) -> None:
        """Stop SWO/RTT and close the probe; safe to call twice."""
        jlink, self._jlink = self._jlink, None
        if jlink is None:
            return
        for stop in ("swo_stop" if self.options.mode == "swo" else "rtt_stop", "close"):
            with contextlib.suppress(*self._errors):
                getattr(jlink, stop)()

    def metadata(self) -> dict[str, Any]:
        """What the capture header records about this probe."""
        meta: dict[str, Any] = {"source": self.url, "probe": "jlink", "device": self.device}
        meta.update(transport_metadata(self.options, self.cpu_hz, self.swo_hz))
        return meta

    def drain_events(self) -> list[dict[str, Any]]:
        """Polled memory and NPU samples and RTT overflow reports since the last call."""
        events, self._events = self._events, []
        return events + self._npu_notes()

    # -- internals -------------------------------------------------------------------------------
    def _speed(self) -> Any:
        text = self.options.raw.get("speed", "auto")
        if text == "auto":
            return "auto"
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"{self.url}: speed is the interface clock in kHz (e.g. 4000) or auto") from None

    def _start_swo(self, jlink: Any) -> None:
        cpu = self.cpu_hz
        assert cpu is not None
        supported = list(jlink.swo_supported_speeds(cpu, SPEED_CANDIDATES))
        self.swo_hz = choose_swo_speed(cpu, self.options.swo_hz, supported, self.url)
        try:
            ports = int(self.options.raw.get("ports", "0xFFFFFFFF"), 0)
        except ValueError:
            raise UsageError(f"{self.url}: ports is a bit mask of ITM stimulus ports, e.g. 0xFFFFFFFF") from None
        # swo_enable configures the target's TPIU and ITM and starts capture (UART encoding).
        jlink.swo_enable(cpu, swo_speed=self.swo_hz, port_mask=ports)
        jlink.swo_flush()

    def _start_rtt(self, jlink: Any, pylink: Any) -> None:
        jlink.rtt_start(self.options.rtt_control_block(self._symbols, self.url))
        deadline = self._clock() + RTT_SEARCH_SECONDS
        while True:
            try:
                count = jlink.rtt_get_num_up_buffers()
                break
            except pylink.errors.JLinkRTTException:
                if self._clock() >= deadline:
                    raise SourceUnavailable(
                        f"{self.url}: no RTT control block found in {RTT_SEARCH_SECONDS:.0f} s; is the firmware "
                        "running and linked with SEGGER RTT? Give &rtt_address= or --elf (symbol _SEGGER_RTT)"
                    ) from None
                self._sleep(0.05)
        if self.options.rtt_buffer >= count:
            raise UsageError(f"{self.url}: rtt_buffer={self.options.rtt_buffer} but the target has {count} up-buffers")

    def _read_once(self, max_bytes: int) -> bytes:
        jlink = self._jlink
        if self.options.mode == "swo":
            waiting = jlink.swo_num_bytes()
            if waiting <= 0:
                return b""  # swo_read of 0 bytes raises inside pylink: never ask for it
            return bytes(jlink.swo_read(0, min(waiting, max_bytes), remove=True))
        if self.options.mode == "rtt":
            data = bytes(jlink.rtt_read(self.options.rtt_buffer, max_bytes))
            self._check_rtt_overflow()
            return data
        return b""

    def _check_rtt_overflow(self) -> None:
        status = self._jlink.rtt_get_status()
        overflows = int(getattr(status, "HostOverflowCount", 0))
        if overflows > self._rtt_overflows:
            self._events.append(
                {
                    "event": "probe overflow",
                    "probe": "jlink",
                    "transport": "rtt",
                    "count": overflows - self._rtt_overflows,
                    "total": overflows,
                }
            )
            self._rtt_overflows = overflows

    def _read_words(self, address: int, count: int) -> list[int]:
        return [int(w) for w in self._jlink.memory_read32(address, count)]
