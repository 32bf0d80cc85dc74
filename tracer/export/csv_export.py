"""Every layer execution as a CSV row, for spreadsheets and pandas.

Columns: ``inference, layer, name, op, engine, start, end, cycles, complete, predicted, ratio``.
``start``/``end``/``cycles`` are target cycles at the capture's clock; ``predicted`` is the
budget's prediction in the same clock and ``ratio`` = cycles / predicted (empty without a budget);
``complete`` is 0 for executions of an inference that lost data. Rows are in inference order, then
by start.
"""

from __future__ import annotations

import csv
from typing import IO

import numpy as np

from tracer.analysis.result import Analysis

COLUMNS = ("inference", "layer", "name", "op", "engine", "start", "end", "cycles", "complete", "predicted", "ratio")


def write_csv(out: IO[str], analysis: Analysis) -> int:
    """Write the rows; return how many."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    timeline = analysis.timeline
    spans = timeline.spans
    predicted = analysis.comparison.predicted_cycles if analysis.comparison is not None else {}
    order = np.lexsort((spans.start, spans.inference))
    infos = {i: timeline.layer(i) for i in set(spans.layer.tolist())}
    inference, layer = spans.inference[order].tolist(), spans.layer[order].tolist()
    start, end, complete = spans.start[order].tolist(), spans.end[order].tolist(), spans.complete[order].tolist()
    for k in range(len(order)):
        info = infos[layer[k]]
        cycles = end[k] - start[k]
        guess = predicted.get(layer[k])
        writer.writerow(
            (
                inference[k],
                layer[k],
                info.name,
                info.op,
                info.engine.value,
                start[k],
                end[k],
                cycles,
                int(complete[k]),
                "" if guess is None else round(guess, 3),
                "" if not guess else round(cycles / guess, 4),
            )
        )
    return len(order)
