"""Arm ethos-u-core-software lines (``LayerByLayerProfiler``, ``EthosUProfiler``, ``EthosUMonitor``).

These, and ``inference_process``'s; ExecuTorch's Arm runner prints the same ``cycle_cnt`` and
``ethosu_pmu_cntr`` lines::

    ethos-u : cycle_cnt : 12345 cycles         one operator (NPU cycles for ethos-u, else CPU ticks)
    ethos-u : ethosu_pmu_cntr0 : 42            a PMU counter of the operator just printed
    CONV_2D took 1234 cycles                   Log() of the core-software profilers
    ethosu_pmu_cntr2 : 503                     EthosUMonitor sample / ExecuTorch PMU report
    arena_used_bytes : 51824
    Inference runtime: 6925114 cycles          (ExecuTorch: "... CPU cycles total")
    Running inference job: <name>  /  Finished running job: <name>   one inference each pair

(``ethosu_log.h`` puts ``I: `` / ``E: `` in front of some of them; that prefix is taken off first.)

Newer runners append ``(N per inference)`` to some values; the first number is the one read.
"""

from __future__ import annotations

import re

from tracer.telemetry.logs.counters import CYCLE
from tracer.telemetry.logs.records import ArenaUsed, Boundary, Counter, OpCounter, OpTicks, Record, Runtime

_TRAIL = r"(?:\s+\(.*\))?\s*$"
_CYCLE_CNT = re.compile(rf"^(?P<tag>\S.*?) : cycle_cnt : (?P<n>\d+) cycles{_TRAIL}")
_OP_PMU = re.compile(rf"^(?P<tag>\S.*?) : ethosu_pmu_cntr(?P<i>\d+) : (?P<v>\d+){_TRAIL}")
_TOOK_CYCLES = re.compile(r"^(?P<tag>\S.*?) took (?P<n>\d+) cycles\.?\s*$")
_PMU = re.compile(rf"^ethosu_pmu_cntr(?P<i>\d+) : (?P<v>\d+){_TRAIL}")
_PMU_CYCLES = re.compile(rf"^ethosu_pmu_cycle_cntr : (?P<v>\d+){_TRAIL}")
_ARENA = re.compile(r"^arena_used_bytes\s*:\s*(\d+)\s*$")
_RUNTIME = re.compile(r"^Inference runtime: (\d+)(?: CPU)? cycles(?: total)?" + _TRAIL)
_JOB_START = re.compile(r"^Running inference job: (.*?)\s*$")
_JOB_END = re.compile(r"^Finished running job: (.*?)\s*$")


def recognise(text: str) -> list[Record] | None:
    """Records for one core-software line, or None."""
    if " : " in text:
        m = _CYCLE_CNT.match(text)
        if m:
            return [OpTicks(m.group("tag"), int(m.group("n")), "cycle_cnt")]
        m = _OP_PMU.match(text)
        if m:
            return [OpCounter(m.group("tag"), int(m.group("i")), int(m.group("v")))]
        m = _PMU.match(text)
        if m:
            return [Counter(f"PMU_CNTR{int(m.group('i'))}", "", int(m.group("v")))]
        m = _PMU_CYCLES.match(text)
        if m:
            return [Counter(CYCLE, "cycles", int(m.group("v")))]
    m = _TOOK_CYCLES.match(text)
    if m:
        return [OpTicks(m.group("tag"), int(m.group("n")), "took_cycles")]
    m = _ARENA.match(text)
    if m:
        return [ArenaUsed(int(m.group(1)), None, "arena_used_bytes")]
    m = _RUNTIME.match(text)
    if m:
        return [Runtime(int(m.group(1)))]
    m = _JOB_START.match(text)
    if m:
        return [Boundary(f"job {m.group(1)}", name=m.group(1))]
    m = _JOB_END.match(text)
    if m:
        return [Boundary(f"job {m.group(1)}", start=False, name=m.group(1))]
    return None
