"""Replay pacing: when each piece of a capture is due, at a speed, with pause; and rates over time.

A :class:`Pacer` maps *media time* (seconds into the capture on its pacing clock: host arrival
times, target time, or bytes at a rate) to wall time. Pausing freezes media time; resuming and
changing speed re-anchor, so media time never jumps. The wall clock is injected, so tests drive
it by hand.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

# The +/- ladder; None is "as fast as possible".
SPEEDS: tuple[float | None, ...] = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, None)


def speed_label(speed: float | None) -> str:
    """``×1``, ``×1/4``, ``max``."""
    if speed is None:
        return "max"
    if speed >= 1:
        return f"×{speed:g}"
    return f"×1/{1 / speed:g}"


def parse_speed(text: str) -> float | None:
    """``--speed`` values: a positive number, ``1/4``, or ``max``.

    Raises:
        ValueError: Not a speed.
    """
    text = text.strip().lower().lstrip("x×")
    if text in ("max", "inf", "fastest"):
        return None
    problem = f"speed must be a positive number (2, 0.5, 1/4) or 'max', not {text!r}"
    try:
        if "/" in text:
            num, _, den = text.partition("/")
            value = float(num) / float(den)
        else:
            value = float(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(problem) from None
    if not value > 0 or value == float("inf"):
        raise ValueError(problem)
    return value


class Pacer:
    """Media time against wall time.

    Args:
        speed: Media seconds per wall second (None: no waiting at all).
        paused: Start paused.
        clock: Monotonic wall clock in seconds.
    """

    def __init__(
        self, speed: float | None = 1.0, paused: bool = False, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self.speed = speed
        self.paused = paused
        self.media = 0.0  # media time released so far
        self._anchor_wall = clock()
        self._anchor_media = 0.0

    def _reanchor(self) -> None:
        self._anchor_wall = self._clock()
        self._anchor_media = self.media

    def set_speed(self, speed: float | None) -> None:
        """Change speed from now on."""
        self.speed = speed
        self._reanchor()

    def faster(self) -> float | None:
        """One step up the ladder."""
        self.set_speed(_step(self.speed, +1))
        return self.speed

    def slower(self) -> float | None:
        """One step down the ladder."""
        self.set_speed(_step(self.speed, -1))
        return self.speed

    def pause(self) -> None:
        """Stop media time."""
        self.paused = True

    def resume(self) -> None:
        """Restart media time from where it stopped."""
        if self.paused:
            self.paused = False
            self._reanchor()

    def wait_for(self, media: float) -> float | None:
        """Wall seconds until ``media`` is due: 0 if due now, None while paused."""
        if self.paused:
            return None
        if self.speed is None or media <= self.media:
            return 0.0
        due = self._anchor_wall + (media - self._anchor_media) / self.speed
        return max(0.0, due - self._clock())

    def release(self, media: float) -> None:
        """Media time ``media`` has been played."""
        if media > self.media:
            self.media = media
        if self.speed is None:
            self._reanchor()


def _step(speed: float | None, direction: int) -> float | None:
    if speed is None:
        return SPEEDS[-1] if direction > 0 else SPEEDS[-2]
    finite = [s for s in SPEEDS if s is not None]
    if direction > 0:
        higher = [s for s in finite if s > speed * 1.0001]
        return higher[0] if higher else None
    lower = [s for s in finite if s < speed / 1.0001]
    return lower[-1] if lower else finite[0]


class RateMeter:
    """Bytes and packets per second over the last ``window`` seconds.

    Args:
        window: Seconds to average over.
        clock: Monotonic clock.
    """

    def __init__(self, window: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._window = window
        self._clock = clock
        self._samples: collections.deque[tuple[float, int, int]] = collections.deque()
        self._start = clock()

    def add(self, nbytes: int, packets: int) -> None:
        """Count what was just fed."""
        now = self._clock()
        self._samples.append((now, nbytes, packets))
        self._trim(now)

    def _trim(self, now: float) -> None:
        while self._samples and self._samples[0][0] < now - self._window:
            self._samples.popleft()

    def rates(self) -> tuple[float | None, float | None]:
        """(bytes/s, packets/s), None until some time has passed."""
        now = self._clock()
        samples = [s for s in list(self._samples) if s[0] >= now - self._window]  # a copy: the worker appends
        span = min(self._window, now - self._start)
        if span <= 0:
            return None, None
        return sum(s[1] for s in samples) / span, sum(s[2] for s in samples) / span
