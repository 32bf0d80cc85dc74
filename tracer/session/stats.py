"""Running statistics of cycle counts that stay the same size however long the stream runs.

``count``, ``min``, ``max``, ``mean`` and ``std`` cover every value ever added and are exact: sums
are kept as Python integers (sum and sum of squares), so the mean and the (population) standard
deviation are computed from exact integers and rounded once, at the end. ``p50`` and ``p99`` are
nearest-rank percentiles over a *window* of the most recent values (default 4,096): exact over the
whole run while it is shorter than the window, "recent behaviour" afterwards. The same window gives
the history and the distribution the TUI draws.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

DEFAULT_WINDOW = 4096

# Values below 2**40 are squared exactly in int64 by splitting them in two 20-bit halves.
_SPLIT = 20
_LOW_MASK = (1 << _SPLIT) - 1
_FAST_LIMIT = 1 << (2 * _SPLIT)
# Per call, each partial sum of squares must stay below 2**63: at most 2**22 values of < 2**40.
_FAST_BLOCK = 1 << 22


def exact_square_sum(values: np.ndarray) -> int:
    """The exact sum of squares of non-negative int64 ``values``, as a Python integer."""
    if values.shape[0] == 0:
        return 0
    if int(values.min()) >= 0 and int(values.max()) < _FAST_LIMIT:
        total = 0
        for start in range(0, values.shape[0], _FAST_BLOCK):
            part = values[start : start + _FAST_BLOCK]
            high, low = part >> _SPLIT, part & _LOW_MASK
            # v**2 = high**2 * 2**40 + 2*high*low * 2**20 + low**2; each partial sum fits int64.
            total += (int(np.sum(high * high)) << (2 * _SPLIT)) + (int(np.sum(high * low)) << (_SPLIT + 1))
            total += int(np.sum(low * low))
        return total
    return sum(v * v for v in values.tolist())


@dataclasses.dataclass(frozen=True)
class Summary:
    """What :class:`RunningStats` knows at a moment.

    Attributes:
        count: Values added, ever.
        min, max: Over every value.
        mean, std: Over every value (population standard deviation, as numpy's default).
        p50, p99: Nearest rank over the window.
        window: How many values the percentiles cover.
    """

    count: int
    min: int
    max: int
    mean: float
    std: float
    p50: int
    p99: int
    window: int

    @property
    def cv(self) -> float:
        """Coefficient of variation (std over mean); 0 for a zero mean."""
        return self.std / self.mean if self.mean else 0.0


class RunningStats:
    """Exact running count/min/max/mean/std plus a window of recent values for percentiles.

    Args:
        window: How many recent values to keep.
    """

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        if window < 1:
            raise ValueError("window must be at least 1")
        self.count = 0
        self.total = 0
        self.squares = 0
        self.min: int | None = None
        self.max: int | None = None
        self._ring = np.zeros(window, np.int64)
        self._next = 0  # where the next value goes
        self._held = 0  # values in the ring

    @property
    def window(self) -> int:
        """The window's capacity."""
        return int(self._ring.shape[0])

    def add(self, values: np.ndarray) -> None:
        """Add int64 values (in arrival order)."""
        values = np.asarray(values, np.int64)
        n = int(values.shape[0])
        if n == 0:
            return
        self.count += n
        lo, hi = int(values.min()), int(values.max())
        small = lo > -_FAST_LIMIT and hi < _FAST_LIMIT and n < _FAST_BLOCK  # the int64 sum cannot overflow
        self.total += int(values.sum(dtype=np.int64)) if small else sum(values.tolist())
        self.squares += exact_square_sum(values)
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)
        self._remember(values)

    def _remember(self, values: np.ndarray) -> None:
        size = self.window
        if values.shape[0] >= size:
            self._ring[:] = values[-size:]
            self._next = 0
            self._held = size
            return
        first = min(size - self._next, values.shape[0])
        self._ring[self._next : self._next + first] = values[:first]
        rest = values.shape[0] - first
        if rest:
            self._ring[:rest] = values[first:]
        self._next = (self._next + values.shape[0]) % size
        self._held = min(size, self._held + values.shape[0])

    def recent(self, limit: int | None = None) -> np.ndarray:
        """The values in the window, oldest first (at most ``limit`` of the newest)."""
        held = self._held
        if held < self.window:
            out = self._ring[:held]
        else:
            out = np.concatenate((self._ring[self._next :], self._ring[: self._next]))
        if limit is not None:
            out = out[-limit:] if limit > 0 else out[:0]
        return out.copy()

    @property
    def mean(self) -> float:
        """Exact mean, rounded once."""
        return self.total / self.count if self.count else 0.0

    @property
    def std(self) -> float:
        """Population standard deviation from exact integer sums."""
        if not self.count:
            return 0.0
        n = self.count
        numerator = n * self.squares - self.total * self.total  # n**2 * variance, exactly
        return math.sqrt(numerator) / n if numerator > 0 else 0.0

    def summary(self) -> Summary | None:
        """The statistics now; None before the first value."""
        if not self.count or self.min is None or self.max is None:
            return None
        held = self._ring[: self._held]
        n = int(held.shape[0])
        ranks = [max(math.ceil(q * n), 1) - 1 for q in (0.5, 0.99)]
        parted = np.partition(held, ranks)  # nearest rank without a full sort
        return Summary(
            count=self.count, min=self.min, max=self.max, mean=self.mean, std=self.std,
            p50=int(parted[ranks[0]]), p99=int(parted[ranks[1]]), window=n,
        )  # fmt: skip


class RunningMean:
    """An exact running mean of integers (PMU counters): a count and a Python-integer sum."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0

    def add(self, values: np.ndarray) -> None:
        """Add values."""
        if values.shape[0]:
            self.count += int(values.shape[0])
            self.total += sum(values.tolist()) if values.shape[0] > 4096 else int(values.sum(dtype=np.int64))

    @property
    def mean(self) -> float | None:
        """The mean, or None before the first value."""
        return self.total / self.count if self.count else None


def histogram(values: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts per bin and bin edges (integer cycle edges, at least one cycle wide)."""
    if values.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo, hi = int(values.min()), int(values.max())
    bins = max(1, min(bins, hi - lo + 1))
    edges = np.linspace(lo, hi + 1, bins + 1)
    counts, _ = np.histogram(values, bins=edges)
    return counts.astype(np.int64), np.floor(edges).astype(np.int64)
