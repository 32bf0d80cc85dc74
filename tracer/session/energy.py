"""Energy per layer on the screen: a power recording attributed beside the session.

Replay (``tracer replay CAPTURE --power FILE``): the capture is read whole in a thread of its own
(like the baseline and the index), the recording held against it by
:func:`~tracer.power.attribute.attribute_energy`, the one attribution ``tracer report --power``
runs; the screen then shows each layer's energy per execution and the timeline's power lane.

Live (``tracer live SOURCE --power METER``): the meter records beside the capture (``.jls``) for
the whole run; when the source ends, the meter is stopped, the capture flushed, and the same
attribution runs on both files. Until then the snapshot says the meter is recording. A meter's
samples are not read while it records: energy per layer needs the whole run aligned.

A recording that cannot be aligned says why, in the words of the report; the screen goes on.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator

import numpy as np

from tracer.errors import TracerError
from tracer.pipeline.load import load_timeline
from tracer.power.attribute import EnergyAnalysis, attribute_energy
from tracer.power.live import MeterRecorder
from tracer.power.reading import open_recording
from tracer.power.recording import CHUNK_SAMPLES, PowerChunk, PowerRecording, RecordingInfo

RECORDING, READING, READY, FAILED = "recording", "reading", "ready", "failed"


@dataclasses.dataclass(frozen=True)
class EnergyState:
    """What the screen shows of the power recording.

    Attributes:
        state: ``recording`` (live: the meter records until the run ends), ``reading``, ``ready``
            or ``failed``.
        path: The recording as given (or being written).
        message: Why it failed (``failed``), else empty.
        analysis: The attribution (``ready``), else None.
    """

    state: str
    path: str
    message: str = ""
    analysis: EnergyAnalysis | None = None

    @property
    def peak_mw(self) -> float:
        """The highest mean power of the power lane, milliwatts (its scale; 0 without one)."""
        a = self.analysis
        return float(np.max(a.power_mw)) if a is not None and len(a.power_mw) else 0.0


class SessionEnergy:
    """The attribution of one recording against the session's capture, made in a helper thread.

    Use :meth:`replayed` or :meth:`metered` to build one.

    Args:
        path: The recording's file.
        opener: Opens it (when it is complete).
        meter_input: The meter's digital input of the sync pin (None: what the firmware says).
        meter: Live: the meter recording it, stopped before the file is read.
    """

    def __init__(
        self,
        path: str,
        opener: Callable[[], PowerRecording],
        meter_input: int | None = None,
        meter: MeterRecorder | None = None,
    ) -> None:
        self.path = path
        self.meter_input = meter_input
        self._opener = opener
        self._meter = meter
        self._lock = threading.Lock()
        self._state = EnergyState(RECORDING if meter is not None else READING, path)

    @classmethod
    def replayed(cls, recording: PowerRecording, meter_input: int | None = None) -> SessionEnergy:
        """A recording given with the capture (``replay --power FILE``)."""
        return cls(recording.info.path, lambda: recording, meter_input)

    @classmethod
    def metered(cls, meter: MeterRecorder, meter_input: int | None = None) -> SessionEnergy:
        """A meter recording beside the live capture (already started), into ``meter.path``."""
        return cls(meter.path, lambda: open_recording(meter.path), meter_input, meter)

    @property
    def state(self) -> EnergyState:
        """The state now (immutable: a snapshot holds it as it is)."""
        with self._lock:
            return self._state

    def stop_meter(self) -> None:
        """Stop the meter (live), once; a failure to stop becomes the ``failed`` state."""
        with self._lock:
            meter, self._meter = self._meter, None
        if meter is None:
            return
        try:
            meter.stop()
        except TracerError as exc:
            self._set(EnergyState(FAILED, self.path, message=str(exc)))

    def attribute(
        self,
        capture: str,
        changed: Callable[[], None],
        before: Callable[[], None] | None = None,
        stopped: Callable[[], bool] = lambda: False,
    ) -> None:
        """Stop the meter if live, call ``before`` (the capture flushed), read ``capture`` whole,
        attribute the recording to it, then call ``changed``.

        Runs in a helper thread; a failure (exit 3's reasons: no sync, a fit that does not hold,
        an unreadable file) becomes the ``failed`` state, never an exception. Once ``stopped()``
        (the session closing) it gives up between chunks of reading: quitting does not wait for
        an hour's recording to be attributed.
        """
        self.stop_meter()
        if self.state.state == FAILED:
            changed()
            return
        self._set(EnergyState(READING, self.path))
        changed()
        try:
            if before is not None:
                before()
            timeline, _facts = load_timeline(capture, on_progress=lambda _bytes: _check(stopped))
            analysis = attribute_energy(timeline, Interruptible(self._opener(), stopped), self.meter_input)
            state = EnergyState(READY, self.path, analysis=analysis)
        except Stopped:
            return
        except TracerError as exc:
            state = EnergyState(FAILED, self.path, message=str(exc))
        except (OSError, MemoryError, ValueError) as exc:  # the screen stays up and says it
            state = EnergyState(FAILED, self.path, message=f"{type(exc).__name__}: {exc}")
        self._set(state)
        changed()

    def _set(self, state: EnergyState) -> None:
        with self._lock:
            self._state = state


class Stopped(Exception):
    """The session closed while its recording was being attributed."""


def _check(stopped: Callable[[], bool]) -> None:
    if stopped():
        raise Stopped


class Interruptible:
    """A recording whose reading gives up (:class:`Stopped`) between chunks once ``stopped()``."""

    def __init__(self, recording: PowerRecording, stopped: Callable[[], bool]) -> None:
        self._recording = recording
        self._stopped = stopped

    @property
    def info(self) -> RecordingInfo:
        """The recording's description."""
        return self._recording.info

    def chunks(self, samples: int = CHUNK_SAMPLES) -> Iterator[PowerChunk]:
        """The recording's chunks, checking ``stopped`` before each."""
        for chunk in self._recording.chunks(samples):
            _check(self._stopped)
            yield chunk
