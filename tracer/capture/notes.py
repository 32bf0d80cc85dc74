"""What each kind of capture note (an EVENT chunk) must hold, checked as the capture is read.

A note's JSON is the recorder's, but the file may be damaged or hostile: a note of a known kind
whose fields have the wrong type, size or range (counters given as text, a QREAD that is a number
where a list of one per sample is expected, a CYCCNT beyond 64 bits, a STATUS shorter than the
samples) is left out with a warning, so every reader of notes gets the types below and nothing
else. Notes of kinds not listed are kept as they are (their readers take what they know).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracer.limits import MAX_MEMORY_BYTES, InputError
from tracer.values import U32, U64, each, items, real, show, whole, whole_list

MAX_COUNTERS = 8  # an Ethos-U has at most 8 event counters


def checked_note(note: dict[str, Any]) -> str | None:
    """None if ``note`` holds what its kind must, else why not (a sentence)."""
    check = _CHECKS.get(note.get("event"))  # type: ignore[arg-type]
    if check is None:
        return None
    try:
        check(note)
    except InputError as exc:
        return f"a {note['event']!r} note whose {exc.message}"
    return None


def _npu_samples(note: dict[str, Any]) -> None:
    n = len(items(note.get("qread"), "'qread'"))
    for key in ("qread", "status", "qbase", "qsize"):
        whole_list(note.get(key), f"'{key}'", 0, U32, n)
    whole_list(note.get("pmu_cycles"), "'pmu_cycles'", 0, 2**48 - 1, n, optional=True)
    whole_list(note.get("cyccnt"), "'cyccnt'", 0, U64, n, optional=True)
    each(note.get("host_time"), "'host_time'", lambda v, what: real(v, what, 0, 1e12), n)
    each(note.get("counters"), "'counters'", _counters, n)


def _counters(value: Any, what: str) -> None:
    if value is not None:
        whole_list(items(value, what, max_length=MAX_COUNTERS), what, 0, U32)


def _npu_sampling(note: dict[str, Any]) -> None:
    if note.get("requested_hz") is not None:
        real(note["requested_hz"], "'requested_hz'", 0, 1e9)


def _memory_sample(note: dict[str, Any]) -> None:
    for key in ("used", "size", "high_water"):
        if note.get(key) is not None:
            whole(note[key], f"'{key}'", 0, MAX_MEMORY_BYTES)
    if note.get("kind") == "arena" and note.get("used") is None:
        raise InputError("'used' is missing: expected a whole number of bytes")
    if note.get("kind") == "stack":
        for key in ("high_water", "size"):
            if note.get(key) is None:
                raise InputError(f"'{key}' is missing: expected a whole number of bytes")
        if not isinstance(note.get("stack"), str):
            raise InputError(f"'stack' is {show(note.get('stack'))}: expected a name")
    if not isinstance(note.get("canary_ok", True), bool):
        raise InputError(f"'canary_ok' is {show(note.get('canary_ok'))}: expected true or false")


def _pmu_trace(note: dict[str, Any]) -> None:
    items(note.get("traceEvents"), "'traceEvents'")


_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "npu samples": _npu_samples,
    "npu sampling": _npu_sampling,
    "memory sample": _memory_sample,
    "fvp pmu trace": _pmu_trace,
}
