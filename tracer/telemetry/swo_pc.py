"""DWT periodic PC samples over SWO, placed in the layer spans they arrived inside.

With ``DWT_CTRL.PCSAMPLENA`` the DWT emits the PC every N cycles as a hardware packet
(``pc_sample``; ``pc_sleep`` while the core sleeps). The packets carry no time, but they sit in
the ITM stream between the firmware's records, in order. :class:`SwoPcCollector` watches the
packet batches the telemetry decoder is fed: it keeps each PC sample's stream position, and the
position and time word of every LAYER_BEGIN and LAYER_END record header. :meth:`finish` matches
those headers with the decoder's layer spans (the begin header whose time word is the span's
start, then the end header whose time word is its end) and gives each PC sample inside a matched
pair the span's time, interpolated by stream position. A span whose records were damaged or lost
matches no header pair and gets no PC sample; so are the spans before the first PC sample passed
over (their headers are not kept): a sample is only ever attributed to a span that was identified
exactly. Samples elsewhere keep time -1 (outside every layer).
"""

from __future__ import annotations

import bisect

import numpy as np

from tracer.base.timeline import InferenceTimeline, TelemetryRecord
from tracer.decode.packets import PacketBatch, PacketKind
from tracer.telemetry.wire import MARKER_COST_UNKNOWN, PORT_DATA, PORT_HEADER, SAMPLER_DWT, SAMPLER_PC, RecordType

MASK32 = 0xFFFFFFFF
LAYER_TYPES = (int(RecordType.LAYER_BEGIN), int(RecordType.LAYER_END))


class SwoPcCollector:
    """Collects PC samples and layer record headers from packet batches, in stream order."""

    def __init__(self) -> None:
        self._pc_offset: list[np.ndarray] = []
        self._pc_value: list[np.ndarray] = []
        self._head: list[tuple[int, int, int]] = []  # (offset, type, time word)
        self._pending: tuple[int, int] | None = None  # a layer header whose time word is in the next batch
        self._previous: PacketBatch | None = None

    def feed(self, batch: PacketBatch) -> None:
        """Look at one batch (the same the telemetry decoder is fed, in order).

        Until the first PC sample only that is looked for (and the batch kept): a stream without
        PC sampling costs one comparison per packet. The batch before the first PC sample is then
        scanned too, for the header of the span the sample arrived in.
        """
        pcs = np.flatnonzero(batch.is_kind(PacketKind.PC_SAMPLE))
        if not self._pc_offset and not len(pcs):
            self._previous = batch
            return
        if not self._pc_offset and self._previous is not None:
            self._scan_headers(self._previous)
            self._previous = None
        if len(pcs):
            self._pc_offset.append(batch.offset[pcs].astype(np.int64))
            self._pc_value.append(batch.a[pcs].astype(np.int64))
        self._scan_headers(batch)

    def _scan_headers(self, batch: PacketBatch) -> None:
        swit = np.flatnonzero(batch.is_kind(PacketKind.SWIT))
        if not len(swit) and self._pending is None:
            return
        ports = batch.b[swit]
        values = batch.a[swit]
        if self._pending is not None:
            if len(swit) and ports[0] == PORT_DATA:  # the header's first data word: its time
                self._head.append((*self._pending, int(values[0]) & MASK32))
            self._pending = None
        heads = np.flatnonzero((ports == PORT_HEADER) & np.isin(values & 0x3F, LAYER_TYPES))
        for h in heads.tolist():
            # The time word is the record's first data word: the next packet on the data port.
            if h + 1 < len(swit):
                if ports[h + 1] == PORT_DATA:
                    self._head.append((int(batch.offset[swit[h]]), int(values[h]) & 0x3F, int(values[h + 1]) & MASK32))
            else:
                self._pending = (int(batch.offset[swit[h]]), int(values[h]) & 0x3F)

    @property
    def samples(self) -> int:
        """PC samples seen."""
        return int(sum(len(a) for a in self._pc_offset))

    def finish(self, timeline: InferenceTimeline) -> list[TelemetryRecord]:
        """PC_SAMPLE records (time from the matched span, -1 outside) and a SAMPLER_INFO, or nothing."""
        if not self._pc_offset:
            return []
        offsets = np.concatenate(self._pc_offset)
        pcs = np.concatenate(self._pc_value)
        cycles = np.full(len(offsets), -1, np.int64)
        begins = _Headers([(o, t) for o, kind, t in self._head if kind == RecordType.LAYER_BEGIN])
        ends = _Headers([(o, t) for o, kind, t in self._head if kind == RecordType.LAYER_END])
        spans = timeline.spans
        order = np.argsort(spans.start, kind="stable")
        b = e = 0
        for r in order.tolist():
            start, end = int(spans.start[r]), int(spans.end[r])
            # A span whose begin header was not read (before the first PC sample, or damaged) is
            # passed over: the headers after it stay for the spans that follow.
            i = begins.next(start & MASK32, b)
            if i is None:
                continue
            lo = begins.offsets[i]
            j = ends.next(end & MASK32, max(e, ends.first_at(lo)))
            if j is None:
                continue
            hi = ends.offsets[j]
            inside = slice(np.searchsorted(offsets, lo, "right"), np.searchsorted(offsets, hi, "left"))
            if hi > lo:
                cycles[inside] = start + (end - start) * (offsets[inside] - lo) // (hi - lo)
            b, e = i + 1, j
        records = [
            TelemetryRecord(
                RecordType.SAMPLER_INFO,
                max(int(cycles.max()), 0),
                None,
                (SAMPLER_PC | SAMPLER_DWT, 0, 0, MARKER_COST_UNKNOWN),
            )
        ]
        records += [
            TelemetryRecord(RecordType.PC_SAMPLE, int(c), None, (int(p) & MASK32, 0))
            for c, p in zip(cycles.tolist(), pcs.tolist())
        ]
        return records


class _Headers:
    """Layer record headers of one type, in stream order: where each is, and which comes next with
    a given time word.
    """

    def __init__(self, heads: list[tuple[int, int]]) -> None:
        self.offsets = [offset for offset, _ in heads]
        self._at: dict[int, list[int]] = {}
        for n, (_, word) in enumerate(heads):
            self._at.setdefault(word, []).append(n)

    def next(self, word: int, first: int) -> int | None:
        """The first header at index ``first`` or later whose time word is ``word``, if any."""
        at = self._at.get(word, [])
        n = bisect.bisect_left(at, first)
        return at[n] if n < len(at) else None

    def first_at(self, offset: int) -> int:
        """The index of the first header at ``offset`` or later in the stream."""
        return bisect.bisect_left(self.offsets, offset)
