"""Names of counters that more than one layer means by name: the telemetry decoder names its
columns with them, and the analysis looks the columns up by them.
"""

from __future__ import annotations

CYCLE_COUNTER = "PMU_CYCLES"  # the Ethos-U's dedicated 48-bit cycle counter PMCCNTR
INSTRUCTIONS = "INST_RETIRED"  # the Armv8.1-M PMU's instructions retired (a CPU counter column)
DWT_SUFFIX = "_MOD256"  # DWT counters wrap at 256: the records give their change modulo 256 only
