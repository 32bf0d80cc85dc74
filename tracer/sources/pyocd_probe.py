"""``pyocd://UID?target=NAME&...``: CMSIS-DAP, ST-Link or J-Link probes through pyOCD.

Examples::

    pyocd://0240000034544e45?target=stm32h743zitx&cpu=480M&swo=2M   SWO through the probe
    pyocd://?target=mimxrt1170_cm7&rtt=1                             RTT, the only probe
    pyocd://066DFF49?target=nrf52840&arena=arena_used_bytes&elf=app.elf   memory polling only
    pyocd://?target=...&rtt=1&npu=0x48102000&npu_counters=4         RTT, and sample the Ethos-U

SWO is set up the way pyOCD's own ``SWVReader`` does it: the probe must offer
``DebugProbe.Capability.SWO``; the target's ITM is initialised and enabled and its TPIU put in
UART (NRZ) mode with the formatter off and a divider within 3% of the wanted rate
(``TPIU.set_swo_clock``); then ``probe.swo_start(rate)`` and ``probe.swo_read()``. RTT uses
pyOCD's ``RTTControlBlock.from_target`` (a software search of target RAM for ``SEGGER RTT``,
working on any probe). Options as for every probe source (docs/probes.md), plus
``frequency=HZ`` (SWD clock) and ``connect=attach|halt|under-reset`` (default attach, so a
running target keeps running).

pyOCD is imported only when the source is opened; ``session_factory`` lets tests hand in a
session whose probe is a fake (checked against pyOCD's real signatures) while pyOCD's own ITM,
TPIU and RTT classes do the work.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from tracer.errors import SourceUnavailable, UsageError
from tracer.sources.probe_options import ProbeOptions, read_within, transport_metadata
from tracer.sources.probe_polling import ProbePolling
from tracer.sources.url import SourceUrl
from tracer.units import parse_frequency

IDLE_SLEEP = 0.001  # pyOCD's SWVReader polls swo_read() every 1 ms

SessionFactory = Callable[[str | None, str | None, dict[str, Any]], Any]


def _pyocd_session(unique_id: str | None, target: str | None, options: dict[str, Any]) -> Any:
    """A pyOCD session with the probe whose unique ID contains ``unique_id`` (the only one if None).

    Probes are chosen here rather than by ``ConnectHelper.choose_probe``, which prints to stdout.
    """
    try:
        from pyocd.core.helpers import ConnectHelper  # optional backend
        from pyocd.core.session import Session
    except ImportError:
        raise SourceUnavailable("pyocd:// needs pyOCD: pip install 'pyocd>=0.36,<1' (tracer's pyocd extra)") from None
    probes = ConnectHelper.get_all_connected_probes(blocking=False, unique_id=unique_id, print_wait_message=False)
    if not probes:
        which = f"with a unique ID containing {unique_id!r}" if unique_id else "at all"
        raise SourceUnavailable(f"no debug probe {which} was found by pyOCD (tracer list shows what is attached)")
    if len(probes) > 1:
        ids = ", ".join(str(p.unique_id) for p in probes)
        raise UsageError(f"{len(probes)} probes match; name one with pyocd://UNIQUE_ID (attached: {ids})")
    if target:
        options = {**options, "target_override": target}
    return Session(probes[0], auto_open=False, options=options)


class PyocdSource(ProbePolling):
    """SWO, RTT or polled memory through a pyOCD session.

    Args:
        url: The ``pyocd://`` URL.
        session_factory: ``(unique_id, target, options) -> session`` (default: pyOCD's ConnectHelper).
        sleep: Sleep between empty reads (injectable).
        clock: Monotonic clock (injectable).
    """

    def __init__(
        self,
        url: SourceUrl,
        *,
        session_factory: SessionFactory | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url.text
        self.options = ProbeOptions.parse(url)
        self.unique_id = url.location or None
        self.target_name = url.option("target")
        self._factory = session_factory or _pyocd_session
        self._sleep = sleep
        self._clock = clock
        self._session: Any = None
        self._channel: Any = None
        self._symbols: Any = None
        self._events: list[dict[str, Any]] = []
        self._errors: tuple[type[BaseException], ...] = (Exception,)
        self._swo_started = False
        self.probe_name = ""
        self.swo_hz: int | None = None
        self.cpu_hz: int | None = self.options.cpu_hz

    def attach_elf(self, image: Any) -> None:
        """Use a firmware image for symbol names (``--elf``)."""
        self._symbols = image

    # -- ByteSource ------------------------------------------------------------------------------
    def open(self) -> None:
        """Open the session and start SWO, RTT or polling."""
        self._symbols = self.options.symbols(self._symbols)
        spec = self.options.poll_spec(self._symbols, self.url)
        npu = self.options.npu_spec(self._symbols, self.url)
        session_options: dict[str, Any] = {"connect_mode": self.options.raw.get("connect", "attach")}
        if self.options.raw.get("frequency"):
            session_options["frequency"] = parse_frequency(self.options.raw["frequency"])
        try:
            from pyocd.core import exceptions as pyocd_errors

            self._errors = (pyocd_errors.Error,)
        except ImportError:
            pass  # a test's session factory without pyOCD installed: any error counts
        try:
            self._session = self._factory(self.unique_id, self.target_name, session_options)
            self._session.open()
            probe = self._session.probe
            self.probe_name = f"{getattr(probe, 'description', '')} ({getattr(probe, 'unique_id', '')})"
            if self.options.mode == "swo":
                self._start_swo()
            elif self.options.mode == "rtt":
                self._start_rtt()
        except self._errors as exc:
            self.close()
            raise SourceUnavailable(f"{self.url}: {exc}") from None
        except (UsageError, SourceUnavailable):
            self.close()
            raise
        self._start_polling(spec, npu, self._read_words, self._clock)

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return SWO or RTT bytes (``b""`` if none within ``timeout``)."""
        assert self._session is not None, "open() first"

        def fetch() -> bytes:
            self._poll(self._events)
            # swo_read() and RTT reads take no size: return all they gave, never drop any.
            return self._read_once()

        return read_within(fetch, timeout, self._idle(IDLE_SLEEP), self._errors, self.url, self._clock, self._sleep)

    def close(self) -> None:
        """Stop SWO and close the session; safe to call twice."""
        session, self._session = self._session, None
        if session is None:
            return
        if self._swo_started:
            with contextlib.suppress(*self._errors):
                session.probe.swo_stop()
            self._swo_started = False
        with contextlib.suppress(*self._errors):
            session.close()

    def metadata(self) -> dict[str, Any]:
        """What the capture header records."""
        meta: dict[str, Any] = {
            "source": self.url,
            "probe": f"pyocd {self.probe_name}".strip(),
            "target": self.target_name,
        }
        meta.update(transport_metadata(self.options, self.cpu_hz, self.swo_hz))
        return meta

    def drain_events(self) -> list[dict[str, Any]]:
        """Polled memory and NPU samples since the last call."""
        events, self._events = self._events, []
        return events + self._npu_notes()

    # -- internals -------------------------------------------------------------------------------
    def _start_swo(self) -> None:
        from pyocd.coresight.itm import ITM
        from pyocd.coresight.tpiu import TPIU
        from pyocd.probe.debug_probe import DebugProbe

        probe, target = self._session.probe, self._session.target
        if DebugProbe.Capability.SWO not in probe.capabilities:
            raise SourceUnavailable(
                f"{self.url}: probe {self.probe_name} cannot receive SWO; use &rtt=1, memory polling, "
                "or a USB-UART on the SWO pin (serial://)"
            )
        itm = target.get_first_child_of_type(ITM)
        if itm is None:
            raise SourceUnavailable(f"{self.url}: the target has no ITM (Cortex-M0/M0+/M23 have no SWO)")
        tpiu = target.get_first_child_of_type(TPIU, "has_swo_uart")
        if tpiu is None:
            raise SourceUnavailable(f"{self.url}: the target's TPIU has no SWO UART (NRZ) mode")
        assert self.cpu_hz is not None
        wanted = self.options.swo_hz or 1_000_000  # pyOCD's default swv_clock
        itm.init()
        itm.enable()
        tpiu.init()
        if not tpiu.set_swo_clock(wanted, self.cpu_hz):
            divider = max(1, self.cpu_hz // wanted)
            raise UsageError(
                f"{self.url}: a {self.cpu_hz} Hz core cannot produce {wanted} Hz SWO within 3% "
                f"(nearest: {self.cpu_hz // divider} Hz); choose a rate that divides the clock"
            )
        self.swo_hz = self.cpu_hz // (self.cpu_hz // wanted)
        with contextlib.suppress(*self._errors):
            probe.swo_stop()  # the probe may still be capturing from an earlier session
        probe.swo_start(self.swo_hz)
        self._swo_started = True

    def _start_rtt(self) -> None:
        from pyocd.debug.rtt import RTTControlBlock

        address = self.options.rtt_control_block(self._symbols, self.url)
        control = RTTControlBlock.from_target(self._session.target, address=address, size=None)
        control.start()
        if self.options.rtt_buffer >= len(control.up_channels):
            raise UsageError(
                f"{self.url}: rtt_buffer={self.options.rtt_buffer} but the target has {len(control.up_channels)} up-buffers"
            )
        self._channel = control.up_channels[self.options.rtt_buffer]

    def _read_once(self) -> bytes:
        if self.options.mode == "swo":
            return bytes(self._session.probe.swo_read())
        if self.options.mode == "rtt":
            return bytes(self._channel.read())
        return b""

    def _read_words(self, address: int, count: int) -> list[int]:
        return [int(w) for w in self._session.target.read_memory_block32(address, count)]
