"""Trends across builds: per-layer series from a dataset, ordered by a label, with their change points.

A *build* is a value of the label chosen (``--by build``): the captures that carry it. A build's
value for a layer is the median, over its captures, of the layer's median cycles in each capture
(the dataset's ``layers`` table); the inference latency is a series too. Builds are ordered by the
label's value, as numbers when every value is one, else as text (ISO dates sort right; for git
revisions label the captures with a build number or commit date). Each series is segmented by
:func:`tracer.fleet.changepoints.segment`.

The newest build is also compared with the build before it by :func:`tracer.compare.compare.compare`
on their captures, exactly as ``tracer compare --dataset`` does (over captures when there are
three or more, so the run-to-run variance counts): the same captures get the same verdict from
both commands.

With ``energy``, the series are energy instead of cycles: each layer's energy per execution and
the inference's, in microjoules, from the captures ingested with a power recording
(``ingest --power``; a build's value is the median of its captures'). Their change points are
found the same way; ``compare --dataset`` compares cycles, so the newest build is judged by its
change points alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow.compute as pc

from tracer.analysis.statistics import nearest_rank
from tracer.compare.compare import DEFAULT_ALPHA, Change, Comparison, Verdict, compare
from tracer.compare.intervals import capture_spread_pct
from tracer.compare.models import ModelMismatch
from tracer.errors import CaptureError, UsageError
from tracer.fleet.changepoints import ALPHA, Segmentation, segment
from tracer.fleet.dataset import Dataset

INFERENCE = "inference"
ENERGY_NOTE = (
    "energy: the newest build is judged by its change points only ('tracer compare --dataset' compares cycles)"
)


@dataclasses.dataclass(frozen=True)
class Series:
    """One layer (or the inference latency) across the builds.

    Attributes:
        label: The layer's name (``op#index`` when unnamed), or ``inference``.
        layer: Its index (None for the inference).
        op: Its operator ('' for the inference).
        values: Its value per build, in build order (None where the build did not measure it).
        segmentation: Change points and outlier builds of the measured values.
        positions: Build position of each measured value (what the segmentation's indices index).
        capture_spread_pct: How far one capture's median strays from its build's (percent, pooled
            over builds of several captures; None: no build has two).
        newest: The newest build against the one before, as ``tracer compare`` judges it (None:
            one build, or not measured in both).
    """

    label: str
    layer: int | None
    op: str
    values: tuple[float | None, ...]
    segmentation: Segmentation
    positions: tuple[int, ...]
    capture_spread_pct: float | None = None
    newest: Change | None = None

    def change_builds(self) -> list[int]:
        """Build positions where a change begins."""
        return [self.positions[c.index] for c in self.segmentation.changes]


@dataclasses.dataclass(frozen=True)
class Trend:
    """Every series of a dataset by one label.

    Attributes:
        by: The label.
        builds: Its values, in order.
        captures: Captures per build.
        series: The inference latency first, then each layer by index.
        threshold_pct, alpha: What a change must exceed and beat.
        left_out: Captures without the label.
        models: Distinct models among the captures (1 when all run the same network).
        notes: Things to know (the newest build could not be compared with the one before ...).
        unit: What the values count: ``cycles``, or ``uJ`` (``energy``).
    """

    by: str
    builds: tuple[str, ...]
    captures: tuple[int, ...]
    series: tuple[Series, ...]
    threshold_pct: float
    alpha: float
    left_out: int
    models: int

    notes: tuple[str, ...] = ()
    unit: str = "cycles"

    @property
    def newest_regressions(self) -> list[Series]:
        """Series in which the newest build starts a higher level, or is slower than the build
        before it as ``tracer compare`` judges it (a regression to fail on).
        """
        newest = len(self.builds) - 1
        out = []
        for s in self.series:
            level = any(s.positions[c.index] == newest and c.size > 0 for c in s.segmentation.changes)
            if level or (s.newest is not None and s.newest.verdict is Verdict.SLOWER):
                out.append(s)
        return out


def trend(
    dataset: Dataset,
    by: str,
    where: Mapping[str, str] | None = None,
    threshold_pct: float = 5.0,
    alpha: float = ALPHA,
    energy: bool = False,
) -> Trend:
    """The series of ``dataset`` by label ``by`` (captures matching ``where`` only); of energy per
    execution and per inference (microjoules) instead of cycles when ``energy``.

    Raises:
        UsageError: No capture has the label, or ``where`` matches none.
        CaptureError: The dataset holds no capture, or (``energy``) none with energy (exit 3).
    """
    labels = dataset.table("labels", ["capture_id", "key", "value"])
    chosen = set(dataset.select(where)) if where else None
    tagged = labels.filter(pc.equal(labels["key"], by)).to_pylist()
    build_of = {row["capture_id"]: row["value"] for row in tagged if chosen is None or row["capture_id"] in chosen}
    considered = len(chosen) if chosen is not None else len(dataset.known_ids())
    if not considered and not where:  # not "no capture has the label": there is no capture at all
        raise CaptureError(
            f"{dataset}: nothing measured: the dataset holds no capture (captures that could not be "
            "read are in its errors table; 'tracer ingest CAPTURES -o DATASET' adds them)"
        )
    if not build_of:
        keys = sorted(set(labels.column("key").to_pylist()))
        raise UsageError(
            f"no capture of {dataset} has the label {by!r}"
            + (" among those selected" if where else "")
            + (f"; labels there: {', '.join(keys)}" if keys else "")
        )
    builds = _ordered(set(build_of.values()))
    position = {b: i for i, b in enumerate(builds)}
    per_build: dict[str, list[str]] = {b: [] for b in builds}
    for capture_id in dataset.select({}):  # in ingest order, as compare --dataset takes them
        if capture_id in build_of:
            per_build[build_of[capture_id]].append(capture_id)
    ids = list(build_of)
    import pyarrow.dataset as pds

    where_ids = pds.field("capture_id").isin(ids)
    whole, each = ("energy_uj", "energy_uj") if energy else ("latency_p50", "p50")
    captures = dataset.table("captures", ["capture_id", whole, "model"], where_ids).to_pylist()
    layers = dataset.table("layers", ["capture_id", "layer", "name", "op", each], where_ids).to_pylist()
    if energy and all(row[whole] is None for row in captures):
        raise CaptureError(
            f"{dataset}: nothing measured: no capture{' selected' if where else ''} with the label {by!r} has "
            "energy ('tracer ingest CAPTURES -o DATASET --power' adds it from each capture's power recording)"
        )
    series_values: dict[tuple[int | None, str, str], list[list[float]]] = {}
    inference_key: tuple[int | None, str, str] = (None, INFERENCE, "")
    series_values[inference_key] = [[] for _ in builds]
    for row in captures:
        if row[whole] is not None:
            series_values[inference_key][position[build_of[row["capture_id"]]]].append(row[whole])
    for row in layers:
        if row[each] is None:
            continue
        key = (row["layer"], row["name"] or f"{row['op'] or 'layer'}#{row['layer']}", row["op"] or "")
        series_values.setdefault(key, [[] for _ in builds])[position[build_of[row["capture_id"]]]].append(row[each])
    newest: Comparison | None = None
    notes: tuple[str, ...] = (ENERGY_NOTE,)
    if not energy:
        newest, notes = _newest(dataset, builds, per_build, threshold_pct)
    series = []
    ordered_keys = sorted(series_values, key=lambda k: (k[0] is not None, k[0] if k[0] is not None else -1, k[1]))
    for key in ordered_keys:
        per = series_values[key]
        values = tuple(_median(v, energy) for v in per)
        positions = tuple(i for i, v in enumerate(values) if v is not None)
        measured = [v for v in values if v is not None]
        if not measured:
            continue
        series.append(
            Series(
                key[1],
                key[0],
                key[2],
                values,
                segment(measured, threshold_pct, alpha),
                positions,
                capture_spread_pct(per),
                _newest_change(newest, key[0]),
            )
        )
    return Trend(
        by=by,
        builds=tuple(builds),
        captures=tuple(len(per_build[b]) for b in builds),
        series=tuple(series),
        threshold_pct=threshold_pct,
        alpha=alpha,
        left_out=considered - len(build_of),
        models=len({row["model"] for row in captures}),
        notes=notes,
        unit="uJ" if energy else "cycles",
    )


def _median(values: list[float], energy: bool) -> float | None:
    """A build's value: the median of its captures' (cycles: the nearest rank, a measured value)."""
    if not values:
        return None
    return float(np.median(values)) if energy else nearest_rank(np.array(values, np.int64), 0.5)


def _newest(
    dataset: Dataset, builds: list[str], per_build: Mapping[str, list[str]], threshold_pct: float
) -> tuple[Comparison | None, tuple[str, ...]]:
    """The newest build against the one before, as ``tracer compare --dataset`` compares them."""
    if len(builds) < 2:
        return None, ()
    before, last = builds[-2], builds[-1]
    try:
        base = dataset.capture_digests(per_build[before], "base")
        new = dataset.capture_digests(per_build[last], "new")
        return compare(base, new, threshold_pct=threshold_pct, alpha=DEFAULT_ALPHA), ()
    except ModelMismatch as exc:
        return None, (f"the newest build was not compared with build {before}: {exc}",)


def _newest_change(comparison: Comparison | None, layer: int | None) -> Change | None:
    if comparison is None:
        return None
    if layer is None:
        return comparison.latency
    return next((c for c in comparison.layers if c.new_index == layer and c.base_index == layer), None)


def _ordered(values: set[str]) -> list[str]:
    """Label values as numbers when all are, else as text."""
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)


FIGURES = {
    "unit": "what the values count: cycles, or uJ (--energy: energy per execution, and per inference for "
    "the inference series, microjoules)",
    "values": "per build: the median over the build's captures of each capture's median cycles (--energy: "
    "of each capture's mean energy)",
    "noise": "the series' noise estimate, cycles: the median absolute deviation of successive "
    "build values (times 1.4826 / sqrt 2); the change-point penalty is scaled to it",
    "residual_sd": "cycles: the standard deviation left after the fit of levels, with the "
    "residual degrees of freedom (what the t tests of the change points use)",
    "capture_spread_pct": "percent: how far one capture's median strays from its build's, pooled "
    "over builds of two captures or more (run-to-run variance and each capture's own noise; "
    "null: no build has two)",
    "newest": "the newest build against the build before, judged as 'tracer compare --dataset' "
    "judges the same captures (verdict, median change and its 95 % interval, unit, p-value)",
}


def trend_object(t: Trend, dataset: str) -> dict[str, Any]:
    """The trend as JSON (``tracer trend --format json``; ``docs/trend.md``)."""
    newest = {s.label for s in t.newest_regressions}
    return {
        "figures": FIGURES,
        "dataset": dataset,
        "by": t.by,
        "builds": list(t.builds),
        "captures": list(t.captures),
        "unit": t.unit,
        "threshold_pct": t.threshold_pct,
        "alpha": t.alpha,
        "left_out": t.left_out,
        "models": t.models,
        "passed": not newest,
        "newest_regressions": sorted(newest),
        "not_judged": [s.label for s in t.series if not s.segmentation.judged],
        "series": [
            {
                "label": s.label,
                "layer": s.layer,
                "op": s.op,
                "values": list(s.values),
                "noise": round(s.segmentation.noise, 3),
                "residual_sd": round(s.segmentation.sigma, 3),
                "capture_spread_pct": None if s.capture_spread_pct is None else round(s.capture_spread_pct, 3),
                "newest": _newest_object(s.newest, t.builds),
                "changes": [
                    {
                        "build": t.builds[s.positions[c.index]],
                        "position": s.positions[c.index],
                        "before": c.before,
                        "after": c.after,
                        "size": round(c.size, 3),
                        "pct": None if c.pct is None else round(c.pct, 3),
                        "p_value": c.p_value,
                        "builds_after": c.builds_after,
                    }
                    for c in s.segmentation.changes
                ],
                "outliers": [t.builds[s.positions[i]] for i in s.segmentation.outliers],
            }
            for s in t.series
        ],
        "notes": list(t.notes),
    }


def _newest_object(change: Change | None, builds: tuple[str, ...]) -> dict[str, Any] | None:
    if change is None or change.p50 is None:
        return None
    ci = change.p50.interval
    return {
        "against": builds[-2],
        "verdict": change.verdict.value,
        "pct": None if change.p50.pct is None else round(change.p50.pct, 3),
        "low_pct": None if ci is None or ci.low_pct is None else round(ci.low_pct, 3),
        "high_pct": None if ci is None or ci.high_pct is None else round(ci.high_pct, 3),
        "unit": change.unit,
        "p_value": None if change.test is None else change.test.p_value,
    }
