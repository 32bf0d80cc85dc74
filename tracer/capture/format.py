"""The on-disk layout of a ``.trace`` capture (documented in README, "Capture file format").

::

    file   := MAGIC header chunk*
    MAGIC  := 89 'T' 'R' 'C' 0D 0A 1A 0A          (8 bytes; PNG-style, catches text-mode mangling)
    header := u16 version | u32 length | JSON metadata (UTF-8, `length` bytes) | u32 crc32(JSON)
    chunk  := head payload
    head   := 'TRCK' | u8 kind | u8 stream | u16 reserved | u64 host_ns | u64 stream_offset
              | u32 length | u32 crc32(payload) | u32 crc32(head fields before this one)

All integers little-endian. Chunks are only ever appended; a reader stops cleanly at a cut and
skips a damaged chunk by scanning for the next ``TRCK`` whose checksum holds.
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
MAX_CHUNK_PAYLOAD = 16 * 1024 * 1024
MAX_HEADER_JSON = 1024 * 1024


class ChunkKind(enum.IntEnum):
    """What a chunk carries."""

    DATA = 0  # raw bytes exactly as received from the source
    EVENT = 1  # a JSON note about the source: disconnect, reconnect, probe-reported loss
    METADATA = 2  # a JSON patch to the header metadata learned mid-capture (e.g. ELF build ID)
