"""Where per-capture work runs: this process, Dask's local cluster, or an existing Dask cluster.

``tracer ingest`` and ``tracer compare`` hand each capture to a function (decode, analyse,
digest or write its tables) and collect the results as they complete. :func:`open_runner` picks
where:

* ``--scheduler tcp://HOST:8786``: an existing Dask cluster, used as it is (its workers need
  tracer installed and must see the capture files and the dataset folder: a shared filesystem);
  a scheduler that cannot be reached is exit 4, said in words;
* otherwise, with more than one task and ``--workers N`` above 1: Dask's ``LocalCluster`` of N
  worker processes of one thread each on this machine (decoding is CPU work: processes, not
  threads), started for the command and stopped after it;
* otherwise: this process, one capture after the other (no cluster to start for one or two files).

Progress (captures and megabytes done, rate) is drawn on stderr when it is a terminal.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from tracer.errors import SourceUnavailable, TracerError, UsageError
from tracer.fleet import require_extra

CONNECT_TIMEOUT_S = 5


class Runner(Protocol):
    """Runs one function over many inputs and yields ``(position, result)`` as each completes."""

    workers: int
    where: str

    def share(self, value: Any) -> Any:
        """``value`` as an argument every call may take, sent to each worker once (not per call)."""
        ...

    def run(self, function: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """Call ``function(*item)`` for every item; yield results as they complete.

        Raises:
            TracerError: A call raised it (the first one to fail).
        """
        ...


class InProcess:
    """Runs everything in this process, in order."""

    workers = 1
    where = "this process"

    def share(self, value: Any) -> Any:
        """The value itself."""
        return value

    def run(self, function: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """Call ``function`` on each item in turn."""
        for i, item in enumerate(items):
            yield i, function(*item)


class DaskRunner:
    """Runs on a Dask cluster through a ``distributed.Client``.

    Args:
        client: A connected client.
        where: How to name the cluster in messages.
    """

    def __init__(self, client: Any, where: str) -> None:
        self.client = client
        self.where = where
        self.workers = max(1, len(client.scheduler_info().get("workers", {})))

    def share(self, value: Any) -> Any:
        """A future of ``value`` on every worker (Dask passes its value to the calls that take it)."""
        # In a list: scatter() takes a collection as values to scatter one by one.
        return self.client.scatter([value], broadcast=True, hash=False)[0]

    def run(self, function: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """Submit every item (pure=False: a capture is read again if asked twice) and yield results
        as they complete; a failed task's exception is raised here.
        """
        from distributed import as_completed

        futures = [self.client.submit(function, *item, pure=False) for item in items]
        position = {f.key: i for i, f in enumerate(futures)}
        try:
            for future in as_completed(futures):
                try:
                    result = future.result()
                except TracerError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a worker died, ran out of memory, cannot import tracer ...
                    raise SourceUnavailable(task_failed(exc, self.where, items[position[future.key]])) from None
                yield position[future.key], result
                future.release()
        finally:
            for future in futures:
                future.cancel()


def task_failed(exc: BaseException, where: str, item: tuple[Any, ...]) -> str:
    """A failed Dask task in tracer's words (exit 4).

    Dask runs a task whose worker died again on another worker; only when every worker it was
    given died under it (``KilledWorker``, after the scheduler's ``allowed-failures``) or the
    cluster lost all its workers (the task cancelled) does the task fail.
    """
    name = type(exc).__name__
    what = f" reading {item[0]}" if item and isinstance(item[0], str) else ""
    if name == "KilledWorker":
        return (
            f"every Dask worker of {where} that ran the task{what} died before it finished (out of memory, "
            "or killed), so Dask gave up on it; nothing is committed. Give the workers more memory, or "
            "fewer workers a machine (--workers)"
        )
    if name in ("CancelledError", "FutureCancelledError"):
        return (
            f"the task{what} was cancelled: {where} lost its workers (or its scheduler) before it "
            "finished; nothing is committed"
        )
    return f"a Dask task{what} failed on {where}: {name}: {exc}"


def default_workers() -> int:
    """Worker processes when ``--workers`` is not given: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def open_runner(scheduler: str | None, workers: int | None, tasks: int) -> Iterator[Runner]:
    """Where ``tasks`` tasks run (see the module docstring).

    Args:
        scheduler: ``--scheduler``: an existing cluster's address, or None.
        workers: ``--workers``, or None for :func:`default_workers`.
        tasks: How many tasks there will be.

    Raises:
        SourceUnavailable: The scheduler cannot be reached (exit 4).
        UsageError: The address is malformed, or Dask is not installed and a cluster is asked for.
    """
    if scheduler:
        with _connect(scheduler) as runner:
            yield runner
        return
    count = workers if workers is not None else default_workers()
    if count < 1:
        raise UsageError(f"--workers must be at least 1, not {count}")
    count = min(count, tasks)
    if count <= 1:
        yield InProcess()
        return
    distributed = require_dask(f"--workers {count}")
    cluster = local_cluster(count)
    try:
        with distributed.Client(cluster) as client:
            yield DaskRunner(client, f"a local Dask cluster of {count} worker processes")
    finally:
        cluster.close()


def local_cluster(workers: int) -> Any:
    """A ``LocalCluster`` of ``workers`` processes of one thread each, with glibc's malloc left to tune
    itself.

    Dask's nanny sets ``MALLOC_TRIM_THRESHOLD_`` in its workers by default; setting it turns off
    glibc's dynamic mmap threshold, so every large temporary array of the decoder and the analysis
    is mapped and unmapped again, page by page: measured here, decoding and analysing a capture then
    takes twice the CPU time (``docs/fleet.md``). The workers are started without it.
    """
    import dask

    distributed = require_dask(f"--workers {workers}")
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        return distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )


@contextlib.contextmanager
def _connect(address: str) -> Iterator[Runner]:
    distributed = require_dask(f"--scheduler {address}")
    if "://" not in address:
        raise UsageError(f"--scheduler {address}: expected an address like tcp://HOST:8786")
    try:
        _handshake(distributed, address)
        client = distributed.Client(address, timeout=f"{CONNECT_TIMEOUT_S}s")
    except ValueError as exc:
        raise UsageError(f"--scheduler {address}: not a Dask scheduler address ({exc})") from None
    except (OSError, TimeoutError) as exc:
        raise SourceUnavailable(
            f"cannot reach the Dask scheduler at {address} within {CONNECT_TIMEOUT_S} s ({exc}); "
            "is it running, and is the address and port right?"
        ) from None
    except Exception as exc:  # noqa: BLE001 - whatever a peer that is not Dask makes Dask's reader raise
        why = str(exc) if isinstance(exc, NotAScheduler) else type(exc).__name__
        raise SourceUnavailable(
            f"{address} answered, but not as a Dask scheduler does ({why}); is the port the scheduler's "
            "(8786 by default)?"
        ) from None
    try:
        yield DaskRunner(client, f"the Dask cluster at {address}")
    finally:
        client.close()


def _handshake(distributed: Any, address: str) -> None:
    """Check that ``address`` answers as a Dask scheduler does, bounded in time, before a client
    relies on it.

    ``Client(timeout=...)`` bounds the TCP connection only: the handshake read after it waits for
    good on a peer that says nothing, and takes the first bytes of one that is not Dask (an SSH
    banner) for the size of a frame to allocate (exabytes). A scheduler speaks first on a plain TCP
    connection (its handshake: a few hundred bytes naming ``compression`` and ``python``), so that
    is read here with a deadline and a size cap; other transports (TLS ...) run Dask's own
    handshake under a deadline.

    Raises:
        TimeoutError: No handshake within CONNECT_TIMEOUT_S.
        OSError: The connection failed or closed.
        NotAScheduler: The peer answered with something else.
        ValueError: A malformed address.
    """
    scheme, _, location = address.partition("://")
    if scheme == "tcp":
        _tcp_handshake(address, location)
        return
    import asyncio

    async def exchange() -> None:
        comm = await distributed.comm.connect(address, timeout=CONNECT_TIMEOUT_S)
        await comm.close()

    asyncio.run(asyncio.wait_for(exchange(), CONNECT_TIMEOUT_S + 1))


class NotAScheduler(Exception):
    """The peer answered, with something else than a Dask handshake."""


HANDSHAKE_MAX_BYTES = 1 << 16  # a scheduler's handshake is a few hundred bytes


def _tcp_handshake(address: str, location: str) -> None:
    """Read a scheduler's handshake frame on plain TCP (8-byte little-endian size, then the frame)."""
    import socket
    import struct
    import time

    from tracer.sources.url import SourceUrl

    host, port = SourceUrl.parse(address).host_port(8786)
    deadline = time.monotonic() + CONNECT_TIMEOUT_S

    def receive(sock: socket.socket, count: int) -> bytes:
        data = b""
        while len(data) < count:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                part = sock.recv(count - len(data))
            except TimeoutError:
                raise TimeoutError(f"no handshake from {location} within {CONNECT_TIMEOUT_S} s") from None
            if not part:
                raise OSError(f"{location} closed the connection during the handshake")
            data += part
        return data

    with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as sock:
        (size,) = struct.unpack("<Q", receive(sock, 8))
        if not 8 <= size <= HANDSHAKE_MAX_BYTES:
            raise NotAScheduler("its first bytes are not the size of a handshake")
        frame = receive(sock, size)
    if b"compression" not in frame or b"python" not in frame:
        raise NotAScheduler("its first message is not a handshake")


def require_dask(why: str) -> Any:
    """``dask.distributed``, or a usage error naming the extra to install."""
    require_extra(why, ("distributed",))
    import distributed

    return distributed


def dask_available() -> bool:
    """True when ``dask.distributed`` is installed."""
    import importlib.util

    return importlib.util.find_spec("distributed") is not None
