"""``read_etdump``: an ExecuTorch ETDump file (``.etdp``) as an :class:`InferenceTimeline`.

The file is a size-prefixed flatbuffer with identifier ``ED00`` (schema: :mod:`.schema`). Its
``run_data`` blocks are what the runtime recorded; ExecuTorch's ``Method::execute()`` opens a block
named ``Execute`` for each call and records, as profile events:

* ``Method::execute``: the whole call: **one inference** (start and end ticks);
* ``OPERATOR_CALL`` / ``DELEGATE_CALL``: one instruction of the method (a kernel, or a call into a
  delegate such as the Ethos-U backend), with its ``instruction_id``: **one layer** per
  ``(chain_index, instruction_id)``, in the order they first ran. The operator names live in
  ExecuTorch's ETRecord, not in the ETDump: a layer is named ``instruction <id>``;
* events a delegate or the runtime recorded inside an instruction (``EthosUBackend::execute()``,
  ``+EthosUBackend::execute()NPU``, delegate debug ids): details of that layer. A delegate call
  with an Ethos-U event inside is an NPU layer; the ``...NPU`` event is the NPU job.

Other blocks (``Program::load_method``, ``Method::init``), allocation events and debug events are
kept as facts in ``extra["etdump"]``. Times are the runtime's ``pal_current_ticks()`` (on Arm's
Cortex-M runners the CPU cycle counter); the file does not give the tick rate, so the clock is
unknown unless given (``--clock``). Nothing raises on damaged content: events whose end precedes
their start or whose times are out of range are counted as damaged and left out; a buffer that is
not an ETDump at all raises :class:`~tracer.errors.CaptureError`.
"""

from __future__ import annotations

import bisect
import os
import struct
from typing import Any

from tracer.base.timeline import Engine, Inference, InferenceTimeline, LayerInfo, LayerSpan, NpuJob, TimelineBuilder
from tracer.errors import CaptureError, reading_file
from tracer.telemetry.etdump.schema.ETDump import ETDump

IDENTIFIER = b"ED00"
MAX_ETDUMP_BYTES = 256 * 1024 * 1024  # far beyond a device's ETDump buffer; guards against a wrong path
MAX_TICK = 2**62
LAYER_EVENTS = ("OPERATOR_CALL", "DELEGATE_CALL")
INFERENCE_EVENT = "Method::execute"
TIME_LABEL = (
    "ETDump ticks: the runtime's pal_current_ticks() (the CPU cycle counter on Arm's Cortex-M "
    "runners); the file does not give their rate"
)


def is_etdump(head: bytes) -> bool:
    """True if ``head`` (the first bytes of a file) starts an ETDump flatbuffer, size-prefixed or not."""
    return head[8:12] == IDENTIFIER or head[4:8] == IDENTIFIER


def read_etdump(source: str | os.PathLike[str] | bytes, name: str | None = None) -> InferenceTimeline:
    """Read an ETDump file (a path) or buffer (bytes).

    Raises:
        CaptureError: Unreadable, too large, or not an ETDump flatbuffer (with the byte offset).
    """
    label = name or (str(source) if not isinstance(source, bytes) else "<etdump>")
    data = source if isinstance(source, bytes) else _read_file(source, label)
    root = _root(data, label)
    try:
        return _Timeline(label, len(data)).build(root)
    except (IndexError, struct.error, ValueError, OverflowError, TypeError) as exc:
        raise CaptureError(f"{label}: damaged ETDump flatbuffer ({exc.__class__.__name__}: {exc})") from None


def _read_file(path: str | os.PathLike[str], label: str) -> bytes:
    with reading_file(label, "an ETDump file", CaptureError), open(path, "rb") as handle:
        data = handle.read(MAX_ETDUMP_BYTES + 1)
    if len(data) > MAX_ETDUMP_BYTES:
        raise CaptureError(f"{label}: more than {MAX_ETDUMP_BYTES:,} bytes: too large for an ETDump file")
    return data


def _root(data: bytes, label: str) -> ETDump:
    if len(data) < 12 or not is_etdump(data[:12]):
        raise CaptureError(f"{label}: not an ETDump file (expected the identifier 'ED00' at byte 4 or 8)")
    prefixed = data[8:12] == IDENTIFIER
    offset = 4 if prefixed else 0
    if prefixed:
        size = struct.unpack_from("<I", data, 0)[0]
        if size + 4 > len(data):
            raise CaptureError(
                f"{label}: the ETDump says it holds {size} bytes after byte 4, the file has {len(data) - 4}"
            )
    root_at = struct.unpack_from("<I", data, offset)[0] + offset
    if root_at + 4 > len(data):
        raise CaptureError(
            f"{label}: byte {offset}: the root table offset {root_at} is beyond the end ({len(data)} bytes)"
        )
    return ETDump.GetRootAs(data, offset)


class _Timeline:
    """Walks the flatbuffer once and assembles the timeline."""

    def __init__(self, label: str, size: int) -> None:
        self.label = label
        self.max_items = size // 4  # a vector cannot hold more elements than the buffer has words
        # Nor can all of them together: vectors whose elements share offsets (the same table
        # reached again and again) would make the walk grow with the square of the file or
        # worse. And the pairing of events with inferences and layers stays near-linear.
        # A table reached through a vector takes 12 bytes or more (its offset, its own, a field).
        self.items_left = size // 12
        self.text_left = 4 * size + 65_536  # bytes of names read: strings may be shared, not 60,000 times
        self.work_left = 8 * self.max_items + 1_000  # a real file pairs each event once or twice
        self.builder = TimelineBuilder(
            clock_hz=None, clock_source="etdump ticks", labels={"time": TIME_LABEL}, source=label
        )
        self.layer_of: dict[tuple[int, int], int] = {}
        self.damaged = 0
        self.facts: dict[str, Any] = {"runs": [], "events": {}, "allocations": {}, "debug_events": 0}

    def build(self, root: ETDump) -> InferenceTimeline:
        self.facts["version"] = root.Version()
        number = 0
        for r in range(self._length(root.RunDataLength(), "run_data")):
            run = root.RunData(r)
            number = self._run(run, r, number)
        timeline = self.builder.build()
        timeline.loss.damaged_records = self.damaged
        timeline.log = {"etdump": self.facts}
        return timeline

    def _length(self, n: int, what: str) -> int:
        if n > self.max_items:
            raise ValueError(f"the {what} vector claims {n} elements, more than the buffer can hold")
        self.items_left -= n
        if self.items_left < 0:
            raise ValueError(
                f"the {what} vectors reach more elements than the buffer can hold ({self.max_items // 3:,}): "
                "its tables share offsets"
            )
        return n

    def _text(self, raw: bytes | None) -> str:
        """A name of the file, counted: names that share one long string would be read again and
        again.
        """
        self.text_left -= len(raw or b"")
        if self.text_left < 0:
            raise ValueError(
                "its names reach more text than the buffer holds, many times over: its strings share offsets"
            )
        return _decoded(raw)

    def _spend(self, work: int) -> None:
        """Count pairings of events; events that overlap beyond any run's are damage."""
        self.work_left -= work
        if self.work_left < 0:
            raise ValueError("its events overlap far more than any run's do (inferences or layers within each other)")

    def _run(self, run: Any, index: int, number: int) -> int:
        name = self._text(run.Name())
        allocators = [
            self._text(run.Allocators(a).Name()) for a in range(self._length(run.AllocatorsLength(), "allocators"))
        ]
        profiles: list[tuple[str, int, int, int, int, bool]] = []
        for e in range(self._length(run.EventsLength(), "events")):
            event = run.Events(e)
            profile = event.ProfileEvent()
            if profile is not None:
                found = self._profile(profile)
                if found is not None:
                    profiles.append(found)
                continue
            allocation = event.AllocationEvent()
            if allocation is not None:
                who = allocation.AllocatorId()
                key = allocators[who] if 0 <= who < len(allocators) else f"allocator {who}"
                entry = self.facts["allocations"].setdefault(key, {"count": 0, "bytes": 0})
                entry["count"] += 1
                entry["bytes"] += allocation.AllocationSize()
            elif event.DebugEvent() is not None:
                self.facts["debug_events"] += 1
        self.facts["runs"].append(
            {"name": name, "events": len(profiles), "bundled_input_index": run.BundledInputIndex()}
        )
        calls = [p for p in profiles if p[0] == INFERENCE_EVENT]
        if not calls and name == "Execute" and any(p[0] in LAYER_EVENTS for p in profiles):
            calls = [("", -1, -1, min(p[3] for p in profiles), max(p[4] for p in profiles), False)]
        order = sorted(range(len(profiles)), key=lambda k: profiles[k][3])
        starts = [profiles[k][3] for k in order]
        for call in calls:
            a, b = bisect.bisect_left(starts, call[3]), bisect.bisect_right(starts, call[4])
            self._spend(b - a)
            picked = sorted(k for k in order[a:b] if profiles[k] is not call and profiles[k][4] <= call[4])
            self._inference(number, call, [profiles[k] for k in picked])
            number += 1
        for p in profiles:
            if not calls or p[0] not in (*LAYER_EVENTS, INFERENCE_EVENT):
                entry = self.facts["events"].setdefault(p[0], {"count": 0, "total_ticks": 0})
                entry["count"] += 1
                entry["total_ticks"] += p[4] - p[3]
        return number

    def _profile(self, event: Any) -> tuple[str, int, int, int, int, bool] | None:
        """``(name, chain, instruction, start, end, delegate)`` or None (damaged, counted)."""
        name = self._text(event.Name())
        delegate_id = self._text(event.DelegateDebugIdStr())
        delegate = event.DelegateDebugIdInt() != -1 or bool(delegate_id)
        if not name:
            name = delegate_id or f"delegate event {event.DelegateDebugIdInt()}"
        start, end = event.StartTime(), event.EndTime()
        if end < start or end > MAX_TICK:
            self.damaged += 1
            return None
        return name, event.ChainIndex(), event.InstructionId(), start, end, delegate

    def _inference(self, number: int, call: tuple[str, int, int, int, int, bool], inside: list[Any]) -> None:
        layers = [p for p in inside if p[0] in LAYER_EVENTS and not p[5] and p[2] >= 0]
        by_instruction: dict[int, list[tuple[str, int, int, int, int, bool]]] = {}
        for p in inside:
            if not (p[0] in LAYER_EVENTS and not p[5] and p[2] >= 0):  # (the details, in order)
                by_instruction.setdefault(p[2], []).append(p)
        for name, chain, instruction, start, end, _ in layers:
            key = (chain, instruction)
            candidates = by_instruction.get(instruction, [])
            self._spend(len(candidates))
            nested = [d for d in candidates if start <= d[3] and d[4] <= end]
            npu = name == "DELEGATE_CALL" and any("ethosu" in d[0].lower().replace("-", "") for d in nested)
            if key not in self.layer_of:
                index = len(self.layer_of)
                self.layer_of[key] = index
                label = f"instruction {instruction}" if chain == 0 else f"chain {chain} instruction {instruction}"
                self.builder.add_layer(LayerInfo(index, label, name, Engine.NPU if npu else Engine.CPU))
            self.builder.add_span(LayerSpan(number, self.layer_of[key], start, end, True))
            for d in nested:
                if d[0].endswith("NPU"):
                    self.builder.add_npu_job(NpuJob(d[3], d[4], number))
        known = bool(call[0])  # without a Method::execute event the start and end are unknown
        self.builder.add_inference(
            Inference(number, call[3] if known else None, call[4] if known else None, True, (), ())
        )


def _decoded(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace") if raw else ""
