"""The one registry of findings rules: which run, in which order, and which finding kinds exist.

Each rule module exports ``RULES`` (its rule functions) and ``KINDS`` (the finding ids it can
give). :data:`MODULES` lists the modules once, in the order findings are shown; ``tracer report``,
``tracer check`` and the live screen run :data:`RULES`, and the gate lists :func:`declared_kinds`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType

from tracer.analysis.findings import budget, coherency, energy, engine, firmware, isr, jitter, loss, memory, npu
from tracer.analysis.findings.base import Finding
from tracer.analysis.result import Analysis

MODULES: tuple[ModuleType, ...] = (budget, engine, npu, memory, loss, firmware, isr, jitter, coherency, energy)
Rule = Callable[[Analysis], Iterable[Finding]]
"""A findings rule: reads an :class:`~tracer.analysis.result.Analysis`, yields findings."""

RULES: tuple[Rule, ...] = tuple(rule for module in MODULES for rule in module.RULES)


def declared_kinds() -> list[str]:
    """Every finding kind the rule modules declare, in registry order."""
    return list(dict.fromkeys(kind for module in MODULES for kind in getattr(module, "KINDS", ())))


def find_all(analysis: Analysis, rules: tuple[Rule, ...] = RULES) -> list[Finding]:
    """Run the rules and return the findings, worst first, then in rule order."""
    found: list[Finding] = []
    for rule in rules:
        found.extend(rule(analysis))
    return sorted(found, key=lambda f: -f.severity.rank)
