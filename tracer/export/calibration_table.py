"""The planner's error table (``tracer calibrate``): the object (JSON) and its text and Markdown.

One object, three renderings with the same content: per operator type the layers and models the
numbers rest on, the median measured/predicted, the median and p90 absolute error of the planner
and its bias; with a validation, the calibrated error on the models left out and how often the
measured cycles fell in the calibrated interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import IO, Any

from tracer.analysis.calibration import Fit, HeldOut, LayerObservation, by_op
from tracer.analysis.calibration_errors import ErrorSummary, FeatureEffect, error_summary

ALL = "all"


def table_object(
    observations: Sequence[LayerObservation],
    fitted: Fit,
    held: Sequence[HeldOut] | str,
    effects: Sequence[FeatureEffect],
    planner: Mapping[str, Any],
    level: float,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """The error table and the calibration as one JSON object."""
    validated = not isinstance(held, str)
    held_of: dict[int, HeldOut] = {} if isinstance(held, str) else {id(h.observation): h for h in held}

    def summary(group: str, members: Sequence[LayerObservation]) -> ErrorSummary:
        return error_summary(group, members, [held_of[id(o)] for o in members if id(o) in held_of])

    bounds: dict[str, list[LayerObservation]] = {}
    for o in observations:
        bounds.setdefault(o.bound or "unknown", []).append(o)
    return {
        "planner": dict(planner),
        "models": sorted({o.model for o in observations}),
        "captures": sorted({o.capture for o in observations}),
        "layers": len(observations),
        "operators": [summary(op, group).to_json() for op, group in by_op(observations).items()],
        "all": summary(ALL, observations).to_json(),
        "by_bound": [summary(b, group).to_json() for b, group in sorted(bounds.items())],
        "features": [e.to_json() for e in effects],
        "calibration": {
            "level": level,
            "operators": [f.to_json() for f in fitted.operators.values()],
            "uncalibrated": dict(fitted.too_few),
        },
        "validation": {"method": "leave one model out", "done": validated, "note": None if validated else held},
        "notes": list(notes),
    }


def planner_label(planner: Mapping[str, Any]) -> str:
    """``vela 4.1 (regor, Ethos_U55_128, ...)`` from the planner object."""
    if not planner:
        return "unknown planner"
    name = str(planner.get("name") or "planner")
    if planner.get("version"):
        name += f" {planner['version']}"
    config = [str(v) for v in (planner.get("config") or {}).values()]
    return f"{name} ({', '.join(config)})" if config else name


def write_text(table: Mapping[str, Any], out: IO[str]) -> None:
    """The table for a terminal."""
    out.write(f"planner: {planner_label(table['planner'])}\n")
    out.write(
        f"data: {table['layers']} layers of {len(table['models'])} model(s) in {len(table['captures'])} capture(s)\n\n"
    )
    validated = table["validation"]["done"]
    head = ["op", "layers", "models", "ratio", "median err", "p90 err", "bias"]
    if validated:
        head += ["left out", "before", "after", "p90 after", "in interval"]
    rows = [head]
    for row in [*table["operators"], table["all"]]:
        cells = [
            row["group"],
            str(row["layers"]),
            str(row["models"]),
            f"{row['median_ratio']:.2f}",
            percent(row["median_error"]) + _span(row["median_error_interval"]),
            percent(row["p90_error"]),
            percent(row["bias"], signed=True),
        ]
        if validated:
            cells += [
                str(row["calibrated_layers"]),
                percent(row["median_error_before"]),
                percent(row["median_error_after"]) + _span(row["median_error_after_interval"]),
                percent(row["p90_error_after"]),
                percent(row["coverage"]),
            ]
        rows.append(cells)
    _columns(rows, out)
    out.write(
        "\nratio: median measured / predicted; err: |predicted / measured - 1| (median: with its 95% bootstrap "
        "interval); bias: median signed error (negative: the planner predicts too few cycles)\n"
    )
    if validated:
        out.write(
            "left out: layers predicted by a calibration fitted without their model; before/after: the planner's "
            "and the calibrated median error on those layers\n"
        )
    else:
        out.write(f"not validated: {table['validation']['note']}\n")
    calibration = table["calibration"]
    out.write(
        f"\ncalibration (measured / predicted per operator type; {calibration['level']:.0%} interval of one layer):\n"
    )
    for f in calibration["operators"]:
        lo, hi = f["factor_interval"]
        llo, lhi = f["layer_interval"]
        out.write(
            f"  {f['op']:<20} x{f['factor']:.3f} (95% {lo:.3f}..{hi:.3f})  one layer {llo:.3f}..{lhi:.3f}  "
            f"from {f['layers']} layers of {f['models']} models\n"
        )
    for why in calibration["uncalibrated"].values():
        out.write(f"  not calibrated: {why}\n")
    if not calibration["operators"]:
        out.write("  none: too few data to calibrate any operator type\n")
    mattering = [e for e in table["features"] if e["matters"]]
    if mattering:
        out.write("\nstill depends on size (a factor per type leaves this in its interval):\n")
        for e in mattering:
            out.write(
                f"  {e['op']}: log ratio per log {e['feature']} {e['slope']:+.3f} "
                f"(95% {e['interval'][0]:+.3f}..{e['interval'][1]:+.3f}, {e['layers']} layers)\n"
            )
    if table["by_bound"]:
        out.write("\nby what bounds the planner's estimate: ")
        out.write(
            "; ".join(
                f"{b['group']} {b['layers']} layers, ratio {b['median_ratio']:.2f}, median err {percent(b['median_error'])}"
                for b in table["by_bound"]
            )
            + "\n"
        )
    for note in table["notes"]:
        out.write(f"note: {note}\n")


def write_markdown(table: Mapping[str, Any], out: IO[str]) -> None:
    """The table to publish (GitHub-flavoured Markdown)."""
    out.write(f"Planner error of {planner_label(table['planner'])}, measured with tracer\n")
    out.write(f"on {table['layers']} layers of {len(table['models'])} models.\n\n")
    validated = table["validation"]["done"]
    head = ["Operator", "Layers", "Models", "Median measured/predicted", "Median error", "p90 error", "Bias"]
    if validated:
        head += ["Calibrated median error (model left out)"]
    out.write("| " + " | ".join(head) + " |\n")
    out.write("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|\n")
    for row in [*table["operators"], table["all"]]:
        cells = [
            f"`{row['group']}`" if row["group"] != ALL else "**all**",
            str(row["layers"]),
            str(row["models"]),
            f"{row['median_ratio']:.2f}",
            percent(row["median_error"]) + _span(row["median_error_interval"]),
            percent(row["p90_error"]),
            percent(row["bias"], signed=True),
        ]
        if validated:
            cells.append(percent(row["median_error_after"]) + _span(row["median_error_after_interval"]))
        out.write("| " + " | ".join(cells) + " |\n")
    out.write(
        "\nError: |predicted / measured - 1| per layer, the median with its 95 % bootstrap interval; bias: median signed error (negative: the planner "
        "predicts too few cycles); p90: nearest rank.\n"
    )


def percent(value: float | None, signed: bool = False) -> str:
    """A ratio as a percentage with one decimal (``signed``: with its sign); ``-`` for None."""
    if value is None:
        return "-"
    return f"{100 * value:+.1f}%" if signed else f"{100 * value:.1f}%"


def _span(interval: list[float] | None) -> str:
    if not interval:
        return ""
    return f" ({100 * interval[0]:.1f}..{100 * interval[1]:.1f})"


def _columns(rows: list[list[str]], out: IO[str]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        out.write("  ".join(cells).rstrip() + "\n")
