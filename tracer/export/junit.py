"""The gate's checks as JUnit XML, the test-report format every CI system reads.

One ``<testsuite>`` per group (input, layers, memory, findings) inside ``<testsuites>``; one
``<testcase>`` per check, with ``classname`` ``tracer.<group>``; a failed check has a
``<failure>`` whose ``type`` is the worst finding's kind and whose text holds every finding with
its evidence and fix; a passing check's result goes to ``<system-out>``. A layer check's ``time``
is the layer's measured p50 in seconds when the clock is known, so CI tools that chart test
durations chart the layer times.
"""

from __future__ import annotations

import datetime as _dt
import json
import xml.etree.ElementTree as ET
from typing import IO, Any

from tracer.analysis.checks import FINDINGS, LAYERS, MEMORY, Check, GateResult

GROUP_TITLES = {"input": "input", LAYERS: "layer budgets", MEMORY: "memory", FINDINGS: "findings"}


def junit_tree(
    result: GateResult, capture: str, properties: dict[str, Any] | None = None
) -> ET.ElementTree[ET.Element]:
    """The JUnit document of a gate result.

    Args:
        result: The checks.
        capture: The capture or log checked (names the suites).
        properties: Extra ``<property>`` values (budget files, tolerance, fail-on ...).
    """
    failures = len(result.failed)
    root = ET.Element(
        "testsuites",
        {
            "name": f"tracer check {capture}",
            "tests": str(len(result.checks)),
            "failures": str(failures),
            "errors": "0",
            "skipped": "0",
            "time": "0",
        },
    )
    stamp = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    for group in GROUP_TITLES:
        checks = [c for c in result.checks if c.group == group]
        if not checks:
            continue
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": f"tracer check: {GROUP_TITLES[group]} ({capture})",
                "tests": str(len(checks)),
                "failures": str(sum(not c.passed for c in checks)),
                "errors": "0",
                "skipped": "0",
                "time": _seconds(sum(c.seconds or 0.0 for c in checks)),
                "timestamp": stamp,
            },
        )
        props = ET.SubElement(suite, "properties")
        for key, value in {"capture": capture, "fail_on": result.fail_on.value, **(properties or {})}.items():
            ET.SubElement(props, "property", {"name": key, "value": str(value)})
        for check in checks:
            _testcase(suite, check)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(result: GateResult, out: IO[str], capture: str, properties: dict[str, Any] | None = None) -> None:
    """Write the JUnit XML (UTF-8 text with an XML declaration)."""
    tree = junit_tree(result, capture, properties)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(tree.getroot(), encoding="unicode"))
    out.write("\n")


def _testcase(suite: ET.Element, check: Check) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        {
            "classname": f"tracer.{check.group}",
            "name": check.name,
            "time": _seconds(check.seconds or 0.0),
        },
    )
    details = [
        check.message,
        f"measured: {_value(check.measured)} {check.unit}; limit: {_value(check.limit)} {check.unit}",
    ]
    for finding in check.findings:
        details.append(f"[{finding.severity.value}] {finding.id}: {finding.message}")
        if finding.fix:
            details.append(f"  fix: {finding.fix}")
        if finding.evidence:
            details.append(f"  evidence: {json.dumps(finding.evidence, default=str)}")
    text = "\n".join(details)
    if not check.passed:
        worst = max(check.findings, key=lambda f: f.severity.rank, default=None)
        failure = ET.SubElement(
            case,
            "failure",
            {
                "message": _first_line(check.message),
                "type": worst.id if worst else "not-measured",
            },
        )
        failure.text = text
    else:
        out = ET.SubElement(case, "system-out")
        out.text = text


def _first_line(text: str, limit: int = 500) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _value(value: float | int | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


def _seconds(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".") if value else "0"
