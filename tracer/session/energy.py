"""Energy per layer on the screen: a power recording attributed beside the session.

Replay (``tracer replay CAPTURE --power FILE``): the capture is read whole in a thread of its own
(like the baseline and the index), the recording held against it by
:func:`~tracer.power.attribute.attribute_energy`, the one attribution ``tracer report --power``
runs; the screen then shows each layer's energy per execution and the timeline's power lane.

Live (``tracer live SOURCE --power METER``): the meter records beside the capture (``.jls``) for
the whole run; when the source ends, the meter is stopped, the capture flushed, and the same
attribution runs on both files. While it records, the JLS cannot be read (pyjls repairs a file
not yet closed, in place); a meter that hands its samples to a tap (:mod:`tracer.power.tap`, its
newest samples in bounded memory) gets them attributed every few seconds (:meth:`follow`), by the
same :func:`attribute_energy`, against the capture as written so far: the state stays
``recording``, with the energy of the inferences inside the tap's window.

A recording that cannot be aligned says why, in the words of the report; the screen goes on.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np

from tracer.errors import TracerError
from tracer.pipeline.load import load_timeline
from tracer.power.attribute import EnergyAnalysis, attribute_energy
from tracer.power.lane import PowerSteps
from tracer.power.live import MeterRecorder
from tracer.power.reading import open_recording
from tracer.power.recording import CHUNK_SAMPLES, PowerChunk, PowerRecording, RecordingInfo
from tracer.power.tap import SampleTap
from tracer.session.schedule import Stopped

RECORDING, READING, READY, FAILED = "recording", "reading", "ready", "failed"
FOLLOW_SECONDS = 2.0  # live: the energy is attributed again this often at most
FOLLOW_SHARE = 4  # ... and waits at least this many times as long as the last pass took


@dataclasses.dataclass(frozen=True)
class EnergyState:
    """What the screen shows of the power recording.

    Attributes:
        state: ``recording`` (live: the meter records until the run ends), ``reading``, ``ready``
            or ``failed``.
        path: The recording as given (or being written).
        message: Why it failed (``failed``); while ``recording``, why the last pass over the
            meter's newest samples gave nothing new (not yet aligned); else empty.
        analysis: The attribution (``ready``; while ``recording``, of the inferences inside the
            meter's newest samples, as of the last pass), else None.
        window_seconds: While ``recording``: how many seconds of the meter's newest samples the
            analysis covers (None: no pass yet).
        following: While ``recording``: the meter's samples are attributed as they come (a meter
            with a tap); False: only once the run ends.
    """

    state: str
    path: str
    message: str = ""
    analysis: EnergyAnalysis | None = None
    window_seconds: float | None = None
    following: bool = False

    # (Cached: the screen reads these with every redraw; the state is replaced, never changed.)
    @functools.cached_property
    def since(self) -> int | None:
        """The oldest inference the analysis measured (None: none)."""
        a = self.analysis
        return min(a.inference_uj) if a is not None and a.inference_uj else None

    @functools.cached_property
    def upto(self) -> int | None:
        """The newest inference the analysis measured (None: none)."""
        a = self.analysis
        return max(a.inference_uj) if a is not None and a.inference_uj else None

    @property
    def live(self) -> bool:
        """The meter still records: the analysis (if any) covers only its newest samples so far."""
        return self.state == RECORDING

    @functools.cached_property
    def peak_mw(self) -> float:
        """The highest mean power of the power lane, milliwatts (its scale; 0 without one)."""
        a = self.analysis
        return float(np.max(a.power_mw)) if a is not None and len(a.power_mw) else 0.0

    @functools.cached_property
    def power_steps(self) -> PowerSteps | None:
        """The power lane as a step function, its running energy made once (None: no lane)."""
        a = self.analysis
        return PowerSteps.of(a.power_cycles, a.power_mw) if a is not None and len(a.power_cycles) >= 2 else None


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
        self._tap: SampleTap | None = getattr(meter, "tap", None)
        self._state = EnergyState(RECORDING if meter is not None else READING, path, following=self._tap is not None)

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

    @property
    def follows(self) -> bool:
        """Live, with a meter whose samples can be read while it records."""
        return self._tap is not None and self.state.state == RECORDING

    def follow(
        self,
        capture: str,
        changed: Callable[[], None],
        done: Callable[[], bool],
        interval: float = FOLLOW_SECONDS,
    ) -> None:
        """Live: attribute the meter's newest samples to the capture written so far, again and
        again, until ``done()`` (the source ended or the session closes).

        Runs in a helper thread. Each pass reads the capture as written (its last, partly written
        record is left out as the end of a stream is) and attributes the tap's window with
        :func:`attribute_energy`; a pass that cannot align yet (too few marks, the meter's edges
        ahead of the capture's) keeps the last result and says why. Passes are at least
        ``interval`` apart, and at least :data:`FOLLOW_SHARE` times as long as the last took,
        so that the screen and the decoder keep most of the machine.
        """
        tap = self._tap
        if tap is None:
            return
        wait = interval
        while not _slept(wait, done):
            window = tap.window()
            if window.info.samples == window.info.first_sample:
                wait = interval
                continue
            began = time.monotonic()
            try:
                timeline, _facts = load_timeline(capture, on_progress=lambda _bytes: _check(done))
                analysis = attribute_energy(timeline, Interruptible(window, done), self.meter_input)
                state = EnergyState(
                    RECORDING, self.path, analysis=analysis, window_seconds=window.seconds, following=True
                )
            except Stopped:
                return
            except Exception as exc:  # noqa: BLE001 - a live pass never takes the screen down; the final one says
                said = str(exc) if isinstance(exc, TracerError) else f"{type(exc).__name__}: {exc}"
                state = dataclasses.replace(self.state, message=said)
            wait = max(interval, FOLLOW_SHARE * (time.monotonic() - began))
            with self._lock:
                if self._state.state != RECORDING:  # the run ended: the whole recording's turn
                    return
                self._state = state
            changed()

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
        with self._lock:  # a live result stays on the screen until the whole run's replaces it
            self._state = EnergyState(READING, self.path, analysis=self._state.analysis)
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


def _slept(seconds: float, done: Callable[[], bool]) -> bool:
    """Sleep ``seconds`` in short steps; True as soon as ``done()``."""
    end = time.monotonic() + seconds
    while not done():
        left = end - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(left, 0.05))
    return True


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
