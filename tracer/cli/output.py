"""Messages and progress on stderr; data goes to stdout and never mixes with them."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import IO, Any, cast

from tracer.errors import OutputError


class Console:
    """Where a command says things to the human: warnings, notes and progress, all on stderr.

    Args:
        quiet: ``--quiet``: only errors.
        stream: The stream (stderr unless a test passes another).
    """

    def __init__(self, quiet: bool = False, stream: IO[str] | None = None) -> None:
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr

    def warn(self, message: str) -> None:
        """Print a warning."""
        if not self.quiet:
            self._say(f"tracer: warning: {message}")

    def info(self, message: str) -> None:
        """Print a note."""
        if not self.quiet:
            self._say(f"tracer: {message}")

    def error(self, message: str) -> None:
        """Print an error (even when quiet)."""
        self._say(f"tracer: error: {message}")

    def _say(self, line: str) -> None:
        # stderr itself may be gone (closed, full): nobody to tell then; the exit code still says it
        with contextlib.suppress(OSError, ValueError):
            print(line, file=self.stream, flush=True)

    @property
    def interactive(self) -> bool:
        """True on a terminal outside CI: the only place progress is drawn."""
        isatty = getattr(self.stream, "isatty", lambda: False)
        return not self.quiet and isatty() and not os.environ.get("CI")

    @contextmanager
    def progress(self, label: str, total: int | None = None) -> Iterator[Progress]:
        """A progress line for long work, cleared at the end."""
        bar = Progress(self, label, total)
        try:
            yield bar
        finally:
            bar.close()


class Progress:
    """One self-overwriting line: label, percent, megabytes and rate."""

    def __init__(self, console: Console, label: str, total: int | None) -> None:
        self.console = console
        self.label = label
        self.total = total
        self.enabled = console.interactive
        self._start = time.monotonic()
        self._last = 0.0

    def update(self, done: int) -> None:
        """Show ``done`` bytes (throttled to ten redraws a second)."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        rate = done / max(now - self._start, 1e-9) / 1e6
        pct = f" {100 * done / self.total:5.1f}%" if self.total else ""
        self.console.stream.write(f"\r{self.label}{pct}  {done / 1e6:8.1f} MB  {rate:6.1f} MB/s ")
        self.console.stream.flush()

    def close(self) -> None:
        """Clear the line."""
        if self.enabled:
            self.console.stream.write("\r\x1b[K")
            self.console.stream.flush()


STDOUT = "stdout"


def terminal_width(path: str | None) -> int | None:
    """The width to fit text to: the terminal's when the output is stdout and stdout is one; None
    (as wide as the lines are) when it is piped or a file, so that what scripts read is unchanged.
    """
    if path not in (None, "-") or not sys.stdout.isatty():
        return None
    import shutil

    return max(shutil.get_terminal_size().columns, 40)


@contextmanager
def open_output(path: str | None, binary: bool = False) -> Iterator[IO[Any]]:
    """Open ``-o PATH`` for writing, or stdout for None or ``-``.

    The one place outputs are written through: any write, flush or close the OS refuses (a full
    disk, ``/dev/full``, a pipe nobody reads) raises :class:`~tracer.errors.OutputError` naming the
    output and the OS's reason (exit 2).
    """
    if path in (None, "-"):
        stream = sys.stdout.buffer if binary else sys.stdout
        out = Output(stream, STDOUT)
        yield _as_io(out)
        out.flush()
        return
    try:
        handle = open(path, "wb" if binary else "w", encoding=None if binary else "utf-8")  # noqa: SIM115 - Output closes it
    except OSError as exc:
        raise OutputError(str(path), exc) from None
    out = Output(handle, str(path))
    try:
        yield _as_io(out)
    finally:
        out.close()


class Output:
    """A stream whose failing writes raise :class:`~tracer.errors.OutputError` naming it.

    Args:
        stream: The text or binary stream.
        name: The output in messages (the path, or ``stdout``).
    """

    def __init__(self, stream: IO[Any], name: str) -> None:
        self._stream = stream
        self.name = name

    def write(self, data: str | bytes) -> int:
        """Write, or raise OutputError."""
        try:
            return self._stream.write(data)
        except OSError as exc:
            raise OutputError(self.name, exc) from None

    def writelines(self, lines: Iterable[str | bytes]) -> None:
        """Write each, or raise OutputError."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Flush, or raise OutputError."""
        try:
            self._stream.flush()
        except OSError as exc:
            raise OutputError(self.name, exc) from None

    def close(self) -> None:
        """Close (flushing), or raise OutputError."""
        try:
            self._stream.close()
        except OSError as exc:
            raise OutputError(self.name, exc) from None

    @property
    def buffer(self) -> Output:
        """The binary stream under a text one, guarded the same way (AttributeError if none)."""
        return Output(self._stream.buffer, self.name)  # type: ignore[attr-defined]  # text streams have one; else AttributeError, as said

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _as_io(out: Output) -> IO[Any]:
    """``out`` as the IO its users write to: it has IO's writing methods and passes the rest on."""
    return cast("IO[Any]", out)


def flush_stdout() -> None:
    """Flush stdout now, so a failure is said by the command rather than lost at exit.

    Raises:
        OutputError: The flush failed.
    """
    try:
        sys.stdout.flush()
    except OSError as exc:
        raise OutputError(STDOUT, exc) from None
    except ValueError:  # closed by the reader (a test's StringIO): nothing left to flush
        pass
