"""Lines of the simulator around the firmware: the Arm FVP's telnet banner, its ``--stat`` block
and its stop message. Their presence means CPU timings are a model estimate (the FVP is not
cycle-accurate for the CPU).
"""

from __future__ import annotations

import re

from tracer.telemetry.logs.records import EnterMode, Fact, Mode, Record

_TELNET = re.compile(r"^telnetterminal(\d+): Listening for serial connection on port (\d+)\s*$")
_STATS = re.compile(r"^--- (\S+) statistics: -+\s*$")
_STATS_END = re.compile(r"^-{20,}\s*$")
# Keys are words ("Simulated time") or component instance paths ("FVP_MPS3_Corstone_SSE_300.cpu0").
_STATS_ROW = re.compile(r"^(?P<key>[A-Za-z][\w .\-\[\]]*?)\s*:\s*(?P<value>\S.*?)\s*$")
_STOPPED = re.compile(r"Simulation stopped by user|/OSCI/SystemC")


def recognise(text: str, mode: Mode) -> list[Record] | None:
    """Records for one FVP line, or None."""
    if mode is Mode.FVP_STATS:
        if _STATS_END.match(text):
            return [Fact("fvp", "statistics_complete", True)]
        m = _STATS_ROW.match(text)
        if m:
            key = "_".join(m.group("key").lower().split())
            return [EnterMode(Mode.FVP_STATS), Fact("fvp", key, _value(m.group("value")))]
    m = _STATS.match(text)
    if m:
        return [EnterMode(Mode.FVP_STATS), Fact("fvp", "model", m.group(1))]
    m = _TELNET.match(text)
    if m:
        return [Fact("fvp", f"telnetterminal{m.group(1)}_port", int(m.group(2)))]
    if _STOPPED.search(text):
        return [Fact("fvp", "stopped", text.strip())]
    return None


_DECIMAL = r"(\d+(?:\.\d+)?)"


def _value(text: str) -> object:
    m = re.fullmatch(_DECIMAL + "s", text)
    if m:
        return float(m.group(1))
    m = re.fullmatch(_DECIMAL + r" MIPS \(\s*(\d+) Inst\)", text)
    if m:
        return {"mips": float(m.group(1)), "instructions": int(m.group(2))}
    m = re.fullmatch(r"(0x[0-9a-fA-F]{1,16}) bytes.*", text)
    if m:
        return int(m.group(1), 16)
    m = re.fullmatch(_DECIMAL, text)
    return float(m.group(1)) if m else text
