"""Arm ML Embedded Evaluation Kit (MLEK) lines (``INFO - `` prefix removed before these run).

PMU profile, three formats seen in MLEK releases::

    Profile for Inference:                    (also "Profile for Inference :")
    NPU ACTIVE cycles: 33145                  older releases: "<name> <unit>: <value>"
    NPU ACTIVE: 33145 cycles                  current default: "<name>: <value> <unit>"
    Number of samples: 2                      current full statistics:
    Total / Avg./ Min / Max                   "<name> <unit>: total/ avg / min / max"
    NPU ACTIVE cycles: 66290/ 33145 / 33145 / 33145
    <metrics>BASE64</metrics>                 26.03 inference runner: JSON profiling groups

the boot banner (core clock, CPU, ``CPU: <name> @ 50MHz``, ``Ethos-U version info``), the model
info (input/output tensor sizes, ``Activation buffer (a.k.a tensor arena) size used``, operators),
the driver's ``NPU config mismatch`` error, and the inference loop of the audio use cases::

    Running KWS inference on audio clip 0 => yes_no_go_stop.wav      names the model that runs next
    Inference 1/7                                                    inference k of a run of N
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from tracer.telemetry.logs.counters import canonical_counter
from tracer.telemetry.logs.records import (
    ArenaUsed,
    Boundary,
    Counter,
    CounterSummary,
    Damaged,
    EnterMode,
    ErrorLine,
    Fact,
    InferenceMark,
    Metrics,
    Mode,
    ModelName,
    Neutral,
    Record,
    SampleCount,
)
from tracer.values import is_ascii_digits

_PROFILE = re.compile(r"^Profile for (?P<group>\S.*?)\s*:\s*$")
_UNITS = r"cycles|beats|ms|bytes|us|cycles \(approx\)"
# "<name> <unit>: value" (older) and "<name>: value <unit>" (current).
_COUNTER_OLD = re.compile(rf"^(?P<name>[A-Za-z][\w ]*?)\s+(?P<unit>{_UNITS})\s*:\s*(?P<value>\d+)\s*$", re.I)
_COUNTER_NEW = re.compile(rf"^(?P<name>[A-Za-z][\w ]*?)\s*:\s*(?P<value>\d+)(?:\.0+)?\s+(?P<unit>{_UNITS})\s*$", re.I)
_FULL = re.compile(
    rf"^(?P<name>[A-Za-z][\w ]*?)\s+(?P<unit>{_UNITS})\s*:\s*(?P<total>\d+)\s*/\s*(?P<mean>\d+(?:\.\d+)?)"
    r"\s*/\s*(?P<min>\d+)\s*/\s*(?P<max>\d+)\s*$",
    re.I,
)
_SAMPLES = re.compile(r"^Number of samples:\s*(\d+)\s*$")
_STATS_HEADER = re.compile(r"^Total\s*/\s*Avg\.?\s*/\s*Min\s*/\s*Max\s*$", re.I)
_OVERFLOW = re.compile(r"^(?:Counter )?[Oo]verflow detected for (.+?)\.?$")
_METRICS = re.compile(r"<metrics>(?P<payload>.*?)</metrics>")

_CLOCK = re.compile(r"core clock has been set to:\s*(\d+)\s*Hz", re.I)
_CPU_ID = re.compile(r"^CPU ID:\s*(0x[0-9a-fA-F]+)\s*$")
_CPU = re.compile(r"^CPU:\s*(\S.*?)\s*$")
_VERSION_INFO = re.compile(r"^Ethos-U version info:\s*$")
_VERSION_FIELDS = {
    "Arch": "arch",
    "Driver": "driver",
    "MACs/cc": "macs_per_cc",
    "Cmd stream": "cmd_stream",
}
_VERSION_LINE = re.compile(r"^(Arch|Driver|MACs/cc|Cmd stream):\s*(\S+)\s*$")
_NPU_INIT = re.compile(r"^Ethos-U device initialised\s*$")
_NPU_AT = re.compile(r"^Initialising Ethos-U device@(0x[0-9a-fA-F]+)")
_MEM_MODE = re.compile(r"^Using (\w+) memory mode(?:;\s*fast cache size:\s*(\d+))?")
_MEM_MODE_GUESS = re.compile(r"^NPU memory mode likely to be:\s*(\S+)")
_MISMATCH = re.compile(r"NPU config mismatch:\s*npu\.(\w+)=(\d+)\s+optimizer\.(\w+)=(\d+)")
_TARGET = re.compile(r"^Target system design:\s*(\S.*?)\s*$")
_ARENA = re.compile(r"^Activation buffer \(a\.k\.a tensor arena\) size used:\s*(\d+)\s*$")
_MODEL_IO = re.compile(r"^Model (INPUT|OUTPUT) tensors:\s*$")
_TENSOR_BYTES = re.compile(r"^tensor occupies (\d+) bytes")
_TENSOR_DETAIL = re.compile(r"^(tensor type is|Quant dimension|Scale\[|ZeroPoint\[|\d+:\s*\d+\s*$)")
_OPS_COUNT = re.compile(r"^Number of operators:\s*(\d+)\s*$")
_OP = re.compile(r"^Operator (\d+):\s*(\S.*?)\s*$")
_RUNNING = re.compile(r"^Running inference on (\S.*?)\s*$")
_RUNNING_MODEL = re.compile(r"^Running (?P<model>\w+) inference on (?P<what>\S.*?)\s*$")
_MARK = re.compile(r"^Inference (?P<k>\d{1,18})\s*/\s*(?P<n>\d{1,18})\s*$")  # 19+ digits: no count
# Boot banners that give the core clock: "CPU: Cortex-M55 @ 50MHz", "CPU: ... @ 32 MHz".
_CPU_AT_CLOCK = re.compile(r"^CPU:\s*(?P<name>\S.*?)\s*@\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[kMG]?)Hz\s*$", re.I)
_CLOCK_UNITS = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
_INFERENCES = re.compile(r"^Total number of inferences:\s*(\d+)\s*$")
_FAILED = re.compile(r"^(Invoke failed|Inference failed)\.?$")


def recognise(text: str, mode: Mode) -> list[Record] | None:
    """Records for one MLEK line, or None if the line is not MLEK's."""
    if mode is Mode.MLEK_PROFILE:
        found = _profile_line(text)
        if found is not None:
            return [found]
    if mode is Mode.NPU_VERSION:
        m = _VERSION_LINE.match(text)
        if m:
            key = _VERSION_FIELDS[m.group(1)]
            value: object = int(m.group(2)) if key == "macs_per_cc" and is_ascii_digits(m.group(2)) else m.group(2)
            return [EnterMode(Mode.NPU_VERSION), Fact("npu", key, value)]
    if mode is Mode.MODEL_INFO:
        m = _TENSOR_BYTES.match(text)
        if m:
            return [EnterMode(Mode.MODEL_INFO), Fact("model", "tensor_bytes", int(m.group(1)))]
        if _TENSOR_DETAIL.match(text):
            return [EnterMode(Mode.MODEL_INFO)]
    if "<metrics>" in text:
        return [_metrics(m.group("payload")) for m in _METRICS.finditer(text)] or None
    return _single(text)


def _profile_line(text: str) -> Record | None:
    m = _FULL.match(text)
    if m:
        return CounterSummary(
            canonical_counter(m.group("name")),
            _unit(m.group("unit")),
            int(m.group("total")),
            float(m.group("mean")),
            int(m.group("min")),
            int(m.group("max")),
        )
    for pattern in (_COUNTER_OLD, _COUNTER_NEW):
        m = pattern.match(text)
        if m:
            return Counter(canonical_counter(m.group("name")), _unit(m.group("unit")), int(m.group("value")))
    m = _SAMPLES.match(text)
    if m:
        return SampleCount(int(m.group(1)))
    if _STATS_HEADER.match(text):
        return Neutral()
    m = _OVERFLOW.match(text)
    if m:
        return Fact("pmu", "overflow", canonical_counter(m.group(1)))
    return None


def _single(text: str) -> list[Record] | None:
    m = _PROFILE.match(text)
    if m:
        return [EnterMode(Mode.MLEK_PROFILE, m.group("group"))]
    m = _CLOCK.search(text)
    if m:
        return [Fact("cpu", "clock_hz", int(m.group(1)))]
    m = _CPU_ID.match(text)
    if m:
        return [Fact("cpu", "id", m.group(1))]
    m = _CPU_AT_CLOCK.match(text)
    if m:
        return [Fact("cpu", "name", m.group("name")), Fact("cpu", "clock_hz", _hz(m.group("value"), m.group("unit")))]
    m = _CPU.match(text)
    if m:
        return [Fact("cpu", "name", m.group(1))]
    if _VERSION_INFO.match(text):
        return [EnterMode(Mode.NPU_VERSION)]
    if _NPU_INIT.match(text):
        return [Fact("npu", "initialised", True)]
    m = _NPU_AT.match(text)
    if m:
        return [Fact("npu", "base_address", m.group(1))]
    m = _MEM_MODE.match(text)
    if m:
        facts: list[Record] = [Fact("npu", "memory_mode", m.group(1))]
        if m.group(2):
            facts.append(Fact("npu", "fast_cache_bytes", int(m.group(2))))
        return facts
    m = _MEM_MODE_GUESS.match(text)
    if m:
        return [Fact("npu", "memory_mode_guess", m.group(1))]
    m = _MISMATCH.search(text)
    if m:
        item = {"field": m.group(1), "npu": int(m.group(2)), "optimizer": int(m.group(4))}
        return [Fact("", "npu_config_mismatch", item), ErrorLine(text)]
    m = _TARGET.match(text)
    if m:
        return [Fact("", "target", m.group(1))]
    m = _ARENA.match(text)
    if m:
        return [ArenaUsed(int(m.group(1)), None, "activation buffer (MLEK)")]
    m = _MODEL_IO.match(text)
    if m:
        return [EnterMode(Mode.MODEL_INFO, m.group(1).lower())]
    m = _OPS_COUNT.match(text)
    if m:
        return [Fact("model", "operator_count", int(m.group(1)))]
    m = _OP.match(text)
    if m:
        return [Fact("model", "operator", (int(m.group(1)), m.group(2)))]
    m = _RUNNING.match(text)
    if m:
        return [Boundary(f"Running inference on {m.group(1)}")]
    m = _RUNNING_MODEL.match(text)
    if m:
        return [ModelName(m.group("model"))]
    m = _MARK.match(text)
    if m:
        return [InferenceMark(int(m.group("k")), int(m.group("n")))]
    m = _INFERENCES.match(text)
    if m:
        return [Fact("", "inferences_reported", int(m.group(1)))]
    if _FAILED.match(text):
        return [ErrorLine(text)]
    return None


def _metrics(payload: str) -> Record:
    try:
        raw = base64.b64decode(payload.strip(), validate=True)
        data = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        return Damaged(f"<metrics> payload is not base64 JSON ({exc.__class__.__name__})")
    if not isinstance(data, list) or not all(isinstance(g, dict) for g in data):
        return Damaged("<metrics> JSON is not a list of profiling groups")
    return Metrics(data)


def _hz(value: str, unit: str) -> int | float:
    """A clock in Hz; a fraction of a hertz stays a float (and is refused as a clock later)."""
    hz = float(value) * _CLOCK_UNITS[unit.lower()]
    return int(hz) if hz.is_integer() else hz


def _unit(unit: str) -> str:
    return " ".join(unit.lower().split())
