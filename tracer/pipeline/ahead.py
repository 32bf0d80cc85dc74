"""An iterator run on a producer thread, a few items ahead of the thread that consumes it.

``tracer report`` reads and ITM-decodes a capture (one C kernel) and assembles the packets into
records (another); both release the GIL, so on two cores the second costs almost no wall time
beyond the first when the first runs ahead on its own thread. The order of the items, and what the
producer's objects say after each one, are exactly those of the plain loop: only one thread touches
the producer's objects until it has ended, and the consumer reads what it needs of them from the
items.

Every exit is clean: the producer's exception is raised in the consumer (its traceback kept), an
exception in the consumer (Ctrl-C: KeyboardInterrupt) stops the producer at its next item, and the
thread has ended when the ``with`` block is left.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Generic, TypeVar

T = TypeVar("T")

DEPTH = 3  # items ready ahead of the consumer: enough to smooth their costs, few to keep memory small
POLL_SECONDS = 0.05  # how soon a producer blocked on a full queue sees that it must stop


class _Failed:
    """The producer's exception, carried to the consumer."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = object()


class RunAhead(Generic[T]):
    """``items`` produced on a thread of their own, consumed by iterating this in a ``with`` block.

    Args:
        items: The producer (a generator: it is closed on its own thread when stopped early).
        depth: Items produced ahead at most.
        threaded: False runs the producer on the consumer's thread, item by item (one core).
    """

    def __init__(
        self, items: Iterator[T], depth: int = DEPTH, name: str = "tracer-run-ahead", *, threaded: bool = True
    ) -> None:
        self._items = items
        self._queue: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True) if threaded else None

    def __enter__(self) -> RunAhead[T]:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __iter__(self) -> Iterator[T]:
        if self._thread is None:
            yield from self._items
            return
        while True:
            try:
                # With a timeout: a wait without one is not interrupted by Ctrl-C on every system.
                item = self._queue.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]  # only the producer's items and the two markers are queued

    def close(self) -> None:
        """Stop the producer (at its next item) and wait for its thread to end."""
        self._stop.set()
        if self._thread is None:
            close = getattr(self._items, "close", None)
            if close is not None:
                close()
            return
        while self._thread.is_alive():
            self._drain()  # a producer blocked on a full queue goes on, then sees the stop
            self._thread.join(POLL_SECONDS)
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return

    def _put(self, item: object) -> bool:
        """Queue ``item`` unless told to stop; False when stopped."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        try:
            for item in self._items:
                if not self._put(item):
                    return
            self._put(_END)
        except BaseException as error:  # noqa: BLE001  # every failure goes to the consumer, which raises it
            self._put(_Failed(error))
        finally:
            close = getattr(self._items, "close", None)
            if close is not None:
                close()
