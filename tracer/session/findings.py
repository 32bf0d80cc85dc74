"""The findings on screen: the CI gate's own, run on what the session holds.

The live and replay screens show exactly what ``tracer report`` and ``tracer check`` say, made by
the same code: the session builds a timeline of its recent window
(:func:`tracer.session.window.window_timeline`) and runs :func:`tracer.analysis.analyze.analyze`
on it, with the budget matched the same way (``tracer check``'s default tolerance). It does so in
its worker thread, at most once a second (:data:`INTERVAL_S`) and only when new inferences
arrived, and once more when the stream ends. While no inference has left the window the timeline
is the whole stream's, so a replay of a capture that fits in the ring ends with ``tracer check``'s
findings; a replay of a longer capture, or a live session that recorded more than its window, ends
with the gate run on the whole capture file.

:class:`Diagnosis` carries the findings with what they cover, and every layer execution that shows
each of them (:class:`~tracer.session.flags.FindingFlags`: the outliers of the jitter rules, the
inferences a layer ran over budget, the jobs that missed a cache clean ...), for the layers table,
the timeline and the navigation from a finding to its evidence.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tracer.session.flags import FindingFlags

if TYPE_CHECKING:
    from tracer.analysis.findings import Finding
    from tracer.analysis.result import Analysis
    from tracer.analysis.sampling import LayerBreakdown
    from tracer.base.facts import InputFacts
    from tracer.base.timeline import InferenceTimeline
    from tracer.budget.model import Budget

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
        analysis: The analysis they came from (None before the rules ran).
        scope: What the rules looked at, in words (``all 20 inferences``, ``the last 256
            inferences (#9744-#9999)``, ``the whole capture``).
        whole: True when that is everything the stream held (the findings are ``tracer check``'s).
        inferences: Inferences the session had seen when the rules ran.
        flags: Every inference and layer that shows each finding (made from the analysis).
        sampling: Per layer index, its sampled breakdown (NPU operators or CPU hot spots) for the
            layer detail (:func:`tracer.analysis.sampling.layer_breakdowns`).
    """

    findings: tuple[Finding, ...] = ()
    analysis: Analysis | None = dataclasses.field(default=None, compare=False, repr=False)
    scope: str = ""
    whole: bool = True
    inferences: int = 0
    flags: FindingFlags = dataclasses.field(default_factory=FindingFlags, compare=False, repr=False)
    sampling: dict[int, LayerBreakdown] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, analysis: Analysis, scope: str, whole: bool, inferences: int) -> Diagnosis:
        """The findings of ``analysis`` with every instance of each (worker thread: made once here)."""
        from tracer.analysis.sampling import layer_breakdowns

        return cls(
            analysis.findings,
            analysis,
            scope,
            whole,
            inferences,
            FindingFlags(analysis.findings, analysis),
            layer_breakdowns(analysis.sampling),
        )

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

    def canaries(self) -> list[tuple[int, str, int | None, int | None]]:
        """Stack canaries found broken: (cycle, stack, inference, layer), from the analysis."""
        if self.analysis is None:
            return []
        return [
            (s.first_broken_cycle, s.name, s.first_broken_inference, s.first_broken_layer)
            for s in self.analysis.memory.stacks
            if s.first_broken_cycle is not None
        ]


def window_analysis(timeline: InferenceTimeline, facts: InputFacts, budget: Budget | None) -> Analysis:
    """What ``tracer check`` makes of ``timeline`` with ``budget`` (no ``--tolerance``)."""
    from tracer.analysis.analyze import analyze

    return analyze(timeline, facts, budget)


def capture_analysis(
    path: str | os.PathLike[str], budget: Budget | None, on_progress: Callable[[int], None] | None = None
) -> Analysis:
    """What ``tracer check CAPTURE`` makes of it: the capture read again from the start, by its
    code (:func:`tracer.pipeline.analyse.analyse_file`: in windows when it is large).

    Args:
        path: The capture.
        budget: The budget, or None.
        on_progress: Called with the stream bytes read so far (it may raise to stop the reading).

    Raises:
        CaptureError: The capture cannot be read.
    """
    from tracer.pipeline.analyse import analyse_file, reporting_to

    return analyse_file(path, budget, progress=reporting_to(on_progress)).analysis


def describe_scope(numbers: Any, whole: bool) -> str:
    """``all 20 inferences`` or ``the last 256 inferences (#9744-#9999)``."""
    count = len(numbers)
    if not count:
        return "the console and memory reports (no inference yet)"
    if whole:
        return f"all {count:,} inference{'s' if count != 1 else ''}"
    return f"the last {count:,} inferences (#{int(numbers[0])}-#{int(numbers[-1])})"
