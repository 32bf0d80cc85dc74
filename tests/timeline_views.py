"""Per-inference views of a timeline for tests: an :class:`Inference` with its layer spans."""

from __future__ import annotations

import numpy as np

from tracer.base.timeline import Inference, InferenceTimeline


def inference_view(timeline: InferenceTimeline, i: int) -> Inference:
    """The ``i``-th inference (row order) with its layer spans in start order."""
    inf = timeline.inferences
    number = int(inf.number[i])
    rows = np.flatnonzero(timeline.spans.inference == number)
    order = rows[np.argsort(timeline.spans.start[rows], kind="stable")]

    def opt(v: np.int64) -> int | None:
        return None if v < 0 else int(v)

    return Inference(
        number=number,
        start=opt(inf.start[i]),
        end=opt(inf.end[i]),
        complete=bool(inf.complete[i]),
        problems=inf.problems[i],
        layers=tuple(timeline.spans.row(int(r)) for r in order),
        input_crc=opt(inf.input_crc[i]),
        output_crc=opt(inf.output_crc[i]),
        pmu=timeline.pmu_totals.get(number, {}),
    )


def inference_views(timeline: InferenceTimeline) -> list[Inference]:
    """Every inference as a view."""
    return [inference_view(timeline, i) for i in range(len(timeline.inferences))]
