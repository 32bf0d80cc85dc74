"""TensorFlow Lite Micro lines: ``MicroProfiler`` output, arena reports and allocation failures.

Formats (``tensorflow/lite/micro/micro_profiler.cc``, ``recording_micro_allocator.cc``,
``arena_allocator/single_arena_buffer_allocator.cc``)::

    CONV_2D took 249561 ticks (9 ms).                                  Log()
    "Event","Tag","Ticks"  /  0,CONV_2D,249561                         LogCsv()
    "Unique Tag","Total ticks across all events with that tag."        LogTicksPerTagCsv()
    CONV_2D, 1817013  /  "total number of ticks", 2820774
    [RecordingMicroAllocator] Arena allocation total 9568 bytes        (also head, tail)
    [RecordingMicroAllocator] 'TfLiteEvalTensor data' used 360 bytes with alignment overhead
        (requested 360 bytes for 15 allocations)
    Failed to resize buffer. Requested: 49152, available 40824, missing: 8328
        (also "allocate tail memory", "allocate temp memory"; "available:" in Arm's docs)

plus the generic benchmark's ``[[ Table ]]: Arena`` / ``Allocations`` tables and its
``Input CRC32`` / ``Output CRC32`` lines.
"""

from __future__ import annotations

import re

from tracer.telemetry.logs.records import (
    Allocation,
    AllocFailure,
    ArenaPart,
    Crc,
    Damaged,
    EnterMode,
    ErrorLine,
    Fact,
    Mode,
    OpTicks,
    Record,
    TagTicks,
    TagTotal,
)

_LOG = re.compile(r"^(?P<tag>\S.*?) took (?P<ticks>-?\d+) ticks \((?P<ms>-?\d+) ms\)\.?\s*$")
_CSV_HEADER = re.compile(r'^"Event","Tag","Ticks"\s*$')
_CSV_ROW = re.compile(r"^(?P<event>\d+),(?P<tag>[^,]+),(?P<ticks>-?\d+)\s*$")
_TAGS_HEADER = re.compile(r'^"Unique Tag","Total ticks across all events with that tag\."\s*$')
_TAGS_ROW = re.compile(r"^(?P<tag>[^\"\s].*?), (?P<ticks>-?\d+)\s*$")
_TAGS_TOTAL = re.compile(r'^"total number of ticks", (?P<ticks>-?\d+)\s*$')
_RECORDING = "[RecordingMicroAllocator]"
_REC_TOTAL = re.compile(r"^\[RecordingMicroAllocator\] Arena allocation (total|head|tail) (\d+) bytes\s*$")
_REC_CATEGORY = re.compile(
    r"^\[RecordingMicroAllocator\] '(?P<cat>[^']*)' used (?P<used>\d+) bytes with alignment overhead "
    r"\(requested (?P<req>\d+) bytes for (?P<count>\d+) (?P<unit>[^)]*)\)\s*$"
)
_FAILURE = re.compile(
    r"Failed to (?P<kind>resize buffer|allocate tail memory|allocate temp memory)\. "
    r"Requested: (?P<req>\d+), available:? (?P<avail>\d+)(?:, missing: (?P<missing>\d+))?"
)
_TABLE = re.compile(r"^\[\[ Table \]\]: (Arena|Allocations)\s*$")
_ARENA_ROW = re.compile(r"^\s*(Total|NonPersistent|Persistent)\s*\|\s*(\d+)\s*\|\s*[\d.]+\s*$")
_ARENA_HEAD = re.compile(r"^\s*Arena\s+Bytes\s+% Arena\s*$")
_ALLOC_ROW = re.compile(
    r"^\s*(?P<name>[A-Za-z][A-Za-z ]*?)\s*\|\s*\d+\s*\|\s*(?P<used>\d+)\s*\|\s*(?P<req>\d+)\s*\|"
    r"\s*(?P<count>\d+)\s*\|\s*[\d.]+\s*$"
)
_ALLOC_HEAD = re.compile(r"^\s*Allocation\s+Id\s+Used\s+Requested\s+Count\s+% Memory\s*$")
_CRC = re.compile(r"^(Input|Output) CRC32: (0x[0-9a-fA-F]+)\s*$")
_EXIT = re.compile(r"^Application exit code: (-?\d+)\.?\s*$")
_ERRORS = re.compile(
    r"AllocateTensors\(\) failed|Failed to get registration from op code|failed to prepare with status"
    r"|MicroProfiler errored out|Failed starting model allocation|Failed to allocate memory for"
    r"|Unable to allocate|Failed to populate a persistent|Internal error: either buffer is not resizable"
)
_ARENA_PARTS = {"Total": "total", "NonPersistent": "head", "Persistent": "tail"}


def recognise(text: str, mode: Mode) -> list[Record] | None:
    """Records for one TFLM line, or None if the line is not TFLM's."""
    if mode is Mode.TFLM_CSV:
        m = _CSV_ROW.match(text)
        if m:
            return [_ticks(m.group("tag"), m.group("ticks"), "csv", int(m.group("event")))]
    if mode is Mode.TFLM_TAGS:
        m = _TAGS_TOTAL.match(text)
        if m:
            return [TagTotal(int(m.group("ticks")))]
        m = _TAGS_ROW.match(text)
        if m:
            return [TagTicks(m.group("tag"), int(m.group("ticks")))]
    if mode is Mode.ARENA_TABLE:
        m = _ARENA_ROW.match(text)
        if m:
            return [EnterMode(Mode.ARENA_TABLE), ArenaPart(_ARENA_PARTS[m.group(1)], int(m.group(2)))]
        if _ARENA_HEAD.match(text):
            return [EnterMode(Mode.ARENA_TABLE)]
    if mode is Mode.ALLOC_TABLE:
        m = _ALLOC_ROW.match(text)
        if m:
            row = Allocation(m.group("name"), int(m.group("used")), int(m.group("req")), int(m.group("count")))
            return [EnterMode(Mode.ALLOC_TABLE), row]
        if _ALLOC_HEAD.match(text):
            return [EnterMode(Mode.ALLOC_TABLE)]
    m = _LOG.match(text)
    if m:
        return [_ticks(m.group("tag"), m.group("ticks"), "log")]
    if "Failed to " in text:
        failures: list[Record] = [_failure(f) for f in _FAILURE.finditer(text)]
        if failures:
            if _ERRORS.search(text):
                failures.append(ErrorLine(text))
            return failures
    if text.startswith(_RECORDING):
        m = _REC_TOTAL.match(text)
        if m:
            return [ArenaPart(m.group(1), int(m.group(2)))]
        m = _REC_CATEGORY.match(text)
        if m:
            return [
                Allocation(
                    m.group("cat"), int(m.group("used")), int(m.group("req")), int(m.group("count")), m.group("unit")
                )
            ]
        return None
    if _CSV_HEADER.match(text):
        return [EnterMode(Mode.TFLM_CSV)]
    if _TAGS_HEADER.match(text):
        return [EnterMode(Mode.TFLM_TAGS)]
    m = _TABLE.match(text)
    if m:
        return [EnterMode(Mode.ARENA_TABLE if m.group(1) == "Arena" else Mode.ALLOC_TABLE)]
    m = _CRC.match(text)
    if m:
        return [Crc(m.group(1).lower(), int(m.group(2), 16))]
    m = _EXIT.match(text)
    if m:
        return [Fact("", "exit_code", int(m.group(1)))]
    if _ERRORS.search(text):
        return [ErrorLine(text)]
    return None


def _ticks(tag: str, ticks: str, style: str, event: int | None = None) -> Record:
    value = int(ticks)
    if value < 0:
        # "%d" on a counter that wrapped: the number is not a duration.
        return Damaged(f"negative tick count {value} for {tag.strip()}", operator=True)
    return OpTicks(tag.strip(), value, style, event)


def _failure(m: re.Match[str]) -> AllocFailure:
    requested, available = int(m.group("req")), int(m.group("avail"))
    missing = int(m.group("missing")) if m.group("missing") is not None else max(requested - available, 0)
    return AllocFailure(m.group("kind").replace("allocate ", ""), requested, available, missing)
