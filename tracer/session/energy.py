"""Energy per layer on the screen: a power recording attributed beside the replay (``--power``).

The replayed capture is read whole in a thread of its own (like the baseline and the index), the
recording held against it by :func:`~tracer.power.attribute.attribute_energy`, the one attribution
``tracer report --power`` runs; the screen then shows each layer's energy per execution and the
power lane of the timeline. Until then (a few seconds for an hour's recording) the snapshot says
it is being read; a recording that cannot be aligned says why, in the words of the report.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import numpy as np

from tracer.errors import TracerError
from tracer.pipeline.load import load_timeline
from tracer.power.attribute import EnergyAnalysis, attribute_energy
from tracer.power.recording import PowerRecording

READING, READY, FAILED = "reading", "ready", "failed"


@dataclasses.dataclass(frozen=True)
class EnergyState:
    """What the screen shows of the power recording.

    Attributes:
        state: ``reading``, ``ready`` or ``failed``.
        path: The recording as given.
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
    """The attribution of one recording against the replayed capture, made in a helper thread.

    Args:
        recording: The opened recording (``--power``).
        meter_input: The meter's digital input of the sync pin (None: what the firmware says).
    """

    def __init__(self, recording: PowerRecording, meter_input: int | None = None) -> None:
        self.recording = recording
        self.meter_input = meter_input
        self._lock = threading.Lock()
        self._state = EnergyState(READING, recording.info.path)

    @property
    def state(self) -> EnergyState:
        """The state now (immutable: a snapshot holds it as it is)."""
        with self._lock:
            return self._state

    def attribute(self, capture: str, changed: Callable[[], None]) -> None:
        """Read ``capture`` whole, attribute the recording to it, then call ``changed``.

        Runs in a helper thread; a failure (exit 3's reasons: no sync, a fit that does not hold,
        an unreadable file) becomes the ``failed`` state, never an exception.
        """
        try:
            timeline, _facts = load_timeline(capture)
            analysis = attribute_energy(timeline, self.recording, self.meter_input)
            state = EnergyState(READY, self.recording.info.path, analysis=analysis)
        except TracerError as exc:
            state = EnergyState(FAILED, self.recording.info.path, message=str(exc))
        except (OSError, MemoryError, ValueError) as exc:  # the screen stays up and says it
            state = EnergyState(FAILED, self.recording.info.path, message=f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._state = state
        changed()
