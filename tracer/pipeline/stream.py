"""One stream decoder: trace bytes to telemetry, made once from what the capture's header says.

Every path that reads a stream uses it: the whole read (:func:`tracer.pipeline.capture.
decode_capture`), the windowed read (:mod:`tracer.pipeline.windows`), the session behind ``replay``
and ``live`` with its index and seeks (:mod:`tracer.session.rolling`), and so ``ingest`` and
``compare``, which read in windows. So they decode the same bytes the same way.

:class:`~tracer.pipeline.stream_setup.StreamSetup` is what the header says, read once.
:class:`StreamDecoder` is the two stages behind it: the ITM/DWT
packet decoder (:meth:`StreamDecoder.decode`, which a reader may run ahead on a thread of its own)
and the telemetry decoder (:meth:`StreamDecoder.assemble`); :meth:`StreamDecoder.feed` does both.
What closed is taken with ``telemetry.take()`` and forgotten with ``telemetry.discard_taken()``.
"""

from __future__ import annotations

from tracer.decode.packets import PacketBatch
from tracer.decode.stream import TraceDecoder
from tracer.pipeline.stream_setup import StreamSetup
from tracer.telemetry.decoder import TelemetryDecoder


class StreamDecoder:
    """Trace bytes of one stream to telemetry.

    Args:
        setup: How the stream is decoded.
        expected_bytes: The stream's size when known (the telemetry decoder sizes its tables).
        hold_timestamps: See :class:`~tracer.decode.itm.ItmDecoder` (False: the telemetry reads
            the timestamps from the packets as they come).
        reuse_batches: The caller gives each batch back (``itm.give_back``) when nothing reads it.
        packets: False only counts packets (``tracer decode --format stats``); then nothing is
            assembled.
    """

    def __init__(
        self,
        setup: StreamSetup,
        *,
        expected_bytes: int = 0,
        hold_timestamps: bool = False,
        reuse_batches: bool = False,
        packets: bool = True,
    ) -> None:
        self.setup = setup
        self.itm = TraceDecoder(
            setup.tpiu, setup.tpiu_id, hold_timestamps, packets=packets, reuse_batches=reuse_batches
        )
        self.itm.warnings.extend(setup.warnings)
        self.telemetry = TelemetryDecoder(clock_hz=setup.clock_hz, source=setup.source, expected_bytes=expected_bytes)

    def decode(self, data: bytes | memoryview, lost_before: int = 0) -> PacketBatch:
        """The first stage: ``data``'s packets (``lost_before``: bytes known lost just before it)."""
        return self.itm.feed(data, lost_before)

    def assemble(self, batch: PacketBatch) -> None:
        """The second stage: a batch's records into inferences and layers."""
        if len(batch):
            self.telemetry.feed(batch)

    def feed(self, data: bytes | memoryview, lost_before: int = 0) -> PacketBatch:
        """Both stages; returns the packets decoded."""
        batch = self.decode(data, lost_before)
        self.assemble(batch)
        return batch

    def finish(self) -> PacketBatch:
        """End of stream: the packets held back, assembled; the inference in progress closed."""
        batch = self.itm.finish()
        self.assemble(batch)
        self.telemetry.finish()
        return batch
