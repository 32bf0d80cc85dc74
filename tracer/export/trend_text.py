"""The trend of a dataset as text for a terminal and as Markdown (``tracer trend``).

Both are made from the trend's JSON object (:func:`tracer.fleet.trend.trend_object`), so all
carry the same content: per series
its values across the builds (a sparkline), each change point with the build where it began, its
size and p-value, and outlier builds; the verdict says whether the newest build starts a
regression.
"""

from __future__ import annotations

from typing import IO, Any

from tracer.export.report_text import _n, _table

BARS = "▁▂▃▄▅▆▇█"


def render_text(obj: dict[str, Any]) -> str:
    """The trend as text."""
    out = [
        f"dataset     {obj['dataset']}",
        f"builds      {len(obj['builds'])} by {obj['by']}: {_span(obj['builds'])} ({sum(obj['captures'])} captures"
        + (f"; {obj['left_out']} without the label left out" if obj["left_out"] else "")
        + ")",
        f"rule        a change: a new level beyond {obj['threshold_pct']:g} % of the one before, p < {obj['alpha']:g}",
        f"values      {'energy per execution and per inference (uJ)' if obj.get('unit') == 'uJ' else 'median cycles'}",
        f"verdict     {_verdict(obj)}",
    ]
    newest = _newest_line(obj)
    if newest:
        out.append(f"newest      {newest}")
    if obj["models"] > 1:
        out.append(f"note        the captures run {obj['models']} different models: series follow layer names")
    out += [f"note        {note}" for note in obj.get("notes", [])]
    out.append("")
    rows = [
        [
            ("-" if s["layer"] is None else str(s["layer"])),
            s["label"],
            s["op"],
            _spark(s["values"]),
            _value(_last(s["values"]), obj),
            _changes(s, obj),
        ]
        for s in obj["series"]
    ]
    out += _table(["#", "layer", "op", "series", "newest", "changes (build: level before -> after)"], rows, {0, 4})
    return "\n".join(out) + "\n"


def render_markdown(obj: dict[str, Any]) -> str:
    """The trend as GitHub-flavoured Markdown."""
    out = [
        f"### tracer trend by {obj['by']}: {_verdict(obj)}",
        "",
        (
            f"{len(obj['builds'])} builds ({_span(obj['builds'])}), {sum(obj['captures'])} captures; a change is a "
            f"new level beyond {obj['threshold_pct']:g} % of the one before with p < {obj['alpha']:g}."
        ),
        "",
        "| # | layer | op | series | newest | changes |",
        "|--:|---|---|---|--:|---|",
    ]
    for s in obj["series"]:
        cells = [
            "-" if s["layer"] is None else str(s["layer"]),
            s["label"],
            s["op"],
            _spark(s["values"]),
            _value(_last(s["values"]), obj),
            _changes(s, obj),
        ]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"


def write_text(obj: dict[str, Any], out: IO[str]) -> None:
    """Write :func:`render_text`."""
    out.write(render_text(obj))


def write_markdown(obj: dict[str, Any], out: IO[str]) -> None:
    """Write :func:`render_markdown`."""
    out.write(render_markdown(obj))


def _newest_line(obj: dict[str, Any]) -> str:
    """The newest build against the one before, as ``tracer compare`` judges it: what is not unchanged."""
    judged = [(s["label"], s["newest"]) for s in obj["series"] if s.get("newest")]
    if not judged:
        return ""
    against = judged[0][1]["against"]
    moved = [
        f"{label} {n['verdict']}" + ("" if n["pct"] is None else f" ({n['pct']:+.2f} %)")
        for label, n in judged
        if n["verdict"] != "unchanged"
    ]
    return f"against build {against}, as compare judges it: " + ("; ".join(moved) if moved else "nothing changed")


def _verdict(obj: dict[str, Any]) -> str:
    if obj["newest_regressions"]:
        return f"FAIL: the newest build ({obj['builds'][-1]}) starts a regression in {', '.join(obj['newest_regressions'])}"
    unjudged = obj.get("not_judged", [])
    if unjudged and len(unjudged) == len(obj["series"]):
        return (
            f"NOT JUDGED: {len(obj['builds'])} build(s) are too few to tell a change from noise (at least "
            "4; 3 when the values repeat exactly); 'tracer compare BASE NEW' tells two builds apart"
        )
    if unjudged:
        return (
            "PASS: the newest build starts no regression; too few builds to judge "
            + ", ".join(unjudged[:5])
            + (" ..." if len(unjudged) > 5 else "")
        )
    return "PASS: the newest build starts no regression"


def _changes(series: dict[str, Any], obj: dict[str, Any]) -> str:
    parts = []
    for c in series["changes"]:
        pct = "" if c["pct"] is None else f" ({c['pct']:+.1f} %)"
        parts.append(f"{c['build']}: {_value(c['before'], obj)} -> {_value(c['after'], obj)}{pct}")
    if series["outliers"]:
        parts.append("outlier build(s) " + ", ".join(series["outliers"]))
    return "; ".join(parts) or "-"


def _value(value: float | None, obj: dict[str, Any]) -> str:
    """A series' value: whole cycles, or microjoules to four significant digits (``--energy``)."""
    if value is None:
        return "-"
    if obj.get("unit") == "uJ":
        return f"{value:,.4g} uJ" if abs(value) < 1000 else f"{value:,.0f} uJ"
    return _n(round(value))


def _spark(values: list[int | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return ""
    lo, hi = min(known), max(known)
    span = hi - lo
    return "".join(
        " " if v is None else BARS[0 if not span else min(len(BARS) - 1, int((v - lo) / span * len(BARS)))]
        for v in values
    )


def _last(values: list[int | None]) -> int | None:
    return next((v for v in reversed(values) if v is not None), None)


def _span(builds: list[str]) -> str:
    return builds[0] if len(builds) == 1 else f"{builds[0]} .. {builds[-1]}"
