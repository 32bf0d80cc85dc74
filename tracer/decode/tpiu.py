"""TPIU deframing and the detection of TPIU-formatted streams."""

from __future__ import annotations

import dataclasses
import enum

import numpy as np

from tracer.decode import tpiu_kernel

FULL_SYNC = b"\xff\xff\xff\x7f"
FRAME = 16
VALID_IDS = frozenset(range(0x00, 0x70)) | {0x7B, 0x7D}
TRIGGER_ID = 0x7D
NULL_ID = 0x00
DETECT_WINDOW = 64 * 1024


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


def frame_alignment(sample: bytes) -> int | None:
    """Return where the first whole frame starts in ``sample``, or None if it is not TPIU.

    A full sync marks the boundary for sure. Without one, each of the 16 alignments is scored:
    in a formatted stream every ID change names one of a few valid source IDs, while raw ITM
    bytes read as frames give many IDs, some never valid.
    """
    at = sample.find(FULL_SYNC)
    if 0 <= at < len(sample) - FRAME:
        return at
    best: tuple[int, int, int] | None = None
    for align in range(FRAME):
        ids = _frame_ids(sample, align)
        if ids is None:
            continue
        distinct, changes = len(set(ids)), len(ids)
        if changes == 0 or distinct > 6:
            continue
        score = (distinct, -changes, align)
        if best is None or score < best:
            best = score
    return best[2] if best is not None else None


def _frame_ids(sample: bytes, align: int, max_frames: int = 512) -> list[int] | None:
    """The ID changes of the frames at ``align``, or None if one is never valid."""
    frames = min((len(sample) - align) // FRAME, max_frames)
    if frames < 4:
        return None
    ids: list[int] = []
    for f in range(frames):
        base = align + f * FRAME
        for j in range(0, FRAME, 2):
            byte = sample[base + j]
            if byte & 1:
                if byte >> 1 not in VALID_IDS:
                    return None
                ids.append(byte >> 1)
    return ids


def looks_formatted(sample: bytes) -> bool:
    """True if ``sample`` (the start of a stream) is TPIU-formatted."""
    return frame_alignment(sample) is not None


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
        out = np.empty(buf.shape[0], np.uint8)
        n, used = tpiu_kernel.deframe(buf, self._state, self._frame, self.source_id, out, self._id_bytes)
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
    def partial_frame_bytes(self) -> int:
        """Bytes of an unfinished frame (reported at the end of a stream)."""
        return int(self._state[tpiu_kernel.S_FILL]) + len(self._carry)
