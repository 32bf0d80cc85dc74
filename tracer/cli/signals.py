"""Ctrl-C, SIGTERM and SIGHUP: the signals that end a recording or a screen, all the same way.

A signal is acted on only outside an import. Python raises ``KeyboardInterrupt`` wherever the main
thread is, and a library being imported may turn it into an error of its own (numpy reports a
failed C-extension import, a class body a ``RuntimeError``), which then escapes as a traceback
instead of exit 130. So a signal that lands inside an import is held and raised again as soon
as the import is done (re-checked every :data:`RETRY_SECONDS` with a real-time timer, where the
platform has one), for the handler in place then.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

# Ctrl-C, a service manager's stop, a closed terminal.
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
RETRY_SECONDS = 0.02  # how soon a held signal is looked at again


def _inside_import(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def outside_imports(action: Callable[[str], None]) -> Callable[[int, FrameType | None], None]:
    """A signal handler that calls ``action`` with the signal's name when no import is running.

    A signal that lands inside an import is raised again once the import is done, so whichever
    handler is in place *then* takes it (the screen may have opened meanwhile: its handler quits
    the screen, where this one would raise inside the screen's event loop). Only for the main
    thread (where Python runs signal handlers). Without ``setitimer`` (Windows) the action runs at
    once, as Python's own handler would.
    """
    held: list[int] = []
    alarm_before: list[object] = []

    def raise_again_when_clear(signum: int, frame: FrameType | None) -> None:
        if _inside_import(frame):
            signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)
            return
        signal.signal(signal.SIGALRM, alarm_before.pop())  # type: ignore[arg-type]  # what getsignal gave
        signal.raise_signal(held.pop())

    def handler(signum: int, frame: FrameType | None) -> None:
        if hasattr(signal, "setitimer") and _inside_import(frame):
            if not held:
                held.append(signum)
                alarm_before.append(signal.signal(signal.SIGALRM, raise_again_when_clear))
                signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)
            return
        action(signal.Signals(signum).name)

    return handler


def _raise_interrupt(name: str) -> None:
    raise KeyboardInterrupt


def interrupt_outside_imports() -> None:
    """Ctrl-C raises ``KeyboardInterrupt`` as usual, but never inside an import (see above).

    For the process's entry point (``tracer``, ``python -m tracer``); tests that call ``main``
    in-process keep Python's own handler.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, outside_imports(_raise_interrupt))


@contextmanager
def on_stop_signals(handler: Callable[[str], None]) -> Iterator[None]:
    """While inside, each of ``STOP_SIGNALS`` calls ``handler`` with its name instead of its default.

    Only the main thread can take signals; elsewhere nothing changes. The previous handlers come
    back on the way out.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    dispatch = outside_imports(handler)
    previous = {}
    for name in STOP_SIGNALS:
        if hasattr(signal, name):  # SIGHUP: not on Windows
            previous[name] = signal.signal(getattr(signal, name), dispatch)
    try:
        yield
    finally:
        for name, old in previous.items():
            signal.signal(getattr(signal, name), old)
