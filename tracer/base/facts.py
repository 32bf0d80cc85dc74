"""Typed facts about a timeline besides its inferences and layers: the target, the stream, interrupts.

The telemetry decoder fills them in (:mod:`tracer.telemetry.decoder`); analysis and the report read
them. Each has a ``to_json`` giving the form the report carries (``docs/report.md``).
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class TargetFacts:
    """What the firmware said about itself (its ``TARGET_INFO`` record).

    Attributes:
        marker_cost_cycles: Cycles one layer begin/end pair costs, measured on the target (None:
            not measured).
        wire_version: The record format's version.
        scenario: The demo firmware's fault scenario number (0 elsewhere).
        cpuid: The core's CPUID register.
    """

    marker_cost_cycles: float | None
    wire_version: int
    scenario: int
    cpuid: int


@dataclasses.dataclass(frozen=True)
class TargetRestart:
    """The target started again inside the capture (a watchdog, a reflash): a new session begins.

    Attributes:
        session: The session that begins here (1 for the first restart; the capture begins session 0).
        cycle: Where it begins on the timeline. Sessions are laid end to end: the target's clock
            started again, and how long the restart took is not on the wire.
        target_cycle: The target's own time at that record (its clock as restarted).
        offset: Byte offset in the ITM stream of the record that showed it.
        record: Records accepted before it.
        reason: What showed it: ``"target_info"`` (a target-info record out of sequence),
            ``"time_went_back"`` (a record carrying the full time, earlier than the time so far)
            or ``"sequence_restarted"`` (the record sequence started again at 0, the time behind).
    """

    session: int
    cycle: int
    target_cycle: int
    offset: int
    record: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        """As listed in the report's ``capture.restarts``."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class StreamFacts:
    """What the telemetry decoder counted on the record stream.

    Attributes:
        records: Records accepted.
        calibration_pairs: Marker-cost calibration pairs seen (not layers of the model).
        inferences_lost_without_row: Inferences known lost beyond the rows made for them.
        time_reanchored: Times a record carrying the high time word corrected the unwrapped time.
        firmware_dropped_records: Records the firmware said it could not send (``DROPPED``).
        restarts: Where the target started again, in order (each begins a new session).
    """

    records: int = 0
    calibration_pairs: int = 0
    inferences_lost_without_row: int = 0
    time_reanchored: int = 0
    firmware_dropped_records: int = 0
    restarts: tuple[TargetRestart, ...] = ()

    @property
    def sessions(self) -> int:
        """Runs of the target in the stream: one, plus one per restart."""
        return 1 + len(self.restarts)


@dataclasses.dataclass
class IsrCounters:
    """What pairing interrupt entries with exits could not do cleanly, counted."""

    repaired: int = 0  # exits lost (overflow) and inferred from the return packet
    repaired_after_overflow: int = 0
    unmatched_exits: int = 0  # exits whose entry was never seen
    dropped_open: int = 0  # entries whose end is unknown (gap, lost exit record, end of capture)

    def to_json(self) -> dict[str, int]:
        """As a JSON object."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class IsrMarkFacts:
    """Interrupt slices from the firmware's ISR marks.

    Attributes:
        slices: Slices paired.
        counters: What pairing could not do.
    """

    slices: int
    counters: IsrCounters

    def to_json(self) -> dict[str, Any]:
        """``{slices, repaired, ...}``."""
        return {"slices": self.slices, **self.counters.to_json()}


@dataclasses.dataclass(frozen=True)
class ExceptionTraceFacts:
    """Interrupt slices from the DWT exception trace.

    Attributes:
        packets: Exception-trace packets seen.
        slices: Slices paired.
        time_basis: What the slices' times count (cycles from timestamps, record order, byte offsets).
        cycles_per_timestamp_tick: The ratio used to turn timestamp ticks into cycles.
        counters: What pairing could not do.
        dropped_before_first_record: Packets before any record of a record stream (no time yet).
    """

    packets: int
    slices: int
    time_basis: str | None
    cycles_per_timestamp_tick: float
    counters: IsrCounters
    dropped_before_first_record: int = 0

    def to_json(self) -> dict[str, Any]:
        """As the report's ``interrupts.sources.exception_trace``."""
        out: dict[str, Any] = {
            "packets": self.packets,
            "slices": self.slices,
            "time_basis": self.time_basis,
            "cycles_per_timestamp_tick": self.cycles_per_timestamp_tick,
            **self.counters.to_json(),
        }
        if self.dropped_before_first_record:
            out["dropped_before_first_record"] = self.dropped_before_first_record
        return out


@dataclasses.dataclass(frozen=True)
class IsrSources:
    """Where a timeline's interrupt slices came from, and the names the firmware gave exceptions.

    Attributes:
        marks: Slices from ISR marks, if any.
        exception_trace: Slices from the DWT exception trace, if any.
        names: Exception number to the firmware's name (``ISR_INFO`` records).
    """

    marks: IsrMarkFacts | None = None
    exception_trace: ExceptionTraceFacts | None = None
    names: dict[int, str] = dataclasses.field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.marks is not None or self.exception_trace is not None or bool(self.names)

    def to_json(self) -> dict[str, Any]:
        """As the report's ``interrupts.sources``."""
        out: dict[str, Any] = {}
        if self.marks is not None:
            out["marks"] = self.marks.to_json()
        if self.exception_trace is not None:
            out["exception_trace"] = self.exception_trace.to_json()
        if self.names:
            out["names"] = {str(n): name for n, name in sorted(self.names.items())}
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class DataAccess:
    """A CPU access a DWT comparator traced.

    Attributes:
        cycle: When (the timeline's time base, see the ``isr_time`` label).
        comparator: The DWT comparator (0..3 on most cores).
        address: The address, or None if only the PC was traced.
        address_bits: How many low bits of the address the packet gave (16 for an Armv7-M
            address-offset packet, else 32).
        pc: The PC of the accessing instruction, if traced.
        value: The value read or written.
        size: Bytes accessed.
        write: True for a write.
        inference: The inference in progress, if any.
    """

    cycle: int
    comparator: int
    address: int | None
    address_bits: int
    pc: int | None
    value: int
    size: int
    write: bool
    inference: int | None

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return dataclasses.asdict(self)


@dataclasses.dataclass
class InputFacts:
    """What is known about the input itself (the report's ``capture`` section).

    Attributes:
        kind: ``capture`` (a .trace of ITM packets), ``raw-itm`` (another tool's raw trace file),
            ``text-log`` (a plain text log), ``capture-text`` (a .trace whose stream is text),
            ``etdump`` (an ExecuTorch ETDump) or ``live`` (a session's stream with no file behind it).
        source: The source URL it was recorded from, else the path.
        path: The file (None for a live stream not recorded).
        bytes: Stream bytes (the whole file for raw files and logs).
        host_seconds: Host arrival time from first to last chunk, when the capture has it.
        warnings: Damage found while reading, with positions.
        records: Telemetry records accepted (text lines for logs).
        console_lines: Lines of port-0 text that went through the log readers (captures).
        trace_doubt: Why an ITM input does not look like trace (the decoder's measure), or None.
    """

    kind: str
    source: str
    path: str | None
    bytes: int
    host_seconds: float | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    records: int = 0
    console_lines: int = 0
    trace_doubt: str | None = None
