"""The TPIU (CoreSight formatter) deframer's hot loop: the Python reference of its C twin.

Frames are 16 bytes: even bytes carry an ID change (bit 0 set, ID in bits 7:1) or data whose bit 0
is in the auxiliary byte 15; odd bytes are data. An ID change's auxiliary bit says whether the
following odd byte still belongs to the old ID (delayed change). Full sync ``FF FF FF 7F`` marks a
frame boundary; half sync ``FF 7F`` is idle filler and is dropped. Both are unambiguous: a valid
frame never holds ``FF`` in an even byte (ID 0x7F is never used), so ``FF FF FF`` cannot occur
inside valid frames at any byte offset (``docs/decoder.md``).

Bytes are taken in halfwords from the frame boundary. A full sync found off that grid (at an odd
offset, or with part of a frame collected) means the grid was wrong: the kernel re-aligns on it
and stops. It also stops before a frame that breaks the formatter's rules (a reserved ID, or an ID
in byte 14 with its auxiliary bit set, which must be zero) and before a frame that changes to an
ID the caller does not expect. Such a frame is neither counted nor delivered; the caller decides
(:class:`tracer.decode.tpiu.TpiuDeframer`): a new source appeared, or the frames lost alignment.

:func:`deframe` is the C kernel of ``tracer._kernels`` when it is built (:mod:`tracer.native`),
else this module's Python code, which defines the behaviour; both give identical results.
"""

from __future__ import annotations

import numpy as np

from tracer.native import compiled

S_FILL = 0  # bytes of the current frame collected
S_ID = 1  # current source ID (-1: unknown until the next change)
S_FF = 2  # the previous halfword was FF FF (FF_EVEN), and the byte before it FF too (FF_ODD)
S_FRAMES = 3
S_FULL_SYNCS = 4
S_HALF_SYNCS = 5
S_STRAY = 6  # FF FF halfwords not followed by FF 7F
S_REDUNDANT = 7  # ID changes to the ID already current
S_LAST = 8  # the last byte taken (the one before the next call's first)
S_FRAME_START = 9  # stream position of the current frame's first byte
S_STOP = 10  # why the last call stopped early (STOP_*)
S_STOP_AT = 11  # stream position: where the refused frame began / where the off-grid sync began
S_STOP_FROM = 12  # stream position where the frame cut by an off-grid sync began (= S_STOP_AT if none)
S_UNKNOWN = 13  # data bytes before any ID change (their source is not known)
STATE_SIZE = 14

STOP_NONE = 0
STOP_BAD_FRAME = 1  # a reserved ID, or byte 14 an ID with its auxiliary bit set
STOP_UNEXPECTED_ID = 2  # a change to an ID the caller does not expect
STOP_SYNC = 3  # a full sync off the frame grid (the kernel has re-aligned on it)

FF_EVEN = 1  # FF FF taken: FF 7F next is a full sync on the halfword grid
FF_ODD = 2  # FF FF FF taken: 7F next ends a full sync one byte off the grid

ID_COUNT = 128

# IDs no formatter emits: 0x70-0x7A and 0x7C, 0x7E reserved, 0x7F never used (it would make a sync).
RESERVED_ID = np.zeros(ID_COUNT, np.uint8)
RESERVED_ID[0x70:0x7B] = 1
RESERVED_ID[[0x7C, 0x7E, 0x7F]] = 1
ALL_VALID = (1 - RESERVED_ID).astype(np.uint8)  # an ``expected`` table that accepts every valid ID


def new_state() -> np.ndarray:
    """Return the deframer state at the start of a stream (ID unknown until the first change)."""
    state = np.zeros(STATE_SIZE, np.int64)
    state[S_ID] = -1
    return state


def _emit(state, source, byte, wanted, out, n, id_bytes):
    if source >= 0:
        id_bytes[source] += 1
        if source == wanted:
            out[n] = byte
            return n + 1
    else:
        state[S_UNKNOWN] += 1
    return n


def _verdict(frame, expected):
    """STOP_BAD_FRAME, STOP_UNEXPECTED_ID or STOP_NONE for a whole frame."""
    verdict = STOP_NONE
    aux = frame[15]
    for j in range(8):
        b = frame[2 * j]
        if b & 1:
            new_id = b >> 1
            if RESERVED_ID[new_id] or (j == 7 and aux & 0x80):
                return STOP_BAD_FRAME
            if not expected[new_id]:
                verdict = STOP_UNEXPECTED_ID
    return verdict


def deframe(buf, base, state, frame, wanted, out, id_bytes, id_changes, expected):
    """Deframe ``buf`` (stream position ``base``); bytes of source ``wanted`` go to ``out``.

    ``id_bytes`` and ``id_changes`` (128 entries) count the data bytes and ID changes per ID;
    ``expected`` (128 entries) says which IDs may appear without stopping.

    Returns:
        (bytes written to out, bytes of buf consumed). When ``state[S_STOP]`` is set the call
        stopped early (see the STOP_* codes); call again with the rest. Otherwise the bytes left
        (at most one) belong to the next halfword.
    """
    fill = state[S_FILL]
    current = state[S_ID]
    ff = state[S_FF]
    frame_start = state[S_FRAME_START]
    state[S_STOP] = STOP_NONE
    n = 0
    i = 0
    length = buf.shape[0]
    while i + 1 < length:
        lo = buf[i]
        hi = buf[i + 1]
        i += 2
        if ff:
            if lo == 0x7F and ff == FF_ODD:
                # FF | FF FF | 7F: a full sync one byte off the halfword grid; frames start at ``hi``.
                state[S_FULL_SYNCS] += 1
                state[S_STOP] = STOP_SYNC
                state[S_STOP_AT] = base + i - 5
                state[S_STOP_FROM] = frame_start if fill else base + i - 5
                fill = 0
                ff = 0
                i -= 1
                break
            if lo == 0xFF and hi == 0x7F:
                ff = 0
                state[S_FULL_SYNCS] += 1
                if fill:  # part of a frame before it: the grid was off by a halfword or more
                    state[S_STOP] = STOP_SYNC
                    state[S_STOP_AT] = base + i - 4
                    state[S_STOP_FROM] = frame_start
                    fill = 0
                    break
                continue
            if lo == 0xFF and hi == 0xFF:
                state[S_STRAY] += 1
                ff = FF_ODD
                continue
            state[S_STRAY] += 1
            ff = 0
        if lo == 0xFF and hi == 0xFF:
            before = buf[i - 3] if i >= 3 else state[S_LAST]  # the byte before this halfword
            ff = FF_ODD if before == 0xFF else FF_EVEN
            continue
        if lo == 0xFF and hi == 0x7F:
            state[S_HALF_SYNCS] += 1
            continue
        if fill == 0:
            frame_start = base + i - 2
        frame[fill] = lo
        frame[fill + 1] = hi
        fill += 2
        if fill < 16:
            continue
        fill = 0
        verdict = _verdict(frame, expected)
        if verdict != STOP_NONE:
            state[S_STOP] = verdict
            state[S_STOP_AT] = frame_start
            state[S_STOP_FROM] = frame_start
            break
        state[S_FRAMES] += 1
        aux = frame[15]
        for j in range(8):
            b = frame[2 * j]
            if b & 1:
                new_id = np.int64(b >> 1)
                id_changes[new_id] += 1
                if new_id == current:
                    state[S_REDUNDANT] += 1
                if j == 7:
                    current = new_id
                elif (aux >> j) & 1:
                    n = _emit(state, current, frame[2 * j + 1], wanted, out, n, id_bytes)
                    current = new_id
                else:
                    current = new_id
                    n = _emit(state, current, frame[2 * j + 1], wanted, out, n, id_bytes)
            else:
                n = _emit(state, current, (b & 0xFE) | ((aux >> j) & 1), wanted, out, n, id_bytes)
                if j < 7:
                    n = _emit(state, current, frame[2 * j + 1], wanted, out, n, id_bytes)
    state[S_FILL] = fill
    state[S_ID] = current
    state[S_FF] = ff
    if i >= 1:
        state[S_LAST] = buf[i - 1]
    state[S_FRAME_START] = frame_start
    return n, i


# The dispatch point: the C kernel when built, else the reference above.
deframe_python = deframe
_native = compiled("TpiuKernel", globals())
deframe_native = None if _native is None else _native.deframe
deframe = deframe_native or deframe_python
