"""The report as JSON text (the ``tracer report --format json`` contract)."""

from __future__ import annotations

import json
from typing import IO, Any


def write_report_json(report: dict[str, Any], out: IO[str]) -> None:
    """Write the report object as indented JSON with a final newline."""
    json.dump(report, out, indent=2)
    out.write("\n")
