"""Findings about cache coherency between the CPU and the NPU (see :mod:`tracer.analysis.coherency`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tracer.analysis.coherency import (
    CPU_WRITE_DURING_JOB,
    MISSING_CLEAN,
    MISSING_INVALIDATE,
    NONDETERMINISTIC,
    UNALIGNED,
    Problem,
)
from tracer.analysis.findings.base import Finding, Severity
from tracer.analysis.findings.isr import layer_label
from tracer.base.timeline import InferenceTimeline

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis

MAX_EXAMPLES = 5


def _where(timeline: InferenceTimeline, problem: Problem) -> str:
    job = f"NPU job {problem.job}" if problem.job is not None else "an NPU job"
    return f"{job} in {layer_label(timeline, problem.layer)}" if problem.layer is not None else job


def _buffer(problem: Problem) -> str:
    assert problem.buffer is not None
    return f"0x{problem.buffer[0]:08X}+{problem.buffer[1]}"


def _grouped(problems: list[Problem]) -> dict[tuple[Any, ...], list[Problem]]:
    """The same problem at the same layer and buffer, every inference: one finding."""
    groups: dict[tuple[Any, ...], list[Problem]] = {}
    for p in problems:
        groups.setdefault((p.kind, p.layer, p.buffer), []).append(p)
    return groups


def _inferences(problems: list[Problem]) -> tuple[int, ...]:
    return tuple(sorted({p.inference for p in problems if p.inference is not None}))


def _times(problems: list[Problem], total: int) -> str:
    n = len(_inferences(problems))
    return f"in {n} of {total} inferences" if total else f"{len(problems)} time(s)"


def coherency(analysis: Analysis) -> Iterable[Finding]:
    """Missing cleans and invalidates, unaligned maintenance, nondeterministic outputs, CPU writes
    into buffers the NPU owns.
    """
    timeline = analysis.timeline
    found = analysis.coherency
    if found is None:
        return
    line = analysis.settings.cache_line_bytes
    total = int(timeline.inferences.complete.sum()) if len(timeline.inferences) else 0
    groups = _grouped(found.problems)
    suspects = [p for p in found.problems if p.kind in (MISSING_CLEAN, MISSING_INVALIDATE, CPU_WRITE_DURING_JOB)]
    for (kind, _, _), problems in groups.items():
        first = problems[0]
        evidence: dict[str, Any] = {
            "occurrences": len(problems),
            "examples": [_example(p) for p in problems[:MAX_EXAMPLES]],
        }
        if kind == MISSING_CLEAN:
            yield _missing_clean(timeline, first, problems, evidence, total)
        elif kind == MISSING_INVALIDATE:
            yield _missing_invalidate(timeline, first, problems, evidence, total)
        elif kind == UNALIGNED:
            yield _unaligned(timeline, problems, evidence, line)
        elif kind == NONDETERMINISTIC:
            yield _nondeterministic(timeline, first, suspects)
        elif kind == CPU_WRITE_DURING_JOB:
            yield _write_during_job(timeline, first, problems, evidence)


def _example(p: Problem) -> dict[str, Any]:
    out: dict[str, Any] = {"inference": p.inference, "job": p.job}
    if p.buffer is not None:
        out["buffer"] = {"address": p.buffer[0], "length": p.buffer[1]}
    out.update(p.evidence)
    return out


def _missing_clean(
    timeline: InferenceTimeline, p: Problem, problems: list[Problem], evidence: dict[str, Any], total: int
) -> Finding:
    e = p.evidence
    write = e["last_cpu_write"]
    partly = (
        f"; the cleans before the job left {e['uncleaned_bytes']} bytes out ({', '.join(e['uncleaned'])})"
        if e["partly_cleaned"]
        else ""
    )
    address, length = p.buffer or (0, 0)
    return Finding(
        id="coherency-missing-clean",
        severity=Severity.ERROR,
        layer=p.layer,
        message=(
            f"{_where(timeline, p)} read input buffer {_buffer(p)}, but no cache clean covered it after the "
            f"CPU's last write (0x{write['address']:08X}+{write['length']} at cycle {write['cycle']:,}) and "
            f"before the job began (cycle {e['job_start']:,}): the NPU read stale memory{partly} "
            f"({_times(problems, total)})"
        ),
        evidence={**evidence, "buffer": {"address": address, "length": length}},
        fix=(
            f"add SCB_CleanDCache_by_Addr((void *)0x{address:08X}, {length}) after the CPU writes the buffer and "
            "before ethosu_invoke (or clean it in the driver's ethosu_flush_dcache hook)"
        ),
        inferences=_inferences(problems),
    )


def _missing_invalidate(
    timeline: InferenceTimeline, p: Problem, problems: list[Problem], evidence: dict[str, Any], total: int
) -> Finding:
    e = p.evidence
    address, length = p.buffer or (0, 0)
    return Finding(
        id="coherency-missing-invalidate",
        severity=Severity.ERROR,
        layer=p.layer,
        message=(
            f"{_where(timeline, p)} wrote output buffer {_buffer(p)}, but the CPU read it at cycle "
            f"{e['first_cpu_read']:,} with no cache invalidate covering it after the job ended (cycle "
            f"{e['job_end']:,}): the CPU may read stale cache lines ({e['uninvalidated_bytes']} bytes: "
            f"{', '.join(e['uninvalidated'])}; {_times(problems, total)})"
        ),
        evidence={**evidence, "buffer": {"address": address, "length": length}},
        fix=(
            f"add SCB_InvalidateDCache_by_Addr((void *)0x{address:08X}, {length}) after ethosu_invoke returns and "
            "before the CPU reads the output (or in the driver's ethosu_invalidate_dcache hook)"
        ),
        inferences=_inferences(problems),
    )


def _unaligned(timeline: InferenceTimeline, problems: list[Problem], evidence: dict[str, Any], line: int) -> Finding:
    p = problems[0]
    what = " and the ".join(dict.fromkeys(q.evidence["what"] for q in problems))
    where = f" in {layer_label(timeline, p.layer)}" if p.layer is not None else ""
    return Finding(
        id="coherency-unaligned",
        severity=Severity.WARNING,
        layer=p.layer,
        message=(
            f"the {what} {_buffer(p)}{where} do(es) not cover whole {line}-byte cache lines: other data "
            f"shares its first or last line, and maintenance on it throws that data away or writes stale bytes "
            f"over the NPU's"
        ),
        evidence=evidence,
        fix=f"align NPU buffers to {line} bytes and round their sizes up to a multiple of {line} "
        f"(__ALIGNED({line}); Vela --cpu-tensor-alignment, TFLM arena alignment)",
        inferences=(p.inference,) if p.inference is not None else (),
    )


def _nondeterministic(timeline: InferenceTimeline, p: Problem, suspects: list[Problem]) -> Finding:
    e = p.evidence
    hint = ""
    layer = None
    if suspects:
        layer = suspects[0].layer
        hint = f"; {_where(timeline, suspects[0])} is the first coherency problem found ({suspects[0].kind})"
    return Finding(
        id="coherency-nondeterministic-output",
        severity=Severity.WARNING,
        layer=layer,
        message=(
            f"the same input (CRC {e['input_crc']}) gave {e['distinct_outputs']} different outputs across "
            f"{e['inferences']} inferences: a deterministic network does not do that; stale cache lines "
            f"(a missing clean or invalidate), a race on a buffer, or uninitialised memory are the usual "
            f"causes{hint}"
        ),
        evidence=dict(e),
        fix="check the cache maintenance around every NPU job (clean inputs before, invalidate outputs after) "
        "and that nothing writes the buffers while the NPU runs",
        inferences=tuple(e.get("inference_numbers", [])),
    )


def _write_during_job(
    timeline: InferenceTimeline, p: Problem, problems: list[Problem], evidence: dict[str, Any]
) -> Finding:
    w = p.evidence["write"]
    pc = f", PC 0x{w['pc']:08X}" if w.get("pc") is not None else ""
    bits = int(w.get("address_bits") or 32)
    address = f"0x{w['address']:0{bits // 4}X}" + (" (low 16 bits)" if bits < 32 else "")
    return Finding(
        id="coherency-cpu-write-during-npu-job",
        severity=Severity.ERROR,
        layer=p.layer,
        message=(
            f"the CPU wrote {address} (value 0x{w['value']:X}{pc}, DWT data trace) while {_where(timeline, p)} "
            f"owned its {p.evidence['role']} buffer {_buffer(p)} ({len(problems)} write(s)): the NPU and the "
            f"CPU's cache disagree on that data"
        ),
        evidence=evidence,
        fix="leave NPU buffers alone from their clean until the job ends (and its output invalidated); "
        "double-buffer inputs that a DMA or an interrupt handler fills during inference",
        inferences=_inferences(problems),
    )


RULES = (coherency,)
