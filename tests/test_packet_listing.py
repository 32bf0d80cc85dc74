"""Packet listings: written on a thread of their own, and the room the C formatter needs per line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tracer.decode.itm import ItmDecoder
from tracer.decode.packets import PacketBatch, PacketKind
from tracer.export.packets_text import MAX_LINE, ListingWriter, format_batch

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"


def _batches() -> list[PacketBatch]:
    data = (CORPUS / "novakov_rtos_trace" / "queue_demo.trace").read_bytes()[:20000]
    decoder = ItmDecoder()
    out = [decoder.feed(data[at : at + 997]) for at in range(0, len(data), 997)]
    return [b for b in [*out, decoder.finish()] if len(b)]


@pytest.mark.parametrize("fmt", ["ndjson", "text"])
def test_the_listing_is_every_batch_in_order(fmt: str) -> None:
    batches = _batches()
    assert len(batches) > 10
    out = io.StringIO()
    with ListingWriter(out, fmt) as listing:
        for batch in batches:
            listing.write(batch)
    assert out.getvalue() == "".join(format_batch(b, fmt) for b in batches)


class _Refusing(io.StringIO):
    """A stream whose writes fail after the first, as a closed pipe's do."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes > 1:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_a_failed_write_is_raised_to_the_caller() -> None:
    batches = _batches()
    with pytest.raises(BrokenPipeError), ListingWriter(_Refusing(), "ndjson") as listing:
        for batch in batches:
            listing.write(batch)


@pytest.mark.parametrize("fmt", ["ndjson", "text"])
def test_the_longest_line_leaves_the_kernels_room(fmt: str) -> None:
    """Every kind with the widest values: the C kernel writes lines with fixed-size copies that may
    run 48 bytes past a line's end, inside the ``MAX_LINE`` bytes it is given per packet."""
    kinds = [int(k) for k in PacketKind]
    batch = PacketBatch.empty(len(kinds))
    batch.offset[:] = (1 << 63) - 1
    batch.kind[:] = kinds
    batch.a[:] = (1 << 64) - 1
    batch.b[:] = (1 << 64) - 1
    batch.b[batch.kind == PacketKind.EXCEPTION] = 3
    batch.c[:] = 255
    batch.flags[:] = 255
    batch.ts[:] = (1 << 63) - 1
    lines = format_batch(batch, fmt).splitlines()
    assert len(lines) == len(kinds)
    assert max(len(line) + 1 for line in lines) <= MAX_LINE - 48
