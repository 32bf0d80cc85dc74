"""Which inference and layer shows each finding: every one, read from the Analysis.

A finding's own ``inferences`` list is cut for reading (the report lists the first 20 or 50); the
screen flags every execution that shows it, so :class:`FindingFlags` reads them from the
:class:`~tracer.analysis.analyze.Analysis` the findings came from:

- ``jitter-<cause>``: every outlier of the layer with that cause (``LayerJitter.outlier_inferences``);
- ``isr-in-layer``: every execution of the layer the interrupt landed in (``IsrAnalysis.by_layer``);
- ``layer-over-budget`` / ``layer-p99-over-budget``: every complete execution above the plan's
  limit (the rule's own comparison, on the timeline's spans);
- ``coherency-*``: every problem of that kind in the layer (``CoherencyAnalysis.problems``); for a
  non-deterministic output, every complete inference with that input CRC;
- ``stack-canary``: the inference and layer running when the canary was first found broken;
- any other finding: the inferences it names itself.

Made once per diagnosis, in the session's worker; the screen reads it for the ``!`` flags, the
Gantt and ``n``/``N`` navigation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tracer.analysis.analyze import Analysis
    from tracer.analysis.findings.base import Finding

NO_LAYER = -1  # a finding about an inference, not a layer in it


class FindingFlags:
    """Every (inference, layer) that shows each finding.

    Args:
        findings: The findings, worst first (their order is the finding's index here).
        analysis: The analysis they came from (None: only what the findings name).
    """

    def __init__(self, findings: Sequence[Finding] = (), analysis: Analysis | None = None) -> None:
        self.findings = tuple(findings)
        rows: list[np.ndarray] = []
        for i, finding in enumerate(self.findings):
            numbers = np.asarray(sorted(set(_inferences(finding, analysis))), np.int64)
            if len(numbers):
                layer = NO_LAYER if finding.layer is None else finding.layer
                rows.append(np.stack([numbers, np.full(len(numbers), layer), np.full(len(numbers), i)], axis=1))
        table = np.concatenate(rows) if rows else np.zeros((0, 3), np.int64)
        order = np.lexsort((table[:, 2], table[:, 1], table[:, 0]))
        self._table = table[order]  # (inference, layer, finding index), by inference then layer
        covered = analysis.timeline.inferences.number if analysis is not None else np.zeros(0, np.int64)
        self._covered = np.unique(covered)

    def __len__(self) -> int:
        return int(self._table.shape[0])

    def covers(self, number: int) -> bool:
        """True if the analysis looked at inference ``number`` (its flags are known)."""
        at = int(np.searchsorted(self._covered, number))
        return at < len(self._covered) and int(self._covered[at]) == number

    def at(self, number: int) -> dict[int | None, tuple[tuple[int, ...], str]]:
        """Layer (None: the inference itself) -> (indices of the findings it shows, worst severity)."""
        lo, hi = np.searchsorted(self._table[:, 0], [number, number + 1])
        out: dict[int | None, list[int]] = {}
        for _, layer, index in self._table[lo:hi].tolist():
            out.setdefault(None if layer == NO_LAYER else layer, []).append(index)
        return {layer: (tuple(found), self._worst(found)) for layer, found in out.items()}

    def _worst(self, indices: Iterable[int]) -> str:
        return max((self.findings[i].severity for i in indices), key=lambda s: s.rank).value

    def instances(self, finding: int | None = None) -> np.ndarray:
        """(inference, layer) rows of one finding (None: of any), by inference then layer, no repeats."""
        table = self._table if finding is None else self._table[self._table[:, 2] == finding]
        pairs = table[:, :2]
        if finding is None and len(pairs):
            keep = np.ones(len(pairs), bool)
            keep[1:] = (pairs[1:] != pairs[:-1]).any(axis=1)
            pairs = pairs[keep]
        return pairs

    def step(
        self, finding: int | None, number: int | None, layer: int | None, direction: int
    ) -> tuple[int, int | None] | None:
        """The next (``direction`` 1) or previous (-1) instance after (inference, layer); wraps around.

        Returns:
            (inference, layer or None), or None when nothing shows the finding.
        """
        pairs = self.instances(finding)
        if not len(pairs):
            return None
        if number is None:
            pick = pairs[0] if direction > 0 else pairs[-1]
        else:
            key = (number, NO_LAYER if layer is None else layer)
            keys = pairs[:, 0] * (1 << 20) + pairs[:, 1] + 1  # layer -1 sorts first
            mine = key[0] * (1 << 20) + key[1] + 1
            if direction > 0:
                at = int(np.searchsorted(keys, mine, side="right"))
                pick = pairs[at % len(pairs)]
            else:
                at = int(np.searchsorted(keys, mine, side="left")) - 1
                pick = pairs[at % len(pairs)]
        layer_out = int(pick[1])
        return int(pick[0]), None if layer_out == NO_LAYER else layer_out


def _inferences(finding: Finding, analysis: Analysis | None) -> Iterable[int]:
    """Every inference that shows ``finding`` (see the module docstring)."""
    if analysis is None:
        return finding.inferences
    layer, evidence, timeline = finding.layer, finding.evidence, analysis.timeline
    if finding.id.startswith("jitter-"):
        jitter = analysis.jitter.layer(layer) if layer is not None else None
        cause = evidence.get("cause")
        if jitter is not None and jitter.outlier_inferences:
            return [n for n, c in zip(jitter.outlier_inferences, jitter.outlier_causes) if c == cause]
    elif finding.id == "isr-in-layer":
        exception = evidence.get("exception")
        return [
            n
            for hit in analysis.interrupts.by_layer
            if hit.layer == layer and hit.exception == exception
            for n in hit.inferences
        ]
    elif finding.id in ("layer-over-budget", "layer-p99-over-budget") and layer in analysis.over_limit:
        # (the analysis lists them once, read whole or in windows: a windowed timeline has no spans)
        return analysis.over_limit[layer]
    elif finding.id == "coherency-nondeterministic-output":
        inf = timeline.inferences
        crc = str(evidence.get("input_crc", ""))
        if crc.startswith("0x"):
            same = inf.complete & (inf.input_crc == int(crc, 16)) & (inf.output_crc >= 0)
            return inf.number[same].tolist()
    elif finding.id.startswith("coherency-") and analysis.coherency is not None:
        kind = finding.id.removeprefix("coherency-")
        found = [
            p.inference
            for p in analysis.coherency.problems
            if p.kind == kind and p.layer == layer and p.inference is not None
        ]
        return found or finding.inferences
    elif finding.id == "stack-canary":
        stack = next((s for s in analysis.memory.stacks if s.name == evidence.get("stack")), None)
        if stack is not None and stack.first_broken_inference is not None:
            return [stack.first_broken_inference]
    return finding.inferences
