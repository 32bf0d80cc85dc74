"""A small Protocol Buffers wire-format writer: just what the Perfetto exporter needs.

Messages are built as ``bytearray`` values field by field, in the order the caller adds them
(callers add fields in field-number order, as ``protoc``-generated code does). Only the wire types
Perfetto's trace schema uses here are written: varint (0), 64-bit (1) and length-delimited (2).
Negative ``int64`` values are written as ten-byte two's-complement varints (the ``int64`` rule,
not ``sint64``'s zigzag), as the schema declares them.
"""

from __future__ import annotations

import functools
import struct

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2

_UINT64_MASK = (1 << 64) - 1


_ONE_BYTE = [bytes([i]) for i in range(128)]


def varint(value: int) -> bytes:
    """``value`` as a base-128 varint (negative values as 64-bit two's complement)."""
    if 0 <= value < 128:
        return _ONE_BYTE[value]
    if value < 0:
        value &= _UINT64_MASK
    elif value > _UINT64_MASK:
        raise ValueError(f"{value} does not fit in 64 bits")
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


@functools.lru_cache(maxsize=512)
def tag(field: int, wire_type: int) -> bytes:
    """The key of a field: ``(field << 3) | wire_type`` as a varint."""
    if field < 1:
        raise ValueError(f"field number {field} is not positive")
    return varint((field << 3) | wire_type)


def length_delimited(field: int, data: bytes) -> bytes:
    """A whole length-delimited field: key, length, ``data``."""
    return tag(field, LENGTH_DELIMITED) + varint(len(data)) + data


def varint_field(field: int, value: int) -> bytes:
    """A whole varint field: key and value."""
    return tag(field, VARINT) + varint(value)


class Message:
    """One message under construction.

    Example::

        packet = Message().uint(8, 1000).message(11, Message().uint(9, 3).string(23, "conv0"))
        data = packet.bytes()
    """

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = bytearray()

    def uint(self, field: int, value: int) -> Message:
        """A varint field (``uint32``, ``uint64``, ``int32``, ``int64``, ``bool``, enum)."""
        self._buf += tag(field, VARINT)
        self._buf += varint(int(value))
        return self

    def double(self, field: int, value: float) -> Message:
        """A ``double`` field (64-bit IEEE 754, little-endian)."""
        self._buf += tag(field, FIXED64)
        self._buf += struct.pack("<d", float(value))
        return self

    def raw(self, field: int, data: bytes) -> Message:
        """A length-delimited field holding ``data`` as it is (``bytes`` or an encoded message)."""
        self._buf += tag(field, LENGTH_DELIMITED)
        self._buf += varint(len(data))
        self._buf += data
        return self

    def string(self, field: int, text: str) -> Message:
        """A ``string`` field (UTF-8)."""
        return self.raw(field, text.encode("utf-8"))

    def message(self, field: int, sub: Message) -> Message:
        """An embedded message."""
        return self.raw(field, sub.bytes())

    def bytes(self) -> bytes:
        """The encoded message."""
        return bytes(self._buf)

    def __len__(self) -> int:
        return len(self._buf)
