"""RTOS tasks as the timeline holds them: which task held the CPU, from when to when.

The telemetry decoder makes them from the firmware's task records (:mod:`tracer.telemetry.tasks`)
or from FreeRTOS trace events (:mod:`tracer.telemetry.freertos_itm`).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class TaskSlice:
    """Time one RTOS task held the CPU: from its switch-in to the next switch (interrupts included).

    Attributes:
        task: The firmware's id of the task (its TCB's address).
        start: Cycle of its switch-in.
        end: Cycle of the next switch (or of the last record of the capture).
        name: Its name, ``""`` if the firmware never named it.
        complete: False if records may have been lost inside it.
    """

    task: int
    start: int
    end: int
    name: str = ""
    complete: bool = True

    @property
    def cycles(self) -> int:
        """How long it held the CPU."""
        return self.end - self.start
