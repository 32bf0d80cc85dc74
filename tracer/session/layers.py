"""Per-layer state folded from the stream: running statistics, executions left out, interrupt hits,
mean NPU PMU counters, and the layers table's rows built from them (rebuilt only when they changed).

A rolling view, not the analysis's per-layer accumulator, and why. The analysis
(:mod:`tracer.analysis.samples`, :mod:`tracer.analysis.layer_stats`) keeps the cycles of every
complete execution of a layer, so that its percentiles over the whole capture are exact however it
was read; its memory grows with the capture (4 bytes an execution). A live session runs for days
with flat memory, so :class:`LayerFold` keeps, per layer, a
:class:`~tracer.analysis.statistics.RunningStats`:

- the same as the report's at every moment: which executions count (complete ones; those of an
  inference that lost data are counted apart, as excluded), their count, min, max, mean and
  standard deviation (exact integer sums), and each PMU counter's mean over the executions that
  measured it (an exact sum and count, as :class:`~tracer.analysis.samples.LayerSamples` keeps);
- different: p50 and p99 (and the history and distribution on screen) are nearest-rank over the
  most recent executions (``--window``, 4,096 by default): the report's while the stream is shorter
  than that, recent behaviour after. Exact percentiles of an unbounded stream need every value
  (or a tally of every distinct one), which a flat memory cannot hold.

The findings are not folded here: the session runs the gate's own analysis on its window, and at the
end of a stream that outgrew it, on the whole capture (:mod:`tracer.session.findings`).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping

import numpy as np

from tracer.analysis.settings import DEFAULT_TOLERANCE_PCT
from tracer.analysis.statistics import RunningMean, RunningStats
from tracer.base.timeline import Engine, LayerInfo, LayerSpans
from tracer.session.budget import SessionBudget
from tracer.session.snapshot import LayerRow


class LayerFold:
    """Every layer execution counted, bounded in memory.

    Args:
        window: Values per layer the percentiles, history and distribution cover.
    """

    def __init__(self, window: int) -> None:
        self._window = window
        self._stats: dict[int, RunningStats] = {}
        self._excluded: dict[int, int] = collections.defaultdict(int)
        self._isr_hits: dict[int, int] = collections.defaultdict(int)
        self._pmu: dict[int, dict[str, RunningMean]] = collections.defaultdict(dict)
        self._rows: dict[int, LayerRow] = {}
        self._dirty: set[int] = set()

    def add(self, spans: LayerSpans) -> None:
        """Fold the spans one feed closed (complete ones count in the statistics)."""
        if not len(spans):
            return
        layers = spans.layer.astype(np.int64)
        cycles = spans.cycles
        ok = spans.complete
        if (~ok).any():
            for index, count in zip(*(a.tolist() for a in np.unique(layers[~ok], return_counts=True))):
                self._excluded[index] += count
                self._dirty.add(index)
        hit = spans.isr_cycles > 0
        if hit.any():
            for index, count in zip(*(a.tolist() for a in np.unique(layers[hit], return_counts=True))):
                self._isr_hits[index] += count
                self._dirty.add(index)
        if not ok.any():
            return
        order = np.argsort(layers[ok], kind="stable")  # stable: arrival order within a layer
        by_layer, values = layers[ok][order], cycles[ok][order]
        pmu = spans.pmu[ok][order] if spans.pmu.shape[1] else None
        indices, starts = np.unique(by_layer, return_index=True)
        bounds = [*list(starts.tolist()), len(by_layer)]
        for j, index in enumerate(indices.tolist()):
            lo, hi = bounds[j], bounds[j + 1]
            stats = self._stats.get(index)
            if stats is None:
                stats = self._stats[index] = RunningStats(self._window)
            stats.add(values[lo:hi])
            if pmu is not None:
                means = self._pmu[index]
                for c, name in enumerate(spans.pmu_names):
                    column = pmu[lo:hi, c]
                    column = column[column >= 0]
                    if len(column):
                        means.setdefault(name, RunningMean()).add(column)
            self._dirty.add(index)

    def touch(self, indices: Iterable[int]) -> None:
        """These layers' rows must be built again (their budget or flags changed)."""
        self._dirty.update(indices)

    def history(self, index: int, limit: int | None = None) -> np.ndarray:
        """Recent cycle counts of layer ``index`` (complete executions), oldest first."""
        stats = self._stats.get(index)
        return stats.recent(limit) if stats is not None else np.zeros(0, np.int64)

    def rows(
        self,
        known: Mapping[int, LayerInfo],
        budget: SessionBudget | None,
        flags: Mapping[int, tuple[tuple[str, str], ...]],
    ) -> tuple[LayerRow, ...]:
        """One row per layer (described or seen), by index.

        Args:
            known: The layers the decoder knows.
            budget: The budget matched to them, if any.
            flags: Per layer, the findings' (flag word, severity).
        """
        infos = dict(known)
        for index in set(self._stats) | set(self._excluded):
            infos.setdefault(index, LayerInfo(index, "", "", Engine.CPU))
        rows = []
        for index, info in sorted(infos.items()):
            cached = self._rows.get(index)
            if cached is None or index in self._dirty or cached.info != info:
                cached = self._rows[index] = self._row(info, budget, flags.get(index, ()))
            rows.append(cached)
        self._dirty.clear()
        return tuple(rows)

    def _row(self, info: LayerInfo, budget: SessionBudget | None, flags: tuple[tuple[str, str], ...]) -> LayerRow:
        index = info.index
        stats = self._stats.get(index)
        plan = budget.plans.get(index) if budget else None
        pmu = {name: mean.mean for name, mean in self._pmu.get(index, {}).items() if mean.mean is not None}
        return LayerRow(
            info=info,
            cycles=stats.summary() if stats is not None else None,
            excluded=self._excluded.get(index, 0),
            predicted=plan.predicted_cycles if plan else None,
            tolerance_pct=plan.tolerance_pct if plan else DEFAULT_TOLERANCE_PCT,
            planned_engine=plan.planned_engine if plan else None,
            isr_hits=self._isr_hits.get(index, 0),
            pmu_mean=pmu,
            note=plan.note if plan else "",
            findings=flags,
            calibrated=plan.calibrated.cycles if plan and plan.calibrated and plan.calibrated.usable else None,
            calibration_status=plan.calibrated.status if plan and plan.calibrated else "",
        )
