"""The comparison object (``tracer compare --format json``): every number of a :class:`Comparison`.

A view: nothing is computed again. The text, Markdown and JUnit renderings are made from this
object, so all carry the same content. The shape (``docs/compare.md``)::

    {schema_version, passed, threshold_pct, alpha, match, regressions: [labels],
     inconclusive: [labels], plan: {change_pct, alpha, power},
     base: {inputs, inferences, complete, executions, clock_hz, labels},  new: {...},
     inference: CHANGE | null, layers: [CHANGE], memory: [{name, base, new, delta, size, grew}],
     findings: {appeared: [...], gone: [...]}, notes: [...]}

    CHANGE = {label, base_index, new_index, op, base_count, new_count, verdict, significant, exact,
              unit, captures: {base, new},
              p50: {base, new, delta, pct, ci, note}, p99: {...},
              test: {name, u, t, df, p_value, method} | null,
              decide: {unit, per_side} | null,
              variance: {within_pct, run_to_run_pct, executions_per_capture} | null,
              plan: {captures_per_side, executions, assumes_no_run_to_run} | null,
              why: {own, interrupts, counters, moved, bound, engine} | null}

Version 1 grew the keys ``inconclusive``, ``plan``, ``unit``, ``captures``, ``note``, ``ci.method``,
``test.t``/``test.df``, ``decide``, ``variance`` and the verdict ``inconclusive``; nothing was
removed or renamed.
"""

from __future__ import annotations

import math
from typing import Any

from tracer.compare.compare import Change, Comparison, QuantileChange, Why
from tracer.compare.digest import CaptureDigest, FindingKey
from tracer.compare.intervals import CaptureTest
from tracer.compare.plan import Variance
from tracer.compare.significance import RankTest

SCHEMA_VERSION = 1


def comparison_object(comparison: Comparison) -> dict[str, Any]:
    """The comparison as a JSON-ready object."""
    c = comparison
    return {
        "schema_version": SCHEMA_VERSION,
        "passed": c.passed,
        "threshold_pct": c.threshold_pct,
        "alpha": c.alpha,
        "match": c.mode.value,
        "regressions": [ch.label for ch in c.regressions] + [m.name for m in c.memory_regressions],
        "inconclusive": [ch.label for ch in c.inconclusive],
        "plan": {"change_pct": c.plan_pct, "alpha": c.alpha, "power": c.power},
        "base": _side(c.base),
        "new": _side(c.new),
        "inference": _change(c.latency) if c.latency is not None else None,
        "layers": [_change(ch) for ch in c.layers],
        "memory": [
            {"name": m.name, "base": m.base, "new": m.new, "delta": m.delta, "size": m.size, "grew": m.grew}
            for m in c.memory
        ],
        "findings": {"appeared": [_finding(f) for f in c.appeared], "gone": [_finding(f) for f in c.gone]},
        "notes": list(c.notes),
    }


def _side(d: CaptureDigest) -> dict[str, Any]:
    return {
        "inputs": list(d.names),
        "inferences": d.inferences,
        "complete": d.complete,
        "executions": d.executions,
        "clock_hz": d.clock_hz,
        "labels": dict(d.labels),
    }


def _change(ch: Change) -> dict[str, Any]:
    return {
        "label": ch.label,
        "base_index": ch.base_index,
        "new_index": ch.new_index,
        "op": ch.op,
        "base_count": ch.base_count,
        "new_count": ch.new_count,
        "verdict": ch.verdict.value,
        "significant": ch.significant,
        "exact": ch.exact,
        "unit": ch.unit,
        "captures": {"base": ch.captures[0], "new": ch.captures[1]},
        "p50": _quantile(ch.p50),
        "p99": _quantile(ch.p99),
        "test": _test(ch.test),
        "decide": None if ch.decide is None else {"unit": ch.decide.unit, "per_side": ch.decide.per_side},
        "variance": _variance(ch.variance),
        "plan": None
        if ch.plan is None
        else {
            "captures_per_side": ch.plan.captures,
            "executions": ch.plan.executions,
            "assumes_no_run_to_run": ch.plan.assumes_no_run_to_run,
        },
        "why": _why(ch.why) if ch.why is not None else None,
    }


def _test(test: RankTest | CaptureTest | None) -> dict[str, Any] | None:
    if test is None:
        return None
    if isinstance(test, RankTest):
        return {
            "name": "mann-whitney-u",
            "u": test.u,
            "t": None,
            "df": None,
            "p_value": test.p_value,
            "method": test.method,
        }
    return {
        "name": "welch-t-captures",
        "u": None,
        "t": _round(test.t, 4) if math.isfinite(test.t) else None,  # no spread: JSON has no infinity
        "df": _round(test.df, 3),
        "p_value": test.p_value,
        "method": test.method,
    }


def _variance(v: Variance | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {
        "within_pct": _round(v.within_pct),
        "run_to_run_pct": _round(v.between_pct),
        "executions_per_capture": v.executions,
    }


def _quantile(q: QuantileChange | None) -> dict[str, Any] | None:
    if q is None:
        return None
    ci = q.interval
    return {
        "base": q.base,
        "new": q.new,
        "delta": q.delta,
        "pct": _round(q.pct),
        "ci": None
        if ci is None
        else {
            "low": ci.low,
            "high": ci.high,
            "low_pct": _round(ci.low_pct),
            "high_pct": _round(ci.high_pct),
            "confidence": ci.confidence,
            "method": ci.method,
        },
        "note": q.note,
    }


def _why(w: Why) -> dict[str, Any]:
    return {
        "own": {"base": w.own[0], "new": w.own[1], "delta": w.own[1] - w.own[0]},
        "interrupts": {
            "base": _round(w.interrupts[0]),
            "new": _round(w.interrupts[1]),
            "delta": _round(w.interrupts[1] - w.interrupts[0]),
        },
        "counters": [
            {"name": c.name, "kind": c.kind, "base": _round(c.base), "new": _round(c.new), "pct": _round(c.pct)}
            for c in w.counters
        ],
        "moved": [c.name for c in w.moved],
        "bound": w.bound,
        "engine": None if w.engine is None else {"base": w.engine[0], "new": w.engine[1]},
    }


def _finding(f: FindingKey) -> dict[str, Any]:
    return {"id": f.id, "severity": f.severity, "layer": f.layer, "message": f.message}


def _round(value: float | None, places: int = 3) -> float | None:
    return None if value is None else round(value, places)
