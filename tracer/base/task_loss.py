"""Which RTOS task slices may hide a lost task switch.

A slice that overlaps an inference marked incomplete may hide a lost switch, so it is
``complete=False`` and left out of CPU shares; when records were lost where no inference shows
it (between inferences), no slice can be trusted and all are incomplete. The telemetry decoder
marks a capture's lane so (:mod:`tracer.telemetry.span_facts`); the analysis marks a window's
slices against the whole capture's inferences.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.base.tasks import TaskSlice
from tracer.base.timeline import InferenceTimeline


def mark_loss(slices: list[TaskSlice], timeline: InferenceTimeline) -> list[TaskSlice]:
    """Slices that may hide a lost switch become incomplete (see the module docstring)."""
    inf = timeline.inferences
    bad = ~inf.complete
    if timeline.loss.any and not bad.any():
        return [dataclasses.replace(s, complete=False) for s in slices]
    if not bad.any() or not slices:
        return slices
    # An incomplete inference's known extent: its start (else the previous end) to its end
    # (else the next start); unknown ends reach to the capture's edges.
    lo = np.where(inf.start >= 0, inf.start, np.maximum.accumulate(np.where(inf.end >= 0, inf.end, -1)))[bad]
    nxt = np.where(inf.start >= 0, inf.start, np.iinfo(np.int64).max)
    next_start = np.minimum.accumulate(nxt[::-1])[::-1]
    hi = np.where(inf.end >= 0, inf.end, next_start)[bad]
    lo = np.where(lo >= 0, lo, np.iinfo(np.int64).min)
    out = []
    for s in slices:
        touched = bool(np.any((lo <= s.end) & (hi >= s.start)))
        out.append(dataclasses.replace(s, complete=False) if touched else s)
    return out
