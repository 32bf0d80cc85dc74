"""The rare records, turned into objects as they arrive: what the firmware says about itself (target
info, layer names, PMU configuration, dropped records), marks, buffer CRCs, ISR marks and names,
and the console text of ITM port 0 cut into lines.

The frequent records (layer begin/end, PMU snapshots) and the per-layer ones (cache operations,
NPU jobs, arena and stack reports) stay in the kernel's columns (:mod:`tracer.telemetry.tables`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.base.timeline import BufferCrc, ConsoleLine, Engine, LayerInfo, Mark, TelemetryRecord
from tracer.telemetry.isr import IsrMarks
from tracer.telemetry.tables import record_string
from tracer.telemetry.wire import (
    INFO_EMULATED,
    INFO_NPU_PMU_SIMULATED,
    MARK_RESERVED,
    MARKER_COST_UNKNOWN,
    PMU_CONFIG_SIMULATED,
    RecordType,
    TimeSource,
)


@dataclasses.dataclass
class TargetInfo:
    """What the firmware said about itself (TARGET_INFO record)."""

    clock_hz: int
    time_source: TimeSource
    npu_pmu_simulated: bool
    emulated: bool
    marker_cost_cycles: float | None
    wire_version: int
    scenario: int
    cpuid: int


class FirmwareRecords:
    """The rare records of one stream, as objects.

    Attributes:
        target: The target-info record, once it arrived.
        firmware_dropped: Records the firmware said it could not send (the highest DROPPED count).
        layers: Layer descriptions by index.
        pmu_npu: The Ethos-U the PMU configuration names (55, 65, 85; 0 before it arrived).
        pmu_event_ids: The configured PMU event numbers.
        pmu_simulated: The PMU configuration says its values are simulated.
        marks, crcs: Marks and values; buffer CRCs (besides an inference's input and output).
        records: Checked records no stage assembles (ISR marks, task and sample records ...).
        isr_names: Exception numbers the firmware named (ISR_INFO).
        isr_marks: The firmware's ISR enter/exit marks, being paired.
        console: Complete console lines.
    """

    def __init__(self) -> None:
        self.target: TargetInfo | None = None
        self.firmware_dropped = 0
        self.layers: dict[int, LayerInfo] = {}
        self.pmu_npu = 0
        self.pmu_event_ids: tuple[int, ...] = ()
        self.pmu_simulated = False
        self.marks: list[Mark] = []
        self.crcs: list[BufferCrc] = []
        self.records: list[TelemetryRecord] = []
        self.isr_names: dict[int, str] = {}
        self.isr_marks = IsrMarks()
        self.console: list[ConsoleLine] = []
        self._line = bytearray()
        self._line_time: int | None = None

    def add(self, rtype: int, t: int, inference: int | None, w: np.ndarray) -> None:  # one branch per record type
        """Take one checked record of type ``rtype`` at cycle ``t`` with payload words ``w``."""
        words = w.tolist()
        if rtype == RecordType.TARGET_INFO:
            cost = words[3]
            self.target = TargetInfo(
                clock_hz=words[1],
                time_source=TimeSource(words[2] & 0xFF)
                if (words[2] & 0xFF) in TimeSource._value2member_map_
                else TimeSource.UNKNOWN,
                npu_pmu_simulated=bool(words[2] & INFO_NPU_PMU_SIMULATED),
                emulated=bool(words[2] & INFO_EMULATED),
                marker_cost_cycles=None if cost == MARKER_COST_UNKNOWN else cost / 16,
                wire_version=words[4] & 0xFF,
                scenario=(words[4] >> 8) & 0xFF,
                cpuid=words[5],
            )
        elif rtype == RecordType.DROPPED:
            self.firmware_dropped = max(self.firmware_dropped, words[0])
        elif rtype == RecordType.LAYER_INFO:
            index, engine = words[0] & 0xFFFF, (words[0] >> 16) & 0xF
            op_len, name_len = words[1] & 0xFF, (words[1] >> 8) & 0xFF
            op_words = (op_len + 3) // 4
            op = record_string(words[2 : 2 + op_words], op_len)
            name = record_string(words[2 + op_words :], name_len)
            self.layers[index] = LayerInfo(index, name, op, Engine.NPU if engine == 1 else Engine.CPU)
        elif rtype == RecordType.PMU_CONFIG:
            count = (words[0] >> 8) & 0xFF
            self.pmu_npu = words[0] & 0xFF
            self.pmu_simulated = bool((words[0] >> 16) & PMU_CONFIG_SIMULATED)
            self.pmu_event_ids = tuple((words[1 + i // 2] >> (16 * (i & 1))) & 0xFFFF for i in range(count))
        elif rtype == RecordType.BUFFER_CRC:
            self.crcs.append(BufferCrc(t, words[0], words[1], words[2], inference))
        elif rtype == RecordType.MARK:
            if words[0] < MARK_RESERVED:
                self.marks.append(Mark(t, words[0]))
        elif rtype == RecordType.VALUE:
            self.marks.append(Mark(t, words[0], words[1]))
        else:
            if rtype == RecordType.ISR_ENTER:
                self.isr_marks.enter(words[0], t)
            elif rtype == RecordType.ISR_EXIT:
                self.isr_marks.exit(words[0], t)
            elif rtype == RecordType.ISR_INFO:
                number = words[0] & 0x1FF
                self.isr_names[number] = record_string(words[1:], (words[0] >> 16) & 0xFF) or f"exception {number}"
            self.records.append(TelemetryRecord(rtype, t, inference, tuple(words)))

    def add_text(self, data: np.ndarray, times: np.ndarray) -> None:
        """Take port-0 text bytes (each with its time, -1 unknown); complete lines become console lines."""
        raw = data.tobytes()
        start = 0
        while True:
            nl = raw.find(b"\n", start)
            piece = raw[start:] if nl < 0 else raw[start:nl]
            if piece and not self._line:
                t = int(times[start])
                self._line_time = None if t < 0 else t
            self._line += piece
            if nl < 0:
                return
            text = self._line.decode("utf-8", "replace").rstrip("\r")
            self.console.append(ConsoleLine(self._line_time, text))
            self._line = bytearray()
            self._line_time = None
            start = nl + 1

    def end_text(self) -> None:
        """End of stream: a last line without its line break is a line too."""
        if self._line:
            self.console.append(ConsoleLine(self._line_time, self._line.decode("utf-8", "replace")))
            self._line = bytearray()
