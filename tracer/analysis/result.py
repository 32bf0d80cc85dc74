"""What an analysis says: :class:`Analysis`, the one result every view reads (made by
:class:`tracer.analysis.accumulate.AnalysisAccumulator`, of one window or many). A leaf of the analysis package: the findings rules name it without
importing the code that makes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from tracer.analysis.budget_view import BudgetComparison
from tracer.analysis.coherency import CoherencyAnalysis
from tracer.analysis.energy_model import EnergyEstimate
from tracer.analysis.findings.base import Finding
from tracer.analysis.isr import IsrAnalysis
from tracer.analysis.jitter import JitterAnalysis
from tracer.analysis.layer_stats import LayerStats
from tracer.analysis.memory import MemorySummary
from tracer.analysis.pmu import PmuSummary
from tracer.analysis.samples import LayerSamples
from tracer.analysis.sampling import SamplingAnalysis
from tracer.analysis.settings import AnalysisSettings
from tracer.analysis.statistics import CycleSummary
from tracer.analysis.tasks import TaskAnalysis
from tracer.base.facts import InputFacts
from tracer.base.timeline import InferenceTimeline
from tracer.budget.matching import model_difference
from tracer.budget.model import Budget
from tracer.power.attribute import EnergyAnalysis


@dataclasses.dataclass(frozen=True)
class Analysis:
    """One capture, log or window analysed.

    Attributes:
        timeline: What was measured.
        facts: Facts about the input itself.
        settings: The thresholds used.
        comparison: The budget lined up with the capture (None without a budget).
        layers: Per-layer statistics over the complete inferences, by layer index.
        latency: Latency of the complete inferences (None: none).
        jitter: Per-layer distributions, outliers and their causes.
        interrupts: Handlers per exception and per layer.
        tasks: RTOS tasks' CPU shares and the time they took from layers (None: no task lane).
        pmu: NPU PMU counters per inference and in total.
        memory: Arena, stacks and the plan.
        coherency: Cache-maintenance problems around NPU jobs (None: no NPU job or inference).
        sampling: Per-operator NPU time and CPU hot spots from the sampler's records (None when
            the input has none).
        findings: Every finding, worst first.
        time_span: The first and last cycle of any layer execution or inference (None: none).
        over_limit: Per layer with a budget limit, the inferences in which it ran over the limit.
        energy: A power recording held against the timeline (None: no ``--power``).
        energy_estimate: Energy estimated from a power model (None: no ``--power-model``).
        complete_executions: Per layer index, its complete executions in compact columns (cycles,
            interrupt cycles, PMU sums): what ``compare`` and ``ingest`` keep of the input.
    """

    timeline: InferenceTimeline
    facts: InputFacts
    settings: AnalysisSettings
    comparison: BudgetComparison | None
    layers: Mapping[int, LayerStats]
    latency: CycleSummary | None
    jitter: JitterAnalysis
    interrupts: IsrAnalysis
    tasks: TaskAnalysis | None
    pmu: PmuSummary
    memory: MemorySummary
    coherency: CoherencyAnalysis | None
    sampling: SamplingAnalysis | None = None
    findings: tuple[Finding, ...] = ()
    time_span: tuple[int | None, int | None] = (None, None)
    over_limit: Mapping[int, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    energy: EnergyAnalysis | None = None
    energy_estimate: EnergyEstimate | None = None
    complete_executions: Mapping[int, LayerSamples] = dataclasses.field(default_factory=dict)

    @property
    def executions(self) -> int:
        """Layer executions measured, complete or not."""
        return sum((st.cycles.count if st.cycles else 0) + st.excluded for st in self.layers.values())

    @property
    def budget(self) -> Budget | None:
        """The budget given, or None."""
        return self.comparison.budget if self.comparison is not None else None

    def model_difference(self) -> str | None:
        """What says the budget describes another model than the input's (None: nothing does, or
        no budget): :func:`~tracer.budget.matching.model_difference` of the layers as matched,
        with the input's lost data (loss counted, or a warning about the input) let off.
        """
        if self.comparison is None:
            return None
        lost = self.timeline.loss.any or bool(self.facts.warnings)
        return model_difference(self.comparison.matching, self.comparison.budget, capture_lost_data=lost)
