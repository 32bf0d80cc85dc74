"""The dataset's ``predictions`` table: the layers a calibration learns from, kept with each
capture ingested with ``--budget``, and read back as the same observations ``tracer calibrate``
makes from a capture (:class:`~tracer.analysis.calibration.LayerObservation`).

Which layers count is decided once, when the capture is ingested, by
:func:`tracer.analysis.calibration_data.observations_of`; a row is one observation as it made it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pds

from tracer.analysis.calibration import FEATURES, LayerObservation
from tracer.errors import UsageError
from tracer.fleet import schema
from tracer.fleet.dataset import Dataset


def predictions_table(
    observations: Sequence[LayerObservation], capture_id: str, planner: Mapping[str, Any] | None
) -> pa.Table:
    """The rows of one capture's observations; ``planner``: the budget's compiler (``to_json``)."""
    said = json.dumps(dict(planner), sort_keys=True) if planner else None
    rows = [
        {
            "capture_id": capture_id,
            "layer": o.index,
            "model": o.model,
            "budget_layer": o.layer,
            "op": o.op,
            "measured_cycles": o.measured_cycles,
            "predicted_cycles": o.predicted_cycles,
            "planner_cycles": o.planner_cycles,
            **{key: o.features.get(key) for key in FEATURES},
            "planner": said,
        }
        for o in observations
    ]
    return pa.Table.from_pylist(rows, schema=schema.PREDICTIONS)


def dataset_observations(
    dataset: Dataset, where: Mapping[str, str] | None = None
) -> tuple[list[LayerObservation], list[dict[str, Any]]]:
    """Every observation of the captures whose labels match ``where`` (all: every capture), and
    the planners they were predicted by (one entry per capture, as ingested).

    Raises:
        UsageError: No capture matches ``where``, or none was ingested with a budget (exit 2).
    """
    ids = dataset.select(where or {})
    if not ids:
        wanted = " ".join(f"{k}={v}" for k, v in (where or {}).items())
        if where:
            raise UsageError(
                f"--where {wanted}: no capture of {dataset} has these labels; {dataset.labels_in_words(where)}"
            )
        raise UsageError(f"{dataset}: no capture in it ('tracer ingest CAPTURES -o {dataset} --budget FILE...')")
    rows = dataset.table("predictions", where=pds.field("capture_id").isin(ids)).to_pylist()
    if not rows:
        raise UsageError(
            f"{dataset}: none of its {len(ids)} selected capture(s) has a layer measured against a planner's "
            "estimate: were they ingested with a budget? ('tracer ingest CAPTURE... -o "
            f"{dataset} --budget FILE...' keeps the planner's estimate of each layer)"
        )
    paths = dict(
        zip(*dataset.table("captures", ["capture_id", "path"], pds.field("capture_id").isin(ids)).to_pydict().values())
    )
    order = {capture_id: k for k, capture_id in enumerate(ids)}  # ingest order, as a run of captures
    rows.sort(key=lambda r: (order[r["capture_id"]], r["layer"] if r["layer"] is not None else -1))
    observations = []
    planners: dict[str, dict[str, Any]] = {}
    for row in rows:
        capture = str(paths.get(row["capture_id"], row["capture_id"]))
        observations.append(
            LayerObservation(
                model=row["model"] or capture,
                capture=capture,
                layer=row["budget_layer"] or "",
                op=row["op"] or "",
                measured_cycles=row["measured_cycles"],
                predicted_cycles=row["predicted_cycles"],
                planner_cycles=row["planner_cycles"],
                features={k: row[k] for k in FEATURES if row[k] is not None},
                index=row["layer"],
            )
        )
        if row["planner"] and row["capture_id"] not in planners:
            planners[row["capture_id"]] = json.loads(row["planner"])
    return observations, list(planners.values())
