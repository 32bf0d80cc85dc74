"""Findings about memory: the arena, the stacks and the compiler's SRAM plan.

* ``arena-too-small`` (error): the runtime could not fit its plan (TFLite Micro ``Failed to resize
  buffer`` / ``Failed to allocate tail memory``), or the arena's measured use exceeds its size: the
  size needed, plus 10-15 % headroom, and the fixes used in the field;
* ``arena-headroom`` (warning): less than 10 % of the tensor arena left at its peak;
* ``arena-over-plan`` (info): the arena's peak is above what the planner predicted (TFLite Micro
  adds its own bookkeeping to a compiler's figure);
* ``stack-canary`` (error): a stack's canary was overwritten: it overflowed;
* ``stack-high-water`` (warning): a stack's high-water mark above 75 % of its size;
* ``sram-peak-high`` (warning): the compiler's SRAM peak above 75 % of the SRAM on the part.

Thresholds come from :class:`~tracer.analysis.settings.AnalysisSettings`: ``arena_headroom`` (0.10),
``stack_fraction`` (0.75), ``sram_fraction`` (0.75).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tracer.analysis.findings.base import Finding, Severity
from tracer.analysis.findings.common import describe, n
from tracer.base.timeline import AllocationFailure

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis

KINDS = ("arena-too-small", "arena-headroom", "arena-over-plan", "stack-canary", "stack-high-water", "sram-peak-high")
HEADROOM_LOW, HEADROOM_HIGH = 0.10, 0.15  # what the field adds over the size that just fits


def arena(analysis: Analysis) -> Iterable[Finding]:
    """``arena-too-small``, ``arena-headroom`` and ``arena-over-plan``."""
    memory = analysis.memory
    used, size = memory.arena_used, memory.arena_size
    if memory.allocation_failures:
        yield _allocation_failed(analysis, list(memory.allocation_failures), size)
    elif used is not None and size and used > size:
        needed = used
        yield Finding(
            "arena-too-small",
            Severity.ERROR,
            None,
            f"the tensor arena overran: {n(used)} bytes used of a {n(size)}-byte arena",
            {"used": used, "size": size, "missing": used - size, **_sizes(needed)},
            _arena_fix(analysis, needed),
        )
    elif used is not None and size:
        headroom = 1 - used / size
        limit = analysis.settings.arena_headroom
        if headroom < limit:
            yield Finding(
                "arena-headroom",
                Severity.WARNING,
                None,
                f"the tensor arena is {used / size:.1%} used at its peak ({n(used)} of {n(size)} bytes): "
                f"{headroom:.1%} headroom, below {limit:.0%}; the next model change may fail with "
                "'Failed to resize buffer'",
                {"used": used, "size": size, "headroom": round(headroom, 4), "limit": limit, **_sizes(used)},
                _arena_fix(analysis, used, grow=True),
            )
    planned = analysis.budget.model.arena_bytes if analysis.budget is not None else None
    if planned and used is not None and used > planned:
        yield Finding(
            "arena-over-plan",
            Severity.INFO,
            None,
            f"the tensor arena's peak ({n(used)} bytes) is {n(used - planned)} bytes above the planned {n(planned)}",
            {"used": used, "planned": planned, "over": used - planned},
            "TFLite Micro keeps its own bookkeeping in the arena on top of the compiler's figure (MLEK "
            "advises at least 2 KiB more than Vela's SRAM): size the arena from the measured peak.",
        )


def stacks(analysis: Analysis) -> Iterable[Finding]:
    """``stack-canary`` and ``stack-high-water`` per stack."""
    limit = analysis.settings.stack_fraction
    for stack in analysis.memory.stacks:
        name, size, high = stack.name, stack.size, stack.high_water
        evidence = {
            "stack": name,
            "size": size,
            "high_water": high,
            "fraction": round(high / size, 4) if size else None,
        }
        if not stack.canary_ok:
            first = stack.first_broken_cycle
            where = f" (first seen at cycle {n(first)})" if first is not None else ""
            if stack.first_broken_layer is not None:
                where += f" in {describe(analysis.timeline, stack.first_broken_layer)}"
                if stack.first_broken_inference is not None:
                    where += f" of inference {stack.first_broken_inference}"
            yield Finding(
                "stack-canary",
                Severity.ERROR,
                stack.first_broken_layer,
                f"stack '{name}' overflowed: its canary was overwritten{where}; high-water {n(high)} of {n(size)} bytes",
                {**evidence, "first_broken_cycle": first, "first_broken_inference": stack.first_broken_inference},
                "Enlarge the stack (linker script __STACK_SIZE or the RTOS task's stack) by at least the "
                "overflow plus 25%, and look for deep recursion or large local buffers in the code that "
                "ran last before the report (kernels' scratch buffers, printf).",
                (stack.first_broken_inference,) if stack.first_broken_inference is not None else (),
            )
        elif size and high / size > limit:
            yield Finding(
                "stack-high-water",
                Severity.WARNING,
                None,
                f"stack '{name}' reached {high / size:.1%} of its size ({n(high)} of {n(size)} bytes), above "
                f"{limit:.0%}: little margin before it overflows",
                {**evidence, "limit": limit},
                f"Keep stacks below {limit:.0%}: enlarge it to at least {n(math.ceil(high / limit))} bytes, "
                "or move large locals to static buffers.",
            )


def sram_peak(analysis: Analysis) -> Iterable[Finding]:
    """``sram-peak-high`` from the budget's SRAM peak and the SRAM on the part."""
    if analysis.budget is None:
        return
    model = analysis.budget.model
    peak, available = model.sram_bytes, model.sram_available_bytes
    limit = analysis.settings.sram_fraction
    if not peak or not available or peak / available <= limit:
        return
    mode = (model.compiler.config.get("memory_mode") if model.compiler else None) or ""
    yield Finding(
        "sram-peak-high",
        Severity.WARNING,
        None,
        f"the compiler's SRAM peak is {peak / available:.1%} of the SRAM on the part ({n(peak)} of {n(available)} "
        f"bytes), above {limit:.0%}: little room is left for the rest of the firmware",
        {
            "sram_bytes": peak,
            "sram_available_bytes": available,
            "fraction": round(peak / available, 4),
            "limit": limit,
            "memory_mode": mode or None,
        },
        "Lower the peak: Vela --optimise Size; on Ethos-U65/U85 --memory-mode=Dedicated_Sram keeps only the "
        "NPU cache in SRAM (size it with --arena-cache-size); on Ethos-U55 place the activation buffer in DDR "
        "(linker script) if the part has it.",
    )


def _allocation_failed(analysis: Analysis, failures: list[AllocationFailure], size: int | None) -> Finding:
    first = failures[0]
    missing = sum(f.missing for f in failures if f.kind == first.kind) if first.kind == "tail memory" else first.missing
    where = f" (line {first.line})" if first.line else ""
    if first.kind == "resize buffer":
        what = (
            f"'Failed to resize buffer': TensorFlow Lite Micro asked for {n(first.requested)} bytes of "
            f"activation and scratch buffers with {n(first.available)} left{where}"
        )
    else:
        what = (
            f"'Failed to allocate {first.kind}': a persistent allocation of {n(first.requested)} bytes found "
            f"{n(first.available)} left{where}"
        )
    needed = size + missing if size else None
    sizes = (
        _sizes(needed)
        if needed
        else {
            "grow_by_min": _round_up(missing * (1 + HEADROOM_LOW) + 0.5),
            "grow_by_max": _round_up(missing * (1 + HEADROOM_HIGH) + 0.5),
        }
    )
    if needed:
        tail = f": the arena of {n(size)} bytes is at least {n(missing)} bytes short; it needs at least {n(needed)}"
    else:
        tail = f": the arena is at least {n(missing)} bytes short (allocations after the failing one were never tried)"
    evidence: dict[str, Any] = {
        "kind": first.kind,
        "requested": first.requested,
        "available": first.available,
        "missing": missing,
        "arena_size": size,
        "needed": needed,
        "failures": [_failure_json(f) for f in failures],
        **sizes,
    }
    return Finding(
        "arena-too-small",
        Severity.ERROR,
        None,
        f"the tensor arena is too small: {what}{tail}",
        evidence,
        _arena_fix(analysis, needed, missing=missing),
    )


def _failure_json(f: AllocationFailure) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "requested": f.requested,
        "available": f.available,
        "missing": f.missing,
        "line": f.line,
        "cycle": f.cycle,
    }


def _sizes(needed: int) -> dict[str, int]:
    """The arena sizes to recommend: what fits plus 10 % and 15 %, rounded up to 16 bytes."""
    return {
        "recommended_min": _round_up(needed * (1 + HEADROOM_LOW)),
        "recommended_max": _round_up(needed * (1 + HEADROOM_HIGH)),
    }


def _round_up(value: float, to: int = 16) -> int:
    return int(math.ceil(value / to) * to)


def _npu_family(analysis: Analysis) -> str:
    """``U55``, ``U65``, ``U85`` or ``""``, from the budget's accelerator or what the firmware printed."""
    texts: list[str] = []
    if analysis.budget is not None and analysis.budget.model.compiler is not None:
        texts.extend(str(v) for v in analysis.budget.model.compiler.config.values())
    texts.extend(analysis.timeline.log_facts.npu.values())
    texts.append(analysis.timeline.npu or "")
    joined = " ".join(texts).upper().replace("-", "").replace("_", "")
    for family in ("U55", "U65", "U85"):
        if f"ETHOS{family}" in joined or f" {family}" in f" {joined}":
            return family
    return ""


def _arena_fix(analysis: Analysis, needed: int | None, missing: int | None = None, grow: bool = False) -> str:
    if needed:
        lo, hi = _round_up(needed * (1 + HEADROOM_LOW)), _round_up(needed * (1 + HEADROOM_HIGH))
        size = f"Make the tensor arena {n(lo)}-{n(hi)} bytes ({n(needed)} that fit, plus 10-15% headroom)"
        hex_size = f"0x{lo:08X}"
    else:
        grow_lo = _round_up((missing or 0) * (1 + HEADROOM_LOW) + 0.5)
        size = (
            f"Grow the tensor arena by at least {n(missing)} bytes plus 10-15% headroom (about {n(grow_lo)} bytes more)"
        )
        hex_size = "<new size>"
    if grow:
        size = size.replace("Make", "Before it fails, make")
    family = _npu_family(analysis)
    fixes = [
        (
            f"{size}: with the ML Embedded Evaluation Kit, -D<use_case>_ACTIVATION_BUF_SZ={hex_size} "
            "(e.g. -Dimg_class_ACTIVATION_BUF_SZ); in your own firmware, the arena array's size."
        )
    ]
    if family in ("U65", "U85", ""):
        fixes.append(
            "On Ethos-U65/U85 compile with vela --memory-mode=Dedicated_Sram: the arena moves to DRAM "
            "and only the NPU cache (--arena-cache-size) stays in SRAM."
        )
    if family in ("U55", ""):
        fixes.append(
            "On Ethos-U55 (Shared_Sram) move the activation buffer to DDR in the linker script "
            "(.bss.NoInit.activation_buf_dram instead of activation_buf_sram) if SRAM cannot grow."
        )
    return " ".join(fixes)


RULES = (arena, stacks, sram_peak)
