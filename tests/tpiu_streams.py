"""TPIU streams for the tests: numbered ITM in frames, slipped bytes, a capture without its ITM.

Everything here is built with the test-side encoder and formatter (``itm_encoder.py``), which
share no code with the decoder.
"""

from __future__ import annotations

import random

from itm_encoder import FULL_SYNC, encode_stream, tpiu_frames

ITM_ID = 1
ETM_ID = 2


def numbered_stream(seed: int, packets: int, sync_every: int = 0) -> bytes:
    """Frames carrying ITM on ID 1 (SW packets on port 1 whose values count 0, 1, 2 ... with local
    timestamps after some), interleaved with random bytes on ID 2; a full sync before every
    ``sync_every``-th frame (none if 0). A value missing after decoding is a packet lost."""
    rnd = random.Random(seed)
    pkts: list[dict[str, int | str]] = []
    for n in range(packets):
        pkts.append({"type": "swit", "addr": 1, "size": 4, "value": n})
        if rnd.random() < 0.3:
            pkts.append({"type": "lts", "delta": rnd.randrange(1, 3000), "tc": 0})
    itm, _ = encode_stream(pkts)
    pairs: list[tuple[int, int]] = []
    i = 0
    while i < len(itm):
        run = rnd.randrange(1, 30)
        pairs += [(ITM_ID, b) for b in itm[i : i + run]]
        i += run
        pairs += [(ETM_ID, rnd.getrandbits(8)) for _ in range(rnd.randrange(0, 20))]
    frames, _ = tpiu_frames(pairs)
    out = bytearray()
    for k, frame in enumerate(frames):
        if sync_every and k and k % sync_every == 0:
            out += FULL_SYNC
        out += frame
    return bytes(out)


def slipped(stream: bytes, at: int, kind: str) -> bytes:
    """``stream`` with the byte at ``at`` dropped, or one byte inserted there (a UART-based SWO
    link that loses or invents a byte)."""
    if kind == "drop":
        return stream[:at] + stream[at + 1 :]
    return stream[:at] + b"\x5a" + stream[at:]


def without_source(stream: bytes, source: int) -> bytes:
    """The frames of ``stream`` (aligned at byte 0, no syncs) with ``source`` replaced by null
    padding, as a formatter pads when that source sends nothing: its ID changes become changes to
    the null ID, or zero data bytes where the null ID is already current; its data bytes become
    zeros. Every other byte, the frame structure and the other sources' bytes stay as recorded."""
    out = bytearray()
    current = -1  # the source as recorded
    shown = -1  # the source the rewritten frames say
    for p in range(0, len(stream) - 15, 16):
        frame = bytearray(stream[p : p + 16])
        aux = frame[15]
        for j in range(8):
            b = frame[2 * j]
            if b & 1:
                new = b >> 1
                target = 0 if new == source else new
                delayed = j < 7 and (aux >> j) & 1
                if j < 7 and ((delayed and current == source) or (not delayed and new == source)):
                    frame[2 * j + 1] = 0
                if target == shown == 0:
                    frame[2 * j] = 0
                    aux &= ~(1 << j)
                else:
                    frame[2 * j] = target << 1 | 1
                current, shown = new, target
            elif current == source:
                frame[2 * j] = 0
                aux &= ~(1 << j)
                if j < 7:
                    frame[2 * j + 1] = 0
        frame[15] = aux
        out += frame
    return bytes(out)
