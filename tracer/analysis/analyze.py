"""Everything ``report``, ``check`` and ``export`` compute from one timeline, in one call.

``analyze(timeline, facts, budget, tolerance_pct)`` lines the budget up with the capture, runs
every findings rule, and builds the report object; the results travel together in
:class:`Analysis` so each front end renders the same numbers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tracer.analysis.budget_view import (
    DEFAULT_TOLERANCE_PCT,
    BudgetComparison,
    compare_budget,
)
from tracer.analysis.findings import AnalysisContext, Finding, find_all
from tracer.analysis.report import CaptureFacts, build_report
from tracer.analysis.sampling import SamplingAnalysis, sampling_analysis
from tracer.budget.model import Budget
from tracer.elf.inlines import CodeLocator
from tracer.telemetry.model import InferenceTimeline


@dataclasses.dataclass
class Analysis:
    """One capture analysed.

    Attributes:
        timeline: The decoded capture or log.
        facts: Facts about the input file.
        comparison: The budget matched to the capture (None without a budget).
        context: What the rules saw (thresholds, the tolerance given).
        findings: Every finding, worst first.
        report: The report object (``tracer report --format json``).
        sampling: Per-operator NPU time and CPU hot spots from the sampler's records (None when
            the capture has none).
    """

    timeline: InferenceTimeline
    facts: CaptureFacts
    comparison: BudgetComparison | None
    context: AnalysisContext
    findings: list[Finding]
    report: dict[str, Any]
    sampling: SamplingAnalysis | None = None


def analyze(
    timeline: InferenceTimeline,
    facts: CaptureFacts,
    budget: Budget | None = None,
    tolerance_pct: float | None = None,
    per_inference: bool = False,
    options: dict[str, Any] | None = None,
    locator: CodeLocator | None = None,
) -> Analysis:
    """Match the budget, run the findings rules and build the report.

    Args:
        timeline: The capture or log.
        facts: Facts about the input file.
        budget: The normalized budget, or None.
        tolerance_pct: ``--tolerance`` (None when not given: the budget's own, else 10 %).
        per_inference: Add the ``per_inference`` listing to the report.
        options: Rule thresholds by name (see the rule modules).
        locator: The firmware ELF's symbols and inlined code (``--elf``), for CPU hot spots.
    """
    comparison = compare_budget(timeline, budget, tolerance_pct) if budget is not None else None
    context = AnalysisContext(
        timeline=timeline,
        budget=budget,
        matching=comparison.matching if comparison else None,
        tolerance_pct=DEFAULT_TOLERANCE_PCT if tolerance_pct is None else tolerance_pct,
        options={**(options or {}), "tolerance_option": tolerance_pct, "budget_comparison": comparison},
    )
    findings = find_all(context)
    report = build_report(timeline, facts, comparison.view() if comparison else None, findings, per_inference)
    sampling = sampling_analysis(timeline, budget, locator)  # issue 15: QREAD and PC samples
    if sampling is not None:
        report.update(sampling.report_sections(per_inference))
    return Analysis(timeline, facts, comparison, context, findings, report, sampling)
