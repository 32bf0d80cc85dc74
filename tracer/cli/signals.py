"""Ctrl-C, SIGTERM and SIGHUP: the signals that end a recording or a screen, all the same way."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Ctrl-C, a service manager's stop, a closed terminal.
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


@contextmanager
def on_stop_signals(handler: Callable[[str], None]) -> Iterator[None]:
    """While inside, each of ``STOP_SIGNALS`` calls ``handler`` with its name instead of its default.

    Only the main thread can take signals; elsewhere nothing changes. The previous handlers come
    back on the way out.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def dispatch(signum: int, frame: object) -> None:
        handler(signal.Signals(signum).name)

    previous = {}
    for name in STOP_SIGNALS:
        if hasattr(signal, name):  # SIGHUP: not on Windows
            previous[name] = signal.signal(getattr(signal, name), dispatch)
    try:
        yield
    finally:
        for name, old in previous.items():
            signal.signal(getattr(signal, name), old)
