"""The list of rules ``tracer report`` and ``tracer check`` run, in the order findings are shown."""

from __future__ import annotations

from tracer.analysis.findings import budget, engine, firmware, loss, memory, npu
from tracer.analysis.findings import coherency, isr, jitter
from tracer.analysis.findings.base import AnalysisContext, Finding, Rule

# Each rule module exports a tuple RULES of its rule functions; import the module above and
# splice its tuple in here. The tuple is built once at import and never changed afterwards.
RULES: tuple[Rule, ...] = (
    *budget.RULES,
    *engine.RULES,
    *npu.RULES,
    *memory.RULES,
    *loss.RULES,
    *firmware.RULES,
    *isr.RULES,
    *jitter.RULES,
    *coherency.RULES,
)


def find_all(context: AnalysisContext, rules: tuple[Rule, ...] | None = None) -> list[Finding]:
    """Run every rule and return the findings, worst first, then in rule order."""
    found: list[Finding] = []
    for rule in RULES if rules is None else rules:
        found.extend(rule(context))
    return sorted(found, key=lambda f: -f.severity.rank)
