"""The findings on screen: the CI gate's own, run on what the session holds.

The live and replay screens show exactly what ``tracer report`` and ``tracer check`` say, made by
the same code: the session builds a timeline of its recent window
(:func:`tracer.session.window.window_timeline`) and runs :func:`tracer.analysis.analyze.analyze`
on it, with the budget matched the same way (``tracer check``'s default tolerance). It does so in
its worker thread, at most once a second (:data:`INTERVAL_S`) and only when new inferences
arrived, and once more when the stream ends. While no inference has left the window the timeline
is the whole stream's, so a replay of a capture that fits in the ring ends with ``tracer check``'s
findings; a replay of a longer capture ends with the gate run on the whole capture file.

:class:`Diagnosis` carries the findings with what they cover, and which layer executions they
name (the outlier executions of the jitter rules, the inferences a layer ran over budget, the jobs
that missed a cache clean ...), for the layers table and the timeline to flag.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    from tracer.analysis.analyze import Analysis
    from tracer.analysis.findings import Finding
    from tracer.analysis.report import CaptureFacts
    from tracer.budget.model import Budget
    from tracer.telemetry.model import InferenceTimeline

INTERVAL_S = 1.0  # least seconds between two runs of the rules while data flows

# What the layers table's flags column calls the findings about a layer (others: their id).
SHORT = {
    "layer-over-budget": "over",
    "layer-p99-over-budget": "p99 over",
    "cpu-fallback": "fallback",
    "npu-utilization-low": "npu idle",
}
LEFT_OUT = {"isr-in-layer"}  # the table counts interrupts itself ("isr N")


def short_name(finding_id: str) -> str | None:
    """The flags column's word for a finding about a layer (None: not shown there)."""
    if finding_id in LEFT_OUT:
        return None
    if finding_id.startswith("jitter-"):
        return "jitter"
    if finding_id.startswith("coherency-"):
        return "coherency"
    return SHORT.get(finding_id, finding_id)


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """The gate's findings and what they cover.

    Attributes:
        findings: Every finding, worst first (:class:`tracer.analysis.findings.Finding`).
        scope: What the rules looked at, in words (``all 20 inferences``, ``the last 256
            inferences (#9744-#9999)``, ``the whole capture``).
        whole: True when that is everything the stream held (the findings are ``tracer check``'s).
        inferences: Inferences the session had seen when the rules ran.
    """

    findings: tuple[Finding, ...] = ()
    scope: str = ""
    whole: bool = True
    inferences: int = 0

    @property
    def ran(self) -> bool:
        """False until the rules have run once."""
        return bool(self.scope)

    def layer_flags(self) -> dict[int, tuple[tuple[str, str], ...]]:
        """Per layer, (flag word, severity) of each kind of finding about it."""
        out: dict[int, dict[str, str]] = {}
        for finding in self.findings:
            word = short_name(finding.id)
            if finding.layer is None or word is None:
                continue
            words = out.setdefault(finding.layer, {})
            words.setdefault(word, finding.severity.value)
        return {layer: tuple(words.items()) for layer, words in out.items()}

    @functools.cached_property
    def instances(self) -> Mapping[tuple[int, int], tuple[Finding, ...]]:
        """(inference, layer) -> the findings that name that execution of that layer (made once)."""
        out: dict[tuple[int, int], list[Finding]] = {}
        for finding in self.findings:
            if finding.layer is None:
                continue
            for number in finding.inferences:
                out.setdefault((number, finding.layer), []).append(finding)
        return {key: tuple(found) for key, found in out.items()}


def gate_findings(timeline: InferenceTimeline, facts: CaptureFacts, budget: Budget | None) -> list[Finding]:
    """The findings ``tracer check`` makes of ``timeline`` with ``budget`` (no ``--tolerance``)."""
    return gate_analysis(timeline, facts, budget).findings


def gate_analysis(timeline: InferenceTimeline, facts: CaptureFacts, budget: Budget | None) -> Analysis:
    """:func:`gate_findings` with everything else the analysis computed (the sampling results)."""
    from tracer.analysis.analyze import analyze

    return analyze(timeline, facts, budget)


def capture_analysis(
    path: str | os.PathLike[str], budget: Budget | None, on_progress: Callable[[int], None] | None = None
) -> Analysis:
    """What ``tracer check CAPTURE`` makes of it: the capture read again from the start, by its code.

    Args:
        path: The capture.
        budget: The budget, or None.
        on_progress: Called with the stream bytes read so far (it may raise to stop the reading).

    Raises:
        CaptureError: The capture cannot be read.
    """
    from tracer.analysis.analyze import analyze
    from tracer.analysis.report import CaptureFacts
    from tracer.telemetry.load import load_timeline

    timeline, source = load_timeline(path, on_progress=on_progress)
    return analyze(timeline, CaptureFacts.of(source), budget)


def describe_scope(numbers: Any, whole: bool) -> str:
    """``all 20 inferences`` or ``the last 256 inferences (#9744-#9999)``."""
    count = len(numbers)
    if not count:
        return "the console and memory reports (no inference yet)"
    if whole:
        return f"all {count:,} inference{'s' if count != 1 else ''}"
    return f"the last {count:,} inferences (#{int(numbers[0])}-#{int(numbers[-1])})"
