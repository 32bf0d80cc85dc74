"""Findings about jitter: layers that were sometimes much slower, and why.

One finding per layer and cause, ``jitter-<cause>``. Preemption by an interrupt or a task,
contention and unexplained slowness are warnings; warm-up and more work are information. A
warning becomes information where the layer's jitter cannot matter or is expected
(:meth:`~tracer.analysis.jitter.LayerJitter.information_only`): the layer's slowest run takes under
the minimum share of the inference, or the budget marks the layer data-dependent and the cause is
one that unmeasured extra work could hide behind (contention, unexplained).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tracer.analysis.findings.base import Finding, Severity
from tracer.analysis.findings.isr import layer_label
from tracer.analysis.jitter import (
    CAUSES,
    CONTENTION,
    MORE_WORK,
    PREEMPTION,
    TASK_PREEMPTION,
    UNEXPLAINED,
    WARM_UP,
    LayerJitter,
    Outlier,
)
from tracer.analysis.work_evidence import WORK_COUNT
from tracer.base.timeline import Engine, InferenceTimeline

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis


def finding_id(cause: str) -> str:
    """``jitter-task-preemption`` for ``task preemption``."""
    return f"jitter-{cause.replace(' ', '-')}"


KINDS = tuple(finding_id(cause) for cause in CAUSES)

FIX = {
    PREEMPTION: "lower the interrupt's priority below the inference's (or mask it, or hold its timer, around the "
    "invoke), or move the handler's work to a deferred task so the handler only acknowledges the interrupt",
    TASK_PREEMPTION: "give the inference task a higher priority than the task that preempted it, or let that task "
    "run between inferences (wake it from the inference's end, or hold it with a semaphore around "
    "the invoke); if it must run meanwhile, keep its work short",
    CONTENTION: "find the bus master active meanwhile (DMA, a camera or display controller, the CPU copying "
    "buffers) and schedule it outside inference, or give the NPU's AXI port priority (QoS); keep the "
    "tensor arena in the NPU's fast SRAM (Vela --memory-mode, linker placement)",
    "cpu-contention": "check DMA and NPU traffic during this layer, place its buffers and code in TCM, and make "
    "sure the D-cache is enabled for its memory; if its work depends on its input, report it with "
    "trc_layer_work() or mark the layer data_dependent in the budget",
    WARM_UP: "run one warm-up inference before measuring (or leave the first ones out of the budget); if the "
    "first inference's latency matters, preload caches and allocate everything at start-up",
    MORE_WORK: "the layer's work depends on its data: budget for the worst case",
    UNEXPLAINED: "capture NPU PMU stall counters or DWT exception trace to see what delayed it",
}
SEVERITY = {
    PREEMPTION: Severity.WARNING,
    TASK_PREEMPTION: Severity.WARNING,
    CONTENTION: Severity.WARNING,
    UNEXPLAINED: Severity.WARNING,
    WARM_UP: Severity.INFO,
    MORE_WORK: Severity.INFO,
}
MEASURE_WORDS = {WORK_COUNT: "its work count (trc_layer_work)", "INST_RETIRED": "its instructions (INST_RETIRED)"}


def _numbers(outliers: list[Outlier], total: int) -> str:
    shown = ", ".join(str(o.inference) for o in outliers[:10])
    return shown + (f" and {total - 10} more" if total > 10 else "")


def _amount(cycles: list[int]) -> str:
    return f"{cycles[0]:,} cycles" if min(cycles) == max(cycles) else f"{min(cycles):,} to {max(cycles):,} cycles"


def _each(found: int, outliers: list[Outlier]) -> str:
    """``in each, `` / ``in 2 of them, `` / nothing (a single outlier)."""
    if len(outliers) == 1:
        return ""
    return "in each, " if found == len(outliers) else f"in {found} of them, "


def _by_source(outliers: list[Outlier], key: str, ident: str) -> list[tuple[dict[str, Any], list[int]]]:
    """What ran inside the outliers (``isrs`` by ``exception``, ``tasks`` by ``task``): one entry
    per source with its cycles in each outlier it ran in, the most cycles first.
    """
    cycles: dict[int, list[int]] = {}
    first: dict[int, dict[str, Any]] = {}
    for o in outliers:
        for item in o.detail.get(key, []):
            cycles.setdefault(item[ident], []).append(item["cycles"])
            first.setdefault(item[ident], item)
    return [(first[k], c) for k, c in sorted(cycles.items(), key=lambda kv: -sum(kv[1]))]


def _handlers(outliers: list[Outlier], also: bool = False) -> str:
    """``in each, the S32K_TIMER interrupt (exception 18) ran inside it for 23,049 cycles``."""
    return "; ".join(
        f"{_each(len(c), outliers)}the {isr['name']} interrupt (exception {isr['exception']}) "
        f"{'also ' if also else ''}ran inside it for {_amount(c)}"
        for isr, c in _by_source(outliers, "isrs", "exception")
    )


def _tasks(outliers: list[Outlier], also: bool = False) -> str:
    """``in each, it was preempted by task sensor for 12,813 cycles``."""
    return "; ".join(
        f"{_each(len(c), outliers)}it was {'also ' if also else ''}preempted by task {task['name']} for {_amount(c)}"
        for task, c in _by_source(outliers, "tasks", "task")
    )


def _work(outlier: Outlier) -> str:
    """``its work count (trc_layer_work) 11 instead of 3 (3.7x), its own time 2.4x``."""
    d = outlier.detail
    name = d.get("explained_by") or next(iter(d.get("work", {})), None)
    if name is None:
        return ""
    words = MEASURE_WORDS.get(name, f"its NPU PMU counter {name}")
    ratio, own = d.get("work_ratio"), d.get("own_ratio")
    times = f" ({ratio:.1f}x)" if ratio is not None else ""
    own_times = f", its own time {own:.1f}x" if own is not None else ""
    return f"{words} {d['work'][name]:,} instead of {d['work_median'][name]:,}{times}{own_times}"


def _message(
    timeline: InferenceTimeline, layer: LayerJitter, cause: str, outliers: list[Outlier], count: int, total: int
) -> str:
    label = layer_label(timeline, layer.index)
    worst = max(o.ratio for o in outliers)
    worst_outlier = max(outliers, key=lambda o: o.ratio)
    head = (
        f"{label} took up to {worst:.1f}x its median ({layer.p50:,} cycles) in {count} of {total} inferences "
        f"({_numbers(outliers, count)})"
    )
    if cause in (PREEMPTION, TASK_PREEMPTION):
        first, then = (
            (_handlers(outliers), _tasks(outliers, also=True))
            if cause == PREEMPTION
            else (_tasks(outliers), _handlers(outliers, also=True))
        )
        fallback = "interrupt handlers ran inside it" if cause == PREEMPTION else "other tasks ran inside it"
        return f"{head}; " + ("; ".join(p for p in (first, then) if p) or fallback)
    if cause == WARM_UP:
        return (
            f"{label} took up to {worst:.1f}x its steady-state median ({layer.steady_p50:,} cycles) in the first "
            f"{count} inference(s) ({_numbers(outliers, count)}): cold caches, lazy initialisation or first-time "
            f"allocation"
        )
    if cause == CONTENTION:
        d = worst_outlier.detail
        if timeline.layer(layer.index).engine is Engine.NPU and "pmu_cycles" in d:
            idle = (
                f", idle {d['idle_cycles']:,} NPU cycles instead of {d['idle_cycles_median']:,}"
                if "idle_cycles" in d
                else ""
            )
            work = (
                "with the same work (its PMU work counters within 5% of usual)"
                if "work_ratio" not in d
                else f"with work that does not explain it ({_work(worst_outlier)})"
            )
            return (
                f"{head} on the NPU {work} but {d['pmu_cycles']:,} NPU cycles instead of "
                f"{d['pmu_cycles_median']:,}{idle}: the NPU waited for memory, another bus master competed for "
                f"it"
            )
        work = _work(worst_outlier)
        note = d.get("note", "")
        return (
            f"{head} with no interrupt or task inside" + (f" ({work})" if work else "") + (f": {note}" if note else "")
        )
    if cause == MORE_WORK:
        return f"{head}, doing more work (data-dependent): at its slowest, {_work(worst_outlier)}"
    return f"{head}, with no interrupt or task inside and no PMU evidence of more work or of contention"


def jitter_outliers(analysis: Analysis) -> Iterable[Finding]:
    """One finding per layer and cause of its outliers."""
    timeline = analysis.timeline
    settings = analysis.jitter.settings
    for layer in analysis.jitter.layers:
        for cause, count in layer.causes.items():
            outliers = [o for o in layer.listed if o.cause == cause]
            if not outliers:
                continue
            on_cpu = timeline.layer(layer.index).engine is Engine.CPU
            fix_key = "cpu-contention" if cause == CONTENTION and on_cpu else cause
            quiet = layer.information_only(cause) if SEVERITY[cause] is not Severity.INFO else ""
            evidence: dict[str, Any] = {
                "cause": cause,
                "outliers": count,
                "complete_runs": layer.count,
                "median_cycles": layer.p50,
                "steady_median_cycles": layer.steady_p50,
                "threshold_pct": settings.threshold_pct,
                "cv": round(layer.cv, 5),
                "own_median_cycles": layer.own_p50,
                "share": None if layer.share is None else round(layer.share, 6),
                "min_share_pct": settings.min_share_pct,
                "data_dependent": layer.data_dependent,
                "listed": [o.to_json() for o in outliers],
            }
            message = _message(timeline, layer, cause, outliers, count, layer.count)
            if quiet:
                evidence["information_only"] = quiet
                message += f" (information, not a warning: {quiet})"
            yield Finding(
                id=finding_id(cause),
                severity=Severity.INFO if quiet else SEVERITY[cause],
                layer=layer.index,
                message=message,
                evidence=evidence,
                fix=FIX[fix_key],
                inferences=tuple(o.inference for o in outliers),
            )


RULES = (jitter_outliers,)
