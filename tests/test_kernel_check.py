"""The compiled telemetry kernel's record check (the 12-bit CRC-16/CCITT of the accumulator) gives
what the Python reference gives, with the real CRC table (four independent lookups, the CRC being
linear in the bytes) and with a table that is not linear (the byte-by-byte chain).
"""

from __future__ import annotations

import random
import sys

import pytest
from telemetry_encoder import TelemetryEncoder

from tracer.decode.itm import ItmDecoder
from tracer.decode.packets import PacketBatch
from tracer.telemetry import kernel as telemetry_kernel
from tracer.telemetry.decoder import TelemetryDecoder

UNKNOWN = 4  # a record type wire.py does not define: accepted with any length

pytestmark = pytest.mark.skipif("tracer._kernels" not in sys.modules, reason="the C kernels are not built")


def _records() -> PacketBatch:
    """400 records of a type no one uses (any length accepted) with random words, checks of the real CRC."""
    rng = random.Random(25)
    enc = TelemetryEncoder()
    for n in range(400):
        enc.record(UNKNOWN, 1000 + 10 * n, [rng.getrandbits(32) for _ in range(rng.randint(1, 6))])
    itm = ItmDecoder()
    return PacketBatch.concat([itm.feed(bytes(enc.out)), itm.finish()])


def _both(table: object, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(records accepted, damaged) from the C kernel built with ``table``, then from the reference."""
    compiled = sys.modules["tracer._kernels"]
    kernel = compiled.TelemetryKernel({**vars(telemetry_kernel), "CRC16": table})
    monkeypatch.setattr(telemetry_kernel, "CRC16", table)  # the Python reference reads it too
    batch = _records()
    results = []
    for decode in (kernel.decode_records, telemetry_kernel.decode_records_python):
        decoder = TelemetryDecoder()
        monkeypatch.setattr(telemetry_kernel, "decode_records", decode)
        decoder.feed(batch)
        results.append((decoder.records_accepted, decoder.loss.damaged_records))
    return results


def test_the_real_table_accepts_every_record(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _both(telemetry_kernel.CRC16.copy(), monkeypatch) == [(400, 0), (400, 0)]


def test_a_table_that_is_not_linear_checks_as_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries 1 and 2 swapped: no longer linear, so four lookups would give other checks than the
    chain; the kernel and the reference accept and refuse the same records (some of each)."""
    table = telemetry_kernel.CRC16.copy()
    table[[1, 2]] = table[[2, 1]]
    kernel_result, reference = _both(table, monkeypatch)
    assert kernel_result == reference
    accepted, damaged = reference
    assert accepted > 0 and damaged > 0
