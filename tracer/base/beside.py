"""One piece of work run on a thread of its own, beside the caller's other work.

An analysis is many passes over numpy columns; numpy releases the GIL inside most of them (sorts,
partitions, element-wise arithmetic on long columns), so on two cores two independent passes run
at once for a good part of their time. :class:`Beside` runs one of them on a thread while the
caller computes the others; the results are the same as on one thread, since each piece only
reads what it is given.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar

T = TypeVar("T")


def usable_cores() -> int:
    """CPUs this process may run on (its affinity where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class Beside(Generic[T]):
    """``work()`` on a thread of its own from the ``with`` block's start; :meth:`result` waits for it.

    The thread has ended when the block is left, on every way out (an exception in the caller's
    own work waits for it, then goes on).

    Args:
        work: What to run; it must only read what other threads only read.
        threaded: False runs ``work`` on the caller's thread, when :meth:`result` is first asked.
        name: The thread's name.
    """

    def __init__(self, work: Callable[[], T], threaded: bool = True, name: str = "tracer-beside") -> None:
        self._work = work
        self._done = False
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True) if threaded else None

    def __enter__(self) -> Beside[T]:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as error:  # noqa: BLE001  # raised in the caller by result()
            self._error = error
        self._done = True

    def result(self) -> T:
        """The work's value (its exception raised here, with its traceback)."""
        if self._thread is None:
            if not self._done:
                self._run()
        else:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set by _run, which has run without error
