"""No automatic garbage collection while the screen answers a key (:class:`CollectionsHeld`)."""

from __future__ import annotations

import asyncio
import gc
import time

HELD_AT_MOST_S = 1.0  # garbage collections wait for keys' answers at most this long in a row


class CollectionsHeld:
    """No automatic garbage collection while the screen answers a key.

    With the app's thresholds (``_settle_garbage_collector`` in :mod:`tracer.tui.app`), a
    collection of the youngest objects walks some 20,000 of them: 8-15 ms of the screen's thread
    under load, in about one answer in seven to a tab switch (measured with
    ``benchmarks/bench_tui.py``). Held for at most one answer (the app's ``ANSWER_S``), what would
    have been collected meanwhile is collected right after it, at the next allocation; collections
    that were already off (a caller's choice) stay off. Keys that come faster than they are
    answered (a key held down) keep it held: after :data:`HELD_AT_MOST_S` in a row, one key is
    answered with collections on.
    """

    def __init__(self) -> None:
        self.held = False
        self._until = 0.0
        self._since = 0.0

    def hold(self, seconds: float) -> None:
        """Hold collections until :meth:`resume`, at most ``seconds`` (the running loop ends it)."""
        now = time.monotonic()
        if self.held and now - self._since > HELD_AT_MOST_S:
            self.resume()  # held long enough: this key's answer may collect
            return
        self._until = now + seconds
        asyncio.get_running_loop().call_later(seconds, self._expire)
        if not self.held and gc.isenabled():
            gc.disable()
            self.held = True
            self._since = now

    def resume(self) -> None:
        """Collect again, if this held it."""
        if self.held:
            self.held = False
            gc.enable()

    def _expire(self) -> None:
        if time.monotonic() >= self._until - 0.001:  # (not a hold asked for since, by a later key)
            self.resume()
