"""Findings from the errors the firmware itself printed (text logs, or text on ITM port 0).

* ``missing-operator-kernel`` (error): the runtime has no kernel for an operator of the model
  (TFLite Micro ``Failed to get registration from op code CUSTOM``, ``Didn't find op for builtin
  opcode``): with ``CUSTOM`` it is usually Vela's ``ethos-u`` operator in a build without the
  Ethos-U kernel.
* ``firmware-error`` (error): every other error line, with its line number; info when another
  finding already explains the failure (an allocation failure, an NPU configuration mismatch, a
  missing kernel) and the lines are what followed from it (``Invoke failed``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tracer.analysis.findings.base import Finding, Severity
from tracer.base.log_facts import LogError

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis

KINDS = ("missing-operator-kernel", "firmware-error")
MAX_LISTED = 20

_NO_KERNEL = re.compile(
    r"(?:Failed to get registration from op code (?P<code>\S+)|Didn't find op for builtin opcode '(?P<builtin>[^']+)')"
)
ETHOSU_FIX = (
    "The model was compiled by Vela (its NPU part is the custom operator 'ethos-u'), but this build of "
    "TensorFlow Lite Micro has no Ethos-U kernel: build it with the Ethos-U co-processor kernel "
    "(CO_PROCESSOR=ethos_u) and add it to the op resolver (MicroMutableOpResolver::AddEthosU()); on a host "
    "or CPU-only target run the model from before Vela instead."
)
BUILTIN_FIX = "Register the operator's kernel in the firmware's op resolver (MicroMutableOpResolver::Add<Op>())."


def firmware_errors(analysis: Analysis) -> Iterable[Finding]:
    """``missing-operator-kernel`` and ``firmware-error``."""
    facts = analysis.timeline.log_facts
    errors = facts.errors
    if not errors:
        return
    explained = {f.line for f in analysis.timeline.allocation_failures if f.line is not None}
    explained |= {r.line for r in facts.npu_config_mismatches if r.line is not None}
    kernels: set[int] = set()
    rest: list[LogError] = []
    for error in errors:
        text = error.text
        m = _NO_KERNEL.search(text)
        if m:
            if error.line is not None:  # a line-less error would break sorting the lines below
                kernels.add(error.line)
            code = m.group("code") or m.group("builtin")
            custom = (code or "").upper() == "CUSTOM"
            yield Finding(
                "missing-operator-kernel",
                Severity.ERROR,
                None,
                f"the runtime has no kernel for the model's {code} operator (line {error.line}: "
                f"'{text}'): the interpreter could not be set up"
                + (" — a Vela-compiled model run without the Ethos-U kernel" if custom else ""),
                {"operator": code, "line": error.line, "text": text},
                ETHOSU_FIX if custom else BUILTIN_FIX,
            )
        elif error.line not in explained:
            rest.append(error)
    if rest:
        shown = "; ".join(f"line {e.line}: {e.text}" for e in rest[:3])
        more = f" and {len(rest) - 3} more" if len(rest) > 3 else ""
        if explained or kernels:
            # The failure is already a finding of its own: these lines are what followed from it.
            yield Finding(
                "firmware-error",
                Severity.INFO,
                None,
                f"the firmware then reported {len(rest)} more error(s), following from the failure above: {shown}{more}",
                {
                    "errors": [e.to_json() for e in rest[:MAX_LISTED]],
                    "count": len(rest),
                    "follows_from": sorted(explained | kernels),
                },
            )
        else:
            yield Finding(
                "firmware-error",
                Severity.ERROR,
                None,
                f"the firmware reported {len(rest)} error(s): {shown}{more}",
                {"errors": [e.to_json() for e in rest[:MAX_LISTED]], "count": len(rest)},
                "Read the log around these lines (tracer report --format json lists every line the log gave).",
            )


RULES = (firmware_errors,)
