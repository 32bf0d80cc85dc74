"""The TPIU (CoreSight formatter) deframer's hot loop: the Python reference of its C twin.

Frames are 16 bytes: even bytes carry an ID change (bit 0 set, ID in bits 7:1) or data whose bit 0
is in the auxiliary byte 15; odd bytes are data. An ID change's auxiliary bit says whether the
following odd byte still belongs to the old ID (delayed change). Full sync ``FF FF FF 7F`` realigns
the frame; half sync ``FF 7F`` is idle filler and is dropped. Both are unambiguous on halfword
boundaries because ID 0x7F is never used (``docs/decoder.md``).

:func:`deframe` is the C kernel of ``tracer._kernels`` when it is built (:mod:`tracer.native`),
else this module's Python code, which defines the behaviour; both give identical results.
"""

from __future__ import annotations

import numpy as np

from tracer.native import compiled

S_FILL = 0  # bytes of the current frame collected
S_ID = 1  # current source ID
S_FF = 2  # the previous halfword was FF FF (start of a full sync)
S_FRAMES = 3
S_FULL_SYNCS = 4
S_HALF_SYNCS = 5
S_STRAY = 6  # FF FF halfwords not followed by 7F FF
S_REDUNDANT = 7  # ID changes to the ID already current (a formatter never makes them)
STATE_SIZE = 8

ID_COUNT = 128


def new_state() -> np.ndarray:
    """Return the deframer state at the start of a stream (ID unknown until the first change)."""
    state = np.zeros(STATE_SIZE, np.int64)
    state[S_ID] = -1
    return state


def _emit(source, byte, wanted, out, n, id_bytes):  # noqa: ANN001, ANN202
    if source >= 0:
        id_bytes[source] += 1
        if source == wanted:
            out[n] = byte
            return n + 1
    return n


def deframe(buf, state, frame, wanted, out, id_bytes, id_changes):  # noqa: ANN001, ANN201
    """Deframe whole halfwords of ``buf``; bytes of source ``wanted`` go to ``out``.

    ``id_bytes`` and ``id_changes`` (128 entries) count the data bytes and ID changes per ID.

    Returns:
        (bytes written to out, bytes of buf consumed: even, the odd last byte is left)
    """
    fill = state[S_FILL]
    current = state[S_ID]
    ff = state[S_FF]
    n = 0
    i = 0
    length = buf.shape[0] - (buf.shape[0] & 1)
    while i < length:
        lo = buf[i]
        hi = buf[i + 1]
        i += 2
        if ff:
            if lo == 0xFF and hi == 0x7F:
                fill = 0
                ff = 0
                state[S_FULL_SYNCS] += 1
                continue
            if lo == 0xFF and hi == 0xFF:
                state[S_STRAY] += 1
                continue
            state[S_STRAY] += 1
            ff = 0
        if lo == 0xFF and hi == 0xFF:
            ff = 1
            continue
        if lo == 0xFF and hi == 0x7F:
            state[S_HALF_SYNCS] += 1
            continue
        frame[fill] = lo
        frame[fill + 1] = hi
        fill += 2
        if fill < 16:
            continue
        fill = 0
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
                    n = _emit(current, frame[2 * j + 1], wanted, out, n, id_bytes)
                    current = new_id
                else:
                    current = new_id
                    n = _emit(current, frame[2 * j + 1], wanted, out, n, id_bytes)
            else:
                n = _emit(current, (b & 0xFE) | ((aux >> j) & 1), wanted, out, n, id_bytes)
                if j < 7:
                    n = _emit(current, frame[2 * j + 1], wanted, out, n, id_bytes)
    state[S_FILL] = fill
    state[S_ID] = current
    state[S_FF] = ff
    return n, i


# The dispatch point: the C kernel when built, else the reference above.
deframe_python = deframe
_native = compiled("TpiuKernel", globals())
deframe_native = None if _native is None else _native.deframe
deframe = deframe_native or deframe_python
