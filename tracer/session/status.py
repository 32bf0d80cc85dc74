"""The status line of a snapshot: where the bytes come from, how far along, at what rate, what was
lost, and the labels the numbers carry (emulated cycles, simulated PMU, model estimates).
"""

from __future__ import annotations

from tracer.base.timeline import NPU_PMU_LABEL, SIMULATED
from tracer.capture.metadata import CaptureMetadata
from tracer.session.feeds import CaptureFeed, SourceFeed
from tracer.session.pacing import Pacer, RateMeter
from tracer.session.rolling import RollingDecoder
from tracer.session.snapshot import StatusInfo

EMULATED = "emulated: QEMU counts instructions, not real CPU cycles"


def labels(decoder: RollingDecoder, metadata: CaptureMetadata) -> dict[str, str]:
    """Provenance labels: ``{"cycles": ..., "npu_pmu": "simulated"}``."""
    out: dict[str, str] = {}
    if decoder.emulated:
        out["cycles"] = EMULATED
    timing = str(metadata.extra.get("cpu_timing", ""))
    if "model estimate" in timing or "model estimate" in metadata.notes:
        out["cycles"] = "model estimate"
    if decoder.pmu_simulated:
        out[NPU_PMU_LABEL] = SIMULATED
    return out


def status_info(
    *,
    mode: str,
    source: str,
    state: str,
    message: str,
    feed: CaptureFeed | SourceFeed,
    decoder: RollingDecoder,
    metadata: CaptureMetadata,
    pacer: Pacer,
    rates: RateMeter,
    timebase: str,
    paused: bool,
    capture_path: str | None,
    reconnects: int,
    warnings: list[str],
) -> StatusInfo:
    """The status of a session now (see :class:`StatusInfo` for each field)."""
    ended = state in ("ended", "error", "lost")
    bps, pps = (None, None) if ended else rates.rates()
    position = media = duration = None
    recording = recording_bytes = None
    if isinstance(feed, CaptureFeed):
        total = feed.stream_bytes
        position = min(1.0, decoder.bytes / total) if total else (1.0 if state == "ended" else None)
        media, duration = pacer.media, feed.duration_seconds if timebase == "host arrival" else None
    else:
        recording = capture_path
        recording_bytes = feed.recording_bytes
    return StatusInfo(
        mode=mode,
        source=source,
        state=state,
        message=message,
        bytes=decoder.bytes,
        packets=decoder.packets,
        records=decoder.records,
        bytes_per_s=bps,
        packets_per_s=pps,
        loss=decoder.loss,
        firmware_dropped=decoder.telemetry.firmware_dropped,
        recording=recording,
        recording_bytes=recording_bytes,
        position=position,
        media_seconds=media,
        duration_seconds=duration,
        speed=pacer.speed,
        timebase=timebase or ("byte rate" if mode == "replay" else ""),
        paused=paused,
        clock_hz=decoder.clock_hz,
        clock_source=decoder.target.time_source.label if decoder.target else "unknown",
        labels=labels(decoder, metadata),
        reconnects=reconnects,
        warnings=tuple(warnings[-5:]),
    )
