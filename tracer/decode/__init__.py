"""Decoding trace bytes: TPIU deframing, ITM/DWT packets, time."""

from tracer.decode.itm import ItmDecoder, ItmStats, decode_bytes
from tracer.decode.packets import PacketBatch, PacketKind
from tracer.decode.stream import TraceDecoder
from tracer.decode.tpiu import TpiuDeframer, TpiuMode

__all__ = [
    "ItmDecoder",
    "ItmStats",
    "PacketBatch",
    "PacketKind",
    "TpiuDeframer",
    "TpiuMode",
    "TraceDecoder",
    "decode_bytes",
]
