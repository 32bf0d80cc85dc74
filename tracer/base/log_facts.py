"""What a firmware text log said that the findings judge: its errors, the NPU driver's refusals of
a model compiled for another NPU configuration, and what it said about the NPU.

The text-log reader fills it in (:mod:`tracer.telemetry.logs.log_facts`), for a log read alone
or the port-0 text of a capture; the findings read it. Everything the log said, JSON-ready,
stays in ``InferenceTimeline.log`` for the report's ``log`` section.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True, slots=True)
class LogError:
    """A line the firmware printed as an error.

    Attributes:
        line: Its line in the log (None if the source has no lines).
        text: The line's text.
    """

    line: int | None
    text: str

    def to_json(self) -> dict[str, Any]:
        """As the report lists it."""
        return {"line": self.line, "text": self.text}


@dataclasses.dataclass(frozen=True, slots=True)
class NpuConfigMismatch:
    """The Ethos-U driver refused the model: one field of the NPU's configuration differs from the
    one the model was compiled for.

    Attributes:
        field: The configuration field, as the driver names it (``macs_per_cc``, ``shram_size`` ...).
        npu: The NPU's value (for ``macs_per_cc``: log2 of the MACs per cycle); None if unreadable.
        optimizer: The value the model was compiled for; None if unreadable.
        line: The line in the log.
    """

    field: str
    npu: int | None
    optimizer: int | None
    line: int | None

    def to_json(self) -> dict[str, Any]:
        """As the report lists it."""
        return {"field": self.field, "npu": self.npu, "optimizer": self.optimizer, "line": self.line}


@dataclasses.dataclass(frozen=True)
class LogFacts:
    """The facts of a text log the findings read.

    Attributes:
        lines: Lines the log had (None: no text log of its own, or the text of a capture).
        errors: The lines printed as errors, in order (the reader keeps the first ones only).
        npu_config_mismatches: The driver's configuration mismatches, in order.
        npu: What the log said about the NPU (architecture, version, memory mode ...), as printed.
    """

    lines: int | None = None
    errors: tuple[LogError, ...] = ()
    npu_config_mismatches: tuple[NpuConfigMismatch, ...] = ()
    npu: dict[str, str] = dataclasses.field(default_factory=dict)
