"""The comparison object (``tracer compare --format json``): every number of a :class:`Comparison`.

A view: nothing is computed again. The text, Markdown and JUnit renderings are made from this
object, so all carry the same content. The shape (``docs/compare.md``)::

    {schema_version, passed, threshold_pct, alpha, match, regressions: [labels],
     base: {inputs, inferences, complete, executions, clock_hz, labels},  new: {...},
     inference: CHANGE | null, layers: [CHANGE], memory: [{name, base, new, delta, size, grew}],
     findings: {appeared: [...], gone: [...]}, notes: [...]}

    CHANGE = {label, base_index, new_index, op, base_count, new_count, verdict, significant, exact,
              p50: {base, new, delta, pct, ci}, p99: {...}, test: {name, u, p_value, method} | null,
              why: {own, interrupts, counters, moved, bound, engine} | null}
"""

from __future__ import annotations

from typing import Any

from tracer.compare.compare import Change, Comparison, QuantileChange, Why
from tracer.compare.digest import CaptureDigest, FindingKey

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
        "p50": _quantile(ch.p50),
        "p99": _quantile(ch.p99),
        "test": None
        if ch.test is None
        else {"name": "mann-whitney-u", "u": ch.test.u, "p_value": ch.test.p_value, "method": ch.test.method},
        "why": _why(ch.why) if ch.why is not None else None,
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
        },
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
