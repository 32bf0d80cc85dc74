"""The report's ``log`` section: every fact a firmware text log gave, as JSON.

A text log (or the text a capture's firmware printed on ITM port 0) says more than layers and
inferences: the CPU and NPU configuration, the model's operators and tensor sizes, arena parts and
allocations, counter summaries, the FVP's statistics, errors and warnings with their line numbers.
The log readers keep all of it in ``InferenceTimeline.extra``; the report carries it unchanged.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

from tracer.telemetry.model import InferenceTimeline


def log_extra(timeline: InferenceTimeline) -> dict[str, Any]:
    """The facts of a firmware text log (a log's ``extra``, or the port-0 text of a capture)."""
    extra = timeline.extra
    if "lines" in extra or "etdump" in extra:  # a log's or an ETDump's reader: all of extra is its facts
        return extra
    console = extra.get("console_log")
    return console if isinstance(console, dict) else {}


def log_facts(timeline: InferenceTimeline) -> dict[str, Any] | None:
    """The facts of a text log (``extra`` of a log's timeline, or ``extra["console_log"]`` of a
    capture whose firmware printed text), JSON-ready; None when there are none."""
    return jsonable(log_extra(timeline)) or None


def jsonable(value: Any) -> Any:
    """``value`` with tuples as lists, keys as strings, enums as values, non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
