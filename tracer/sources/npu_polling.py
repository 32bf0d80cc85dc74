"""Sampling the Ethos-U through a probe: QREAD, STATUS and the PMU, with no firmware change.

A debug probe reads target memory while the core runs (background memory access). Polling the
NPU's registers that way gives the same samples the firmware's timer sampler takes
(``trc_sampler.h``), at whatever rate the probe manages: each poll is one block read of STATUS
.. QSIZE (eight words from NPU base + 0x004: STATUS, CMD, RESET, QBASE low/high, QREAD, QCONFIG,
QSIZE), optionally PMCCNTR (two words at 0x1A0, 0x11A0 on the U85) and the event counters (0x300,
0x1300 on the U85), and DWT CYCCNT, so that a consumer can place the sample on the firmware's
time line when the firmware counts with DWT too.

URL options (``jlink://`` and ``pyocd://``): ``npu=ADDR|SYMBOL`` the NPU's register base (e.g.
0x48102000 on Corstone-300), ``npu_kind=55|65|85`` (default 55), ``npu_counters=N`` PMU event
counters to read (default 0), ``npu_cycles=0|1`` read PMCCNTR (default 1), ``npu_hz=RATE`` the
polling rate asked for (default 1k; ``k`` suffix accepted).

The samples become capture notes, batched (``{"event": "npu samples", "qread": [...], ...}``),
and a ``{"event": "npu sampling", ...}`` note says, about once a second and at the end, the rate
asked for and the rate the probe achieved: a probe is as fast as its USB round trips, and the
achieved rate is what the numbers rest on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from tracer.errors import UsageError
from tracer.sources.polling import DWT_CYCCNT, Poller, ReadWords
from tracer.units import parse_frequency

STATUS_BLOCK = 0x004  # STATUS, CMD, RESET, QBASE, QBASE_HI, QREAD, QCONFIG, QSIZE
STATUS_BLOCK_WORDS = 8
AT_STATUS, AT_QBASE, AT_QREAD, AT_QSIZE = 0, 3, 5, 7
PMCCNTR = 0x1A0
PMEVCNTR = 0x300
U85_PMU = 0x1000
DEFAULT_HZ = 1000.0
MAX_HZ = 100_000.0
SUMMARY_EVERY_S = 1.0


@dataclasses.dataclass(frozen=True)
class NpuPollSpec:
    """What NPU registers to poll and how often.

    Attributes:
        base: The NPU's register base address.
        npu: 55, 65 or 85.
        counters: PMU event counters to read (0..4, 0..8 on the U85).
        cycles: Read PMCCNTR.
        hz: Polls per second asked for.
        cyccnt: Read DWT CYCCNT with each poll (to place samples on the firmware's time line).
    """

    base: int
    npu: int = 55
    counters: int = 0
    cycles: bool = True
    hz: float = DEFAULT_HZ
    cyccnt: bool = True


def parse_npu_spec(options: dict[str, str], symbols: Any = None, where: str = "") -> NpuPollSpec | None:
    """The spec from URL options (None without ``npu=``).

    Raises:
        UsageError: A malformed option, or a symbol the ELF lacks.
    """
    text = options.get("npu")
    if not text:
        return None
    prefix = f"{where}: " if where else ""
    try:
        base = int(text, 0)
    except ValueError:
        sym = symbols.symbol(text) if symbols is not None else None
        if sym is None:
            raise UsageError(f"{prefix}npu={text!r} is neither an address nor a symbol of the ELF (--elf)") from None
        base = int(sym.address)
    try:
        npu = int(options.get("npu_kind", "55"))
        counters = int(options.get("npu_counters", "0"))
    except ValueError:
        raise UsageError(f"{prefix}npu_kind is 55, 65 or 85 and npu_counters a number of counters") from None
    if npu not in (55, 65, 85):
        raise UsageError(f"{prefix}npu_kind must be 55, 65 or 85 (Ethos-U55/U65/U85), not {npu}")
    most = 8 if npu == 85 else 4
    if not 0 <= counters <= most:
        raise UsageError(f"{prefix}npu_counters must be 0 to {most} on an Ethos-U{npu}")
    try:
        hz = float(parse_frequency(options["npu_hz"])) if options.get("npu_hz") else DEFAULT_HZ
    except UsageError as exc:
        raise UsageError(f"{prefix}npu_hz: {exc}") from None
    if not 0 < hz <= MAX_HZ:
        raise UsageError(f"{prefix}npu_hz must be above 0 and at most {MAX_HZ:.0f} polls per second")
    return NpuPollSpec(
        base, npu, counters, options.get("npu_cycles", "1") != "0", hz, options.get("cyccnt", "1") != "0"
    )


@dataclasses.dataclass(frozen=True)
class NpuPollSummary:
    """How the polling went.

    Attributes:
        requested_hz: The rate asked for.
        achieved_hz: Polls per second from the first poll to the last.
        samples: Polls made.
        seconds: From the first poll to the last.
        read_share: Share of that time spent inside the probe's memory reads.
    """

    requested_hz: float
    achieved_hz: float | None
    samples: int
    seconds: float
    read_share: float | None

    def to_json(self) -> dict[str, Any]:
        """As a capture note."""
        return {"event": "npu sampling", **dataclasses.asdict(self)}

    def sentence(self) -> str:
        """For the command's output."""
        if not self.samples:
            return f"NPU polling: no sample taken (asked {self.requested_hz:,.0f} Hz)"
        achieved = "-" if self.achieved_hz is None else f"{self.achieved_hz:,.0f}"
        busy = "" if self.read_share is None else f"; probe reads took {100 * self.read_share:.0f}% of the time"
        return (
            f"NPU polling: {self.samples:,} samples in {self.seconds:.1f} s, {achieved} Hz achieved of "
            f"{self.requested_hz:,.0f} Hz asked{busy}"
        )


class NpuPoller(Poller[NpuPollSpec]):
    """Reads the NPU's registers when due and batches them into capture notes (arguments:
    :class:`~tracer.sources.polling.Poller`).
    """

    def __init__(
        self,
        spec: NpuPollSpec,
        read_words: ReadWords,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(spec, read_words, clock=clock, wall_clock=wall_clock)
        self._pending: dict[str, list[Any]] = self._empty()
        self._first: float | None = None
        self._last: float | None = None
        self._reading = 0.0
        self._summary_at = 0.0
        self.samples = 0

    @property
    def period(self) -> float:
        """Seconds between polls asked for."""
        return 1.0 / self.spec.hz

    def due(self) -> bool:
        """True when the next poll is due."""
        return self._clock() >= self._next

    def poll(self) -> None:
        """Read the registers once."""
        spec = self.spec
        began = self._clock()
        self._next = max(self._next + self.period, began) if self._next else began + self.period
        pmu = spec.base + (U85_PMU if spec.npu == 85 else 0)
        block = self._read(spec.base + STATUS_BLOCK, STATUS_BLOCK_WORDS)
        cycles = None
        if spec.cycles:
            lo, hi = self._read(pmu + PMCCNTR, 2)
            cycles = ((hi & 0xFFFF) << 32) | lo
        counters = self._read(pmu + PMEVCNTR, spec.counters) if spec.counters else []
        cyccnt = self._read(DWT_CYCCNT, 1)[0] if spec.cyccnt else None
        ended = self._clock()
        self._reading += ended - began
        self._first = began if self._first is None else self._first
        self._last = began
        self.samples += 1
        p = self._pending
        p["qread"].append(int(block[AT_QREAD]))
        p["status"].append(int(block[AT_STATUS]))
        p["qbase"].append(int(block[AT_QBASE]))
        p["qsize"].append(int(block[AT_QSIZE]))
        p["pmu_cycles"].append(cycles)
        p["counters"].append([int(c) for c in counters])
        p["cyccnt"].append(cyccnt)
        p["host_time"].append(round(self._wall(), 6))

    def drain(self) -> list[dict[str, Any]]:
        """The samples since the last call as one note, and the summary about once a second."""
        notes: list[dict[str, Any]] = []
        if self._pending["qread"]:
            notes.append({"event": "npu samples", "npu": self.spec.npu, "base": self.spec.base, **self._pending})
            self._pending = self._empty()
        now = self._clock()
        if self.samples and now - self._summary_at >= SUMMARY_EVERY_S:
            self._summary_at = now
            notes.append(self.summary.to_json())
        return notes

    @property
    def summary(self) -> NpuPollSummary:
        """The rate asked for and achieved so far."""
        seconds = (self._last - self._first) if self._first is not None and self._last is not None else 0.0
        achieved = (self.samples - 1) / seconds if seconds > 0 else None
        share = self._reading / seconds if seconds > 0 else None
        return NpuPollSummary(self.spec.hz, achieved, self.samples, seconds, None if share is None else min(share, 1.0))

    @staticmethod
    def _empty() -> dict[str, list[Any]]:
        return {k: [] for k in ("qread", "status", "qbase", "qsize", "pmu_cycles", "counters", "cyccnt", "host_time")}
