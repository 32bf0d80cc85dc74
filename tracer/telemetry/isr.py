"""Interrupts and CPU data accesses seen by the DWT, and interrupts the firmware marks itself.

Two sources give :class:`~tracer.base.timeline.IsrSlice` objects:

- **DWT exception trace** (SWO with ``DWT_CTRL.EXCTRCENA``): packets "entered N", "exited N",
  "returned to N". Handlers nest; an exit lost to an ITM overflow (a full FIFO drops packets, and
  exits are the usual casualty) is *repaired*: the "returned to" packet that follows says which
  handlers ended, and when, so the slice is closed there and marked ``repaired``. An exit whose
  entry was never seen, and entries open across a capture gap, are counted, never guessed.
- **Firmware marks** (``trc_isr_enter/exit`` records: targets without exception trace, such as
  QEMU or an RTT/UART transport): exact record times; an entry whose exit record was lost is
  counted and dropped.

Times: marks carry the target's cycle counter. A hardware packet carries the time of the record
before it and, when the stream has ITM local timestamps, how many timestamp ticks later it came
(cycles = record time + ticks x cycles per tick; the ratio is measured between records, 1 for the
usual ``TSPrescale`` of 1 on the CPU clock). Without timestamps a packet is placed at the record
before it (order only); without records at all, at its timestamp, or else its byte offset in the
stream (the timeline's ``labels`` say which). Conversion to cycles happens when the slices are
read, with the ratio measured over everything seen so far.

The DWT data trace (comparators watching buffers) gives :class:`DataAccess` rows: a value packet
with the address (or PC) packet of the same comparator before it.

One module although over 400 lines: the two sources share the slice store and the pairing rules
that turn entries and exits into slices.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from tracer.base.columns import LazyRecords
from tracer.base.exceptions import ARCHITECTURAL, FIRST_IRQ
from tracer.base.facts import DataAccess, IsrCounters
from tracer.base.timeline import IsrSlice
from tracer.decode.packets import FLAG_WRITE, PacketKind
from tracer.telemetry import kernel as k

ACTION_ENTER = 1
ACTION_EXIT = 2
ACTION_RETURN = 3

MAX_OPEN = 64  # deeper than any NVIC can nest: beyond it the stack is garbage after loss

# Time bases of hardware packets, most precise first.
BASIS_CYCLES_TS = "cycles (record time + ITM local timestamps)"
BASIS_CYCLES_ORDER = "cycles (order only: placed at the record before each packet; no ITM timestamps)"
BASIS_TS = "ITM local-timestamp ticks (no telemetry records to convert them to cycles)"
BASIS_OFFSET = "byte offsets in the ITM stream (no timestamps, no telemetry records)"


def exception_name(number: int, names: dict[int, str] | None = None) -> str:
    """The firmware's name for an exception number, else the architecture's (``IRQ3`` = 19)."""
    if names and number in names:
        return names[number]
    if number >= FIRST_IRQ:
        return f"IRQ{number - FIRST_IRQ}"
    return ARCHITECTURAL.get(number, f"exception {number}")


@dataclasses.dataclass
class Stamp:
    """A moment as a hardware packet gives it: ``base + delta`` timestamp ticks.

    ``base`` is a record time (cycles), a timestamp or a byte offset (see the basis); ``delta`` is
    in local-timestamp ticks, converted with the cycles-per-tick ratio when read.
    """

    base: int
    delta: int = 0


@dataclasses.dataclass
class _Open:
    number: int
    start: Stamp
    depth: int
    overflowed: bool = False  # an ITM overflow happened while it was open


class _SliceStore:
    """Closed slices as a growing int64 table (rows: start base/delta, end base/delta, exception,
    depth, repaired): 56 bytes a slice, whatever the capture's length.
    """

    COLS = 7

    def __init__(self) -> None:
        self.table = np.zeros((self.COLS, 64), np.int64)
        self.n = 0

    def append(self, row: tuple[int, int, int, int, int, int, int]) -> None:
        if self.n == self.table.shape[1]:
            wider = np.zeros((self.COLS, 2 * self.n), np.int64)
            wider[:, : self.n] = self.table
            self.table = wider
        self.table[:, self.n] = row
        self.n += 1

    def rows(self) -> np.ndarray:
        return self.table[:, : self.n]

    def keep(self, mask: np.ndarray) -> None:
        kept = self.rows()[:, mask]
        self.table[:, : kept.shape[1]] = kept
        self.n = kept.shape[1]


class SlicePairing:
    """Pairs entries and exits into slices, with nesting; keeps the closed slices."""

    def __init__(self) -> None:
        self.open: list[_Open] = []
        self.counters = IsrCounters()
        self._store = _SliceStore()
        self.discarded = 0  # closed slices forgotten (discard_ended_before)

    def __len__(self) -> int:
        return self._store.n

    @property
    def paired(self) -> int:
        """Slices closed since the start, forgotten ones included."""
        return self._store.n + self.discarded

    def enter(self, number: int, at: Stamp) -> None:
        """A handler starts. Entering one that is open means its exit and return were lost."""
        if any(o.number == number for o in self.open):
            self.drop_open()
        if len(self.open) >= MAX_OPEN:
            self.drop_open()
        self.open.append(_Open(number, at, len(self.open)))

    def exit(self, number: int, at: Stamp) -> None:
        """A handler ends: close it; handlers above it lost their exits (repaired here)."""
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i].number == number:
                self._close_from(i, at, repaired_above=True)
                return
        self.counters.unmatched_exits += 1

    def return_to(self, number: int, at: Stamp) -> None:
        """Execution returned to ``number`` (0: thread mode): every handler above it has ended."""
        keep = 0
        if number != 0:
            for i in range(len(self.open) - 1, -1, -1):
                if self.open[i].number == number:
                    keep = i + 1
                    break
        if keep < len(self.open):
            self._close_from(keep, at, repaired_above=True, repaired_first=True)

    def overflow(self) -> None:
        """An ITM overflow: packets were dropped (exits, typically)."""
        for o in self.open:
            o.overflowed = True

    def drop_open(self) -> None:
        """Forget open entries: their ends are unknown."""
        self.counters.dropped_open += len(self.open)
        self.open.clear()

    def discard_ended_before(self, base: int) -> int:
        """Forget closed slices whose end base is before ``base``; returns how many."""
        rows = self._store.rows()
        keep = rows[2] >= base
        dropped = int((~keep).sum())
        if dropped:
            self._store.keep(keep)
            self.discarded += dropped
        return dropped

    def _close_from(self, i: int, at: Stamp, repaired_above: bool, repaired_first: bool = False) -> None:
        for j in range(len(self.open) - 1, i - 1, -1):
            entry = self.open[j]
            repaired = repaired_first or (repaired_above and j > i)
            self._add(entry, at, repaired)
        del self.open[i:]

    def _add(self, entry: _Open, end: Stamp, repaired: bool) -> None:
        self._store.append(
            (entry.start.base, entry.start.delta, end.base, end.delta, entry.number, entry.depth, int(repaired))
        )
        if repaired:
            self.counters.repaired += 1
            if entry.overflowed:
                self.counters.repaired_after_overflow += 1

    def columns(self, ratio: float) -> tuple[np.ndarray, ...]:
        """(start, end, exception, depth, repaired) with timestamp ticks converted at ``ratio``."""
        rows = self._store.rows()
        start = _time(rows[0], rows[1], ratio)
        end = _time(rows[2], rows[3], ratio)
        return start, np.maximum(end, start), rows[4].copy(), rows[5].copy(), rows[6] != 0


def _time(base: np.ndarray, delta: np.ndarray, ratio: float) -> np.ndarray:
    if ratio == 1.0:
        return base + delta
    return base + np.rint(delta * ratio).astype(np.int64)


class HardwareEvents:
    """Consumes the kernel's DWT table rows in order: exception trace and data trace."""

    def __init__(self) -> None:
        self.pairing = SlicePairing()
        self.basis: str | None = None
        self.before_first_record = 0  # hardware events before any record, in a record stream
        self.exception_packets = 0
        self._address: dict[int, tuple[int, int]] = {}  # comparator -> (address, bits)
        self._pc: dict[int, int] = {}
        self._access_rows: list[tuple[int, int, int, int | None, int, int | None, int, int, bool, int | None]] = []

    def feed(self, rows: np.ndarray) -> None:
        """Process DWT table columns ``rows`` (shape (DW_COLS, n)), in stream order."""
        for kind, a, b, flags, time, ts, anchor_ts, offset, inference in rows.T.tolist():
            at = self._stamp(time, ts, anchor_ts, offset)
            if kind == PacketKind.EXCEPTION:
                self.exception_packets += 1
                if at is None:
                    continue
                if b == ACTION_ENTER:
                    self.pairing.enter(a, at)
                elif b == ACTION_EXIT:
                    self.pairing.exit(a, at)
                elif b == ACTION_RETURN:
                    self.pairing.return_to(a, at)
            elif kind == PacketKind.OVERFLOW:
                self.pairing.overflow()
            elif kind in (PacketKind.GAP, PacketKind.RESERVED):
                self.pairing.drop_open()
                self._address.clear()
                self._pc.clear()
            elif kind == PacketKind.DATA_ADDR:
                self._address[b] = (a, 8 * (flags & 0xFF))
            elif kind == PacketKind.DATA_PC:
                self._pc[b] = a
            elif kind == PacketKind.DATA_VALUE and at is not None:
                address, bits = self._address.pop(b, (None, 0))
                pc = self._pc.pop(b, None)
                write = bool((flags >> 8) & FLAG_WRITE)
                self._access_rows.append(
                    (
                        at.base,
                        at.delta,
                        b,
                        address,
                        bits if address is not None else 0,
                        pc,
                        a,
                        flags & 0xFF,
                        write,
                        None if inference < 0 else inference,
                    )
                )

    def _stamp(self, time: int, ts: int, anchor_ts: int, offset: int) -> Stamp | None:
        if time >= 0:
            if self.basis in (BASIS_TS, BASIS_OFFSET):
                # Records began after hardware packets: a second time base; start over in cycles.
                self.before_first_record += len(self.pairing) + len(self.pairing.open)
                self.pairing = SlicePairing()
                self.basis = None
            if ts >= 0 and anchor_ts >= 0:
                self.basis = BASIS_CYCLES_TS if self.basis in (None, BASIS_CYCLES_TS) else self.basis
                return Stamp(time, ts - anchor_ts)
            if self.basis is None:
                self.basis = BASIS_CYCLES_ORDER
            return Stamp(time)
        if self.basis in (BASIS_CYCLES_TS, BASIS_CYCLES_ORDER):
            return None  # cannot happen after a record; kept safe
        if ts >= 0 and self.basis in (None, BASIS_TS):
            self.basis = BASIS_TS
            return Stamp(0, ts)
        if self.basis in (None, BASIS_OFFSET):
            self.basis = BASIS_OFFSET
            return Stamp(offset)
        return None

    def discard_accesses_before(self, before: int) -> int:
        """Forget data accesses stamped before cycle ``before`` (live sessions keep recent data only)."""
        if self.basis not in (BASIS_CYCLES_TS, BASIS_CYCLES_ORDER):
            return 0
        kept = [row for row in self._access_rows if row[0] >= before]
        dropped = len(self._access_rows) - len(kept)
        self._access_rows = kept
        return dropped

    def accesses(self, ratio: float) -> list[DataAccess]:
        """The data accesses so far, times converted at ``ratio``."""
        out = []
        for base, delta, comparator, address, bits, pc, value, size, write, inference in self._access_rows:
            cycle = base + (delta if ratio == 1.0 else round(delta * ratio))
            out.append(DataAccess(cycle, comparator, address, bits, pc, value, size, write, inference))
        return out


class IsrMarks:
    """Pairs the firmware's ``ISR_ENTER``/``ISR_EXIT`` records (exact cycle times)."""

    def __init__(self) -> None:
        self.pairing = SlicePairing()

    def enter(self, number: int, cycle: int) -> None:
        """``trc_isr_enter(number)`` at ``cycle``."""
        self.pairing.enter(number, Stamp(cycle))

    def exit(self, number: int, cycle: int) -> None:
        """``trc_isr_exit(number)`` at ``cycle``."""
        if not any(o.number == number for o in self.pairing.open):
            self.pairing.counters.unmatched_exits += 1
            return
        # Marks have no "returned to": a handler above this one without its exit lost a record.
        while self.pairing.open[-1].number != number:
            self.pairing.open.pop()
            self.pairing.counters.dropped_open += 1
        self.pairing.exit(number, Stamp(cycle))


def cycles_per_tick(state: np.ndarray) -> float:
    """Target cycles per ITM local-timestamp tick, measured between records (1.0 if unknown).

    Snapped to the prescalers ``ITM_TCR.TSPrescale`` offers (1, 4, 16, 64) when within 2 %.
    """
    first_ts, last_ts = int(state[k.S_TS_FIRST_TS]), int(state[k.S_TS_LAST_TS])
    if first_ts < 0 or last_ts - first_ts < 64:
        return 1.0
    ratio = (int(state[k.S_TS_LAST_TIME]) - int(state[k.S_TS_FIRST_TIME])) / (last_ts - first_ts)
    if ratio <= 0:
        return 1.0
    for prescale in (1.0, 4.0, 16.0, 64.0):
        if abs(ratio - prescale) <= 0.02 * prescale:
            return prescale
    return ratio


def merge_slices(
    marks: SlicePairing, hardware: SlicePairing, ratio: float, names: dict[int, str]
) -> LazyRecords[IsrSlice]:
    """All slices in start order: the marks', and the exception trace's for exceptions not marked.

    Marks are exact; where the firmware marks an exception, its exception-trace slices (which may
    be order-only) are left out so that no handler counts twice.
    """
    m = marks.columns(1.0)
    h = hardware.columns(ratio)
    if len(h[0]) and len(m[0]):
        keep = ~np.isin(h[2], np.unique(m[2]))
        h = tuple(col[keep] for col in h)
    start, end, number, depth, repaired = (np.concatenate([x, y]) for x, y in zip(m, h))
    order = np.argsort(start, kind="stable")
    columns = (start[order], end[order], number[order], depth[order], repaired[order])
    return LazyRecords(lambda s, e, n, d, r: IsrSlice(s, e, n, exception_name(n, names), d, bool(r)), columns)


@dataclasses.dataclass(frozen=True)
class HandlerTime:
    """The union of interrupt slices, for asking "how long in handlers between a and b" fast.

    Nested and overlapping slices count once. ``lo``/``hi`` are disjoint sorted intervals,
    ``cumulative[m]`` the handler time of the first ``m`` of them.
    """

    lo: np.ndarray
    hi: np.ndarray
    cumulative: np.ndarray

    @classmethod
    def of(cls, slices: Sequence[IsrSlice]) -> HandlerTime:
        """Index ``slices`` (any order)."""
        if isinstance(slices, LazyRecords):
            s, e = slices.column(0), slices.column(1)
        else:
            s = np.array([x.start for x in slices], np.int64)
            e = np.array([x.end for x in slices], np.int64)
        if not len(s):
            empty = np.zeros(0, np.int64)
            return cls(empty, empty, np.zeros(1, np.int64))
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        reach = np.maximum.accumulate(e)
        new = np.ones(len(s), bool)
        new[1:] = s[1:] > reach[:-1]
        lo = s[new]
        hi = np.maximum.reduceat(e, np.flatnonzero(new))
        return cls(lo, hi, np.concatenate([[0], np.cumsum(hi - lo)]))

    def before(self, t: np.ndarray) -> np.ndarray:
        """Handler time before each moment ``t``."""
        j = np.searchsorted(self.lo, t, side="right")  # intervals that began at or before t
        last = np.maximum(j - 1, 0)
        if not len(self.lo):
            return np.zeros(len(t), np.int64)
        inside = np.minimum(t, self.hi[last]) - self.lo[last]
        return np.where(j > 0, self.cumulative[last] + inside, 0)

    def inside(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Handler time within each ``[starts[i], ends[i])``."""
        if not len(self.lo) or not len(starts):
            return np.zeros(len(starts), np.int64)
        return self.before(ends) - self.before(starts)
