"""The power lane of an attribution as a step function of target cycles: ``mw[i]`` from
``cycles[i]`` on, the last value ending it (:attr:`~tracer.power.attribute.EnergyAnalysis.power_mw`).

Its running energy is made once (:meth:`PowerSteps.of`); the mean power over any interval is then
two lookups, so a screen that draws the lane cell by cell, redraw after redraw, does not go over
the whole recording each time.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class PowerSteps:
    """A step function of power over target cycles, with its running integral.

    Attributes:
        cycles: Where each step starts, ascending; the last ends the function.
        mw: Each step's power, milliwatts.
        starts: ``cycles`` as floats (the means are computed in floats).
        integral: The integral up to each of ``cycles`` (milliwatt-cycles).
    """

    cycles: np.ndarray
    mw: np.ndarray
    starts: np.ndarray
    integral: np.ndarray

    @classmethod
    def of(cls, cycles: np.ndarray, mw: np.ndarray) -> PowerSteps:
        """The steps ``mw`` from ``cycles`` (at least two)."""
        c = cycles.astype(np.float64)
        return cls(cycles, mw, c, np.concatenate(([0.0], np.cumsum(mw[:-1] * np.diff(c)))))

    def mean(self, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
        """The mean power over each interval ``[t0, t1)``, clipped to where the function is
        defined; NaN where it is not.
        """
        c = self.starts

        def integral(t: np.ndarray) -> np.ndarray:
            i = np.clip(np.searchsorted(c, t, side="right") - 1, 0, len(c) - 1)
            return self.integral[i] + self.mw[i] * (t - c[i])

        a = np.clip(t0, c[0], c[-1])
        b = np.clip(t1, c[0], c[-1])
        span = b - a
        out = np.full(len(t0), np.nan)
        ok = span > 0
        out[ok] = (integral(b[ok]) - integral(a[ok])) / span[ok]
        return out

    def at(self, cycle: int) -> float | None:
        """The power of the step holding ``cycle`` (None: outside the function)."""
        if not self.cycles[0] <= cycle < self.cycles[-1]:
            return None
        return float(self.mw[int(np.searchsorted(self.cycles, cycle, side="right")) - 1])
