"""The comparison's ``planner`` section (``compare --budget [--calibration]``) as text and Markdown
rows: made from the comparison object, the same numbers (:mod:`tracer.compare.planner_error`).
"""

from __future__ import annotations

from typing import Any

from tracer.analysis.calibration_file import NO_ESTIMATE, NOT_CALIBRATED
from tracer.export.calibration_table import percent
from tracer.export.report_text import CALIBRATION_MARKS, _n, _table

WORDS = {"outside": " (outside what the calibration saw)", "partial": " (partly calibrated)"}


def planner_headers(section: dict[str, Any]) -> list[str]:
    """The table's columns (the calibrated ones only with a calibration)."""
    headers = ["#", "layer", "op", "base p50", "new p50", "planner", "base err", "new err", "err change"]
    if section["calibration"] is not None:
        headers += ["calibrated", "base err", "new err", "err change"]
    return headers


def planner_rows(section: dict[str, Any]) -> list[list[str]]:
    """One row per layer pair."""
    rows = []
    calibrated = section["calibration"] is not None
    for la in section["layers"]:
        b, n = la["base"], la["new"]
        index = la["new_index"] if la["new_index"] is not None else la["base_index"]
        row = [
            "-" if index is None else str(index),
            la["label"],
            la["op"],
            _n(b["measured"]),
            _n(n["measured"]),
            _both(b["planner"], n["planner"]),
            percent(b["planner_error"], signed=True),
            percent(n["planner_error"], signed=True),
            _points(la["planner_error_change"]),
        ]
        if calibrated:
            row += [
                _both(_cycles(b["calibrated"]), _cycles(n["calibrated"]), _mark(n["calibrated"])),
                percent(b["calibrated_error"], signed=True),
                percent(n["calibrated_error"], signed=True),
                _points(la["calibrated_error_change"]),
            ]
        rows.append(row)
    return rows


def planner_summary(section: dict[str, Any]) -> list[str]:
    """The budget and calibration applied, and each side's median error size."""
    budget = section["budget"]
    lines = [f"budget {budget['name'] or '(unnamed)'} from {', '.join(budget['sources'])}"]
    c = section["calibration"]
    if c is not None:
        lines.append(f"calibration {c['source']} ({len(c['operators'])} operator types, {c['models']} models)")
        if c.get("planner_difference"):
            lines.append(f"calibration learnt with another planner setup: {c['planner_difference']}")
    for side in ("base", "new"):
        s = section["summary"][side]
        said = f"{side}: median error of the planner {percent(s['planner_median_error'])}"
        if c is not None:
            said += f", of the calibrated prediction {percent(s['calibrated_median_error'])}"
        lines.append(f"{said} ({s['layers']} layers)")
    return lines


def planner_notes(section: dict[str, Any]) -> list[str]:
    """What the matching says of layers, once per sentence with the layers it is said of."""
    said: dict[str, list[str]] = {}
    for la in section["layers"]:
        base, new = la["base"]["note"], la["new"]["note"]
        if base and base == new:
            said.setdefault(new, []).append(la["label"])
            continue
        for side, note in (("base", base), ("new", new)):
            if note:
                said.setdefault(note, []).append(f"{la['label']} ({side})")
    return [f"{', '.join(labels)}: {note}" for note, labels in said.items()]


def planner_text(section: dict[str, Any]) -> list[str]:
    """The section as text lines."""
    headers = planner_headers(section)
    out = ["planner     measured against the planner's prediction"]
    out += [f"  {line}" for line in planner_summary(section)]
    out += ["", *_table(headers, planner_rows(section), right=set(range(3, len(headers))))]
    out.append("  err: prediction / measured - 1; err change: its size, new minus base, in points")
    if section["calibration"] is not None:
        out.append("  calibrated: * outside what the calibration has seen, ~ partly calibrated, - not calibrated")
    out += [f"  note: {note}" for note in planner_notes(section)]
    return out


def planner_markdown(section: dict[str, Any]) -> list[str]:
    """The section as Markdown lines."""
    headers = planner_headers(section)
    out = ["**Against the planner**", "", *(f"- {line}" for line in planner_summary(section)), ""]
    out.append("| " + " | ".join(headers) + " |")
    out.append("|" + "|".join("--:" if i == 0 or i >= 3 else "---" for i in range(len(headers))) + "|")
    for row in planner_rows(section):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    out += ["", "err: prediction / measured - 1; err change: its size, new minus base, in points."]
    out += [f"> {note}" for note in planner_notes(section)]
    return out


def planner_sentence(layer: dict[str, Any]) -> str:
    """One layer of the section in words (JUnit): each prediction's error on both builds."""
    b, n = layer["base"], layer["new"]
    said = (
        f"planner {_both(b['planner'], n['planner'])}: error {percent(b['planner_error'], signed=True)} -> "
        f"{percent(n['planner_error'], signed=True)} ({_points(layer['planner_error_change'])})"
    )
    if b["calibrated"] is not None or n["calibrated"] is not None:
        said += (
            f"; calibrated {_both(_cycles(b['calibrated']), _cycles(n['calibrated']))}"
            f"{WORDS.get((n['calibrated'] or {}).get('status', ''), '')}: "
            f"error {percent(b['calibrated_error'], signed=True)} -> {percent(n['calibrated_error'], signed=True)} "
            f"({_points(layer['calibrated_error_change'])})"
        )
    return said


def _cycles(calibrated: dict[str, Any] | None) -> float | None:
    if not calibrated or calibrated["status"] in (NOT_CALIBRATED, NO_ESTIMATE):
        return None
    return calibrated["cycles"]


def _mark(calibrated: dict[str, Any] | None) -> str:
    return CALIBRATION_MARKS.get((calibrated or {}).get("status", ""), "")


def _both(base: float | None, new: float | None, mark: str = "") -> str:
    """One number when both sides predict the same (one budget, one clock), else both; cycles whole."""
    b, n = _whole(base), _whole(new)
    if b == n:
        return _n(n) + (mark if n is not None else "")
    return f"{_n(b)} / {_n(n)}{mark}"


def _whole(value: float | None) -> int | None:
    return None if value is None else round(value)


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f} pt"
