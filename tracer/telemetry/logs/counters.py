"""Counter names as tracer reports them, whatever the firmware printed.

Names follow the Ethos-U driver's event names without the ``ETHOSU_PMU_`` prefix
(``NPU_ACTIVE``, ``NPU_IDLE``, ``AXI0_RD_DATA_BEAT_RECEIVED``, ``EXT0_WR_DATA_BEAT_WRITTEN``);
the NPU cycle counter PMCCNTR is ``CYCLE`` (MLEK prints it as ``NPU TOTAL``, ExecuTorch as
``ethosu_pmu_cycle_cntr``). Counters whose event is not known are ``PMU_CNTR<n>``. Other numbers
of a profile keep their words: ``CPU_ACTIVE`` (MLEK with CPU profiling), ``TIME_MS``,
``CPU_WAIT_FOR_NPU`` (ExecuTorch).
"""

from __future__ import annotations

import re

CYCLE = "CYCLE"
_SPECIAL = {
    "NPU TOTAL": CYCLE,
    "NPU ACTIVE": "NPU_ACTIVE",
    "NPU IDLE": "NPU_IDLE",
    "ETHOSU_PMU_CYCLE_CNTR": CYCLE,
    "CPU_WAIT_FOR_NPU_CNTR": "CPU_WAIT_FOR_NPU",
    "TIME": "TIME_MS",
}
_NON_WORD = re.compile(r"[^0-9A-Z]+")


def canonical_counter(name: str) -> str:
    """The reported name of a printed counter name.

    >>> canonical_counter("NPU AXI0_RD_DATA_BEAT_RECEIVED")
    'AXI0_RD_DATA_BEAT_RECEIVED'
    >>> canonical_counter("NPU ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED")
    'SRAM_RD_DATA_BEAT_RECEIVED'
    """
    up = " ".join(name.upper().split())
    up = up.replace("ETHOSU_PMU_", "") if up != "ETHOSU_PMU_CYCLE_CNTR" else up
    if up in _SPECIAL:
        return _SPECIAL[up]
    if up.startswith("NPU ") and "_" in up[4:]:
        up = up[4:]  # MLEK prefixes event names with "NPU "
    m = re.fullmatch(r"(?:ETHOSU_)?PMU_CNTR(\d+)", up)
    if m:
        return f"PMU_CNTR{int(m.group(1))}"
    return _NON_WORD.sub("_", up).strip("_") or "COUNTER"


def default_unit(name: str) -> str:
    """The unit of a counter when the firmware did not print one."""
    if "BEAT" in name:
        return "beats"
    if name == "TIME_MS":
        return "ms"
    if name.startswith("PMU_CNTR"):
        return "events"
    return "cycles"


def is_npu_counter(name: str) -> bool:
    """True for counters of the NPU's PMU (as opposed to CPU cycles or times a profile prints)."""
    return name not in ("CPU_ACTIVE", "TIME_MS", "CPU_WAIT_FOR_NPU")
