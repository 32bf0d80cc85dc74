"""The comparison as JUnit XML: one test case per layer, the inference latency and each memory mark.

One ``<testsuite>`` named after the two builds, ``classname`` ``tracer.compare.time`` or
``tracer.compare.memory``; a change that is a regression (slower beyond the threshold, memory
grown beyond it) is a ``<failure>`` whose text says what changed and why; the others carry their
numbers in ``<system-out>``; with ``--budget``, each layer's text adds its errors against the
planner (and the calibration), and the properties name the files. Made from the comparison
object, like the text.
"""

from __future__ import annotations

import datetime as _dt
import xml.etree.ElementTree as ET
from typing import IO, Any

from tracer.export.compare_planner_text import planner_sentence
from tracer.export.compare_text import explain


def write_junit(obj: dict[str, Any], out: IO[str]) -> None:
    """Write the comparison's JUnit XML (UTF-8 text with an XML declaration)."""
    changes = ([obj["inference"]] if obj["inference"] else []) + obj["layers"]
    planned = {(la["base_index"], la["new_index"]): la for la in (obj.get("planner") or {}).get("layers", [])}
    cases: list[tuple[str, str, str, str | None]] = []  # classname, name, text, failure message
    for ch in changes:
        index = ch["new_index"] if ch["new_index"] is not None else ch["base_index"]
        name = ch["label"] if index is None else f"layer {index} {ch['label']}"
        text = f"{ch['verdict']}: {explain(ch)}" if ch["p50"] else ch["verdict"]
        plan = planned.get((ch["base_index"], ch["new_index"])) if index is not None else None
        if plan is not None:  # --budget: against the planner (and the calibration)
            text += f"; {planner_sentence(plan)}"
        failed = ch["verdict"] == "slower"
        cases.append(("tracer.compare.time", name, text, f"{name} slower: {_pct(ch)}" if failed else None))
    for m in obj["memory"]:
        text = f"{m['name']}: {m['base']} -> {m['new']} bytes"
        cases.append(
            (
                "tracer.compare.memory",
                m["name"],
                text,
                f"{text}, grew beyond {obj['threshold_pct']:g} %" if m["grew"] else None,
            )
        )
    failures = sum(1 for case in cases if case[3] is not None)
    title = f"tracer compare {_inputs(obj['base'])} -> {_inputs(obj['new'])}"
    counts = {
        "name": title,
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": "0",
        "skipped": "0",
        "time": "0",
    }
    root = ET.Element("testsuites", counts)
    stamp = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    suite = ET.SubElement(root, "testsuite", {**counts, "timestamp": stamp})
    props = ET.SubElement(suite, "properties")
    for key in ("threshold_pct", "alpha", "match"):
        ET.SubElement(props, "property", {"name": key, "value": str(obj[key])})
    if obj.get("planner"):
        section = obj["planner"]
        ET.SubElement(props, "property", {"name": "budget", "value": ", ".join(section["budget"]["sources"])})
        if section["calibration"] is not None:
            ET.SubElement(props, "property", {"name": "calibration", "value": section["calibration"]["source"]})
    for classname, name, text, failure in cases:
        case = ET.SubElement(suite, "testcase", {"classname": classname, "name": name, "time": "0"})
        if failure is not None:
            element = ET.SubElement(case, "failure", {"message": failure, "type": "regression"})
        else:
            element = ET.SubElement(case, "system-out")
        element.text = text
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")


def _inputs(side: dict[str, Any]) -> str:
    inputs = side["inputs"]
    return inputs[0] if len(inputs) == 1 else f"{len(inputs)} captures"


def _pct(ch: dict[str, Any]) -> str:
    pct = ch["p50"]["pct"]
    return f"median {ch['p50']['base']:,} -> {ch['p50']['new']:,} cycles" + ("" if pct is None else f" ({pct:+.2f} %)")
