"""TPIU deframing: finding the frame grid, keeping it, and finding it again when bytes slip.

A formatted stream is a grid of 16-byte frames (``docs/decoder.md``). Where the grid lies is known
for sure from a full sync (``FF FF FF 7F``, which no valid frame can contain at any byte offset),
and otherwise judged from the frames themselves: read on the right grid they change to a few
valid IDs, never break the formatter's rules (a reserved ID, or an ID in byte 14 whose auxiliary
bit is set), pad with zeros under the null ID, and the wanted source decodes as clean ITM.

:class:`TpiuDeframer` starts on a known grid or searches for one (:func:`locate`). While on a
grid the compiled kernel deframes; it stops at a frame that breaks the rules or changes to an ID
not seen before, and at a full sync off the grid. Then the deframer collects the next bytes and
searches again: a new source keeps the grid, a slipped byte (a UART link that drops or inserts
one) moves it. Bytes that belong to no frame are counted with their stream positions
(:attr:`TpiuStats.unframed`), never dropped silently.

It is long because the grid search and the deframer that keeps the grid share the frame rules and
the loss accounting; apart, each would need the other's state.
"""

from __future__ import annotations

import dataclasses
import enum

import numpy as np

from tracer.decode import tpiu_kernel
from tracer.decode.itm import ItmDecoder

FULL_SYNC = b"\xff\xff\xff\x7f"
HALF_SYNC = b"\xff\x7f"
FRAME = 16
TRIGGER_ID = 0x7D
FLUSH_ID = 0x7B
NULL_ID = 0x00
DETECT_WINDOW = 64 * 1024  # --tpiu auto decides on this much of the stream
SEARCH_WINDOW = 4096  # bytes a grid search weighs (about 255 frames)
MIN_FRAMES = 4  # fewer whole frames than this are never taken for a formatted stream
MAX_SOURCES = 6  # distinct IDs a formatted stream plausibly carries
MAX_SYNC_TRIES = 4  # full-sync lookalikes tried per search
CLEAN_ITM = 0.01  # reserved packets per byte below which the wanted source reads as ITM
RAW_ITM_DAMAGE = 0.005  # reserved packets per byte from which a block does not read as raw ITM
MAX_REGIONS = 100  # unframed regions listed (all are counted)
NULL_NOISE_FRAMES = 32  # a strict search allows one non-zero null-ID byte per this many frames


class TpiuMode(enum.Enum):
    """``--tpiu``: detect, force on, or force off."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


@dataclasses.dataclass(frozen=True)
class Unframed:
    """Bytes of the stream that belong to no frame.

    Attributes:
        offset: Stream position of the first.
        length: How many.
        why: ``"before the first frame"``, ``"frames lost alignment"``, ``"capture gap"``,
            ``"no frame grid found"`` or ``"end of stream"``.
        resumed: How the grid was found again after them: ``"full sync"``, ``"frame search"``
            or ``""`` (it was not).
    """

    offset: int
    length: int
    why: str
    resumed: str = ""

    def to_json(self) -> dict[str, object]:
        """As listed in ``--format stats``."""
        return {"offset": self.offset, "length": self.length, "why": self.why, "resumed": self.resumed}

    def describe(self) -> str:
        """One line for a warning."""
        end = f"; frames resume on a {self.resumed}" if self.resumed else ""
        return f"{self.length} bytes at stream offsets {self.offset}..{self.offset + self.length} ({self.why}{end})"


@dataclasses.dataclass
class TpiuStats:
    """What the deframer saw."""

    frames: int = 0
    full_syncs: int = 0
    half_syncs: int = 0
    skipped: int = 0  # bytes before the first frame
    alignment: int = 0  # stream position of the first frame
    realignments: int = 0  # times the grid was found again after losing it
    unframed_bytes: int = 0  # bytes that belong to no frame (``skipped`` included)
    unframed: list[Unframed] = dataclasses.field(default_factory=list)  # the first MAX_REGIONS
    id_bytes: dict[int, int] = dataclasses.field(default_factory=dict)
    unknown_source_bytes: int = 0  # data bytes before the first ID change (or after a re-alignment)

    def to_json(self) -> dict[str, object]:
        """The ``tpiu`` object of ``--format stats``."""
        return {
            "frames": self.frames,
            "ids": {str(k): v for k, v in sorted(self.id_bytes.items())},
            "unknown_source_bytes": self.unknown_source_bytes,
            "full_syncs": self.full_syncs,
            "half_syncs": self.half_syncs,
            "skipped_bytes": self.skipped,
            "unframed_bytes": self.unframed_bytes,
            "realignments": self.realignments,
            "unframed": [u.to_json() for u in self.unframed],
        }


# -- judging a grid ---------------------------------------------------------------------------------
@dataclasses.dataclass
class Run:
    """Frames read from one start until the first break (or the end of the bytes weighed).

    Attributes:
        start: Where the first frame begins (index in the sample).
        frames: Frames that held up.
        broke: The kernel's stop code at the end (``STOP_NONE``: the run reached the end).
        changes: ID changes per ID.
        redundant: Changes to the ID already current.
        null_noise: Non-zero bytes under the null ID.
        wanted: Bytes of the wanted source.
        leading: Of the redundant changes, those in byte 0 of a frame (at most one per frame).
    """

    start: int
    frames: int
    broke: int
    changes: np.ndarray
    redundant: int
    null_noise: int
    wanted: bytes
    leading: int = 0

    @property
    def full(self) -> bool:
        """True if nothing broke the run."""
        return self.broke == tpiu_kernel.STOP_NONE

    @property
    def ids(self) -> list[int]:
        """The IDs changed to."""
        return [int(i) for i in np.flatnonzero(self.changes)]

    def plausible(self, min_frames: int, strict: bool = True) -> bool:
        """True if these frames hold up as a formatter's: enough of them, a few valid IDs, at
        least one real source, and changes to the current ID rare but at the start of a frame
        (raw ITM read as frames repeats ``01`` on every byte; many probes' formatters begin every
        frame with its ID, the current one or not: one repeat per frame, in byte 0).
        ``strict`` also wants the null ID's bytes zero (padding), but for one in 32 frames (or one).
        """
        ids = self.ids
        total = int(self.changes.sum())
        return (
            self.frames >= min_frames
            and 0 < len(ids) <= MAX_SOURCES
            and any(0 < i < 0x70 for i in ids)
            and self.redundant - self.leading <= max(2, total // 4)
            and (not strict or self.null_noise <= max(1, self.frames // NULL_NOISE_FRAMES))
        )


def measure(sample: bytes, start: int, source_id: int, length: int | None = None) -> Run:
    """Read ``sample[start : start + length]`` as frames until the first break."""
    data = np.frombuffer(sample, np.uint8)[start : None if length is None else start + length]

    def deframe(wanted: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        state = tpiu_kernel.new_state()
        changes = np.zeros(tpiu_kernel.ID_COUNT, np.int64)
        out = np.empty(data.shape[0] + FRAME, np.uint8)
        n, _ = tpiu_kernel.deframe(
            data,
            start,
            state,
            np.zeros(FRAME, np.uint8),
            wanted,
            out,
            np.zeros(tpiu_kernel.ID_COUNT, np.int64),
            changes,
            tpiu_kernel.ALL_VALID,
        )
        return state, changes, out[:n]

    state, changes, wanted = deframe(source_id)
    # The null ID's bytes, read the same way (only when the frames change to it).
    null_noise = int(np.count_nonzero(deframe(NULL_ID)[2])) if changes[NULL_ID] else 0
    frames = int(state[tpiu_kernel.S_FRAMES])
    redundant = int(state[tpiu_kernel.S_REDUNDANT])
    firsts = data[FRAME : FRAME * frames : FRAME]  # byte 0 of every frame after the first
    leading = int(np.count_nonzero((firsts & 1).astype(bool) & (changes[firsts >> 1] > 0))) if redundant else 0
    return Run(
        start,
        frames,
        int(state[tpiu_kernel.S_STOP]),
        changes,
        redundant,
        null_noise,
        wanted.tobytes(),
        min(leading, redundant),
    )


def _itm_damage(data: bytes) -> float:
    """Reserved or malformed ITM packets per byte of ``data``."""
    itm = ItmDecoder(packets=False)
    itm.feed(data)
    itm.finish()
    return itm.stats.reserved / max(1, len(data))


@dataclasses.dataclass(frozen=True)
class Grid:
    """Where a search found the frames.

    Attributes:
        start: Where the first frame begins (index in the sample searched).
        found_by: ``"full sync"`` or ``"frame search"``.
        ids: The IDs the frames changed to.
        full: The frames held up over everything weighed.
        ambiguous: Other starts that fit exactly as well and give other bytes (a frame search only).
        wanted: The wanted source's bytes in the frames weighed.
    """

    start: int
    found_by: str
    ids: tuple[int, ...]
    full: bool
    ambiguous: tuple[int, ...] = ()
    wanted: bytes = dataclasses.field(default=b"", repr=False)


def locate(
    sample: bytes,
    source_id: int = 1,
    *,
    min_frames: int = MIN_FRAMES,
    keep: int | None = None,
    known: tuple[int, ...] = (),
    strict: bool = True,
    trust_sync: bool = False,
    window: int = SEARCH_WINDOW,
) -> Grid | None:
    """Find where the first whole frame of ``sample`` begins, or None if it holds no frames.

    A full sync (at any byte offset, among the first few) whose following frames hold up fixes the
    grid; frames before it on that grid are taken back as far as they hold up with the same IDs
    or with the IDs in ``known`` (so a stream framed from byte 0 loses nothing before its first
    sync). Without one, each of the
    16 starts is read as frames over ``window`` bytes and weighed, in this order:

    1. ``keep``: the start of the grid in use, if its frames hold up over the whole window (a new
       source appeared, nothing slipped);
    2. frames that hold up over the whole window, else the longest run;
    3. fewer non-zero bytes under the null ID (formatters pad with zeros);
    4. the wanted source decoding as cleaner ITM (weighed only when the best reads as ITM at all);
    5. more ID changes seen, then the earliest start.

    Starts equal on 1-4 that give different bytes are reported as :attr:`Grid.ambiguous`.
    ``trust_sync`` (the stream is known to be formatted) takes the first full sync for a boundary
    even when too few frames follow it to judge. Only
    the first ``window`` bytes (and a frame) are looked at, so the answer does not depend on how
    much more the caller happens to hold.
    """
    sample = sample[: window + FRAME]
    grid = _by_sync(sample, source_id, min_frames, window, known, trust_sync)
    if grid is not None:
        if grid.start < FRAME * min_frames:
            return grid
        # A long stretch before the sync that is not on its grid: frames on another grid (bytes
        # slipped before the sync), or none.
        before = _by_search(sample[: grid.start], source_id, min_frames, None, window, strict)
        return before if before is not None else grid
    return _by_search(sample, source_id, min_frames, keep, window, strict)


def _by_sync(
    sample: bytes, source_id: int, min_frames: int, window: int, known: tuple[int, ...], trust: bool
) -> Grid | None:
    at = sample.find(FULL_SYNC)
    for _ in range(MAX_SYNC_TRIES):
        if at < 0:
            return None
        boundary = at + len(FULL_SYNC)
        # Raw ITM that happens to contain the pattern fails on the frames after it; frames that
        # run to the end of the sample are all there is to judge (one is enough then).
        run = measure(sample, boundary, source_id, window)
        trusted = trust and run.full and not run.frames  # nothing after it to contradict it
        if trusted or run.plausible(1 if run.full else min_frames, strict=False):  # the sync is evidence enough
            start = _walk_back(sample, at, {*run.ids, *known, source_id, NULL_ID, TRIGGER_ID, FLUSH_ID})
            return Grid(start, "full sync", tuple(run.ids), run.full, wanted=run.wanted)
        at = sample.find(FULL_SYNC, at + 1)
    return None


def _walk_back(sample: bytes, boundary: int, ids: set[int]) -> int:
    """The earliest start of whole frames ending at ``boundary`` on its grid: frames (with the
    half syncs among them) that keep the formatter's rules and change only to ``ids``.
    """
    reserved = tpiu_kernel.RESERVED_ID
    at = boundary
    while True:
        while at >= 2 and sample[at - 2 : at] == HALF_SYNC:
            at -= 2
        pos = at
        halves: list[bytes] = []
        while len(halves) < FRAME // 2:
            if pos < 2:
                return at
            half = sample[pos - 2 : pos]
            pos -= 2
            if half == HALF_SYNC:
                continue
            if half == b"\xff\xff":
                return at
            halves.append(half)
        frame = b"".join(reversed(halves))
        for j in range(0, FRAME, 2):
            if frame[j] & 1:
                new_id = frame[j] >> 1
                if reserved[new_id] or new_id not in ids or (j == 14 and frame[15] & 0x80):
                    return at
        at = pos


def _by_search(
    sample: bytes, source_id: int, min_frames: int, keep: int | None, window: int, strict: bool
) -> Grid | None:
    runs = [measure(sample, start, source_id, window) for start in range(min(FRAME, len(sample)))]
    runs = [r for r in runs if r.plausible(min_frames, strict)]
    if not runs:
        return None
    damage = {r.start: _itm_damage(r.wanted) for r in runs}
    weigh_itm = min(damage.values()) < CLEAN_ITM

    def evidence(r: Run) -> tuple[object, ...]:
        kept = 0 if keep is not None and r.start == keep and r.full else 1
        length = (0, 0) if r.full else (1, -r.frames)
        return (kept, *length, r.null_noise, damage[r.start] if weigh_itm else 0.0)

    ranked = sorted(runs, key=lambda r: (*evidence(r), -int(r.changes.sum()), r.start))
    best = ranked[0]
    tied = tuple(r.start for r in ranked[1:] if evidence(r) == evidence(best) and r.wanted != best.wanted)
    return Grid(best.start, "frame search", tuple(best.ids), best.full, tied, best.wanted)


def detect(sample: bytes, source_id: int = 1, strict: bool = True) -> Grid | None:
    """Decide whether ``sample`` (the start of a stream) is TPIU-formatted.

    It is if a full sync is followed by frames that hold up, or if some :data:`SEARCH_WINDOW`
    block of the sample has a start from which frames hold up across the whole block (so bytes
    slipped early in the stream do not hide the formatting). Without a sync, ``strict`` (``--tpiu
    auto``) also weighs the other reading: a block that decodes as clean raw ITM (fewer than one
    reserved packet in 200 bytes) is raw ITM. Very regular raw ITM can look like frames; frames read as
    raw ITM give a reserved packet every 30-80 bytes (the corpus and generated streams). Returns
    the grid of the first block that shows it (its ``start`` counts from the sample's start), or
    None.
    """
    for block in range(0, max(1, len(sample)), SEARCH_WINDOW):
        part = sample[block : block + SEARCH_WINDOW + FRAME]
        grid = locate(part, source_id, strict=strict)
        if (
            grid is not None
            and (grid.full or grid.found_by == "full sync")
            and (grid.found_by == "full sync" or not (strict and _reads_as_raw_itm(part)))
        ):
            return dataclasses.replace(grid, start=block + grid.start)
        if len(part) < SEARCH_WINDOW:
            break
    return None


def _reads_as_raw_itm(part: bytes) -> bool:
    """True if ``part`` read as raw ITM is clean."""
    return _itm_damage(part) < RAW_ITM_DAMAGE


def frame_alignment(sample: bytes, source_id: int = 1, min_frames: int = MIN_FRAMES) -> int | None:
    """Where the first whole frame of ``sample`` begins if it is TPIU-formatted, else None."""
    grid = detect(sample, source_id) if min_frames == MIN_FRAMES else locate(sample, source_id, min_frames=min_frames)
    return None if grid is None else grid.start


def looks_formatted(sample: bytes, source_id: int = 1) -> bool:
    """True if ``sample`` (the start of a stream) is TPIU-formatted."""
    return detect(sample, source_id) is not None


# -- the deframer -----------------------------------------------------------------------------------
@dataclasses.dataclass
class Deframed:
    """A piece of the wanted source's bytes; ``lost_before`` is set when the stream of that source
    is broken just before it (the grid was lost and found again: bytes between are unknown).
    """

    data: bytes
    lost_before: int | None = None


class TpiuDeframer:
    """Extracts one source ID's bytes from a TPIU-formatted stream, incrementally.

    Args:
        source_id: The TPIU ID that carries ITM (``ITM_TCR.TraceBusID``; 1 by default).
        alignment: Where the first frame begins (bytes before it are skipped); None to search
            for it in the first bytes fed.
        ids: The IDs the caller has seen in the stream (a change to another one makes the
            deframer check the grid); None accepts every valid ID.
        strict: Searches want the null ID's bytes zero, as formatters pad (see :meth:`Run.plausible`).
    """

    def __init__(
        self, source_id: int = 1, alignment: int | None = 0, ids: tuple[int, ...] | None = None, strict: bool = False
    ) -> None:
        if not 0 < source_id < 0x70:
            raise ValueError(f"TPIU source ID must be 1..111, not {source_id}")
        self.source_id = source_id
        self.strict = strict
        self._state = tpiu_kernel.new_state()
        self._frame = np.zeros(FRAME, np.uint8)
        self._id_bytes = np.zeros(tpiu_kernel.ID_COUNT, np.int64)
        self.id_changes = np.zeros(tpiu_kernel.ID_COUNT, np.int64)
        if ids is None:
            self._expected = tpiu_kernel.ALL_VALID.copy()
        else:
            self._expected = np.zeros(tpiu_kernel.ID_COUNT, np.uint8)
            self._expect(ids)
        self._position = 0  # stream position of the next byte fed
        self._carry = b""  # bytes taken on the grid but not yet deframed (an odd byte)
        self._lost_before: int | None = None  # the next piece follows a break of this many bytes
        self._started = False  # a grid was found once
        # Searching (not None): the bytes collected from stream position ``_search_at`` on, why
        # the grid was lost, and the start that keeps the grid in use (a new ID, not a slip).
        self._search: bytearray | None = None
        self._search_at = 0
        self._search_why = ""
        self._search_keep: int | None = None
        self._skip = 0
        self.stats = TpiuStats()
        self.ambiguity: Grid | None = None  # the first search with several equally good answers
        if alignment is None:
            self._start_search(0, "before the first frame", None)
        else:
            self._skip = alignment
            self.stats.alignment = alignment
            self._started = alignment == 0

    # -- feeding ---------------------------------------------------------------------------------
    def feed(self, data: bytes) -> bytes:
        """Deframe the next bytes; return the wanted source's bytes (breaks are in the stats)."""
        return b"".join(piece.data for piece in self.feed_pieces(data))

    def feed_pieces(self, data: bytes | memoryview) -> list[Deframed]:
        """Deframe the next bytes into pieces of the wanted source (a break starts a new piece)."""
        pieces: list[Deframed] = []
        data = bytes(data)
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            self._note(Unframed(self._position, dropped, "before the first frame"), skipped=True)
            self._position += dropped
            data = data[dropped:]
            self._started = not self._skip
        self._pump(data, pieces, final=False)
        return pieces

    def gap(self, lost: int) -> list[Deframed]:
        """``lost`` stream bytes are missing here: the grid must be found again after them."""
        pieces: list[Deframed] = []
        self._pump(b"", pieces, final=True)
        if self._search is None:
            fill = int(self._state[tpiu_kernel.S_FILL]) + len(self._carry)
            self._note(Unframed(self._position - fill, fill, "capture gap"))
            self._state = _fresh_state(self._state)
            self._carry = b""
        self._position += max(0, lost)
        self._start_search(self._position, "capture gap", None)
        return pieces

    def finish(self) -> list[Deframed]:
        """End of stream: weigh what a search collected."""
        pieces: list[Deframed] = []
        self._pump(b"", pieces, final=True)
        return pieces

    @property
    def redundant_changes(self) -> int:
        """ID changes to the ID already current."""
        return int(self._state[tpiu_kernel.S_REDUNDANT])

    @property
    def partial_frame_bytes(self) -> int:
        """Bytes of an unfinished frame (reported at the end of a stream)."""
        if self._search is not None:
            return 0
        return int(self._state[tpiu_kernel.S_FILL]) + len(self._carry)

    # -- internals -------------------------------------------------------------------------------
    def _expect(self, ids: tuple[int, ...] | list[int]) -> None:
        for i in (*ids, self.source_id, NULL_ID, TRIGGER_ID, FLUSH_ID):
            self._expected[i] = 1

    def _pump(self, todo: bytes, pieces: list[Deframed], final: bool) -> None:
        """Deframe ``todo`` (it starts at the current position), searching where the grid is lost."""
        while True:
            if self._search is not None:
                self._search += todo
                self._position += len(todo)
                todo = b""
                if not self._search or (not final and len(self._search) < SEARCH_WINDOW + FRAME):
                    return
                todo = self._resolve(final)
            elif todo:
                todo = self._run_grid(todo, pieces)
            else:
                return

    def _run_grid(self, data: bytes, pieces: list[Deframed]) -> bytes:
        """Deframe on the current grid; return the bytes after a frame that made it search."""
        k = tpiu_kernel
        buf = np.frombuffer(self._carry + data, np.uint8)
        base = self._position - len(self._carry)
        self._position += len(data)
        self._carry = b""
        done = 0
        lost_before, self._lost_before = self._lost_before, None
        # A frame completed by these bytes may hold up to 14 bytes that arrived in earlier calls.
        out = np.empty(buf.shape[0] + FRAME, np.uint8)
        while True:
            n, used = k.deframe(
                buf[done:],
                base + done,
                self._state,
                self._frame,
                self.source_id,
                out,
                self._id_bytes,
                self.id_changes,
                self._expected,
            )
            if n or lost_before is not None:
                pieces.append(Deframed(out[:n].tobytes(), lost_before))
                lost_before = None
            done += used
            stop = int(self._state[k.S_STOP])
            self._sync_stats()
            if stop == k.STOP_NONE:
                self._carry = bytes(buf[done:])
                return b""
            at, cut_from = int(self._state[k.S_STOP_AT]), int(self._state[k.S_STOP_FROM])
            if stop == k.STOP_SYNC:
                # The kernel re-aligned on a full sync off the grid: frames read since the bytes
                # slipped were on the wrong grid, and the frame it cut is lost.
                self.stats.realignments += 1
                self._note(Unframed(cut_from, at - cut_from, "frames lost alignment", "full sync"))
                self._state[k.S_ID] = self._source_after_loss()
                lost_before = at - cut_from
                continue
            # A frame that breaks the rules or changes to a new ID: search from its start. Its
            # bytes are in the kernel's frame buffer (half syncs inside it are gone).
            keep = 0 if stop == k.STOP_UNEXPECTED_ID else None
            self._start_search(at, "frames lost alignment", keep)
            self._search = bytearray(self._frame.tobytes())
            self._position = at + FRAME
            return bytes(buf[done:])

    def _start_search(self, at: int, why: str, keep: int | None) -> None:
        self._search = bytearray()
        self._search_at = at
        self._search_why = why
        self._search_keep = keep

    def _resolve(self, final: bool) -> bytes:
        """Search the bytes collected for the grid. Returns the bytes to deframe on it; or, when
        none holds up, gives up the bytes no later frame can start in and keeps searching.
        """
        assert self._search is not None
        sample = bytes(self._search[: SEARCH_WINDOW + FRAME])
        at, why, keep = self._search_at, self._search_why, self._search_keep
        known = tuple(int(i) for i in np.flatnonzero(self._expected)) if self._started else ()
        grid = locate(sample, self.source_id, keep=keep, known=known, strict=self.strict)
        if grid is None:
            # The first half-window can start no frame that holds up: give it up (all at the end).
            give_up = len(sample) if final and len(sample) <= SEARCH_WINDOW else SEARCH_WINDOW // 2
            if not self._started:
                why = "no frame grid found"
            self._note(Unframed(at, give_up, why), skipped=not self._started)
            del self._search[:give_up]
            self._search_at = at + give_up
            return b""
        if grid.ambiguous and self.ambiguity is None:
            self.ambiguity = dataclasses.replace(
                grid, start=at + grid.start, ambiguous=tuple(at + s for s in grid.ambiguous)
            )
        rest = bytes(self._search[grid.start :])
        self._search = None
        self._expect(grid.ids)
        resumed = keep is not None and grid.start == keep
        if not resumed:
            self._state = _fresh_state(self._state)
            self._state[tpiu_kernel.S_ID] = self._source_after_loss()
            if self._started:
                self.stats.realignments += 1
                if why != "capture gap":  # (a capture gap is reported as such by the caller)
                    self._lost_before = grid.start
        self._note(Unframed(at, grid.start, why, grid.found_by if self._started else ""), skipped=not self._started)
        if not self._started:
            self.stats.alignment = at + grid.start
            self._started = True
        self._position = at + grid.start
        self._carry = b""
        return rest

    def _source_after_loss(self) -> int:
        """The source of the bytes on a new grid before its first ID change: the stream's only
        source if it has carried one so far, else unknown (-1; those bytes are counted).
        """
        sources = [i for i in np.flatnonzero(self._id_bytes) if 0 < i < 0x70]
        return int(sources[0]) if len(sources) == 1 else -1

    def _note(self, region: Unframed, skipped: bool = False) -> None:
        """Count bytes that belong to no frame (a region that continues the last one joins it)."""
        if region.length <= 0:
            return
        self.stats.unframed_bytes += region.length
        if skipped:
            self.stats.skipped += region.length
        regions = self.stats.unframed
        last = regions[-1] if regions else None
        if last is not None and not last.resumed and last.offset + last.length == region.offset:
            regions[-1] = Unframed(last.offset, last.length + region.length, last.why, region.resumed)
        elif len(regions) < MAX_REGIONS:
            regions.append(region)

    def _sync_stats(self) -> None:
        s = self._state
        self.stats.frames = int(s[tpiu_kernel.S_FRAMES])
        self.stats.full_syncs = int(s[tpiu_kernel.S_FULL_SYNCS])
        self.stats.half_syncs = int(s[tpiu_kernel.S_HALF_SYNCS])
        self.stats.unknown_source_bytes = int(s[tpiu_kernel.S_UNKNOWN])
        self.stats.id_bytes = {i: int(v) for i, v in enumerate(self._id_bytes) if v}


def _fresh_state(old: np.ndarray) -> np.ndarray:
    """A state on a new grid: counters kept, the frame being collected and the current ID forgotten."""
    k = tpiu_kernel
    state = k.new_state()
    for slot in (k.S_FRAMES, k.S_FULL_SYNCS, k.S_HALF_SYNCS, k.S_STRAY, k.S_REDUNDANT, k.S_UNKNOWN):
        state[slot] = old[slot]
    return state
