"""The packet listing written on a thread of its own (``tracer decode`` overlaps formatting with decoding)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tracer.decode.itm import ItmDecoder
from tracer.decode.packets import PacketBatch
from tracer.export.packets_text import ListingWriter, format_batch

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
