"""The ITM/DWT packet decoder's hot loop: the Python reference of its C twin.

One call decodes as many whole packets of a buffer as it can and says how many bytes it used; the
caller keeps the rest (a packet cut by the chunk boundary) for the next call, so any split of the
stream gives the same packets. Decoder state between calls lives in a small int64 array.

Header classification follows Armv7-M ARM Appendix D4 and Armv8-M ARM Appendix F (tabled in
``docs/decoder.md``). It is done by 256-entry tables built once at import, so the loop takes one
data-dependent branch per packet for the common packets (source packets and local timestamps)
instead of a chain of comparisons. The C kernel gets the same tables from here.

:func:`decode_itm` is the C kernel of ``tracer._kernels`` when it is built (:mod:`tracer.native`),
else this module's Python code, which defines the behaviour; both give identical results.

Rules beyond the packet tables:
    * Reserved headers are emitted as ``RESERVED`` packets (1 byte, or the header and its payload
      for hardware packets with a reserved discriminator) and never read as timestamps.
    * A packet that breaks its own format (a timestamp with too many continuation bytes, a GTS2
      that is neither 4 nor 6 bytes, an exception packet with function 0, a PC-sleep payload
      other than 00/FF) is emitted as ``RESERVED`` with ``FLAG_MALFORMED``.
    * A synchronization packet is recognized even where a damaged stream has the decoder inside a
      packet: no valid packet ends in zero bytes that, with the zeros after it, make five or more
      zeros followed by 0x80 (payloads hold at most four zero bytes in a row and every header is
      non-zero), so such a packet is emitted as malformed and decoding restarts at its zeros.
    * A sync packet resets the stimulus page and what is known of the global timestamp.

It is long because it is one loop with its tables: the reference the C kernel is checked against
(``tests/test_kernels_differential.py``) reads best as the single function the C code mirrors.
"""

from __future__ import annotations

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
from tracer.native import compiled

# State slots.
S_PAGE = 0  # stimulus-port page (0..7), reset by sync
S_TS = 1  # accumulated local-timestamp ticks
S_ZEROS = 2  # length of the run of 0x00 bytes not yet resolved
S_ZERO_AT = 3  # stream offset of that run's first byte
S_GTS_LO = 4  # global timestamp bits [25:0]
S_GTS_HI = 5  # global timestamp bits [63:26]
S_GTS_HI_VALID = 6  # a GTS2 has been seen since the last sync (and no wrap is pending)
S_PADDING = 7  # 0x00 bytes that did not form a sync packet
S_GTS_LO_BITS = 8  # low bits of the global timestamp known since the last sync (0..26)
S_DAMAGED = 9  # a reserved or malformed packet (or a gap) since the last sync
S_RESYNCS = 10  # sync packets that ended damage
STATE_SIZE = 11

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

# Header classes.
C_SOURCE = 0  # software or hardware source packet: header + 1/2/4 payload bytes
C_LTS1 = 1
C_LTS2 = 2
C_ZERO = 3
C_OVERFLOW = 4
C_GTS1 = 5
C_GTS2 = 6
C_EXTENSION = 7
C_RESERVED = 8  # a one-byte reserved header

# Source packets that need a look at their payload (column ``SPECIAL``); the common ones are
# decoded without a branch on their kind (columns ``PAGED``, ``A_MASK``, ``EXC``).
SP_NONE = 0
SP_PC_SLEEP = 1  # payload 00 or FF
SP_DATA_PC1 = 2  # 1-byte PC value or, with bit 0 set, a data-trace match
SP_RESERVED = 3  # reserved discriminator: the packet is the header and its payload

# Table columns.
T_CLASS = 0
T_SIZE = 1
T_KIND = 2
T_B = 3  # software: address within the page; data trace: comparator
T_FLAGS = 4
T_SPECIAL = 5
T_PAGED = 6  # 1 for software packets: port = page * 32 + address
T_A_MASK = 7  # mask of the payload giving column ``a`` (exception: the 9-bit number)
T_EXC = 8  # 1 for exception packets: column ``b`` = function (payload bits 13:12)


def _header_table() -> np.ndarray:
    """Classify every header byte once (Armv7-M D4.2, Armv8-M F1.2)."""
    tab = [[0] * 9 for _ in range(256)]  # lists while filling: numpy item assignment is slow at import
    for h in range(256):
        row = tab[h]
        low = h & 0x0F
        if h == 0:
            row[T_CLASS] = C_ZERO
        elif h == 0x70:
            row[T_CLASS] = C_OVERFLOW
        elif low == 0:
            if h & 0x80 == 0:
                row[T_CLASS] = C_LTS2  # 0x10..0x60
            elif h & 0xC0 == 0xC0:
                row[T_CLASS] = C_LTS1
            else:
                row[T_CLASS] = C_RESERVED  # 0x80, 0x90, 0xA0, 0xB0
        elif h == 0x94:
            row[T_CLASS] = C_GTS1
        elif h == 0xB4:
            row[T_CLASS] = C_GTS2
        elif h & 0x0B == 0x08:
            row[T_CLASS] = C_EXTENSION
        elif h & 0x03 == 0:
            row[T_CLASS] = C_RESERVED  # x100 low nibble other than GTS
        else:
            row[T_CLASS] = C_SOURCE
            ss = h & 3
            size = 4 if ss == 3 else ss
            row[T_SIZE] = size
            disc = h >> 3
            kind, b, flags, special = K_RESERVED, 0, 0, SP_RESERVED
            row[T_A_MASK] = 0xFFFFFFFF
            if h & 4 == 0:
                kind, b, special = K_SWIT, disc, SP_NONE
                row[T_PAGED] = 1
            elif disc == 0 and size == 1:
                kind, special = K_DWT_EVENT, SP_NONE
            elif disc == 1 and size == 2:
                kind, special = K_EXCEPTION, SP_NONE
                row[T_A_MASK] = 0x1FF
                row[T_EXC] = 1
            elif disc == 2 and size == 4:
                kind, special = K_PC_SAMPLE, SP_NONE
            elif disc == 2 and size == 1:
                kind, special = K_PC_SLEEP, SP_PC_SLEEP
            elif disc == 3 and size == 1:
                kind, special = K_PMU_OVERFLOW, SP_NONE
            elif 8 <= disc <= 23:
                b = (disc >> 1) & 3
                if disc >= 16:
                    kind, special = K_DATA_VALUE, SP_NONE
                    flags = FLAG_WRITE if disc & 1 else 0  # ID[0] = WnR (pyOCD, sigrok, rtic-scope agree)
                elif disc & 1:
                    kind, special = K_DATA_ADDR, SP_NONE
                else:
                    kind, special = K_DATA_PC, SP_DATA_PC1 if size == 1 else SP_NONE
            row[T_KIND] = int(kind)
            row[T_B] = int(b)
            row[T_FLAGS] = flags
            row[T_SPECIAL] = special
    return np.array(tab, np.int64)


HEADERS = _header_table()
SIZE_MASK = np.array([0, 0xFF, 0xFFFF, 0, 0xFFFFFFFF], np.int64)


def new_state() -> np.ndarray:
    """Return the state of a decoder at the start of a stream."""
    return np.zeros(STATE_SIZE, np.int64)


def _put(n, counts, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, offset, kind, a, b, c, flags):
    counts[kind] += 1
    out_offset[n] = offset
    out_kind[n] = kind
    out_a[n] = a
    out_b[n] = b
    out_c[n] = c
    out_flags[n] = flags
    out_ts[n] = NO_TS
    return n + 1


def _hidden_sync(buf, start, end, length, final):
    """Check whether the zeros ending the packet ``buf[start:end]`` begin a sync packet.

    Returns the position of the first of those zeros if a sync starts there, -1 if the buffer
    ends too early to tell (never when ``final``), -2 if not.
    """
    p = end - 1
    while p > start + 1 and buf[p - 1] == 0:
        p -= 1
    j = end
    while j < length and buf[j] == 0 and j - end < 5:
        j += 1
    if j - end >= 5:
        return -2  # a sync follows the packet: the packet is whole
    if j >= length:
        return -2 if final else -1
    if buf[j] == 0x80 and (end - p) + (j - end) >= 5:
        return p
    return -2


def decode_itm(buf, base, state, counts, final, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts):
    """Decode whole packets of ``buf`` (uint8) whose first byte is at stream offset ``base``.

    Args:
        counts: Packets per kind, incremented here.
        final: No bytes follow ``buf`` (end of stream or a gap): resolve what waits for them.

    The ``out_*`` arrays need room for ``len(buf)`` packets. Timestamps: each local timestamp
    stamps every packet since the previous one, itself included; packets after the last one in
    this buffer keep ``NO_TS``.

    Returns:
        (packets written, bytes consumed, index of the first unstamped packet,
         stamp of the first local timestamp in this buffer or -1)
    """
    length = buf.shape[0]
    page = state[S_PAGE]
    ts = state[S_TS]
    zeros = state[S_ZEROS]
    zero_at = state[S_ZERO_AT]
    padding = state[S_PADDING]
    damaged = state[S_DAMAGED]
    n = 0
    i = 0
    unstamped = 0
    first_stamp = np.int64(-1)
    if zeros > 0 and length > 0 and buf[0] != 0:  # a run of zeros ended the previous buffer
        if buf[0] == 0x80 and zeros >= 5:
            n = _put(
                n, counts, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, zero_at, K_SYNC, 0, 0, 0, 0
            )
            page = 0
            state[S_GTS_HI_VALID] = 0
            state[S_GTS_LO_BITS] = 0
            if damaged:
                state[S_RESYNCS] += 1
                damaged = 0
            i = 1
        else:
            padding += zeros
        zeros = 0
    while i < length:
        h = buf[i]
        cls = HEADERS[h, T_CLASS]
        at = base + i
        if cls == C_SOURCE:
            size = HEADERS[h, T_SIZE]
            end = i + 1 + size
            if end > length:
                break
            if i + 4 < length:
                value = (
                    np.int64(buf[i + 1])
                    | (np.int64(buf[i + 2]) << 8)
                    | (np.int64(buf[i + 3]) << 16)
                    | (np.int64(buf[i + 4]) << 24)
                ) & SIZE_MASK[size]
            else:
                value = np.int64(0)
                for j in range(size):
                    value |= np.int64(buf[i + 1 + j]) << (8 * j)
            if buf[end - 1] == 0:
                p = _hidden_sync(buf, i, end, length, final)
                if p == -1:
                    break
                if p >= 0:
                    n = _put(
                        n,
                        counts,
                        out_offset,
                        out_kind,
                        out_a,
                        out_b,
                        out_c,
                        out_flags,
                        out_ts,
                        at,
                        K_RESERVED,
                        h,
                        0,
                        0,
                        FLAG_MALFORMED,
                    )
                    damaged = 1
                    i = p
                    continue
            kind = HEADERS[h, T_KIND]
            fn = (value >> 12) & 3
            exc = HEADERS[h, T_EXC]
            a = value & HEADERS[h, T_A_MASK]
            b = HEADERS[h, T_B] + page * 32 * HEADERS[h, T_PAGED] + fn * exc
            flags = HEADERS[h, T_FLAGS]
            c = size
            special = HEADERS[h, T_SPECIAL]
            if special + exc * (fn == 0) != 0:
                if exc:  # exception function 0 is reserved
                    kind, a, b, c, flags = K_RESERVED, np.int64(h), 0, 0, FLAG_MALFORMED
                elif special == SP_PC_SLEEP:
                    a = 0
                    if value == 0xFF:
                        flags = FLAG_PROHIBITED
                    elif value != 0:
                        kind, a, c, flags = K_RESERVED, np.int64(h), 0, FLAG_MALFORMED
                elif special == SP_DATA_PC1:
                    if value & 1:  # PC values are halfword aligned: bit 0 marks a match packet
                        kind, a = K_DATA_MATCH, 0
                else:  # reserved discriminator
                    a, b, c = np.int64(h), 0, 0
                if kind == K_RESERVED:
                    damaged = 1
            n = _put(n, counts, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, kind, a, b, c, flags)
            i = end
            continue
        if cls in (C_LTS1, C_GTS1):
            if i + 4 < length:
                b1 = np.int64(buf[i + 1])
                b2 = np.int64(buf[i + 2])
                b3 = np.int64(buf[i + 3])
                b4 = np.int64(buf[i + 4])
                c1 = b1 >> 7
                c2 = c1 & (b2 >> 7)
                c3 = c2 & (b3 >> 7)
                over = c3 & (b4 >> 7)
                k = 1 + c1 + c2 + c3
                b2 &= -c1  # bytes past the end of the packet count as zero
                b3 &= -c2
                b4 &= -c3
            else:
                k = 0
                over = 0
                while True:
                    if i + 1 + k >= length:
                        k = -1
                        break
                    byte = buf[i + 1 + k]
                    k += 1
                    if byte & 0x80 == 0:
                        break
                    if k == 4:
                        over = 1
                        break
                if k < 0:
                    break
                b1 = np.int64(buf[i + 1])
                b2 = np.int64(buf[i + 2]) if k > 1 else np.int64(0)
                b3 = np.int64(buf[i + 3]) if k > 2 else np.int64(0)
                b4 = np.int64(buf[i + 4]) if k > 3 else np.int64(0)
            if over:
                n = _put(
                    n,
                    counts,
                    out_offset,
                    out_kind,
                    out_a,
                    out_b,
                    out_c,
                    out_flags,
                    out_ts,
                    at,
                    K_RESERVED,
                    h,
                    0,
                    0,
                    FLAG_MALFORMED,
                )
                damaged = 1
                i += 5
                continue
            end = i + 1 + k
            if buf[end - 1] == 0:
                p = _hidden_sync(buf, i, end, length, final)
                if p == -1:
                    break
                if p >= 0:
                    n = _put(
                        n,
                        counts,
                        out_offset,
                        out_kind,
                        out_a,
                        out_b,
                        out_c,
                        out_flags,
                        out_ts,
                        at,
                        K_RESERVED,
                        h,
                        0,
                        0,
                        FLAG_MALFORMED,
                    )
                    damaged = 1
                    i = p
                    continue
            lo = (b1 & 0x7F) | ((b2 & 0x7F) << 7) | ((b3 & 0x7F) << 14)
            i = end
            if cls == C_LTS1:
                value = lo | ((b4 & 0x7F) << 21)
                n = _put(
                    n,
                    counts,
                    out_offset,
                    out_kind,
                    out_a,
                    out_b,
                    out_c,
                    out_flags,
                    out_ts,
                    at,
                    K_LTS,
                    value,
                    (h >> 4) & 3,
                    k,
                    0,
                )
                ts += value
                for j in range(unstamped, n):
                    out_ts[j] = ts
                unstamped = n
                if first_stamp < 0:
                    first_stamp = ts
                continue
            # Global timestamp 1: bits [6:0], [13:0], [20:0] or, with all four bytes, [25:0]
            # plus Wrap (the high bits changed: a GTS2 follows) and ClkCh.
            flags = 0
            value = lo
            bits = 7 * k
            if k == 4:
                value |= (b4 & 0x1F) << 21
                bits = 26
                if b4 & 0x40:
                    flags |= FLAG_WRAP
                if b4 & 0x20:
                    flags |= FLAG_CLKCH
            mask = (np.int64(1) << bits) - 1
            gts_lo = (state[S_GTS_LO] & ~mask) | value
            state[S_GTS_LO] = gts_lo
            if state[S_GTS_LO_BITS] < bits:
                state[S_GTS_LO_BITS] = bits
            if flags & FLAG_WRAP:
                state[S_GTS_HI_VALID] = 0
            merged = np.uint64(0)
            if state[S_GTS_HI_VALID] and state[S_GTS_LO_BITS] == 26:
                flags |= FLAG_GLOBAL_VALID
                merged = (np.uint64(state[S_GTS_HI]) << np.uint64(26)) | np.uint64(gts_lo)
            n = _put(
                n,
                counts,
                out_offset,
                out_kind,
                out_a,
                out_b,
                out_c,
                out_flags,
                out_ts,
                at,
                K_GTS1,
                value,
                merged,
                k,
                flags,
            )
            continue
        if cls == C_LTS2:
            value = np.int64(h >> 4)
            n = _put(n, counts, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_LTS, value, 0, 0, 0)
            i += 1
            ts += value
            for j in range(unstamped, n):
                out_ts[j] = ts
            unstamped = n
            if first_stamp < 0:
                first_stamp = ts
            continue
        if cls == C_ZERO:
            # A run of zeros is a sync packet if 0x80 ends it after five or more, else padding.
            if zeros == 0:
                zero_at = at
            j = i
            while j < length and buf[j] == 0:
                j += 1
            zeros += j - i
            i = j
            if i == length:
                break  # the run may go on in the next buffer
            if buf[i] == 0x80 and zeros >= 5:
                n = _put(
                    n, counts, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, zero_at, K_SYNC, 0, 0, 0, 0
                )
                page = 0
                state[S_GTS_HI_VALID] = 0
                state[S_GTS_LO_BITS] = 0
                if damaged:
                    state[S_RESYNCS] += 1
                    damaged = 0
                i += 1
            else:
                padding += zeros
            zeros = 0
            continue
        if cls == C_OVERFLOW:
            n = _put(
                n, counts, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_OVERFLOW, 0, 0, 0, 0
            )
            i += 1
            continue
        if cls == C_GTS2:  # global timestamp 2: bits [47:26] (4 bytes) or [63:26] (6 bytes)
            k = 0
            while k < 6:
                if i + 1 + k >= length:
                    k = -1
                    break
                k += 1
                if buf[i + k] & 0x80 == 0:
                    break
            if k < 0:
                break
            end = i + 1 + k
            if buf[end - 1] & 0x80:  # six continuation bytes: over-long
                n = _put(
                    n,
                    counts,
                    out_offset,
                    out_kind,
                    out_a,
                    out_b,
                    out_c,
                    out_flags,
                    out_ts,
                    at,
                    K_RESERVED,
                    h,
                    0,
                    0,
                    FLAG_MALFORMED,
                )
                damaged = 1
                i = end
                continue
            if buf[end - 1] == 0:
                p = _hidden_sync(buf, i, end, length, final)
                if p == -1:
                    break
                if p >= 0:
                    n = _put(
                        n,
                        counts,
                        out_offset,
                        out_kind,
                        out_a,
                        out_b,
                        out_c,
                        out_flags,
                        out_ts,
                        at,
                        K_RESERVED,
                        h,
                        0,
                        0,
                        FLAG_MALFORMED,
                    )
                    damaged = 1
                    i = p
                    continue
            i = end
            if k != 4 and k != 6:
                n = _put(
                    n,
                    counts,
                    out_offset,
                    out_kind,
                    out_a,
                    out_b,
                    out_c,
                    out_flags,
                    out_ts,
                    at,
                    K_RESERVED,
                    h,
                    0,
                    0,
                    FLAG_MALFORMED,
                )
                damaged = 1
                continue
            value = np.int64(0)
            for j in range(k):
                value |= np.int64(buf[i - k + j] & 0x7F) << (7 * j)
            state[S_GTS_HI] = value
            state[S_GTS_HI_VALID] = 1
            flags = 0
            merged = np.uint64(0)
            if state[S_GTS_LO_BITS] == 26:
                flags = FLAG_GLOBAL_VALID
                merged = (np.uint64(value) << np.uint64(26)) | np.uint64(state[S_GTS_LO])
            n = _put(
                n,
                counts,
                out_offset,
                out_kind,
                out_a,
                out_b,
                out_c,
                out_flags,
                out_ts,
                at,
                K_GTS2,
                value,
                merged,
                k,
                flags,
            )
            continue
        if cls == C_EXTENSION:
            sh = (h >> 2) & 1
            ex = np.int64((h >> 4) & 7)
            if (h & 0x80) == 0:
                flags = FLAG_PAGE if sh == 0 else 0
                if sh == 0:
                    page = ex
                n = _put(
                    n,
                    counts,
                    out_offset,
                    out_kind,
                    out_a,
                    out_b,
                    out_c,
                    out_flags,
                    out_ts,
                    at,
                    K_EXTENSION,
                    ex,
                    sh,
                    0,
                    flags,
                )
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
            end = i + 1 + k
            if buf[end - 1] == 0:
                p = _hidden_sync(buf, i, end, length, final)
                if p == -1:
                    break
                if p >= 0:
                    n = _put(
                        n,
                        counts,
                        out_offset,
                        out_kind,
                        out_a,
                        out_b,
                        out_c,
                        out_flags,
                        out_ts,
                        at,
                        K_RESERVED,
                        h,
                        0,
                        0,
                        FLAG_MALFORMED,
                    )
                    damaged = 1
                    i = p
                    continue
            n = _put(
                n, counts, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_EXTENSION, ex, sh, k, 0
            )
            i = end
            continue
        # A one-byte reserved header.
        n = _put(n, counts, out_offset, out_kind, out_a, out_b, out_c, out_flags, out_ts, at, K_RESERVED, h, 0, 0, 0)
        damaged = 1
        i += 1
    state[S_PAGE] = page
    state[S_TS] = ts
    state[S_ZEROS] = zeros
    state[S_ZERO_AT] = zero_at
    state[S_PADDING] = padding
    state[S_DAMAGED] = damaged
    return n, i, unstamped, first_stamp


# The dispatch point: the C kernel when built, else the reference above.
decode_itm_python = decode_itm
_native = compiled("ItmKernel", globals())
decode_itm_native = None if _native is None else _native.decode_itm
decode_itm = decode_itm_native or decode_itm_python
