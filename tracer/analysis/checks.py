"""The CI gate: an analysis turned into named checks that pass or fail (``tracer check``).

Four groups, each check with what was measured and its limit:

* **input** (with the CLI's own checks of the input): ``budget layers measured``, with a budget:
  enough of the layers it predicts were measured to compare (none, or fewer than half, is not a
  pass: the gate would pass on what it never saw); it holds ``budget-layer-not-measured``;
* **layers**: one check per measured layer the budget predicts: its p50 cycles against
  ``predicted * (1 + tolerance)``; the layer's budget findings (``layer-over-budget``,
  ``layer-p99-over-budget``) belong to it;
* **memory**: the tensor arena (used against size less 10 % headroom; allocation failures), each
  stack (high-water against 75 % of its size; the canary), the compiler's SRAM peak (against 75 % of
  the SRAM on the part); the memory findings belong to them;
* **findings**: one check per finding kind that no layer or memory check holds (``cpu-fallback``,
  ``capture-loss``, ``npu-utilization-low``, the ISR, jitter and coherency kinds ...), listed even
  when nothing was found for the kinds the rule modules declare.

A check fails when a finding it holds is at or above ``--fail-on`` (default: error), or when its
layer could not be measured at all. The gate passes when every check passes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any

from tracer.analysis.budget_view import LayerPlan
from tracer.analysis.findings import Finding, Severity
from tracer.analysis.findings.rules import declared_kinds
from tracer.analysis.result import Analysis

INPUT, LAYERS, MEMORY, FINDINGS = "input", "layers", "memory", "findings"
LAYER_KINDS = frozenset({"layer-over-budget", "layer-p99-over-budget"})
ARENA_KINDS = frozenset({"arena-too-small", "arena-headroom", "arena-over-plan"})
STACK_KINDS = frozenset({"stack-canary", "stack-high-water"})
SRAM_KINDS = frozenset({"sram-peak-high"})
BUDGET_COVERAGE_KIND = "budget-layer-not-measured"
BUDGET_COVERAGE_NAME = "budget layers measured"


@dataclasses.dataclass
class Check:
    """One named check.

    Attributes:
        name: What is checked (``layer 3 dw3 (DEPTHWISE_CONV_2D, npu)``, ``arena``, ``stack main`` ...).
        group: ``layers``, ``memory`` or ``findings``.
        passed: True when nothing it holds reaches the failing severity.
        measured: The measured value (p50 cycles, bytes, number of findings), or None.
        limit: The most that passes, or None when there is no limit.
        unit: ``cycles``, ``bytes`` or ``findings``.
        message: One line saying the result (the findings it holds say the rest).
        findings: The findings it holds.
        layer: The layer index (layer checks).
        seconds: The measured time in seconds, when it is a time and the clock is known.
    """

    name: str
    group: str
    passed: bool
    measured: float | int | None
    limit: float | int | None
    unit: str
    message: str
    findings: list[Finding] = dataclasses.field(default_factory=list)
    layer: int | None = None
    seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        """``{name, group, passed, measured, limit, unit, message, layer, findings}`` (finding ids)."""
        return {
            "name": self.name,
            "group": self.group,
            "passed": self.passed,
            "measured": _num(self.measured),
            "limit": _num(self.limit),
            "unit": self.unit,
            "message": self.message,
            "layer": self.layer,
            "findings": [f.id for f in self.findings],
        }


@dataclasses.dataclass
class GateResult:
    """Every check and the verdict."""

    checks: list[Check]
    fail_on: Severity

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        """The checks that failed."""
        return [c for c in self.checks if not c.passed]


def run_checks(analysis: Analysis, fail_on: Severity = Severity.ERROR) -> GateResult:
    """Turn an analysis into the gate's checks (see the module docstring)."""
    remaining = list(analysis.findings)
    checks = _coverage_check(analysis, remaining, fail_on)
    checks += _layer_checks(analysis, remaining, fail_on)
    checks += _memory_checks(analysis, remaining, fail_on)
    coverage = any(c.name == BUDGET_COVERAGE_NAME for c in checks)
    checks += _finding_checks(remaining, fail_on, coverage)
    return GateResult(checks, fail_on)


def _take(findings: list[Finding], keep: Any) -> list[Finding]:
    """Remove and return the findings ``keep(f)`` accepts."""
    taken = [f for f in findings if keep(f)]
    for f in taken:
        findings.remove(f)
    return taken


def _fails(findings: Iterable[Finding], fail_on: Severity) -> bool:
    return any(f.severity.at_least(fail_on) for f in findings)


def _coverage_check(analysis: Analysis, remaining: list[Finding], fail_on: Severity) -> list[Check]:
    """``budget layers measured``: the gate compared enough of what the budget predicts.

    Every layer within budget is no pass when the layers compared are none, or too few of the
    budget's (``settings.budget_coverage``): the rest of the model went unchecked. It holds the
    ``budget-layer-not-measured`` findings.
    """
    comparison = analysis.comparison
    if comparison is None:
        return []
    predicted = [b for b in comparison.budget.layers if b.predicted_cycles]
    if not predicted:
        return _latency_coverage(analysis, remaining, fail_on)
    held = _take(remaining, lambda f: f.id == BUDGET_COVERAGE_KIND)
    compared: set[int] = set()
    for match in comparison.matching.matches:
        plan = comparison.plans.get(match.measured.index)
        st = analysis.layers.get(match.measured.index)
        if plan is not None and plan.predicted_cycles and st is not None and st.cycles is not None:
            compared.update(b.position for b in match.budget)
    missing = [b for b in predicted if b.position not in compared]
    count = len(predicted) - len(missing)
    need = max(1, math.ceil(len(predicted) * analysis.settings.budget_coverage - 1e-9))
    message = f"{count} of {len(predicted)} budget layer(s) measured"
    if count < need:
        message += f", at least {need} needed"
    if missing:
        names = ", ".join(b.label for b in missing[:10]) + (" ..." if len(missing) > 10 else "")
        message += f"; not measured: {names}"
        matched = [
            comparison.plans[m.measured.index].note
            for m in comparison.matching.matches
            if any(b.position in {x.position for x in missing} for b in m.budget)
            and m.measured.index in comparison.plans
            and comparison.plans[m.measured.index].predicted_cycles is None
        ]
        notes = sorted({note for note in matched if note})
        if comparison.matching.scale is None:
            message += " (the capture's clock is unknown: see budget-clock-unknown)"
        elif notes:
            message += f" ({'; '.join(notes)})"
        elif not analysis.executions:
            message += " (no layer execution in this input)"
    check = Check(BUDGET_COVERAGE_NAME, INPUT, True, count, need, "layers", message)
    _with(check, held, fail_on)
    check.passed = check.passed and count >= need
    return [check]


def _latency_coverage(analysis: Analysis, remaining: list[Finding], fail_on: Severity) -> list[Check]:
    """The coverage check of a budget that predicts whole inferences only: the latency was measured."""
    comparison = analysis.comparison
    if comparison is None or not comparison.budget.model.cycles_total:
        return []
    held = _take(remaining, lambda f: f.id == BUDGET_COVERAGE_KIND)
    latency = analysis.latency
    if comparison.predicted_total is None:
        message = "the budget predicts whole inferences; not compared: the capture's clock is unknown"
    elif latency is None:
        message = "the budget predicts whole inferences; not measured: no start and end time per inference"
    else:
        message = f"the budget predicts whole inferences: latency measured ({latency.count:,} inference(s))"
    measured = 0 if latency is None or comparison.predicted_total is None else 1
    check = Check(BUDGET_COVERAGE_NAME, INPUT, True, measured, 1, "inferences", message)
    _with(check, held, fail_on)
    check.passed = check.passed and measured == 1
    return [check]


def _layer_checks(analysis: Analysis, remaining: list[Finding], fail_on: Severity) -> list[Check]:
    comparison = analysis.comparison
    if comparison is None:
        return []
    timeline = analysis.timeline
    stats = analysis.layers
    out = []
    for index, plan in sorted(comparison.plans.items()):
        if plan.predicted_cycles is None:
            continue
        info = timeline.layer(index)
        name = f"layer {index} {info.label} ({info.op or '?'}, {info.engine.value})"
        held = _take(remaining, lambda f, i=index: f.layer == i and f.id in LAYER_KINDS)
        st = stats.get(index)
        p50 = st.cycles.p50 if st and st.cycles else None
        limit = plan.limit_cycles
        seconds = p50 / timeline.clock_hz if p50 is not None and timeline.clock_hz else None
        if p50 is None:
            message = f"not measured: {_why_not_measured(analysis, index)}"
            passed = False
        else:
            reference = plan.reference_cycles or plan.predicted_cycles
            ratio = p50 / reference if reference else 0.0
            verdict = "within" if p50 <= (limit or 0) else "OVER"
            label = "calibrated" if plan.reference == "calibrated" else "predicted"
            message = (
                f"p50 {p50:,} cycles {verdict} the limit {round(limit or 0):,} ({label} "
                f"{round(reference):,} + {plan.tolerance_pct:g}%; ratio {ratio:.2f})"
            ) + _calibration_note(plan)
            passed = not _fails(held, fail_on)
        out.append(Check(name, LAYERS, passed, p50, limit, "cycles", message, held, index, seconds))
    return out


def _calibration_note(plan: LayerPlan) -> str:
    """What a check on a calibrated layer adds: the other prediction, and a status to know."""
    c = plan.calibrated
    if c is None:
        return ""
    if plan.reference == "calibrated":
        text = f"; planner {round(plan.predicted_cycles or 0):,}"
    elif c.usable and c.cycles is not None and c.low is not None and c.high is not None:
        text = f"; calibrated {round(c.cycles):,} ({round(c.low):,}..{round(c.high):,})"
    else:
        text = ""
    if c.status != "calibrated":
        text += f"; calibration: {c.status}" + (f" ({c.note})" if c.note else "")
    return text


def _memory_checks(analysis: Analysis, remaining: list[Finding], fail_on: Severity) -> list[Check]:
    settings = analysis.settings
    out = []
    memory = analysis.memory
    used, size = memory.arena_used, memory.arena_size
    held = _take(remaining, lambda f: f.id in ARENA_KINDS)
    if used is not None or held or memory.allocation_failures:
        headroom = settings.arena_headroom
        limit = size * (1 - headroom) if size else None
        if memory.allocation_failures:
            message = f"the runtime's memory plan did not fit ({len(memory.allocation_failures)} allocation failure(s))"
        elif used is None:
            message = "arena use not reported"
        elif size:
            message = f"{used:,} of {size:,} bytes used ({used / size:.1%}; at most {1 - headroom:.0%} passes)"
        else:
            message = f"{used:,} bytes used (arena size not reported)"
        out.append(_with(Check("tensor arena", MEMORY, True, used, limit, "bytes", message), held, fail_on))
    stack_limit = settings.stack_fraction
    for stack in memory.stacks:
        held = _take(remaining, lambda f, s=stack.name: f.id in STACK_KINDS and f.evidence.get("stack") == s)
        size = stack.size
        canary = "canary intact" if stack.canary_ok else "canary OVERWRITTEN"
        share = f" ({stack.high_water / size:.1%})" if size else ""
        message = f"high-water {stack.high_water:,} of {size:,} bytes{share}, {canary}"
        check = Check(
            f"stack {stack.name}",
            MEMORY,
            True,
            stack.high_water,
            size * stack_limit if size else None,
            "bytes",
            message,
        )
        out.append(_with(check, held, fail_on))
    budget = analysis.budget
    held = _take(remaining, lambda f: f.id in SRAM_KINDS)
    if budget is not None and budget.model.sram_bytes and budget.model.sram_available_bytes:
        fraction = settings.sram_fraction
        peak, available = budget.model.sram_bytes, budget.model.sram_available_bytes
        message = (
            f"compiler's SRAM peak {peak:,} of {available:,} bytes ({peak / available:.1%}; at most "
            f"{fraction:.0%} passes)"
        )
        out.append(
            _with(
                Check("SRAM peak (compiler)", MEMORY, True, peak, available * fraction, "bytes", message), held, fail_on
            )
        )
    else:
        remaining.extend(held)
    return out


def _with(check: Check, held: list[Finding], fail_on: Severity) -> Check:
    check.findings = held
    check.passed = not _fails(held, fail_on)
    return check


def _finding_checks(remaining: list[Finding], fail_on: Severity, coverage: bool) -> list[Check]:
    held_elsewhere = LAYER_KINDS | ARENA_KINDS | STACK_KINDS | SRAM_KINDS
    if coverage:
        held_elsewhere |= {BUDGET_COVERAGE_KIND}
    kinds: dict[str, list[Finding]] = {k: [] for k in declared_kinds() if k not in held_elsewhere}
    for finding in remaining:
        kinds.setdefault(finding.id, []).append(finding)
    out = []
    for kind, found in kinds.items():
        if found:
            worst = max(f.severity.rank for f in found)
            message = f"{len(found)} finding(s), worst {list(Severity)[worst].value}"
        else:
            message = "none"
        out.append(
            Check(f"finding {kind}", FINDINGS, not _fails(found, fail_on), len(found), None, "findings", message, found)
        )
    return out


def _why_not_measured(analysis: Analysis, index: int) -> str:
    """Why a layer the budget predicts has no complete execution, in words (loss named only if any)."""
    timeline = analysis.timeline
    if not len(timeline.inferences) and not analysis.executions:
        return "no inference ran in this input"
    if index not in analysis.layers:
        return "this layer never ran"
    lost = timeline.loss.any or not timeline.inferences.complete.all()
    return "no complete execution of this layer" + (" (see capture-loss)" if lost else "")


def _num(value: float | int | None) -> float | int | None:
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, 3)
    return value
