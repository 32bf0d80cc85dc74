"""Telemetry streams with known content for the decoder tests (built with the reference encoder)."""

from __future__ import annotations

import dataclasses
import itertools
import random

from telemetry_encoder import EncodedRecord, TelemetryEncoder

from tracer.base.timeline import InferenceTimeline
from tracer.decode.itm import ItmDecoder
from tracer.telemetry.decoder import TelemetryDecoder
from tracer.telemetry.wire import TimeSource

CLOCK_HZ = 100_000_000


@dataclasses.dataclass
class TrueInference:
    """What the stream says about one inference."""

    number: int
    start: int
    end: int
    spans: list[tuple[int, int, int]]  # (layer, start, end)


@dataclasses.dataclass
class Stream:
    """Encoded bytes, the records' places in them, and the truth."""

    data: bytes
    records: list[EncodedRecord]
    truth: list[TrueInference]

    def record_bytes(self, index: int) -> tuple[int, int]:
        """Byte range of record ``index``."""
        r = self.records[index]
        return r.offset, r.offset + r.length

    def records_of(self, inference: int, type_: int | None = None) -> list[int]:
        """Indices of the records of an inference (of one type)."""
        return [
            i for i, r in enumerate(self.records) if r.inference == inference and (type_ is None or r.type == type_)
        ]


def build_stream(
    inferences: int = 6,
    layers: int = 4,
    start: int = 5_000,
    seed: int = 1,
    idle: int = 300,
    first_number: int = 0,
    npu_every: int = 2,
) -> Stream:
    """A stream like the demo's: target info, descriptions, then inferences with CRCs, layers,
    PMU snapshots on NPU layers, stack reports after each inference."""
    rng = random.Random(seed)
    enc = TelemetryEncoder()
    t = start
    enc.text("boot\n")
    enc.target_info(t, CLOCK_HZ, TimeSource.DWT, marker_cost_q4=16 * 12)
    enc.pmu_config(t + 1, 55, [35, 130])
    for layer in range(layers):
        enc.layer_info(
            t + 2 + layer, layer, int(layer % npu_every == 0), "CONV_2D" if layer % 2 == 0 else "ADD", f"layer{layer}"
        )
    enc.arena(t + 20, 4096, 8192)
    t += 100
    truth = []
    for n in range(inferences):
        begin = t
        enc.inference_begin(t, first_number + n)
        enc.buffer_crc(t + 3, 0, 0xABCD0000 + n, 64)
        t += 10
        spans = []
        for layer in range(layers):
            s = t
            npu = layer % npu_every == 0
            enc.layer_begin(s, layer, int(npu))
            length = 1000 + 100 * layer + rng.randrange(50)
            if npu:
                enc.npu_job_begin(s + 5, layer)
                enc.pmu_snapshot(s + length - 5, 900 + layer, [800 + layer, 16 * layer])
                enc.npu_job_end(s + length - 3, layer)
            enc.layer_end(s + length, layer)
            spans.append((layer, s, s + length))
            t = s + length + 7
        enc.buffer_crc(t, 1, 0x1234 + n, 10)
        enc.inference_end(t + 2)
        truth.append(TrueInference(first_number + n, begin, t + 2, spans))
        enc.stack(t + 10, 0, "main", 8192, 1000 + n)
        t += idle
    enc.text("done\n")
    return Stream(bytes(enc.out), enc.records, truth)


def decode(data: bytes, splits: list[int] | None = None) -> InferenceTimeline:
    """ITM decode then telemetry decode, feeding the bytes in pieces cut at ``splits``."""
    itm = ItmDecoder(hold_timestamps=False)
    decoder = TelemetryDecoder()
    cuts = [0, *sorted(splits or []), len(data)]
    for a, b in itertools.pairwise(cuts):
        decoder.feed(itm.feed(data[a:b]))
    decoder.feed(itm.finish())
    decoder.finish()
    return decoder.timeline()


def cut(data: bytes, start: int, end: int) -> bytes:
    """``data`` without bytes ``start:end``."""
    return data[:start] + data[end:]


def complete_and_exact(timeline: InferenceTimeline, truth: list[TrueInference]) -> dict[int, bool]:
    """For each complete inference: whether it equals the truth exactly (times and every span)."""
    by_number = {t.number: t for t in truth}
    spans = timeline.spans
    out = {}
    inf = timeline.inferences
    for i in range(len(inf)):
        if not inf.complete[i]:
            continue
        number = int(inf.number[i])
        true = by_number.get(number)
        rows = spans.inference == number
        got = sorted(zip(spans.layer[rows].tolist(), spans.start[rows].tolist(), spans.end[rows].tolist()))
        out[number] = (
            true is not None
            and int(inf.start[i]) == true.start
            and int(inf.end[i]) == true.end
            and got == sorted(true.spans)
            and bool(spans.complete[rows].all())
        )
    return out
