"""URL options shared by the probe sources (``jlink://`` and ``pyocd://``).

``cpu=HZ`` the core clock (the TPIU divides it for SWO); ``swo=HZ`` the SWO bit rate wanted;
``rtt=1`` read RTT instead of SWO, ``rtt_buffer=N`` the up-buffer (default 0),
``rtt_address=ADDR|SYMBOL`` where the control block is (default: searched for);
``elf=PATH`` the firmware image for symbol names; the memory-polling options of
:mod:`tracer.sources.polling`; and the NPU-sampling options of :mod:`tracer.sources.npu_polling`
(``npu=ADDR|SYMBOL`` ...). Frequencies take ``k``/``M`` suffixes as pyOCD does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tracer.errors import UsageError
from tracer.sources.base import SourceLost
from tracer.sources.npu_polling import NpuPollSpec, parse_npu_spec
from tracer.sources.polling import PollSpec, SymbolTable, parse_poll_spec
from tracer.sources.url import SourceUrl
from tracer.units import parse_frequency

SWO_TOLERANCE = 0.03  # UART SWO: probe and target must agree within about 3% (SEGGER UM08001)
RTT_SEARCH_SECONDS = 10.0


@dataclasses.dataclass
class ProbeOptions:
    """The parsed options of a probe URL.

    Attributes:
        mode: ``"swo"``, ``"rtt"`` or ``"poll"`` (memory polling only).
        cpu_hz: Core clock, when given.
        swo_hz: SWO rate wanted, when given.
        rtt_buffer: RTT up-buffer index.
        rtt_address: Where the RTT control block is (an address or symbol name), when given.
        elf: Path of the firmware ELF, when given in the URL.
        raw: All options, for the polling spec and backend-specific keys.
    """

    mode: str
    cpu_hz: int | None
    swo_hz: int | None
    rtt_buffer: int
    rtt_address: str | None
    elf: str | None
    raw: dict[str, str]

    @classmethod
    def parse(cls, url: SourceUrl) -> ProbeOptions:
        """Read the options of ``url``.

        Raises:
            UsageError: A malformed value.
        """
        opts = url.options
        cpu = parse_frequency(opts["cpu"]) if opts.get("cpu") else None
        swo = parse_frequency(opts["swo"]) if opts.get("swo") else None
        rtt = opts.get("rtt", "0") not in ("0", "", "no", "false") or "rtt_buffer" in opts
        try:
            rtt_buffer = int(opts.get("rtt_buffer", "0"), 0)
        except ValueError:
            raise UsageError(f"{url.text}: rtt_buffer must be a number") from None
        polls = any(k in opts for k in ("arena", "stack", "npu"))
        if rtt:
            mode = "rtt"
        elif swo or cpu:
            mode = "swo"
        elif polls:
            mode = "poll"
        else:
            raise UsageError(
                f"{url.text}: say what to read: &swo=HZ&cpu=HZ (SWO), &rtt=1 (RTT), or "
                "&arena=...&stack=... (memory polling) or &npu=ADDR (NPU sampling)"
            )
        if mode == "swo" and cpu is None:
            raise UsageError(f"{url.text}: SWO needs the core clock, e.g. &cpu=160M (the TPIU divides it)")
        return cls(mode, cpu, swo, rtt_buffer, opts.get("rtt_address"), opts.get("elf"), dict(opts))

    def poll_spec(self, symbols: SymbolTable | None, where: str) -> PollSpec:
        """The memory-polling spec (inactive when no arena or stack was asked for)."""
        return parse_poll_spec(self.raw, symbols, where)

    def npu_spec(self, symbols: SymbolTable | None, where: str) -> NpuPollSpec | None:
        """The NPU-sampling spec (None without ``npu=``)."""
        return parse_npu_spec(self.raw, symbols, where)

    def symbols(self, given: SymbolTable | None) -> SymbolTable | None:
        """The firmware image for symbol names: the one given (``--elf``), else the URL's ``elf=``.

        Raises:
            UsageError: The URL's ELF cannot be read.
        """
        if given is not None or not self.elf:
            return given
        from tracer.elf import open_elf  # pyelftools only when an ELF is named

        return open_elf(self.elf)

    def rtt_control_block(self, symbols: SymbolTable | None, where: str) -> int | None:
        """Where the RTT control block is: ``rtt_address`` (a number or a symbol), else the ELF's
        ``_SEGGER_RTT``, else None (the probe searches target RAM for it).

        Raises:
            UsageError: ``rtt_address`` is neither a number nor a symbol of the ELF.
        """
        text = self.rtt_address
        if text:
            try:
                return int(text, 0)
            except ValueError:
                sym = symbols.symbol(text) if symbols is not None else None
                if sym is None:
                    raise UsageError(
                        f"{where}: rtt_address {text!r} is neither an address nor a symbol of the ELF"
                    ) from None
                return int(sym.address)
        sym = symbols.symbol("_SEGGER_RTT") if symbols is not None else None
        return int(sym.address) if sym is not None else None


def choose_swo_speed(cpu_hz: int, wanted: int | None, supported: list[int], where: str = "") -> int:
    """Pick the SWO rate: the fastest the probe supports, not above ``wanted``, that the target
    can produce within 3% (the target divides ``cpu_hz`` by an integer).

    Args:
        cpu_hz: The clock the TPIU divides.
        wanted: The rate asked for, or None for the fastest possible.
        supported: Rates the probe supports, in any order.
        where: The URL, for messages.

    Raises:
        UsageError: No supported rate fits.
    """
    fits = []
    for speed in sorted({int(s) for s in supported if s > 0}, reverse=True):
        if wanted is not None and speed > wanted * (1 + SWO_TOLERANCE):
            continue
        divider = max(1, round(cpu_hz / speed))
        produced = cpu_hz / divider
        if abs(produced - speed) / speed <= SWO_TOLERANCE:
            fits.append(speed)
    if not fits:
        shown = ", ".join(str(s) for s in sorted(supported, reverse=True)[:8]) or "none"
        limit = f" at or below {wanted} Hz" if wanted else ""
        raise UsageError(
            f"{where}: no SWO rate{limit} that both the probe supports and a {cpu_hz} Hz core can produce "
            f"within 3% (probe offers: {shown} Hz)"
        )
    return fits[0]


def swo_metadata(cpu_hz: int | None, swo_hz: int | None) -> dict[str, Any]:
    """Capture metadata for an SWO stream set up the way pyOCD and J-Link do it."""
    return {
        "encoding": "itm",
        "tpiu": False,  # both set the formatter to bypass for SWO
        "cpu_hz": cpu_hz,
        "swo_hz": swo_hz,
        "ts_prescaler": 1,
        "ts_clock": "cpu",
    }


def transport_metadata(options: ProbeOptions, cpu_hz: int | None, swo_hz: int | None) -> dict[str, Any]:
    """Capture metadata for what a probe reads: SWO, RTT or polled memory."""
    meta: dict[str, Any] = {"transport": options.mode}
    if options.mode == "swo":
        meta.update(swo_metadata(cpu_hz, swo_hz))
    else:
        meta["cpu_hz"] = cpu_hz
    if options.mode == "rtt":
        meta["rtt_buffer"] = options.rtt_buffer
    return meta


def read_within(
    fetch: Callable[[], bytes],
    timeout: float,
    idle: float,
    errors: tuple[type[BaseException], ...],
    where: str,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> bytes:
    """Call ``fetch`` until it gives bytes or ``timeout`` seconds pass, sleeping ``idle`` between tries.

    Raises:
        SourceLost: ``fetch`` raised one of the probe library's ``errors`` (the probe went away).
    """
    deadline = clock() + timeout
    while True:
        try:
            data = fetch()
        except errors as exc:
            raise SourceLost(f"{where}: {exc}") from None
        if data or clock() >= deadline:
            return data
        sleep(min(idle, max(0.0, deadline - clock())))
