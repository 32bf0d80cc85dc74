"""The finding record and its severity (the shape of a rule: :data:`tracer.analysis.findings.rules.Rule`)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any


class Severity(str, enum.Enum):
    """How bad a finding is; ``--fail-on`` compares against this order."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        """0 for info, 1 for warning, 2 for error."""
        return list(Severity).index(self)

    def at_least(self, other: Severity) -> bool:
        """True if this severity is ``other`` or worse."""
        return self.rank >= other.rank


@dataclasses.dataclass(frozen=True)
class Finding:
    """One thing found wrong (or worth knowing) in a capture.

    Attributes:
        id: Stable kind of the finding (``layer-over-budget``, ``cpu-fallback``, ``isr-preemption``
            ...): CI tools group by it, JUnit has one test case per kind.
        severity: info, warning or error.
        layer: The layer index it is about, or None for the whole capture.
        message: One or two sentences: what happened, where, by how much.
        evidence: The numbers behind the message (JSON-ready).
        fix: What engineers in the field do about it, when known.
        inferences: The inference numbers it concerns (empty: all or none in particular).
    """

    id: str
    severity: Severity
    layer: int | None
    message: str
    evidence: dict[str, Any] = dataclasses.field(default_factory=dict)
    fix: str | None = None
    inferences: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The report's finding object (docs/report.md: id, severity, layer, message, evidence, fix, inferences)."""
        out: dict[str, Any] = {
            "id": self.id,
            "severity": self.severity.value,
            "layer": self.layer,
            "message": self.message,
            "evidence": self.evidence,
        }
        if self.fix:
            out["fix"] = self.fix
        if self.inferences:
            out["inferences"] = list(self.inferences)
        return out
