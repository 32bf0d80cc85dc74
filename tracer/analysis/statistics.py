"""Statistics of cycle counts: one summary type, one percentile definition, one JSON form.

Percentiles are *nearest rank*: the value at position ``ceil(q * n)`` (1-based) of the sorted
values, so every reported percentile is a value that was measured. The population standard
deviation (numpy's default) is used throughout.

Two ways to get a :class:`CycleSummary`: :func:`summarize` of an array (reports, the live screen's
window), and :class:`RunningStats`, which stays the same size however long a stream runs: its
count, min, max, mean and std cover every value ever added and are exact (sums kept as Python
integers); its p50 and p99 cover a window of the most recent values (exact over the whole run
while it is shorter than the window).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

DEFAULT_WINDOW = 4096
HISTOGRAM_BINS = 10
# Median absolute deviation to standard deviation, for normally distributed noise.
MAD_TO_SIGMA = 1.4826

# Values below 2**40 are squared exactly in int64 by splitting them in two 20-bit halves.
_SPLIT = 20
_LOW_MASK = (1 << _SPLIT) - 1
_FAST_LIMIT = 1 << (2 * _SPLIT)
# Per call, each partial sum of squares must stay below 2**63: at most 2**22 values of < 2**40.
_FAST_BLOCK = 1 << 22


def run_starts(ordered: np.ndarray) -> np.ndarray:
    """Where each run of equal values in ``ordered`` starts (sorted values: each one's first row)."""
    return np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))


def rank_index(n: int, q: float) -> int:
    """The 0-based position of the nearest-rank ``q`` quantile among ``n`` sorted values."""
    return max(math.ceil(q * n), 1) - 1


def nearest_rank(values: np.ndarray, q: float) -> int:
    """The nearest-rank ``q`` quantile (q in (0, 1]) of non-empty ``values``, in any order."""
    k = rank_index(int(values.shape[0]), q)
    return int(np.partition(values, k)[k])


@dataclasses.dataclass(frozen=True)
class CycleSummary:
    """A set of cycle counts summed up.

    Attributes:
        count: Values summarised (for running statistics: ever added).
        min, max: Smallest and largest.
        p50, p99: Nearest-rank percentiles (over ``window`` values).
        mean, std: Mean and population standard deviation.
        window: How many values the percentiles cover (``count`` unless running statistics
            keep only a recent window).
    """

    count: int
    min: int
    p50: int
    p99: int
    max: int
    mean: float
    std: float
    window: int

    @property
    def cv(self) -> float:
        """Coefficient of variation (std over mean); 0 for a zero mean."""
        return self.std / self.mean if self.mean else 0.0

    def to_json(self) -> dict[str, int | float]:
        """``{min, p50, p99, max, mean, std}``, the report's form (``docs/report.md``)."""
        return {
            "min": self.min,
            "p50": self.p50,
            "p99": self.p99,
            "max": self.max,
            "mean": round(self.mean, 3),
            "std": round(self.std, 3),
        }


def summarize_sorted(ordered: np.ndarray, total: int | None = None) -> CycleSummary:
    """The summary of non-empty values in ascending order (``total``: their sum, if known)."""
    n = int(ordered.shape[0])
    mean = (float(ordered.sum()) if total is None else total) / n
    std = float(np.sqrt(np.mean((ordered - mean) ** 2)))
    return CycleSummary(
        count=n,
        min=int(ordered[0]),
        p50=int(ordered[rank_index(n, 0.5)]),
        p99=int(ordered[rank_index(n, 0.99)]),
        max=int(ordered[-1]),
        mean=float(mean),
        std=std,
        window=n,
    )


def summarize(values: np.ndarray) -> CycleSummary | None:
    """The summary of ``values`` (any order); None when there are none."""
    if values.shape[0] == 0:
        return None
    return summarize_sorted(np.sort(values))


def coefficient_of_variation(values: np.ndarray) -> float:
    """Std over mean of ``values``; 0 when there are none or the mean is 0."""
    mean = float(values.mean()) if len(values) else 0.0
    return float(values.std()) / mean if mean else 0.0


def histogram(values: np.ndarray, bins: int = HISTOGRAM_BINS) -> tuple[list[int], list[int]]:
    """(bin edges, counts) of non-empty ``values`` in at most ``bins`` bins of whole cycles.

    Bin ``k`` holds ``edges[k] <= v < edges[k + 1]``: the first edge is the smallest value, the last
    one past the largest, and no bin is narrower than one cycle (so distinct values a few cycles
    apart are never merged into one bin for want of width).
    """
    return histogram_sorted(np.sort(values), bins)


def histogram_sorted(ordered: np.ndarray, bins: int = HISTOGRAM_BINS) -> tuple[list[int], list[int]]:
    """:func:`histogram` of non-empty values already in ascending order (no sort)."""
    lo, hi = int(ordered[0]), int(ordered[-1])
    count = max(1, min(bins, hi - lo + 1))
    edges = np.floor(np.linspace(lo, hi + 1, count + 1)).astype(np.int64)
    # Every value lies in [edges[0], edges[-1]): each bin's count is where its edges fall.
    counts = np.diff(np.searchsorted(ordered, edges, side="left"))
    return edges.tolist(), counts.astype(int).tolist()


def exact_square_sum(values: np.ndarray) -> int:
    """The exact sum of squares of int64 ``values``, as a Python integer."""
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


class RunningStats:
    """Exact running count/min/max/mean/std plus a window of recent values for the percentiles.

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

    def summary(self) -> CycleSummary | None:
        """The statistics now; None before the first value."""
        if not self.count or self.min is None or self.max is None:
            return None
        held = self._ring[: self._held]
        n = int(held.shape[0])
        ranks = [rank_index(n, q) for q in (0.5, 0.99)]
        parted = np.partition(held, ranks)  # nearest rank without a full sort
        return CycleSummary(
            count=self.count,
            min=self.min,
            p50=int(parted[ranks[0]]),
            p99=int(parted[ranks[1]]),
            max=self.max,
            mean=self.mean,
            std=self.std,
            window=n,
        )


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


class Tally:
    """Integer values as (distinct value, how many times), merged across parts: exact nearest-rank
    quantiles of a column whose values repeat (PMU counters, work counts) in the memory of its
    distinct values.
    """

    PENDING = 8192  # values added and not counted in yet, at most (merging each part costs more)

    def __init__(self) -> None:
        self._values = np.zeros(0, np.int64)
        self._counts = np.zeros(0, np.int64)
        self._pending: list[np.ndarray] = []
        self._pending_count = 0

    def add(self, values: np.ndarray) -> None:
        """Count ``values`` in."""
        if not len(values):
            return
        self._pending.append(np.asarray(values, np.int64))
        self._pending_count += len(values)
        if self._pending_count >= self.PENDING:
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        joined = np.concatenate([self._values, *self._pending])
        weights = np.concatenate([self._counts, np.ones(self._pending_count, np.int64)])
        self._pending, self._pending_count = [], 0
        self._values, where = np.unique(joined, return_inverse=True)
        self._counts = np.bincount(where.reshape(-1), weights=weights, minlength=len(self._values)).astype(np.int64)

    @property
    def values(self) -> np.ndarray:
        """The distinct values, ascending."""
        self._merge()
        return self._values

    @property
    def counts(self) -> np.ndarray:
        """How many times each of :attr:`values` came."""
        self._merge()
        return self._counts

    def __len__(self) -> int:
        return int(self.counts.sum())

    def nearest_rank(self, q: float) -> int:
        """The nearest-rank ``q`` quantile of the values counted (as :func:`nearest_rank` of them all)."""
        k = rank_index(len(self), q)
        return int(self.values[int(np.searchsorted(np.cumsum(self.counts), k, side="right"))])
