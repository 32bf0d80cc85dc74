"""The most recent inferences, kept whole (with their layer spans), bounded.

At full rate a thousand inferences close every second and the screen looks at one of them ten
times a second, so a record keeps the columns of the feed that closed it (an
:class:`InferenceBlock`) and builds its Python objects only when someone asks. What happened
during an inference (interrupts, cache operations, NPU jobs, marks) is kept beside the ring, in
time order, by :class:`~tracer.session.window.EventWindow`.
"""

from __future__ import annotations

import collections
import dataclasses
import functools

import numpy as np

from tracer.base.timeline import Inference, Inferences, LayerSpans

DEFAULT_RING = 256


def _opt(value: np.int64) -> int | None:
    return None if value < 0 else int(value)


@dataclasses.dataclass(frozen=True)
class InferenceBlock:
    """The inferences one feed closed, as columns.

    Attributes:
        inferences: The inference rows.
        spans: Their layer spans; row ``i``'s are ``span_first[i]:span_end[i]`` (consecutive rows
            have consecutive ranges).
        span_first, span_end: Span ranges per inference row.
    """

    inferences: Inferences
    spans: LayerSpans
    span_first: np.ndarray
    span_end: np.ndarray


class InferenceRecord:
    """One inference and what happened during it (objects built on first use).

    Args:
        block: The feed's columns.
        row: This inference's row in them.
    """

    __slots__ = ("__dict__", "_block", "_row")

    def __init__(self, block: InferenceBlock, row: int) -> None:
        self._block = block
        self._row = row

    @property
    def number(self) -> int:
        """The inference number."""
        return int(self._block.inferences.number[self._row])

    @property
    def complete(self) -> bool:
        """False when data of this inference was lost or damaged."""
        return bool(self._block.inferences.complete[self._row])

    @functools.cached_property
    def inference(self) -> Inference:
        """Number, start, end, completeness, problems and layer spans (by start)."""
        b, i = self._block, self._row
        inf = b.inferences
        rows = range(int(b.span_first[i]), int(b.span_end[i]))
        spans = sorted((b.spans.row(r) for r in rows), key=lambda s: s.start)
        return Inference(
            number=int(inf.number[i]),
            start=_opt(inf.start[i]),
            end=_opt(inf.end[i]),
            complete=bool(inf.complete[i]),
            problems=inf.problems[i],
            layers=tuple(spans),
            input_crc=_opt(inf.input_crc[i]),
            output_crc=_opt(inf.output_crc[i]),
        )

    @property
    def block(self) -> InferenceBlock:
        """The feed's columns this record is a row of."""
        return self._block

    @property
    def row(self) -> int:
        """Its row in :attr:`block`."""
        return self._row

    @property
    def start(self) -> int | None:
        """Start cycle, if known."""
        return _opt(self._block.inferences.start[self._row])

    @property
    def end(self) -> int | None:
        """End cycle, if known."""
        return _opt(self._block.inferences.end[self._row])


class InferenceRing:
    """A bounded window of :class:`InferenceRecord`, oldest first.

    ``dropped`` counts the inferences that left it; ``horizon`` is the start cycle of the newest of
    them (None while none has): events before it belong to inferences no longer kept.

    Args:
        size: How many to keep.
    """

    def __init__(self, size: int = DEFAULT_RING) -> None:
        if size < 1:
            raise ValueError("the ring holds at least one inference")
        self._items: collections.deque[InferenceRecord] = collections.deque(maxlen=size)
        self.dropped = 0
        self.horizon: int | None = None

    @property
    def size(self) -> int:
        """Capacity."""
        return int(self._items.maxlen or 0)

    def add_block(self, block: InferenceBlock) -> None:
        """Add the block's inferences in order (only the newest ``size`` can stay)."""
        n = len(block.inferences)
        leaving = max(0, len(self._items) + n - self.size)
        if leaving:
            # The newest inference to leave: what happened before it is no longer shown.
            if leaving > len(self._items):
                last = InferenceRecord(block, leaving - len(self._items) - 1)
            else:
                last = self._items[leaving - 1]
            moment = last.start if last.start is not None else last.end
            if moment is not None:
                self.horizon = moment if self.horizon is None else max(self.horizon, moment)
            self.dropped += leaving
        for row in range(max(0, n - self.size), n):
            self._items.append(InferenceRecord(block, row))

    def __len__(self) -> int:
        return len(self._items)

    @property
    def holds_everything(self) -> bool:
        """True while no inference has left the ring."""
        return self.dropped == 0

    def items(self) -> tuple[InferenceRecord, ...]:
        """The records, oldest first."""
        return tuple(self._items)
