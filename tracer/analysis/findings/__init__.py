"""Findings: what is wrong in a capture, said in words an engineer acts on.

A rule is a function ``rule(context) -> Iterable[Finding]``. Each rule lives in a module of this
package named after what it checks (budget, memory, loss, isr, jitter, coherency ...) and is listed
in :data:`tracer.analysis.findings.rules.RULES`. :func:`find_all` runs them all.
"""

from tracer.analysis.findings.base import AnalysisContext, Finding, Rule, Severity
from tracer.analysis.findings.rules import find_all

__all__ = ["AnalysisContext", "Finding", "Rule", "Severity", "find_all"]
