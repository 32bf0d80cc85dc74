"""Inference latency over a session: running statistics of every complete inference, and the most
recent latencies for the plot (a fixed-size history, oldest first).

A rolling view like the layers' (:mod:`tracer.session.layers` says why): count, min, max, mean and
standard deviation are the report's, exactly; p50 and p99 cover the most recent ``window``
inferences.
"""

from __future__ import annotations

import numpy as np

from tracer.analysis.statistics import RunningStats
from tracer.base.timeline import Inferences
from tracer.session.snapshot import LatencyInfo


class LatencyHistory:
    """Latency statistics and the last ``size`` inferences' latencies.

    Args:
        size: Recent inferences kept for the plot.
        window: Values the percentiles cover.
    """

    def __init__(self, size: int, window: int) -> None:
        self._stats = RunningStats(window)
        self._numbers = np.zeros(size, np.int64)
        self._cycles = np.full(size, -1, np.int64)
        self._complete = np.zeros(size, bool)
        self._held = 0

    def add(self, inf: Inferences) -> None:
        """Fold the inferences one feed closed (complete ones count in the statistics)."""
        latency = inf.latency
        ok = inf.complete & (latency >= 0)
        self._stats.add(latency[ok])
        size = self._numbers.shape[0]
        numbers, cycles, complete = inf.number[-size:], latency[-size:], inf.complete[-size:]
        k = int(numbers.shape[0])
        for column, values in ((self._numbers, numbers), (self._cycles, cycles), (self._complete, complete)):
            column[: size - k] = column[k:].copy()
            column[size - k :] = values
        self._held = min(size, self._held + k)

    def info(self, budget_cycles: float | None) -> LatencyInfo:
        """A copy for a snapshot."""
        held, size = self._held, self._numbers.shape[0]
        return LatencyInfo(
            numbers=self._numbers[size - held :].copy(),
            cycles=self._cycles[size - held :].copy(),
            complete=self._complete[size - held :].copy(),
            stats=self._stats.summary(),
            budget_cycles=budget_cycles,
        )
