"""A baseline to compare against (``--baseline CAPTURE``): another capture's per-layer p50.

The baseline capture is read and analysed by ``tracer report``'s code (the same budget, if any);
its per-layer statistics are the :class:`~tracer.analysis.analyze.Analysis`'s, not computed here.
Layers are lined up by index when the names agree (or either has none), else by name.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tracer.session.findings import capture_analysis

if TYPE_CHECKING:
    from tracer.base.timeline import LayerInfo
    from tracer.budget.model import Budget


@dataclasses.dataclass(frozen=True)
class Baseline:
    """Per-layer p50 cycles of a baseline capture.

    Attributes:
        name: The capture's file name.
        p50: Layer index (in the baseline) to its p50 cycles.
        names: Layer index (in the baseline) to its name.
        inferences: Complete inferences the p50s are over.
    """

    name: str
    p50: Mapping[int, int]
    names: Mapping[int, str]
    inferences: int

    def matched(self, layers: Mapping[int, LayerInfo]) -> dict[int, int]:
        """The baseline p50 of each of ``layers`` that has one (by index if the names agree, else by name)."""
        by_name = {name: index for index, name in self.names.items() if name}
        out: dict[int, int] = {}
        for index, info in layers.items():
            theirs = self.names.get(index)
            if index in self.p50 and (not theirs or not info.name or theirs == info.name):
                out[index] = self.p50[index]
            elif info.name in by_name and by_name[info.name] in self.p50:
                out[index] = self.p50[by_name[info.name]]
        return out


def load_baseline(path: str | os.PathLike[str], budget: Budget | None = None) -> Baseline:
    """Read and analyse the baseline capture.

    Raises:
        CaptureError: It cannot be read.
    """
    analysis = capture_analysis(path, budget)
    timeline = analysis.timeline
    p50 = {index: stats.cycles.p50 for index, stats in analysis.layers.items() if stats.cycles is not None}
    names = {index: info.name for index, info in timeline.layers.items()}
    complete = int(timeline.inferences.complete.sum()) if len(timeline.inferences) else 0
    return Baseline(os.path.basename(os.fspath(path)), p50, names, complete)
