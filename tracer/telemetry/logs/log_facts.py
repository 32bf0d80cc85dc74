"""The typed facts of a log reader's JSON-ready facts (``InferenceTimeline.log``) that the findings
read (:class:`~tracer.base.log_facts.LogFacts`): set wherever a timeline's ``log`` is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracer.base.log_facts import LogError, LogFacts, NpuConfigMismatch


def log_facts(log: Mapping[str, Any]) -> LogFacts:
    """The findings' facts of a reader's ``log`` (``lines``, ``errors``, ``npu_config_mismatch``, ``npu``)."""
    errors = tuple(
        LogError(e.get("line"), str(e.get("text", ""))) for e in log.get("errors") or [] if isinstance(e, dict)
    )
    mismatches = tuple(
        NpuConfigMismatch(str(r.get("field")), r.get("npu"), r.get("optimizer"), r.get("line"))
        for r in log.get("npu_config_mismatch") or []
        if isinstance(r, dict)
    )
    npu = log.get("npu")
    lines = log.get("lines")
    return LogFacts(
        lines=int(lines) if lines is not None else None,
        errors=errors,
        npu_config_mismatches=mismatches,
        npu={str(k): str(v) for k, v in npu.items()} if isinstance(npu, dict) else {},
    )
