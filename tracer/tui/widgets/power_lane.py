"""The timeline's power lane: the mean power the meter saw, cell by cell (``--power``).

Drawn from the attribution's power lane (:attr:`~tracer.power.attribute.EnergyAnalysis.power_mw`:
from each segment's first cycle, a layer execution, the time between layers or between
inferences, its mean power): a step function of time whose mean over each cell's cycles sets the
height of a block, ``▁`` to ``█``, on one scale for the whole recording (its highest segment), so
that two inferences' lanes compare. Time outside the recording is left blank.
"""

from __future__ import annotations

import numpy as np
from rich.style import Style

from tracer.power.lane import PowerSteps
from tracer.tui import palette as pal

BLOCKS = "▁▂▃▄▅▆▇█"
STYLE = Style(color=pal.WARN)


def mean_power(cycles: np.ndarray, mw: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """The mean of the step function (``mw[i]`` from ``cycles[i]``; the last value ends it) over
    each interval ``[t0, t1)``, clipped to where it is defined; NaN where it is not.
    """
    if len(cycles) < 2:
        return np.full(len(t0), np.nan)
    return PowerSteps.of(cycles, mw).mean(t0, t1)


def power_cells(steps: PowerSteps, peak_mw: float, t0: float, cpc: float, width: int) -> list[tuple[str, Style]]:
    """``width`` cells from cycle ``t0``, ``cpc`` cycles each: a block per cell as high as its
    mean power against ``peak_mw``, blank outside the recording.
    """
    x = np.arange(width, dtype=np.float64)
    means = steps.mean(t0 + x * cpc, t0 + (x + 1) * cpc)
    blank = (" ", Style())
    if peak_mw <= 0:
        return [blank] * width
    level = np.clip(np.ceil(means / peak_mw * len(BLOCKS)) - 1, 0, len(BLOCKS) - 1)
    return [blank if m != m else (BLOCKS[int(k)], STYLE) for m, k in zip(means.tolist(), level.tolist())]
