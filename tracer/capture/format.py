"""The on-disk layout of a ``.trace`` capture (documented in README, "Capture file format", and
docs/decoder.md, "Captures").

::

    file    := MAGIC header chunk*
    MAGIC   := 89 'T' 'R' 'C' 0D 0A 1A 0A          (8 bytes; PNG-style, catches text-mode mangling)
    header  := u16 version | u32 length | JSON metadata (UTF-8, `length` bytes) | u32 crc32(JSON)
    chunk   := head payload
    head    := 'TRCK' | u8 kind | u8 stream | u16 reserved | u64 host_ns | u64 stream_offset
               | u32 length | u32 crc32(payload) | u32 crc32(head fields before this one)
    kind    := 0 data | 1 event | 2 metadata | any other value: a kind a later version adds
    payload := data: the stream bytes from stream_offset on, at most 16 KiB (DATA_CHUNK_BYTES)
               | event, metadata: one JSON object (UTF-8), at most 16 MiB

All integers little-endian. The JSON metadata is one object; JSON anywhere is nested at most 64
levels (docs/limits.md). Chunks are only ever appended, data chunks in stream order, each starting
where the one before ended. Writers before version 0.2 wrote data chunks of up to 256 KiB, and a
reader takes any length up to 16 MiB (MAX_CHUNK_PAYLOAD). A reader stops cleanly at a cut, skips a
damaged chunk by scanning for the next ``TRCK`` whose head checksum holds, skips a chunk of a kind
it does not know by its length, and puts data chunks back in stream order by their offsets
(``tracer.capture.order``).
"""

from __future__ import annotations

import enum
import struct

MAGIC = b"\x89TRC\r\n\x1a\n"
VERSION = 1
HEADER_PREFIX = struct.Struct("<HI")  # version, JSON length
CRC = struct.Struct("<I")
CHUNK_MARKER = b"TRCK"
# marker, kind, stream, reserved, host_ns, stream_offset, length, payload crc, head crc.
# The head has its own checksum so that a chunk cut short by a crash is still known to be ours
# and its bytes before the cut can be given back.
CHUNK_HEAD = struct.Struct("<4sBBHQQIII")
HEAD_CRC_SPAN = CHUNK_HEAD.size - 4
MAX_CHUNK_PAYLOAD = 16 * 1024 * 1024  # read: any chunk up to this (old writers: 256 KiB data chunks)
DATA_CHUNK_BYTES = 16 * 1024  # written: damage to one data chunk loses at most this much
MAX_HEADER_JSON = 1024 * 1024


class ChunkKind(enum.IntEnum):
    """What a chunk carries."""

    DATA = 0  # raw bytes exactly as received from the source
    EVENT = 1  # a JSON note about the source: disconnect, reconnect, probe-reported loss
    METADATA = 2  # a JSON patch to the header metadata learned mid-capture (e.g. ELF build ID)
