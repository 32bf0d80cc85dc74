"""Names of Arm Ethos-U NPU PMU hardware events (the numbers written to PMEVTYPER).

From the Ethos-U core driver's interface headers (``enum pmu_event``), as tabled in our research
notes: U55 and U65 share one list; U85 renames the AXI0/AXI1 ports SRAM/EXT and adds per-port
events. Unknown numbers are named ``EVENT_<n>``.
"""

from __future__ import annotations

from tracer.base.counters import CYCLE_COUNTER

_COMMON = {
    0: "NO_EVENT",
    17: "CYCLE",
    32: "NPU_IDLE",
    33: "CC_STALLED_ON_BLOCKDEP",
    35: "NPU_ACTIVE",
    48: "MAC_ACTIVE",
    51: "MAC_DPU_ACTIVE",
    54: "MAC_STALLED_BY_ACC",
    55: "MAC_STALLED_BY_IB",
    64: "AO_ACTIVE",
    69: "AO_STALLED_BY_OB",
    80: "WD_ACTIVE",
    81: "WD_STALLED",
    83: "WD_STALLED_BY_WD_BUF",
    160: "AXI_LATENCY_ANY",
    161: "AXI_LATENCY_32",
    162: "AXI_LATENCY_64",
    163: "AXI_LATENCY_128",
    164: "AXI_LATENCY_256",
    165: "AXI_LATENCY_512",
    166: "AXI_LATENCY_1024",
    176: "ECC_DMA",
}

U55_EVENTS: dict[int, str] = {
    **_COMMON,
    34: "CC_STALLED_ON_SHRAM_RECONFIG",
    49: "MAC_ACTIVE_8BIT",
    50: "MAC_ACTIVE_16BIT",
    52: "MAC_STALLED_BY_WD_ACC",
    53: "MAC_STALLED_BY_WD",
    56: "MAC_ACTIVE_32BIT",
    57: "MAC_STALLED_BY_INT_W",
    58: "MAC_STALLED_BY_INT_ACC",
    65: "AO_ACTIVE_8BIT",
    66: "AO_ACTIVE_16BIT",
    67: "AO_STALLED_BY_OFMP_OB",
    68: "AO_STALLED_BY_OFMP",
    70: "AO_STALLED_BY_ACC_IB",
    71: "AO_STALLED_BY_ACC",
    72: "AO_STALLED_BY_IB",
    82: "WD_STALLED_BY_WS",
    84: "WD_PARSE_ACTIVE",
    85: "WD_PARSE_STALLED",
    86: "WD_PARSE_STALLED_IN",
    87: "WD_PARSE_STALLED_OUT",
    88: "WD_TRANS_WS",
    89: "WD_TRANS_WB",
    90: "WD_TRANS_DW0",
    91: "WD_TRANS_DW1",
    128: "AXI0_RD_TRANS_ACCEPTED",
    129: "AXI0_RD_TRANS_COMPLETED",
    130: "AXI0_RD_DATA_BEAT_RECEIVED",
    131: "AXI0_RD_TRAN_REQ_STALLED",
    132: "AXI0_WR_TRANS_ACCEPTED",
    133: "AXI0_WR_TRANS_COMPLETED_M",
    134: "AXI0_WR_TRANS_COMPLETED_S",
    135: "AXI0_WR_DATA_BEAT_WRITTEN",
    136: "AXI0_WR_TRAN_REQ_STALLED",
    137: "AXI0_WR_DATA_BEAT_STALLED",
    140: "AXI0_ENABLED_CYCLES",
    142: "AXI0_RD_STALL_LIMIT",
    143: "AXI0_WR_STALL_LIMIT",
    177: "ECC_SB0",
    384: "AXI1_RD_TRANS_ACCEPTED",
    385: "AXI1_RD_TRANS_COMPLETED",
    386: "AXI1_RD_DATA_BEAT_RECEIVED",
    387: "AXI1_RD_TRAN_REQ_STALLED",
    388: "AXI1_WR_TRANS_ACCEPTED",
    389: "AXI1_WR_TRANS_COMPLETED_M",
    390: "AXI1_WR_TRANS_COMPLETED_S",
    391: "AXI1_WR_DATA_BEAT_WRITTEN",
    392: "AXI1_WR_TRAN_REQ_STALLED",
    393: "AXI1_WR_DATA_BEAT_STALLED",
    396: "AXI1_ENABLED_CYCLES",
    398: "AXI1_RD_STALL_LIMIT",
    399: "AXI1_WR_STALL_LIMIT",
    433: "ECC_SB1",
}

_PORT_BLOCK = {
    0: "RD_TRANS_ACCEPTED",
    1: "RD_TRANS_COMPLETED",
    2: "RD_DATA_BEAT_RECEIVED",
    3: "RD_TRAN_REQ_STALLED",
    4: "WR_TRANS_ACCEPTED",
    5: "WR_TRANS_COMPLETED_M",
    6: "WR_TRANS_COMPLETED_S",
    7: "WR_DATA_BEAT_WRITTEN",
    8: "WR_TRAN_REQ_STALLED",
    9: "WR_DATA_BEAT_STALLED",
    12: "ENABLED_CYCLES",
    14: "RD_STALL_LIMIT",
    15: "WR_STALL_LIMIT",
}

U85_EVENTS: dict[int, str] = {
    **_COMMON,
    52: "MAC_STALLED_BY_W_OR_ACC",
    53: "MAC_STALLED_BY_W",
    67: "AO_STALLED_BY_BS_OR_OB",
    68: "AO_STALLED_BY_BS",
    70: "AO_STALLED_BY_AB_OR_CB",
    71: "AO_STALLED_BY_AB",
    72: "AO_STALLED_BY_CB",
    84: "WD_STALLED_BY_WS_FC",
    85: "WD_STALLED_BY_WS_TC",
    89: "WD_TRANS_WBLK",
    90: "WD_TRANS_WS_FC",
    91: "WD_TRANS_WS_TC",
    177: "ECC_MAC_IB",
    178: "ECC_MAC_AB",
    179: "ECC_AO_CB",
    180: "ECC_AO_OB",
    181: "ECC_AO_LUT",
    **{128 + k: f"SRAM_{v}" for k, v in _PORT_BLOCK.items()},
    **{384 + k: f"EXT_{v}" for k, v in _PORT_BLOCK.items()},
    **{512 + 16 * p + k: f"SRAM{p}_{v}" for p in range(4) for k, v in _PORT_BLOCK.items()},
    **{640 + 16 * p + k: f"EXT{p}_{v}" for p in range(2) for k, v in _PORT_BLOCK.items()},
    **{96 + s: f"WD_STALLED_BY_WS_SC{s}" for s in range(4)},
    **{100 + s: f"WD_PARSE_ACTIVE_SC{s}" for s in range(4)},
    **{104 + s: f"WD_PARSE_STALL_SC{s}" for s in range(4)},
    **{108 + s: f"WD_PARSE_STALL_IN_SC{s}" for s in range(4)},
    **{112 + s: f"WD_PARSE_STALL_OUT_SC{s}" for s in range(4)},
    **{116 + s: f"WD_TRANS_WS_SC{s}" for s in range(4)},
    **{120 + s: f"WD_TRANS_WB{s}" for s in range(4)},
}


def event_name(npu: int, event: int) -> str:
    """The name of hardware event ``event`` on Ethos-U``npu`` (55, 65 or 85)."""
    table = U85_EVENTS if npu == 85 else U55_EVENTS
    return table.get(event, f"EVENT_{event}")


def event_unit(name: str) -> str:
    """``beats`` for data-beat counters, ``cycles`` for the rest that count time, else ``events``."""
    if "BEAT" in name:
        return "beats"
    if name in (CYCLE_COUNTER, "CYCLE", "NPU_IDLE", "NPU_ACTIVE") or "ACTIVE" in name or "STALL" in name:
        return "cycles"
    return "events"
