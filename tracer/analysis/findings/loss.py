"""Findings about what the numbers rest on: data lost on the way, or nothing measured at all.

* ``capture-loss`` (warning; error when no inference is left complete): overflows, capture gaps,
  lost or damaged records, damaged log lines: how many inferences are incomplete and why. They are
  left out of every statistic, never averaged in.
* ``no-measurements`` (error with a budget to check; warning otherwise): the input holds no layer,
  inference, counter or memory figure tracer can use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tracer.analysis.findings.base import Finding, Severity

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis

KINDS = ("capture-loss", "no-measurements")
MAX_LISTED = 50

LOSS_FIX = (
    "Lower the trace bandwidth or raise the link's: fewer markers per layer, a faster SWO clock (check "
    "the probe's SWO speed matches the target's TPIU prescaler) or UART baud rate, a larger RTT or UART "
    "buffer; a capture gap means the host or the probe dropped bytes (record to a local disk, use a "
    "shorter USB path)."
)


def loss(analysis: Analysis) -> Iterable[Finding]:
    """``capture-loss``."""
    timeline = analysis.timeline
    inf = timeline.inferences
    counters = timeline.loss.to_json()
    dropped = timeline.stream.firmware_dropped_records if timeline.stream is not None else 0
    incomplete = [i for i in range(len(inf)) if not inf.complete[i]]
    if not (timeline.loss.any or incomplete or dropped):
        return
    reasons = Counter(reason for i in incomplete for reason in inf.problems[i])
    numbers = [int(inf.number[i]) for i in incomplete]
    lost = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counters.items() if v)
    if dropped:
        lost = (lost + ", " if lost else "") + f"{dropped} record(s) the firmware could not send"
    total = len(inf)
    complete = total - len(incomplete)
    if incomplete:
        why = "; ".join(f"{count} x {reason}" for reason, count in reasons.most_common(5))
        message = f"{len(incomplete)} of {total} inference(s) are incomplete and left out of the numbers ({why})" + (
            f"; lost on the way: {lost}" if lost else ""
        )
    else:
        message = f"data was lost on the way ({lost}) but no inference was touched"
    severity = Severity.ERROR if total and complete == 0 else Severity.WARNING
    if severity is Severity.ERROR:
        message += ": no complete inference is left to measure"
    yield Finding(
        "capture-loss",
        severity,
        None,
        message,
        {
            **counters,
            "firmware_dropped_records": dropped,
            "inferences": total,
            "complete": complete,
            "incomplete": len(incomplete),
            "incomplete_inferences": numbers[:MAX_LISTED],
            "reasons": dict(reasons),
        },
        LOSS_FIX,
        tuple(numbers[:MAX_LISTED]),
    )


def measured_anything(analysis: Analysis) -> bool:
    """True when the input holds a layer, inference, PMU counter, memory figure or firmware error."""
    t = analysis.timeline
    facts = t.log_facts
    return bool(
        analysis.executions
        or len(t.inferences)
        or len(t.spans)
        or t.pmu_totals
        or t.pmu_stats
        or t.arena
        or len(t.stacks)
        or t.allocation_failures
        or facts.errors
        or facts.npu_config_mismatches
    )


def nothing_measured(analysis: Analysis) -> Iterable[Finding]:
    """``no-measurements``."""
    t = analysis.timeline
    if measured_anything(analysis):
        return
    predicted = analysis.budget is not None and any(la.predicted_cycles for la in analysis.budget.layers)
    yield Finding(
        "no-measurements",
        Severity.ERROR if predicted else Severity.WARNING,
        None,
        "the input holds no layer, inference, PMU counter or memory figure: nothing could be measured"
        + (" or checked against the budget" if predicted else ""),
        {
            "records": t.stream.records if t.stream is not None else None,
            "lines": t.log_facts.lines,
            "console_lines": len(t.console),
        },
        "Check that the firmware emits telemetry (firmware_snippets trc records on ITM ports 24/25, or a "
        "profiler's text log) and that the capture covers an inference.",
    )


RULES = (loss, nothing_measured)
