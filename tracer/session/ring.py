"""The most recent inferences, kept whole (spans, ISRs, cache operations, NPU jobs, marks), bounded.

At full rate a thousand inferences close every second and the screen looks at one of them ten
times a second, so a record keeps the columns of the feed that closed it (an
:class:`InferenceBlock`) and builds its Python objects only when someone asks.
"""

from __future__ import annotations

import collections
import dataclasses
import functools

import numpy as np

from tracer.telemetry.model import CacheOp, Inference, Inferences, IsrSlice, LayerSpans, Mark, NpuJob
from tracer.telemetry.wire import CACHE_OPS

DEFAULT_RING = 256


def _opt(value: np.int64) -> int | None:
    return None if value < 0 else int(value)


@dataclasses.dataclass(frozen=True)
class InferenceBlock:
    """The inferences one feed closed, as columns, with the events that happened in them.

    Attributes:
        inferences: The inference rows.
        spans: Their layer spans; row ``i``'s are ``span_first[i]:span_end[i]``.
        span_first, span_end: Span ranges per inference row.
        cache: Cache-operation columns (cycle, op, address, length, inference number).
        jobs: NPU-job columns (start, end, inference number, job id).
        isrs: Interrupt slices with the inference number they began in.
        marks: Marks stamped between an inference's start and end.
    """

    inferences: Inferences
    spans: LayerSpans
    span_first: np.ndarray
    span_end: np.ndarray
    cache: tuple[np.ndarray, ...]
    jobs: tuple[np.ndarray, ...]
    isrs: tuple[tuple[int, IsrSlice], ...] = ()
    marks: tuple[Mark, ...] = ()


class InferenceRecord:
    """One inference and what happened during it (objects built on first use).

    Args:
        block: The feed's columns.
        row: This inference's row in them.
    """

    __slots__ = ("_block", "_row", "__dict__")

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
            number=int(inf.number[i]), start=_opt(inf.start[i]), end=_opt(inf.end[i]),
            complete=bool(inf.complete[i]), problems=inf.problems[i], layers=tuple(spans),
            input_crc=_opt(inf.input_crc[i]), output_crc=_opt(inf.output_crc[i]),
        )  # fmt: skip

    @functools.cached_property
    def cache_ops(self) -> tuple[CacheOp, ...]:
        """Cache maintenance reported in this inference."""
        cycle, op, address, length, owner = self._block.cache
        rows = np.flatnonzero(owner == self.number).tolist()
        return tuple(CacheOp(int(cycle[r]), CACHE_OPS.get(int(op[r]), f"op{int(op[r])}"), int(address[r]),
                             int(length[r]), self.number) for r in rows)  # fmt: skip

    @functools.cached_property
    def npu_jobs(self) -> tuple[NpuJob, ...]:
        """NPU jobs in this inference."""
        start, end, owner, job = self._block.jobs
        rows = np.flatnonzero(owner == self.number).tolist()
        return tuple(NpuJob(int(start[r]), _opt(end[r]), self.number, int(job[r])) for r in rows)

    @functools.cached_property
    def isrs(self) -> tuple[IsrSlice, ...]:
        """Interrupt slices that began in this inference."""
        return tuple(s for owner, s in self._block.isrs if owner == self.number)

    @functools.cached_property
    def marks(self) -> tuple[Mark, ...]:
        """Marks stamped inside this inference."""
        inf = self.inference
        if inf.start is None or inf.end is None:
            return ()
        return tuple(m for m in self._block.marks if inf.start <= m.cycle <= inf.end)


def empty_columns(count: int) -> tuple[np.ndarray, ...]:
    """``count`` empty int64 columns."""
    return tuple(np.zeros(0, np.int64) for _ in range(count))


class InferenceRing:
    """A bounded window of :class:`InferenceRecord`, oldest first.

    Args:
        size: How many to keep.
    """

    def __init__(self, size: int = DEFAULT_RING) -> None:
        if size < 1:
            raise ValueError("the ring holds at least one inference")
        self._items: collections.deque[InferenceRecord] = collections.deque(maxlen=size)

    @property
    def size(self) -> int:
        """Capacity."""
        return int(self._items.maxlen or 0)

    def add_block(self, block: InferenceBlock) -> None:
        """Add the block's inferences in order (only the newest ``size`` can stay)."""
        n = len(block.inferences)
        for row in range(max(0, n - self.size), n):
            self._items.append(InferenceRecord(block, row))

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> tuple[InferenceRecord, ...]:
        """The records, oldest first."""
        return tuple(self._items)
