"""ExecuTorch Arm ``executor_runner`` lines (with their ``I [executorch:file:line] `` prefix removed).

Beyond the ``cycle_cnt`` / ``ethosu_pmu_cntr`` lines it shares with ethos-u-core-software::

    NPU Inferences : 1
    Operator(s) total: 1498202 CPU cycles
    Inference CPU ratio: 99.99 %          Inference NPU ratio: 0.01 %
    cpu_wait_for_npu_cntr : 729 CPU cycles
    Ethos-U PMU Events:[ETHOSU_PMU_EXT0_RD_DATA_BEAT_RECEIVED, ..., ETHOSU_PMU_NPU_IDLE]
    method_allocator_used:     1355722 / 62914560  free: 61558838 ( used: 2 % )
    method_allocator_planned:  752640 bytes
"""

from __future__ import annotations

import re

from tracer.telemetry.logs.counters import canonical_counter
from tracer.telemetry.logs.records import ArenaUsed, Boundary, Counter, Fact, PmuEventNames, Record

_TRAIL = r"(?:\s+\(.*\))?\s*$"
_NPU_INFERENCES = re.compile(rf"^NPU Inferences : (\d+){_TRAIL}")
_DELEGATIONS = re.compile(r"^NPU delegations: (\d+)")
_OPS_TOTAL = re.compile(rf"^Operator\(s\) total: (\d+) CPU cycles{_TRAIL}")
_RATIO = re.compile(r"^Inference (CPU|NPU) ratio: (\d+(?:\.\d+)?) %\s*$")
_WAIT = re.compile(rf"^cpu_wait_for_npu_cntr : (\d+) CPU cycles{_TRAIL}")
_EVENTS = re.compile(r"^Ethos-U PMU Events:\s*\[(.*)\]\s*$")
_POOL = re.compile(r"^(method_allocator_used|temp_allocator_used):\s*(\d+)\s*/\s*(\d+)\s+free:\s*(\d+)")
_BYTES = re.compile(
    r"^(model_pte_loaded_size|method_allocator_planned|method_allocator_loaded|"
    r"method_allocator_input|method_allocator_executor):\s*(\d+) bytes"
)
_PTE = re.compile(r"^Model PTE file loaded\. Size: (\d+) bytes")
_POOL_SIZE = re.compile(r"^Setup Method allocator pool\. Size: (\d+) bytes")
_PLANNED = re.compile(r"^Setting up planned buffer (\d+), size (\d+)\.?")
_START = re.compile(r"^Starting the model execution")


def recognise(text: str) -> list[Record] | None:
    """Records for one ExecuTorch line, or None."""
    m = _NPU_INFERENCES.match(text) or _DELEGATIONS.match(text)
    if m:
        return [Fact("executorch", "npu_inferences", int(m.group(1)), per_inference=True)]
    m = _OPS_TOTAL.match(text)
    if m:
        return [Fact("executorch", "operators_total_cycles", int(m.group(1)), per_inference=True)]
    m = _RATIO.match(text)
    if m:
        return [Fact("executorch", f"{m.group(1).lower()}_ratio_pct", float(m.group(2)), per_inference=True)]
    m = _WAIT.match(text)
    if m:
        return [Counter("CPU_WAIT_FOR_NPU", "CPU cycles", int(m.group(1)))]
    m = _EVENTS.match(text)
    if m:
        names = tuple(canonical_counter(n.strip()) for n in m.group(1).split(",") if n.strip())
        return [PmuEventNames(names)]
    m = _POOL.match(text)
    if m:
        used, size, free = int(m.group(2)), int(m.group(3)), int(m.group(4))
        facts: list[Record] = [Fact("executorch", m.group(1), {"used": used, "size": size, "free": free})]
        if m.group(1) == "method_allocator_used":
            facts.append(ArenaUsed(used, size, "method allocator (ExecuTorch)"))
        return facts
    m = _BYTES.match(text)
    if m:
        return [Fact("executorch", f"{m.group(1)}_bytes", int(m.group(2)))]
    m = _PTE.match(text)
    if m:
        return [Fact("executorch", "model_pte_bytes", int(m.group(1)))]
    m = _POOL_SIZE.match(text)
    if m:
        return [Fact("executorch", "method_allocator_pool_bytes", int(m.group(1)))]
    m = _PLANNED.match(text)
    if m:
        return [Fact("executorch", f"planned_buffer_{int(m.group(1))}_bytes", int(m.group(2)))]
    if _START.match(text):
        return [Boundary("Starting the model execution")]
    return None
