"""Interrupt slices from the firmware's ISR marks (records ``ISR_ENTER``/``ISR_EXIT``: time, irq).

Marks nest: an exit closes the most recent open entry of the same interrupt. An exit with no entry
is counted, never guessed; an entry still open when its inference ends is closed at the
inference's end and marked ``repaired``.
"""

from __future__ import annotations

from typing import Iterable

from tracer.telemetry.model import IsrSlice, TelemetryRecord
from tracer.telemetry.wire import RecordType


def irq_name(number: int) -> str:
    """A short name for an exception or interrupt number as the firmware marks it."""
    return f"IRQ{number}"


class IsrTracker:
    """Pairs ISR marks into :class:`IsrSlice` objects as they arrive."""

    def __init__(self) -> None:
        self._open: list[tuple[int, int, int | None]] = []  # (irq, start cycle, inference)
        self.unmatched_exits = 0

    def feed(self, records: Iterable[TelemetryRecord]) -> list[tuple[int | None, IsrSlice]]:
        """Slices closed by ``records``, each with the inference its entry fell in."""
        out: list[tuple[int | None, IsrSlice]] = []
        for record in records:
            if record.type == RecordType.ISR_ENTER and record.words:
                self._open.append((record.words[0], record.cycle, record.inference))
            elif record.type == RecordType.ISR_EXIT and record.words:
                irq = record.words[0]
                at = next((i for i in range(len(self._open) - 1, -1, -1) if self._open[i][0] == irq), None)
                if at is None:
                    self.unmatched_exits += 1
                    continue
                number, start, inference = self._open.pop(at)
                out.append((inference, IsrSlice(start, record.cycle, number, irq_name(number), depth=at)))
        return out

    def close_inference(self, inference: int, end: int | None) -> list[tuple[int | None, IsrSlice]]:
        """Close entries still open in ``inference`` at its end (their exit was lost)."""
        out: list[tuple[int | None, IsrSlice]] = []
        keep = []
        for depth, (number, start, owner) in enumerate(self._open):
            if owner == inference and end is not None:
                out.append((owner, IsrSlice(start, end, number, irq_name(number), depth=depth, repaired=True)))
            else:
                keep.append((number, start, owner))
        self._open = keep[-64:]  # a runaway of unclosed entries must not grow without bound
        return out
