"""Packet listings: the ndjson contract and a human-readable text form.

Formatting a million packets a second through ``json.dumps`` would cost more than decoding them,
so both forms are written by a kernel straight into a byte buffer: the C one of ``tracer._kernels``
when it is built (:mod:`tracer.native`), else :func:`format_packets` here, the Python reference that
defines the output (the C kernel gets its name tables from here). Its output is exactly what
:meth:`PacketBatch.record` plus ``json.dumps(rec, separators=(",", ":"))`` gives (ndjson), or the
text line described in :func:`write_packets`; the tests hold both implementations to that.

One module although over 400 lines: the reference formatter defines the byte-exact output the C
kernel copies, so the name tables and both forms stay in one place.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Protocol

import numpy as np

from tracer.decode.packets import (
    EXCEPTION_ACTIONS,
    FLAG_CLKCH,
    FLAG_GLOBAL_VALID,
    FLAG_MALFORMED,
    FLAG_PAGE,
    FLAG_PROHIBITED,
    FLAG_WRAP,
    FLAG_WRITE,
    KIND_COUNT,
    NO_TS,
    PacketBatch,
    PacketKind,
)
from tracer.native import compiled

NDJSON = 0
TEXT = 1
MAX_LINE = 256  # bytes: the longest line (64-bit values everywhere) is under 170, the C kernel may write 48 past it
SLICE = 1 << 16  # packets formatted per kernel call (bounds the buffer to 16 MiB)

KEYS = (
    "delta",
    "tc",
    "value",
    "wrap",
    "clkch",
    "global",
    "sh",
    "ex",
    "page",
    "port",
    "size",
    "counters",
    "number",
    "action",
    "pc",
    "prohibited",
    "comparator",
    "address",
    "write",
    "header",
    "malformed",
    "lost_bytes",
)
(
    K_DELTA,
    K_TC,
    K_VALUE,
    K_WRAP,
    K_CLKCH,
    K_GLOBAL,
    K_SH,
    K_EX,
    K_PAGE,
    K_PORT,
    K_SIZE,
    K_COUNTERS,
    K_NUMBER,
    K_ACTION,
    K_PC,
    K_PROHIBITED,
    K_COMPARATOR,
    K_ADDRESS,
    K_WRITE,
    K_HEADER,
    K_MALFORMED,
    K_LOST,
) = range(len(KEYS))
HEX_IN_TEXT = frozenset({"value", "pc", "address", "global", "header", "counters"})


def _table(words: list[str]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(w) for w in words)
    table = np.zeros((len(words), width), np.uint8)
    for i, word in enumerate(words):
        table[i, : len(word)] = np.frombuffer(word.encode(), np.uint8)
    return table, np.array([len(w) for w in words], np.int64)


KEY_NAMES, KEY_LENS = _table(list(KEYS))
KEY_HEX = np.array([k in HEX_IN_TEXT for k in KEYS], np.bool_)
TYPE_NAMES, TYPE_LENS = _table([PacketKind(k).type_name for k in range(KIND_COUNT)])
ACTION_NAMES, ACTION_LENS = _table([EXCEPTION_ACTIONS[i] for i in range(4)])
DIGITS = np.frombuffer(b"0123456789abcdef", np.uint8)


def _bytes(out, pos, table, lens, i):
    for j in range(lens[i]):
        out[pos + j] = table[i, j]
    return pos + lens[i]


def _lit(out, pos, text):
    for j in range(len(text)):
        out[pos + j] = ord(text[j])
    return pos + len(text)


def _uint(out, pos, value, base):
    """Write an unsigned integer in base 10 or, as ``0x...``, base 16."""
    v = np.uint64(value)
    ub = np.uint64(base)
    if base == 16:
        out[pos] = 48
        out[pos + 1] = 120
        pos += 2
    n = 1
    rest = v // ub
    while rest:
        n += 1
        rest //= ub
    for j in range(n - 1, -1, -1):
        out[pos + j] = DIGITS[v % ub]
        v //= ub
    return pos + n


def _int_padded(out, pos, value, width, left):
    """A signed decimal right-aligned in ``width`` (or left-aligned), like ``f"{v:>w}"``."""
    neg = value < 0
    v = -value if neg else value
    n = 1
    rest = v // 10
    while rest:
        n += 1
        rest //= 10
    size = n + 1 if neg else n
    pad = width - size if width > size else 0
    if not left:
        for j in range(pad):
            out[pos + j] = 32
        pos += pad
    if neg:
        out[pos] = 45
        pos += 1
    for j in range(n - 1, -1, -1):
        out[pos + j] = 48 + v % 10
        v //= 10
    pos += n
    if left:
        for j in range(pad):
            out[pos + j] = 32
        pos += pad
    return pos


def _key(out, pos, mode, key, first):
    if mode == NDJSON:
        out[pos] = 44  # ,
        out[pos + 1] = 34  # "
        pos = _bytes(out, pos + 2, KEY_NAMES, KEY_LENS, key)
        out[pos] = 34
        out[pos + 1] = 58  # :
        return pos + 2
    if not first:
        out[pos] = 32
        pos += 1
    pos = _bytes(out, pos, KEY_NAMES, KEY_LENS, key)
    out[pos] = 61  # =
    return pos + 1


def _int_field(out, pos, mode, key, value, first):
    pos = _key(out, pos, mode, key, first)
    return _uint(out, pos, value, 16 if mode == TEXT and KEY_HEX[key] else 10)


def _bool_field(out, pos, mode, key, value, first):
    pos = _key(out, pos, mode, key, first)
    return _lit(out, pos, "true") if value else _lit(out, pos, "false")


def _null_field(out, pos, mode, key, first):
    pos = _key(out, pos, mode, key, first)
    return _lit(out, pos, "null") if mode == NDJSON else _lit(out, pos, "none")


def _action_field(out, pos, mode, action, first):
    pos = _key(out, pos, mode, K_ACTION, first)
    if mode == NDJSON:
        out[pos] = 34
        pos = _bytes(out, pos + 1, ACTION_NAMES, ACTION_LENS, action)
        out[pos] = 34
        return pos + 1
    return _bytes(out, pos, ACTION_NAMES, ACTION_LENS, action)


def format_packets(offset, kind, a, b, c, flags, ts, mode, out):
    """Write packets as ndjson or text lines into ``out`` (room for ``MAX_LINE`` per packet)."""
    pos = 0
    for i in range(kind.shape[0]):
        k = kind[i]
        f = flags[i]
        if mode == NDJSON:
            pos = _lit(out, pos, '{"offset":')
            pos = _uint(out, pos, offset[i], 10)
            pos = _lit(out, pos, ',"type":"')
            pos = _bytes(out, pos, TYPE_NAMES, TYPE_LENS, k)
            pos = _lit(out, pos, '","ts":')
            pos = _lit(out, pos, "null") if ts[i] == NO_TS else _uint(out, pos, ts[i], 10)
        else:
            pos = _int_padded(out, pos, offset[i], 10, False)
            out[pos] = 32
            pos += 1
            pos = _lit(out, pos, "           -") if ts[i] == NO_TS else _int_padded(out, pos, ts[i], 12, False)
            pos = _lit(out, pos, "  ")
            start = pos
            pos = _bytes(out, pos, TYPE_NAMES, TYPE_LENS, k)
            while pos - start < 12:
                out[pos] = 32
                pos += 1
            out[pos] = 32
            pos += 1
        if k == PacketKind.LTS:
            pos = _int_field(out, pos, mode, K_DELTA, a[i], True)
            pos = _int_field(out, pos, mode, K_TC, b[i], False)
        elif k == PacketKind.GTS1 or k == PacketKind.GTS2:
            pos = _int_field(out, pos, mode, K_VALUE, a[i], True)
            if k == PacketKind.GTS1:
                pos = _bool_field(out, pos, mode, K_WRAP, f & FLAG_WRAP, False)
                pos = _bool_field(out, pos, mode, K_CLKCH, f & FLAG_CLKCH, False)
            if f & FLAG_GLOBAL_VALID:
                pos = _int_field(out, pos, mode, K_GLOBAL, b[i], False)
            else:
                pos = _null_field(out, pos, mode, K_GLOBAL, False)
        elif k == PacketKind.EXTENSION:
            pos = _int_field(out, pos, mode, K_SH, b[i], True)
            pos = _int_field(out, pos, mode, K_EX, a[i], False)
            if f & FLAG_PAGE:
                pos = _int_field(out, pos, mode, K_PAGE, a[i], False)
        elif k == PacketKind.SWIT:
            pos = _int_field(out, pos, mode, K_PORT, b[i], True)
            pos = _int_field(out, pos, mode, K_SIZE, c[i], False)
            pos = _int_field(out, pos, mode, K_VALUE, a[i], False)
        elif k == PacketKind.DWT_EVENT or k == PacketKind.PMU_OVERFLOW:
            pos = _int_field(out, pos, mode, K_COUNTERS, a[i], True)
        elif k == PacketKind.EXCEPTION:
            pos = _int_field(out, pos, mode, K_NUMBER, a[i], True)
            pos = _action_field(out, pos, mode, b[i], False)
        elif k == PacketKind.PC_SAMPLE:
            pos = _int_field(out, pos, mode, K_PC, a[i], True)
        elif k == PacketKind.PC_SLEEP:
            pos = _bool_field(out, pos, mode, K_PROHIBITED, f & FLAG_PROHIBITED, True)
        elif k == PacketKind.DATA_PC or k == PacketKind.DATA_ADDR or k == PacketKind.DATA_VALUE:
            pos = _int_field(out, pos, mode, K_COMPARATOR, b[i], True)
            if k == PacketKind.DATA_PC:
                pos = _int_field(out, pos, mode, K_PC, a[i], False)
            elif k == PacketKind.DATA_ADDR:
                pos = _int_field(out, pos, mode, K_ADDRESS, a[i], False)
            else:
                pos = _int_field(out, pos, mode, K_VALUE, a[i], False)
                pos = _bool_field(out, pos, mode, K_WRITE, f & FLAG_WRITE, False)
            pos = _int_field(out, pos, mode, K_SIZE, c[i], False)
        elif k == PacketKind.DATA_MATCH:
            pos = _int_field(out, pos, mode, K_COMPARATOR, b[i], True)
        elif k == PacketKind.RESERVED:
            pos = _int_field(out, pos, mode, K_HEADER, a[i], True)
            if f & FLAG_MALFORMED:
                pos = _bool_field(out, pos, mode, K_MALFORMED, 1, False)
        elif k == PacketKind.GAP:
            pos = _int_field(out, pos, mode, K_LOST, a[i], True)
        if mode == NDJSON:
            out[pos] = 125  # }
            pos += 1
        out[pos] = 10
        pos += 1
    return pos


# The dispatch point: the C kernel when built, else the reference above.
format_packets_python = format_packets
_native = compiled("PacketFormatter", {**globals(), **{f"KIND_{k.name}": int(k) for k in PacketKind}})
format_packets_native = None if _native is None else _native.format_packets
format_packets = format_packets_native or format_packets_python


def format_batch(batch: PacketBatch, fmt: str) -> str:
    """A batch as ``ndjson`` (the contract) or ``text`` lines."""
    mode = NDJSON if fmt == "ndjson" else TEXT
    parts = []
    buf = np.empty(min(len(batch), SLICE) * MAX_LINE, np.uint8)
    for start in range(0, len(batch), SLICE):
        part = batch.slice(start, start + SLICE)
        n = format_packets(*part.columns(), mode, buf)
        parts.append(buf[:n].tobytes().decode("ascii"))
    return "".join(parts)


def write_packets(batch: PacketBatch, out: IO[str], fmt: str, symbols: Describer | None = None) -> None:
    """Write a batch as ``ndjson`` (the contract) or ``text``.

    Text lines are ``offset`` right-aligned in 10 columns, ``ts`` in 12 (``-`` when none), two
    spaces, the type left-aligned in 12, a space, then ``key=value`` fields; values, PCs,
    addresses, headers and counter masks in hex, booleans as ``true``/``false``.

    With ``symbols`` (``decode --elf``), PC samples, data-trace PCs and addresses and exceptions
    are named: ndjson objects gain a ``symbol`` field where a name is known (a compatible
    extension of the contract) and text lines show ``<name>`` after the value.
    """
    if not len(batch):
        return
    if symbols is not None:
        out.write(_with_symbols(batch, format_batch(batch, fmt), fmt, symbols))
        return
    # Slice by slice, as bytes straight to the binary stream under a text one (stdout, -o FILE):
    # the listing of a large capture is several times its size, so copies matter.
    binary = getattr(out, "buffer", None)
    if binary is not None:
        out.flush()
    mode = NDJSON if fmt == "ndjson" else TEXT
    buf = np.empty(min(len(batch), SLICE) * MAX_LINE, np.uint8)
    for start in range(0, len(batch), SLICE):
        n = format_packets(*batch.slice(start, start + SLICE).columns(), mode, buf)
        if binary is not None:
            binary.write(buf.data[:n])
        else:
            out.write(buf[:n].tobytes().decode("ascii"))


class ListingWriter:
    """Writes packet batches as a listing (:func:`write_packets`) on a thread of its own, one batch
    behind the caller, which meanwhile decodes the next one.

    The format kernel and the write release the GIL, so on two cores the two overlap. A batch must
    not change once given to :meth:`write` (the decoder's batches never do). A failed write (a pipe
    nobody reads, a full disk) raises its error from the next :meth:`write` or from :meth:`close`.

    Args:
        out: Where the listing goes.
        fmt: ``ndjson`` or ``text``.
        symbols: Names for PCs and exceptions (``decode --elf``), or None.
    """

    def __init__(self, out: IO[str], fmt: str, symbols: Describer | None = None) -> None:
        self._out = out
        self._fmt = fmt
        self._symbols = symbols
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracer-listing")
        self._pending: Future[None] | None = None

    def write(self, batch: PacketBatch) -> None:
        """Write ``batch`` after the batches before it (returns once the previous one is written)."""
        self._wait()
        self._pending = self._pool.submit(write_packets, batch, self._out, self._fmt, self._symbols)

    def close(self) -> None:
        """Wait until every batch is written; raise the last write's error, if any."""
        try:
            self._wait()
        finally:
            self._pool.shutdown(wait=True)

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __enter__(self) -> ListingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:  # already failing: let the write in progress end, keep the first error
            self._pool.shutdown(wait=True)


# -- symbol names (decode --elf) -------------------------------------------------------------------
class Describer(Protocol):
    """Anything that names a packet's main value (:class:`tracer.export.packet_symbols.SymbolResolver`)."""

    def describe(self, kind: int, a: int) -> str | None:
        """Return the name, or None."""


_NAMED_FIELD = {
    int(PacketKind.PC_SAMPLE): re.compile(r"\bpc=\S+"),
    int(PacketKind.DATA_PC): re.compile(r"\bpc=\S+"),
    int(PacketKind.DATA_ADDR): re.compile(r"\baddress=\S+"),
    int(PacketKind.EXCEPTION): re.compile(r"\bnumber=\S+"),
}
_NAMED_KINDS = np.array(sorted(_NAMED_FIELD), np.uint8)


def _with_symbols(batch: PacketBatch, text: str, fmt: str, symbols: Describer) -> str:
    """Add names to the lines of the packets an ELF can name; other lines stay as formatted."""
    rows = np.flatnonzero(np.isin(batch.kind, _NAMED_KINDS))
    if not rows.size:
        return text
    lines = text.split("\n")
    for i, kind, value in zip(rows.tolist(), batch.kind[rows].tolist(), batch.a[rows].tolist()):
        name = symbols.describe(kind, value)
        if name is None:
            continue
        if fmt == "ndjson":
            lines[i] = f'{lines[i][:-1]},"symbol":{json.dumps(name)}}}'
        else:
            field = _NAMED_FIELD[kind].search(lines[i])
            if field is not None:
                lines[i] = f"{lines[i][: field.end()]} <{name}>{lines[i][field.end() :]}"
    return "\n".join(lines)
