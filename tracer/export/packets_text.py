"""Packet listings: the ndjson contract and a human-readable text form."""

from __future__ import annotations

import json
from typing import IO

from tracer.decode.packets import PacketBatch

_FIXED = ("offset", "type", "ts")


def write_packets(batch: PacketBatch, out: IO[str], fmt: str) -> None:
    """Write a batch as ``ndjson`` (the contract) or ``text``."""
    if fmt == "ndjson":
        out.writelines(json.dumps(rec, separators=(",", ":")) + "\n" for rec in batch.records())
        return
    lines = []
    for rec in batch.records():
        ts = "-" if rec["ts"] is None else str(rec["ts"])
        fields = " ".join(f"{k}={_show(k, v)}" for k, v in rec.items() if k not in _FIXED)
        lines.append(f"{rec['offset']:>10} {ts:>12}  {rec['type']:<12} {fields}\n")
    out.writelines(lines)


def _show(key: str, value: object) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, int) and key in ("value", "pc", "address", "global", "header", "counters"):
        return hex(value)
    return str(value)
