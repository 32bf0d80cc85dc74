"""``tracer budget OLD NEW``: planner drift between two plans of one model (and, with ``--capture``,
which one the measurements agree with).
"""

from __future__ import annotations

import argparse
import json
from typing import IO, Any

from tracer.budget.drift import DEFAULT_THRESHOLD_PCT, PlanDrift


def run_drift(args: argparse.Namespace) -> int:
    """Load both plans (and the capture), compare, print."""
    from tracer.budget import load_budget
    from tracer.budget.drift import plan_drift
    from tracer.cli.output import open_output
    from tracer.errors import UsageError

    if args.old or args.new:
        if not (args.old and args.new) or args.files:
            raise UsageError("planner drift: give both --old FILE... and --new FILE... (and no other budget files)")
        old_files, new_files = args.old, args.new
    else:
        old_files, new_files = [args.files[0]], [args.files[1]]
    old, new = load_budget(old_files), load_budget(new_files)
    for which, budget in (("old", old), ("new", new)):
        for note in budget.notes:
            args.console.info(f"note ({which}): {note}")
    drift = plan_drift(old, new)
    threshold = DEFAULT_THRESHOLD_PCT if args.threshold is None else args.threshold
    document = drift_object(drift, threshold)
    if args.capture:
        document["capture"] = _capture_agreement(args, drift)
    with open_output(args.output) as out:
        if args.format == "json":
            out.write(json.dumps(document, indent=2) + "\n")
        else:
            write_drift_text(document, out)
    return 0


def _capture_agreement(args: argparse.Namespace, drift: PlanDrift) -> dict[str, Any]:
    from tracer.analysis.planner_drift import agreement, agreement_summary
    from tracer.errors import CaptureError
    from tracer.pipeline.load import load_timeline

    timeline, facts = load_timeline(args.capture)
    for warning in facts.warnings:
        args.console.warn(warning)
    rows = agreement(timeline, drift)
    if not rows:
        raise CaptureError(f"{args.capture}: no measured layer matches one layer of both plans")
    return {"path": args.capture, **agreement_summary(rows), "layers_compared": [r.to_json() for r in rows]}


def drift_object(drift: PlanDrift, threshold_pct: float) -> dict[str, Any]:
    """The JSON of ``tracer budget OLD NEW``."""
    rows = [d.to_json(threshold_pct) for d in drift.layers]
    total = drift.total_change
    return {
        "old": {"sources": list(drift.old.sources), **_model(drift.old)},
        "new": {"sources": list(drift.new.sources), **_model(drift.new)},
        "total_change_pct": None if total is None else round(100 * total, 2),
        "paired_by": drift.paired_by,
        "threshold_pct": threshold_pct,
        "moved": sum(r["moved"] for r in rows),
        "layers": rows,
    }


def _model(budget: Any) -> dict[str, Any]:
    m = budget.model
    return {
        "clock_hz": m.clock_hz,
        "cycles_total": m.cycles_total,
        "compiler": m.compiler.to_json() if m.compiler else None,
    }


def write_drift_text(document: dict[str, Any], out: IO[str]) -> None:
    """The drift for a terminal."""
    for which in ("old", "new"):
        d = document[which]
        compiler = d["compiler"] or {}
        config = ", ".join(str(v) for v in (compiler.get("config") or {}).values())
        name = (compiler.get("name") or "?") + (f" {compiler['version']}" if compiler.get("version") else "")
        total = "-" if d["cycles_total"] is None else f"{d['cycles_total']:,.0f}"
        clock = f" at {d['clock_hz'] / 1e6:g} MHz" if d["clock_hz"] else ""
        out.write(f"{which}: {name} ({config}): {total} cycles{clock}  [{', '.join(d['sources'])}]\n")
    if document["total_change_pct"] is not None:
        out.write(f"model total: {document['total_change_pct']:+.1f}% (in time when both clocks are known)\n")
    out.write(f"layers paired by {document['paired_by']}\n\n")
    rows = [["index", "name", "op", "old", "new", "change", "moved"]]
    for r in document["layers"]:
        rows.append(
            [
                "-" if r["index"] is None else str(r["index"]),
                r["name"] or "-",
                r["op"] or "-",
                "-" if r["old_cycles"] is None else f"{r['old_cycles']:,}",
                "-" if r["new_cycles"] is None else f"{r['new_cycles']:,}",
                "-" if r["change_pct"] is None else f"{r['change_pct']:+.1f}%",
                "MOVED" if r["moved"] else "",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [c.rjust(w) if i in (0, 3, 4, 5) else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        out.write("  ".join(cells).rstrip() + "\n")
    out.write(
        f"\n{document['moved']} of {len(document['layers'])} layers moved by more than "
        f"{document['threshold_pct']:g}% (or are in one plan only)\n"
    )
    capture = document.get("capture")
    if capture:
        verdict = {"old": "the old plan", "new": "the new plan", "both": "both plans alike"}[capture["verdict"]]
        out.write(
            f"\n{capture['path']}: the measured cycles agree better with {verdict}: median error "
            f"old {capture['old_median_error_pct']:.1f}%, new {capture['new_median_error_pct']:.1f}% over "
            f"{capture['layers']} layers; closer to the old on {capture['closer_old']}, to the new on "
            f"{capture['closer_new']}, equal on {capture['same']}\n"
        )
        for r in capture["layers_compared"]:
            out.write(
                f"  {r['layer']}: measured {r['measured_cycles']:,.0f}, old {r['old_error_pct']:+.1f}%, "
                f"new {r['new_error_pct']:+.1f}% -> {r['closer']}\n"
            )
