"""The timeline as a native Perfetto trace (protobuf), the format ui.perfetto.dev reads in full.

Written with our own wire-format writer (:mod:`tracer.export.protobuf`); no protobuf library is
needed. The messages and field numbers are Perfetto's (``protos/perfetto/trace/``: ``trace.proto``,
``trace_packet.proto``, ``track_event/track_event.proto``, ``track_descriptor.proto``,
``counter_descriptor.proto``, ``process_descriptor.proto``, ``debug_annotation.proto``):

* ``Trace { repeated TracePacket packet = 1; }``
* ``TracePacket``: ``timestamp`` 8, ``trusted_packet_sequence_id`` 10, ``track_event`` 11,
  ``sequence_flags`` 13, ``track_descriptor`` 60;
* ``TrackDescriptor``: ``uuid`` 1, ``name`` 2, ``process`` 3, ``parent_uuid`` 5, ``counter`` 8;
  ``ProcessDescriptor``: ``pid`` 1, ``process_name`` 6; ``CounterDescriptor``: ``unit`` 3
  (``UNIT_COUNT`` 2, ``UNIT_SIZE_BYTES`` 3);
* ``TrackEvent``: ``debug_annotations`` 4, ``type`` 9 (``SLICE_BEGIN`` 1, ``SLICE_END`` 2,
  ``INSTANT`` 3, ``COUNTER`` 4), ``track_uuid`` 11, ``categories`` 22, ``name`` 23,
  ``counter_value`` 30;
* ``DebugAnnotation``: ``bool_value`` 2, ``int_value`` 4, ``double_value`` 5, ``string_value`` 6,
  ``name`` 10.

Layout: one process (the model or capture) whose child tracks are those of
:mod:`tracer.export.perfetto_layout`. Every packet is on one sequence; the first clears its
incremental state (nothing is interned, so no later packet depends on it). Track descriptors come
first, then the events in time order; at one timestamp a slice's end comes before the next
slice's begin, so back-to-back layers nest correctly.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from typing import IO, Any

from tracer.analysis.result import Analysis
from tracer.errors import CaptureError
from tracer.export.perfetto_layout import TraceLayout, layout
from tracer.export.protobuf import FIXED64, Message, length_delimited, tag, varint_field

SEQUENCE_ID = 1
PID = 1
PROCESS_UUID = 1
SEQ_INCREMENTAL_STATE_CLEARED = 1
SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
UNIT_COUNT, UNIT_SIZE_BYTES = 2, 3
# Order of events sharing a timestamp: ends close before counters change and begins open.
_RANK_END, _RANK_COUNTER, _RANK_BEGIN, _RANK_INSTANT = 0, 1, 2, 3


def perfetto_packets(analysis: Analysis) -> Iterator[bytes]:
    """The encoded ``TracePacket`` messages, in order."""
    laid = layout(analysis)
    uuids = {track.name: PROCESS_UUID + 1 + k for k, track in enumerate(laid.tracks)}
    yield _descriptor_packet(laid, None, PROCESS_UUID, first=True)
    for track in laid.tracks:
        yield _descriptor_packet(laid, track, uuids[track.name])
    for _, _, _, packet in sorted(_events(laid, uuids), key=lambda e: e[:3]):
        yield packet


def write_perfetto(out: IO[bytes], analysis: Analysis) -> int:
    """Write the trace (a serialized ``Trace`` message); return the bytes written."""
    total = 0
    for packet in perfetto_packets(analysis):
        # Trace.packet (field 1): the Trace message is just its packets, each length-delimited.
        data = length_delimited(1, packet)
        out.write(data)
        total += len(data)
    return total


def _descriptor_packet(laid: TraceLayout, track: Any, uuid: int, first: bool = False) -> bytes:
    descriptor = Message()
    if track is None:
        descriptor.uint(1, uuid).message(3, Message().uint(1, PID).string(6, laid.title))
    else:
        descriptor.uint(1, uuid).string(2, track.name).uint(5, PROCESS_UUID)
        if track.counter:
            descriptor.message(8, Message().uint(3, UNIT_SIZE_BYTES if track.unit == "bytes" else UNIT_COUNT))
    packet = Message().uint(10, SEQUENCE_ID)
    if first:
        packet.uint(13, SEQ_INCREMENTAL_STATE_CLEARED)
    return packet.message(60, descriptor).bytes()


class _Encoder:
    """Encodes events fast: the parts every packet shares are encoded once."""

    def __init__(self, uuids: dict[str, int]) -> None:
        self.track = {name: varint_field(11, uuid) for name, uuid in uuids.items()}
        self.names: dict[str, bytes] = {}
        self.sequence = varint_field(10, SEQUENCE_ID)
        self.types = {kind: varint_field(9, kind) for kind in (SLICE_BEGIN, SLICE_END, INSTANT, COUNTER)}

    def packet(self, ts_ns: int, event: bytes) -> bytes:
        """TracePacket {timestamp, trusted_packet_sequence_id, track_event}.

        Raises:
            CaptureError: A time beyond a trace's 64-bit nanoseconds (584 years: a damaged time line).
        """
        if not 0 <= ts_ns < 1 << 64:
            raise CaptureError(
                f"a time of {ts_ns:,} ns on the capture's time line: beyond the 64-bit nanoseconds of a "
                "Perfetto trace (the capture's times are damaged)"
            )
        return varint_field(8, ts_ns) + self.sequence + length_delimited(11, event)

    def event(self, kind: int, track: str, name: str, category: str, args: Mapping[str, Any]) -> bytes:
        """TrackEvent {debug_annotations..., type, track_uuid, categories, name}."""
        parts = [self.annotation(key, value) for key, value in args.items() if value is not None]
        parts += [
            self.types[kind],
            self.track[track],
            length_delimited(22, category.encode()),
            length_delimited(23, name.encode()),
        ]
        return b"".join(parts)

    def end(self, track: str) -> bytes:
        """TrackEvent {type: SLICE_END, track_uuid}."""
        return self.types[SLICE_END] + self.track[track]

    def counter(self, track: str, value: int) -> bytes:
        """TrackEvent {type: COUNTER, track_uuid, counter_value}."""
        return self.types[COUNTER] + self.track[track] + varint_field(30, value)

    def annotation(self, name: str, value: Any) -> bytes:
        """A debug_annotations field (4): DebugAnnotation {value, name}."""
        key = self.names.get(name)
        if key is None:
            key = self.names[name] = length_delimited(10, name.encode())
        if isinstance(value, bool):
            body = varint_field(2, int(value))
        elif isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
            body = varint_field(4, value)
        elif isinstance(value, float):
            body = tag(5, FIXED64) + struct.pack("<d", value)
        else:
            body = length_delimited(6, str(value).encode())
        return length_delimited(4, body + key)


def _events(laid: TraceLayout, uuids: dict[str, int]) -> Iterator[tuple[int, int, int, bytes]]:
    enc = _Encoder(uuids)
    seq = 0
    for s in laid.slices:
        yield (
            s.start_ns,
            _RANK_BEGIN,
            seq,
            enc.packet(s.start_ns, enc.event(SLICE_BEGIN, s.track, s.name, s.category, s.args)),
        )
        yield s.end_ns, _RANK_END, seq, enc.packet(s.end_ns, enc.end(s.track))
        seq += 1
    for i in laid.instants:
        yield i.ts_ns, _RANK_INSTANT, seq, enc.packet(i.ts_ns, enc.event(INSTANT, i.track, i.name, i.category, i.args))
        seq += 1
    for c in laid.counters:
        yield c.ts_ns, _RANK_COUNTER, seq, enc.packet(c.ts_ns, enc.counter(c.track, c.value))
        seq += 1
