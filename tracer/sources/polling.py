"""Polling target memory through a probe when the firmware cannot stream its own telemetry.

A probe reads two things at a set rate, without the firmware's help:

* the **tensor arena**: a 32-bit word holding the bytes in use (TFLM ``arena_used_bytes()`` stored
  by the application), and optionally the arena's size (a word or a number);
* **stacks**: painted regions (every word set to a known pattern at start-up); the high-water mark
  is the region's size less the painted words still intact at its low end (stacks grow down).

Addresses are numbers or ELF symbol names (``--elf`` or ``&elf=``), e.g.
``&arena=arena_used_bytes&arena_size=0x20000&stack=main@main_stack&poll_hz=10``. ``stack`` takes
``NAME@SYMBOL`` (an array symbol: its size comes from the ELF), ``NAME@START..END`` (two symbols or
addresses, e.g. ``main@__StackLimit..__StackTop``) or ``NAME@ADDR:SIZE`` (e.g. ``isr@0x20000100:2k``);
several stacks are separated by commas.

The samples are *records*, not bytes: each poll gives capture notes
(``{"event": "memory sample", "kind": "arena", ...}``) that the recorder stores as EVENT chunks,
and :func:`samples_from_notes` turns them into the data model's :class:`ArenaSample` and
:class:`StackSample`. The target's cycle counter (DWT CYCCNT, 32 bits) is read in the same poll
and kept raw as ``cyccnt``, so a consumer can place the sample on the firmware's time line when
the firmware counts with DWT too; ``cycle`` stays None because the host cannot know the
firmware's 64-bit extension of it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from tracer.base.timeline import ArenaSample, StackSample
from tracer.errors import UsageError

DWT_CYCCNT = 0xE0001004
DEFAULT_PAINT = 0xDEADBEEF
DEFAULT_POLL_HZ = 10.0
MAX_STACK_BYTES = 1 << 20

ReadWords = Callable[[int, int], list[int]]


class SymbolTable(Protocol):
    """Anything with ``symbol(name)`` returning an object with ``address`` and ``size`` (ElfImage)."""

    def symbol(self, name: str) -> Any:  # pragma: no cover - protocol
        """Look a symbol up."""


@dataclasses.dataclass(frozen=True)
class StackRegion:
    """A painted stack: ``name``, lowest address, size in bytes."""

    name: str
    start: int
    size: int


@dataclasses.dataclass(frozen=True)
class PollSpec:
    """What to poll and how often."""

    arena: int | None = None
    arena_size: int | None = None
    arena_size_addr: int | None = None
    stacks: tuple[StackRegion, ...] = ()
    paint: int = DEFAULT_PAINT
    hz: float = DEFAULT_POLL_HZ
    cyccnt: bool = True

    @property
    def active(self) -> bool:
        """True if anything is to be polled."""
        return self.arena is not None or bool(self.stacks)


def parse_poll_spec(options: dict[str, str], symbols: SymbolTable | None = None, where: str = "") -> PollSpec:
    """Build a :class:`PollSpec` from URL options (``arena``, ``arena_size``, ``stack``, ``paint``, ``poll_hz``).

    Raises:
        UsageError: An option is malformed or names a symbol the ELF lacks (or no ELF given).
    """
    prefix = f"{where}: " if where else ""
    arena = _address(options["arena"], symbols, prefix) if options.get("arena") else None
    size_text = options.get("arena_size")
    arena_size = arena_size_addr = None
    if size_text:
        number = _number(size_text)
        if number is not None:
            arena_size = number
        else:
            arena_size_addr = _address(size_text, symbols, prefix)
    stacks = tuple(_stack(item, symbols, prefix) for item in options.get("stack", "").split(",") if item.strip())
    paint = _number(options.get("paint", "")) if options.get("paint") else DEFAULT_PAINT
    if paint is None:
        raise UsageError(f"{prefix}paint must be a number such as 0xDEADBEEF")
    try:
        hz = float(options.get("poll_hz", DEFAULT_POLL_HZ))
    except ValueError:
        raise UsageError(f"{prefix}poll_hz must be a number of polls per second") from None
    if not 0 < hz <= 1000:
        raise UsageError(f"{prefix}poll_hz must be between 0 and 1000 (polls per second)")
    return PollSpec(
        arena, arena_size, arena_size_addr, stacks, paint & 0xFFFFFFFF, hz, options.get("cyccnt", "1") != "0"
    )


SpecT = TypeVar("SpecT")


class Poller(Generic[SpecT]):
    """What every probe poller has: what to read, the probe's memory read, its clocks, the next poll.

    Args:
        spec: What to read.
        read_words: ``read_words(address, count)`` -> 32-bit words (the probe's memory read).
        clock: Monotonic clock (injectable).
        wall_clock: Host time stamped on what is read (injectable).
    """

    def __init__(
        self,
        spec: SpecT,
        read_words: ReadWords,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.spec = spec
        self._read = read_words
        self._clock = clock
        self._wall = wall_clock
        self._next = 0.0


class MemoryPoller(Poller[PollSpec]):
    """Reads the polled words at the spec's rate and turns them into capture notes (arguments:
    :class:`Poller`).
    """

    polls = 0  # polls made so far

    def due(self) -> bool:
        """True when the next poll is due."""
        return self.spec.active and self._clock() >= self._next

    def poll(self) -> list[dict[str, Any]]:
        """Read everything once; return the notes (one per arena and stack)."""
        self._next = self._clock() + 1.0 / self.spec.hz
        self.polls += 1
        spec = self.spec
        host = self._wall()
        cyccnt = self._read(DWT_CYCCNT, 1)[0] if spec.cyccnt else None
        notes: list[dict[str, Any]] = []
        if spec.arena is not None:
            used = self._read(spec.arena, 1)[0]
            size = spec.arena_size
            if spec.arena_size_addr is not None:
                size = self._read(spec.arena_size_addr, 1)[0]
            notes.append(
                {
                    "event": "memory sample",
                    "kind": "arena",
                    "used": used,
                    "size": size,
                    "cyccnt": cyccnt,
                    "host_time": host,
                }
            )
        for stack in spec.stacks:
            words = self._read(stack.start, stack.size // 4)
            intact = 0
            for word in words:
                if word != spec.paint:
                    break
                intact += 1
            notes.append(
                {
                    "event": "memory sample",
                    "kind": "stack",
                    "stack": stack.name,
                    "high_water": stack.size - 4 * intact,
                    "size": stack.size,
                    "canary_ok": bool(words) and words[0] == spec.paint,
                    "cyccnt": cyccnt,
                    "host_time": host,
                }
            )
        return notes


def samples_from_notes(notes: Iterable[dict[str, Any]]) -> tuple[list[ArenaSample], list[StackSample]]:
    """The data model's samples from a capture's polled-memory notes (other notes are skipped).

    ``cycle`` is None: polled samples carry host time and the raw 32-bit ``cyccnt`` only.
    """
    arena: list[ArenaSample] = []
    stacks: list[StackSample] = []
    for note in notes:
        if note.get("event") != "memory sample":
            continue
        if note.get("kind") == "arena":
            arena.append(ArenaSample(None, int(note["used"]), note.get("size")))
        elif note.get("kind") == "stack":
            stacks.append(
                StackSample(
                    None,
                    str(note["stack"]),
                    int(note["high_water"]),
                    int(note["size"]),
                    bool(note.get("canary_ok", True)),
                )
            )
    return arena, stacks


# -- parsing helpers ------------------------------------------------------------------------------
def _number(text: str) -> int | None:
    text = text.strip().lower()
    scale = 1
    if text.endswith("k"):
        text, scale = text[:-1], 1024
    try:
        return int(text, 0) * scale
    except ValueError:
        return None


def _address(text: str, symbols: SymbolTable | None, prefix: str) -> int:
    number = _number(text)
    if number is not None:
        return number
    sym = _symbol(text, symbols, prefix)
    return int(sym.address)


def _symbol(name: str, symbols: SymbolTable | None, prefix: str) -> Any:
    if symbols is None:
        raise UsageError(f"{prefix}{name!r} is a symbol name: give the firmware ELF with --elf or &elf=PATH")
    sym = symbols.symbol(name.strip())
    if sym is None:
        raise UsageError(f"{prefix}the ELF has no symbol {name.strip()!r}")
    return sym


def _stack(item: str, symbols: SymbolTable | None, prefix: str) -> StackRegion:
    name, at, where = item.strip().partition("@")
    if not at or not name or not where:
        raise UsageError(f"{prefix}stack must be NAME@SYMBOL, NAME@START..END or NAME@ADDR:SIZE, not {item!r}")
    if ".." in where:
        lo_text, hi_text = where.split("..", 1)
        start, end = _address(lo_text, symbols, prefix), _address(hi_text, symbols, prefix)
        size = end - start
    elif ":" in where or "+" in where or " " in where:
        # ":" is the documented separator; "+" (and the space a URL turns it into) are accepted.
        addr_text, size_text = where.replace("+", ":").replace(" ", ":").split(":", 1)
        start, size_opt = _address(addr_text, symbols, prefix), _number(size_text)
        if size_opt is None:
            raise UsageError(f"{prefix}stack size must be a number in {item!r}")
        size = size_opt
    else:
        sym = _symbol(where, symbols, prefix)
        start, size = int(sym.address), int(sym.size)
    if not 4 <= size <= MAX_STACK_BYTES or size % 4:
        raise UsageError(f"{prefix}stack {name!r} has size {size}: expected a multiple of 4 up to 1 MiB")
    return StackRegion(name, start, size)
