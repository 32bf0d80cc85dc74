"""Messages and progress on stderr; data goes to stdout and never mixes with them."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from typing import IO, Iterator

from tracer.errors import UsageError


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
            print(f"tracer: warning: {message}", file=self.stream)

    def info(self, message: str) -> None:
        """Print a note."""
        if not self.quiet:
            print(f"tracer: {message}", file=self.stream)

    def error(self, message: str) -> None:
        """Print an error (even when quiet)."""
        print(f"tracer: error: {message}", file=self.stream)

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


@contextmanager
def open_output(path: str | None, binary: bool = False) -> Iterator[IO]:  # type: ignore[type-arg]
    """Open ``-o PATH`` for writing, or stdout for None or ``-``."""
    if path in (None, "-"):
        yield sys.stdout.buffer if binary else sys.stdout
        return
    try:
        handle = open(path, "wb" if binary else "w", encoding=None if binary else "utf-8")  # noqa: SIM115
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    with handle:
        yield handle
