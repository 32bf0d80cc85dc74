"""Media time of a replay: how far into the capture each piece is, on the best clock it has.

A capture recorded by tracer stamps its chunks with host arrival times (``host arrival``); a raw
file from another tool has none, so the target time the telemetry carries paces it (``target
time``: the end of the latest inference closed, from the first one's start); with no telemetry in
the first 64 KiB either, its SWO byte rate does (``byte rate``). The :class:`~tracer.session.pacing.Pacer`
turns media time into wall time.
"""

from __future__ import annotations

from tracer.session.feeds import Piece
from tracer.session.pacing import Pacer
from tracer.session.rolling import DecodedDelta, RollingDecoder

NO_TELEMETRY_BYTES = 64 * 1024  # a replay paced by target time falls back to bytes if none is seen by then


class MediaClock:
    """Seconds into a capture, per piece.

    Args:
        pacer: The replay's pacer (its media time so far).
        swo_hz: The capture's SWO rate, if known (for the byte rate).
        host_times: The capture's chunks carry host arrival times.
    """

    def __init__(self, pacer: Pacer, swo_hz: int | None, host_times: bool) -> None:
        self._pacer = pacer
        self._swo_hz = swo_hz
        self._origin: int | None = None
        self.timebase = "host arrival" if host_times else ""

    @property
    def before_decoding(self) -> bool:
        """True when a piece's media time is known before decoding it (not paced by target time)."""
        return self.timebase != "target time"

    def media_time(self, piece: Piece, delta: DecodedDelta | None, decoder: RollingDecoder) -> float:
        """Seconds into the capture on the pacing clock (``delta``: what the piece decoded to, if known)."""
        if piece.host_seconds is not None:
            return piece.host_seconds
        clock_hz = decoder.clock_hz
        if delta is not None and clock_hz and len(delta.inferences):
            ends = delta.inferences.end[delta.inferences.end >= 0]
            if len(ends):
                if self._origin is None:
                    starts = delta.inferences.start[delta.inferences.start >= 0]
                    self._origin = int(starts.min()) if len(starts) else int(ends.min())
                self.timebase = "target time"
                return max(0.0, (int(ends.max()) - self._origin) / clock_hz)
        if self.timebase == "target time" and decoder.records == 0 and piece.offset > NO_TELEMETRY_BYTES:
            self.timebase = "byte rate"  # a raw trace with no telemetry in it: pace by bytes
        if self.timebase == "target time" or (self.timebase == "" and clock_hz and decoder.records == 0):
            # Until the telemetry says what time it is (or between inferences): no wait.
            if self.timebase == "":
                self.timebase = "target time" if clock_hz else "byte rate"
            return self._pacer.media
        self.timebase = "byte rate"
        return piece.offset / self._byte_rate()

    def _byte_rate(self) -> float:
        """Bytes per second of a capture with no clock: its SWO rate if known, else 1 MB/s."""
        return self._swo_hz / 10 if self._swo_hz else 1_000_000.0
