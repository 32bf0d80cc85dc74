"""The ITM/DWT packet decoder's hot loop, compiled by numba.

One call decodes as many whole packets of a buffer as it can and says how many bytes it used; the
caller keeps the rest (a packet cut by the chunk boundary) for the next call, so any split of the
stream gives the same packets. Decoder state between calls lives in a small int64 array.

Header classification follows Armv7-M ARM Appendix D4 and Armv8-M ARM Appendix F, as tabled in
our research notes (``itm_and_anchors.md`` §1.1-1.2). Reserved headers are emitted as ``RESERVED``
packets and never read as timestamps.
"""

from __future__ import annotations

import numba
import numpy as np

from tracer.decode.packets import (
    FLAG_CLKCH,
    FLAG_GLOBAL_VALID,
    FLAG_MALFORMED,
    FLAG_PAGE,
    FLAG_PROHIBITED,
    FLAG_WRAP,
    FLAG_WRITE,
    PacketKind,
)

# State slots.
S_PAGE = 0  # stimulus-port page (0..7), reset by sync
S_TS = 1  # accumulated local-timestamp ticks
S_ZEROS = 2  # length of the run of 0x00 bytes not yet resolved
S_ZERO_AT = 3  # stream offset of that run's first byte
S_GTS_LO = 4  # global timestamp bits [25:0]
S_GTS_HI = 5  # global timestamp bits [63:26]
S_GTS_HI_VALID = 6  # a GTS2 has been seen
S_PADDING = 7  # 0x00 bytes that did not form a sync packet
STATE_SIZE = 8

K_SYNC = np.uint8(PacketKind.SYNC)
K_OVERFLOW = np.uint8(PacketKind.OVERFLOW)
K_LTS = np.uint8(PacketKind.LTS)
K_GTS1 = np.uint8(PacketKind.GTS1)
K_GTS2 = np.uint8(PacketKind.GTS2)
K_EXTENSION = np.uint8(PacketKind.EXTENSION)
K_SWIT = np.uint8(PacketKind.SWIT)
K_DWT_EVENT = np.uint8(PacketKind.DWT_EVENT)
K_EXCEPTION = np.uint8(PacketKind.EXCEPTION)
K_PC_SAMPLE = np.uint8(PacketKind.PC_SAMPLE)
K_PC_SLEEP = np.uint8(PacketKind.PC_SLEEP)
K_DATA_PC = np.uint8(PacketKind.DATA_PC)
K_DATA_ADDR = np.uint8(PacketKind.DATA_ADDR)
K_DATA_VALUE = np.uint8(PacketKind.DATA_VALUE)
K_DATA_MATCH = np.uint8(PacketKind.DATA_MATCH)
K_PMU_OVERFLOW = np.uint8(PacketKind.PMU_OVERFLOW)
K_RESERVED = np.uint8(PacketKind.RESERVED)

NO_TS = np.int64(-1)


def new_state() -> np.ndarray:
    """Return the state of a decoder at the start of a stream."""
    return np.zeros(STATE_SIZE, np.int64)


@numba.njit(cache=True, inline="always")
def _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, offset, kind, a, b, c, flags):  # noqa: ANN001, ANN202
    out_offset[n] = offset
    out_kind[n] = kind
    out_a[n] = a
    out_b[n] = b
    out_c[n] = c
    out_flags[n] = flags
    out_ts[n] = NO_TS
    return n + 1


@numba.njit(cache=True, inline="always")
def _continuation_length(buf, start, length, max_bytes):  # noqa: ANN001, ANN202
    """Count payload bytes of a continuation-coded packet whose first payload byte is at start.

    Returns the payload length, 0 if the buffer ends before the packet does, or -1 if the packet
    runs past ``max_bytes`` (malformed).
    """
    k = 0
    while k < max_bytes:
        if start + k >= length:
            return 0
        if (buf[start + k] & 0x80) == 0:
            return k + 1
        k += 1
    return -1


@numba.njit(cache=True)
def decode_itm(buf, base, state, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts):  # noqa: ANN001, ANN201, C901, PLR0912, PLR0915
    """Decode whole packets of ``buf`` (uint8) whose first byte is at stream offset ``base``.

    Output arrays need room for ``len(buf)`` packets. Timestamps: each local timestamp stamps
    every packet since the previous one, itself included; packets after the last one in this
    buffer keep ``NO_TS``.

    Returns:
        (packets written, bytes consumed, index of the first unstamped packet,
         stamp of the first local timestamp in this buffer or -1)
    """
    length = buf.shape[0]
    page = state[S_PAGE]
    ts = state[S_TS]
    zeros = state[S_ZEROS]
    zero_at = state[S_ZERO_AT]
    gts_lo = state[S_GTS_LO]
    gts_hi = state[S_GTS_HI]
    gts_hi_valid = state[S_GTS_HI_VALID]
    padding = state[S_PADDING]
    n = 0
    i = 0
    unstamped = 0
    first_stamp = np.int64(-1)
    while i < length:
        h = buf[i]
        if h == 0:
            if zeros == 0:
                zero_at = base + i
            zeros += 1
            i += 1
            continue
        if zeros > 0:
            if h == 0x80 and zeros >= 5:
                n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, zero_at, K_SYNC, 0, 0, 0, 0)
                page = 0
                zeros = 0
                i += 1
                continue
            padding += zeros
            zeros = 0
        at = base + i
        low = h & 0x0F
        if low == 0:
            if h == 0x70:
                n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_OVERFLOW, 0, 0, 0, 0)
                i += 1
                continue
            if (h & 0x80) == 0:  # LTS format 2: value in the header, TC = 0
                n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_LTS, h >> 4, 0, 0, 0)
                i += 1
                ts += h >> 4
                for j in range(unstamped, n):
                    out_ts[j] = ts
                unstamped = n
                if first_stamp < 0:
                    first_stamp = ts
                continue
            if (h & 0xC0) == 0xC0:  # LTS format 1
                k = _continuation_length(buf, i + 1, length, 4)
                if k == 0:
                    break
                if k < 0:
                    n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_RESERVED, h, 0, 0, FLAG_MALFORMED)
                    i += 5
                    continue
                value = np.int64(0)
                for j in range(k):
                    value |= np.int64(buf[i + 1 + j] & 0x7F) << (7 * j)
                n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_LTS, value, (h >> 4) & 3, 0, 0)
                i += 1 + k
                ts += value
                for j in range(unstamped, n):
                    out_ts[j] = ts
                unstamped = n
                if first_stamp < 0:
                    first_stamp = ts
                continue
            n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_RESERVED, h, 0, 0, 0)
            i += 1
            continue
        if h == 0x94:  # global timestamp 1: bits [25:0]
            k = _continuation_length(buf, i + 1, length, 4)
            if k == 0:
                break
            if k < 0:
                n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_RESERVED, h, 0, 0, FLAG_MALFORMED)
                i += 5
                continue
            value = np.int64(0)
            flags = 0
            for j in range(k):
                byte = buf[i + 1 + j]
                if j == 3:
                    value |= np.int64(byte & 0x1F) << 21
                    if byte & 0x40:
                        flags |= FLAG_WRAP
                    if byte & 0x20:
                        flags |= FLAG_CLKCH
                else:
                    value |= np.int64(byte & 0x7F) << (7 * j)
            bits = 26 if k == 4 else 7 * k
            mask = (np.int64(1) << bits) - 1
            gts_lo = (gts_lo & ~mask) | value
            if gts_hi_valid and (flags & FLAG_WRAP) == 0:
                flags |= FLAG_GLOBAL_VALID
            n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_GTS1, value, (gts_hi << 26) | gts_lo, k, flags)
            i += 1 + k
            continue
        if h == 0xB4:  # global timestamp 2: bits [47:26] or [63:26]
            k = _continuation_length(buf, i + 1, length, 6)
            if k == 0:
                break
            if k < 0:
                n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_RESERVED, h, 0, 0, FLAG_MALFORMED)
                i += 7
                continue
            value = np.int64(0)
            for j in range(k):
                value |= np.int64(buf[i + 1 + j] & 0x7F) << (7 * j)
            gts_hi = value
            gts_hi_valid = 1
            n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_GTS2, value, (gts_hi << 26) | gts_lo, k, FLAG_GLOBAL_VALID)
            i += 1 + k
            continue
        if (h & 0x0B) == 0x08:  # extension, including the stimulus-port page
            sh = (h >> 2) & 1
            ex = np.int64((h >> 4) & 7)
            if (h & 0x80) == 0:
                flags = FLAG_PAGE if sh == 0 else 0
                if sh == 0:
                    page = ex
                n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_EXTENSION, ex, sh, 0, flags)
                i += 1
                continue
            # Up to three 7-bit continuation bytes, then a final byte with all 8 bits.
            k = 0
            done = False
            while k < 4:
                if i + 1 + k >= length:
                    break
                byte = buf[i + 1 + k]
                if k == 3:
                    ex |= np.int64(byte) << 24
                    k += 1
                    done = True
                    break
                ex |= np.int64(byte & 0x7F) << (3 + 7 * k)
                k += 1
                if (byte & 0x80) == 0:
                    done = True
                    break
            if not done:
                break
            n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_EXTENSION, ex, sh, k, 0)
            i += 1 + k
            continue
        ss = h & 3
        if ss == 0:  # x100 headers other than 0x94/0xB4
            n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_RESERVED, h, 0, 0, 0)
            i += 1
            continue
        size = 4 if ss == 3 else ss
        if i + size >= length:
            break
        value = np.int64(0)
        for j in range(size):
            value |= np.int64(buf[i + 1 + j]) << (8 * j)
        i += 1 + size
        disc = h >> 3
        if (h & 4) == 0:
            n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_SWIT, value, page * 32 + disc, size, 0)
            continue
        kind = K_RESERVED
        a = np.int64(h)
        b = np.int64(0)
        flags = 0
        if disc == 0:
            if size == 1:
                kind = K_DWT_EVENT
                a = value
        elif disc == 1:
            if size == 2:
                kind = K_EXCEPTION
                a = value & 0x1FF
                b = (value >> 12) & 3
        elif disc == 2:
            if size == 4:
                kind = K_PC_SAMPLE
                a = value
            elif size == 1:
                kind = K_PC_SLEEP
                a = 0
                if value == 0xFF:
                    flags = FLAG_PROHIBITED
        elif disc == 3:
            if size == 1:
                kind = K_PMU_OVERFLOW
                a = value
        elif disc >= 8 and disc <= 23:
            b = (disc >> 1) & 3
            a = value
            if disc < 16:
                if (disc & 1) == 0:
                    if size == 1 and (value & 1) == 1:
                        kind = K_DATA_MATCH
                        a = 0
                    else:
                        kind = K_DATA_PC
                else:
                    kind = K_DATA_ADDR
            else:
                kind = K_DATA_VALUE
                if disc & 1:
                    flags = FLAG_WRITE
        if kind == K_RESERVED:
            a = np.int64(h)
            b = np.int64(0)
            size = 0
        n = _put(n, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, kind, a, b, size, flags)
    state[S_PAGE] = page
    state[S_TS] = ts
    state[S_ZEROS] = zeros
    state[S_ZERO_AT] = zero_at
    state[S_GTS_LO] = gts_lo
    state[S_GTS_HI] = gts_hi
    state[S_GTS_HI_VALID] = gts_hi_valid
    state[S_PADDING] = padding
    return n, i, unstamped, first_stamp
