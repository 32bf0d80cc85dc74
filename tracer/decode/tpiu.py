"""TPIU deframing and the detection of TPIU-formatted streams."""

from __future__ import annotations

import dataclasses
import enum

import numpy as np

from tracer.decode import tpiu_kernel
from tracer.decode.itm import ItmDecoder

FULL_SYNC = b"\xff\xff\xff\x7f"
FRAME = 16
VALID_IDS = frozenset(range(0x00, 0x70)) | {0x7B, 0x7D}
TRIGGER_ID = 0x7D
NULL_ID = 0x00
DETECT_WINDOW = 64 * 1024
MIN_FRAMES = 4  # fewer whole frames than this are never taken for a formatted stream
MAX_SOURCES = 6  # distinct IDs a formatted stream plausibly carries
MAX_SYNC_TRIES = 4  # full-sync lookalikes tried before searching alignments


class TpiuMode(enum.Enum):
    """``--tpiu``: detect, force on, or force off."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


@dataclasses.dataclass
class TpiuStats:
    """What the deframer saw."""

    frames: int = 0
    full_syncs: int = 0
    half_syncs: int = 0
    skipped: int = 0  # bytes before the first frame boundary
    alignment: int = 0
    id_bytes: dict[int, int] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """The ``tpiu`` object of ``--format stats``."""
        return {
            "frames": self.frames,
            "ids": {str(k): v for k, v in sorted(self.id_bytes.items())},
            "full_syncs": self.full_syncs,
            "half_syncs": self.half_syncs,
            "skipped_bytes": self.skipped,
        }


def frame_alignment(sample: bytes, source_id: int = 1, min_frames: int = MIN_FRAMES) -> int | None:
    """Return where the first whole frame starts in ``sample``, or None if it is not TPIU.

    A full sync (``FF FF FF 7F``) marks a frame boundary for sure, once the frames after it hold up
    as TPIU (it never occurs inside valid frames: it would need an ID byte of 0x7F). Without one,
    each of the 16 alignments is tried by deframing the sample from there. A formatted stream read
    at its true alignment changes to a few valid IDs, at least one of them a real source, and never
    to the ID already current; raw ITM read as frames fails one of these. ID bytes sit at even
    offsets, so the parity of the start comes first: the parity whose starts see the most ID
    changes. Starts an even number of bytes apart see the same ID bytes; among them the one whose
    ``source_id`` bytes decode as ITM with the fewest reserved or malformed packets wins, then more
    ID changes, then fewer IDs, then the earliest. Fewer than ``min_frames`` whole frames are never
    taken for TPIU.
    """
    at = sample.find(FULL_SYNC)
    for _ in range(MAX_SYNC_TRIES):
        if at < 0:
            break
        # Every frame after the sync must hold up; one is enough (raw ITM that happens to
        # contain the sync pattern fails on the frames that follow it in a longer sample).
        if frame_plausible(sample, at, source_id):
            return at
        at = sample.find(FULL_SYNC, at + 1)
    by_parity: dict[int, list[tuple[float, int, int, int]]] = {0: [], 1: []}
    for start in range(min(FRAME, len(sample))):
        score = _score(sample, start, source_id, min_frames)
        if score is not None:
            by_parity[start % 2].append(score)
    ranked = [(min(s[1] for s in scores), min(scores)) for scores in by_parity.values() if scores]
    if not ranked:
        return None
    return min(ranked)[1][3]


def frame_plausible(sample: bytes, start: int, source_id: int = 1) -> bool:
    """True if the frames of ``sample`` from ``start`` hold up as TPIU (one frame is enough)."""
    return _score(sample, start, source_id, 1) is not None


def _score(sample: bytes, start: int, source_id: int, min_frames: int) -> tuple[float, int, int, int] | None:
    """Rank of a candidate start (lower is better), or None if frames from there are not TPIU."""
    deframer = TpiuDeframer(source_id, start)
    itm_bytes = deframer.feed(sample)
    if deframer.stats.frames < min_frames:
        return None
    changes = deframer.id_changes
    ids = [int(i) for i in np.flatnonzero(changes)]
    total = int(changes.sum())
    if not ids or any(i not in VALID_IDS for i in ids) or len(ids) > MAX_SOURCES:
        return None
    if not any(0 < i < 0x70 for i in ids):
        return None
    if deframer.redundant_changes > max(2, total // 8):
        return None
    itm = ItmDecoder(packets=False)
    itm.feed(itm_bytes)
    itm.finish()
    damage = itm.stats.reserved / max(1, len(itm_bytes))
    return (damage, -total, len(ids), start)


def looks_formatted(sample: bytes, source_id: int = 1) -> bool:
    """True if ``sample`` (the start of a stream) is TPIU-formatted."""
    return frame_alignment(sample, source_id) is not None


class TpiuDeframer:
    """Extracts one source ID's bytes from a TPIU-formatted stream, incrementally.

    Args:
        source_id: The TPIU ID that carries ITM (``ITM_TCR.TraceBusID``; 1 by default).
        alignment: Bytes to skip before the first frame (see :func:`frame_alignment`).
    """

    def __init__(self, source_id: int = 1, alignment: int = 0) -> None:
        if not 0 < source_id < 0x70:
            raise ValueError(f"TPIU source ID must be 1..111, not {source_id}")
        self.source_id = source_id
        self._state = tpiu_kernel.new_state()
        self._frame = np.zeros(FRAME, np.uint8)
        self._id_bytes = np.zeros(tpiu_kernel.ID_COUNT, np.int64)
        self.id_changes = np.zeros(tpiu_kernel.ID_COUNT, np.int64)
        self._skip = alignment
        self._carry = b""
        self.stats = TpiuStats(alignment=alignment)

    def feed(self, data: bytes) -> bytes:
        """Deframe the next bytes; return the wanted source's bytes."""
        if self._skip:
            dropped = min(self._skip, len(data))
            self.stats.skipped += dropped
            self._skip -= dropped
            data = data[dropped:]
        if self._carry:
            data = self._carry + bytes(data)
        buf = np.frombuffer(data, np.uint8)
        # A frame completed by these bytes may hold up to 14 bytes that arrived in earlier calls.
        out = np.empty(buf.shape[0] + FRAME, np.uint8)
        n, used = tpiu_kernel.deframe(buf, self._state, self._frame, self.source_id, out, self._id_bytes, self.id_changes)
        self._carry = bytes(buf[used:])
        self._sync_stats()
        return out[:n].tobytes()

    def _sync_stats(self) -> None:
        s = self._state
        self.stats.frames = int(s[tpiu_kernel.S_FRAMES])
        self.stats.full_syncs = int(s[tpiu_kernel.S_FULL_SYNCS])
        self.stats.half_syncs = int(s[tpiu_kernel.S_HALF_SYNCS])
        self.stats.id_bytes = {i: int(v) for i, v in enumerate(self._id_bytes) if v}

    @property
    def redundant_changes(self) -> int:
        """ID changes to the ID already current: a formatter never makes them."""
        return int(self._state[tpiu_kernel.S_REDUNDANT])

    @property
    def partial_frame_bytes(self) -> int:
        """Bytes of an unfinished frame (reported at the end of a stream)."""
        return int(self._state[tpiu_kernel.S_FILL]) + len(self._carry)
