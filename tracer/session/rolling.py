"""Decoding a stream that never ends: bytes in, what is new out, memory bounded.

:class:`~tracer.telemetry.decoder.TelemetryDecoder` keeps every row it decoded until told to
forget it (a report needs the whole capture). A live session runs for days, so
:class:`RollingDecoder` takes what is new after each feed (``take``: closed inferences with their
spans, memory samples, cache operations, NPU jobs, console lines, marks, CRCs) and then has the
decoder forget it (``discard_taken``). The decoder carries on exactly as if nothing had been
forgotten (sequence numbers, time unwrapping, the inference in progress), which the tests check
by comparing against a decoder that keeps everything, on the same stream in any split.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.base.timeline import Engine, LayerInfo, LossCounters
from tracer.pipeline.stream import StreamDecoder
from tracer.pipeline.stream_setup import StreamSetup
from tracer.telemetry.decoder import NewRows
from tracer.telemetry.firmware_records import TargetInfo


@dataclasses.dataclass
class DecodedDelta(NewRows):
    """What one feed added: the decoder's new rows, and how many bytes and packets made them.

    Attributes:
        bytes: Stream bytes fed.
        packets: ITM packets decoded.
    """

    bytes: int = 0
    packets: int = 0


class RollingDecoder:
    """Trace bytes to telemetry deltas, with the decoder's tables kept small.

    The stream is decoded by the one :class:`~tracer.pipeline.stream.StreamDecoder` every path
    uses; this class hands out what is new after each feed and has it forgotten.

    Args:
        setup: How the stream is decoded (from the capture's or the source's header).
        compact: Forget the rows handed out after each feed (False only in tests).
    """

    def __init__(self, setup: StreamSetup, *, compact: bool = True) -> None:
        self.setup = setup
        self.stream = StreamDecoder(setup)
        self.trace = self.stream.itm
        self.telemetry = self.stream.telemetry
        self.compacting = compact
        self.layers: dict[int, LayerInfo] = {}
        self.bytes = 0
        self.packets = 0

    # -- facts -----------------------------------------------------------------------------------
    @property
    def loss(self) -> LossCounters:
        """Everything lost or damaged so far."""
        return self.telemetry.loss

    @property
    def records(self) -> int:
        """Telemetry records accepted so far."""
        return self.telemetry.records_accepted

    @property
    def target(self) -> TargetInfo | None:
        """What the firmware said about itself, once it has."""
        return self.telemetry.target

    @property
    def clock_hz(self) -> int | None:
        """The clock of the cycle counts: the firmware's, else the capture's."""
        info = self.telemetry.target
        return info.clock_hz if info is not None and info.clock_hz else self.telemetry.clock_hz

    @property
    def pmu_simulated(self) -> bool:
        """True when the firmware labels its NPU PMU values simulated."""
        info = self.telemetry.target
        return self.telemetry.pmu_simulated or bool(info and info.npu_pmu_simulated)

    @property
    def emulated(self) -> bool:
        """True when the firmware runs on an emulator whose cycles are instructions (QEMU)."""
        info = self.telemetry.target
        return bool(info and info.emulated)

    @property
    def warnings(self) -> list[str]:
        """Stream-level problems the ITM decoder reported."""
        return list(self.trace.warnings)

    @property
    def table_rows(self) -> dict[str, int]:
        """Rows held in the decoder's tables (tests check they stay bounded)."""
        return self.telemetry.held_rows

    # -- feeding ---------------------------------------------------------------------------------
    def feed(self, data: bytes, lost_before: int = 0) -> DecodedDelta:
        """Decode ``data`` (``lost_before``: bytes known lost just before it) and return what is new."""
        batch = self.stream.feed(data, lost_before)
        self.bytes += len(data)
        return self._take(len(data), len(batch))

    def finish(self) -> DecodedDelta:
        """End of stream: flush held bytes, close the inference in progress (incomplete)."""
        batch = self.stream.finish()
        return self._take(0, len(batch))

    def _take(self, nbytes: int, npackets: int) -> DecodedDelta:
        self.packets += npackets
        rows = self.telemetry.take()
        if self.compacting:
            self.telemetry.discard_taken()
        delta = DecodedDelta(
            bytes=nbytes, packets=npackets, **{f.name: getattr(rows, f.name) for f in dataclasses.fields(NewRows)}
        )
        self._learn_layers(delta)
        return delta

    def _learn_layers(self, delta: DecodedDelta) -> None:
        """Layers the firmware described, and layers seen only in spans (engine from the begin record)."""
        self.layers.update(self.telemetry.layers)
        if len(delta.spans):
            indices, first = np.unique(delta.spans.layer, return_index=True)
            for index, at in zip(indices.tolist(), first.tolist()):
                if index not in self.layers:
                    engine = Engine.NPU if delta.span_engines[at] == 1 else Engine.CPU
                    self.layers[index] = LayerInfo(index, "", "", engine)
