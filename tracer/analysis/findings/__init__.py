"""Findings: what is wrong in a capture, said in words an engineer acts on.

A rule is a function ``rule(analysis) -> Iterable[Finding]`` that reads the
:class:`~tracer.analysis.result.Analysis` (never computing a statistic again). Each rule lives in
a module of this package named after what it checks (budget, memory, loss, isr, jitter, coherency
...) and is registered once, in :mod:`tracer.analysis.findings.rules`.
"""

from tracer.analysis.findings.base import Finding, Severity

__all__ = ["Finding", "Severity"]
