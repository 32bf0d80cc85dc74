"""Analysing a timeline in a test: the facts of a made-up input, and the rules of one module."""

from __future__ import annotations

from typing import Any

from tracer.analysis.analyze import analyze
from tracer.analysis.findings import Finding
from tracer.analysis.findings.rules import Rule, find_all
from tracer.analysis.result import Analysis
from tracer.analysis.settings import AnalysisSettings
from tracer.base.facts import InputFacts
from tracer.base.timeline import InferenceTimeline

FACTS = InputFacts("capture", "test://", None, 0)


def analyse(timeline: InferenceTimeline, budget: Any = None, **settings: Any) -> Analysis:
    """The analysis of ``timeline`` (settings by name, as :class:`AnalysisSettings` takes them)."""
    return analyze(timeline, FACTS, budget, AnalysisSettings(**settings))


def findings_of(timeline: InferenceTimeline, rules: tuple[Rule, ...], **settings: Any) -> list[Finding]:
    """The findings only ``rules`` give on ``timeline``."""
    return find_all(analyse(timeline, **settings), rules)
