"""Errors that reach the user, each tied to an exit code of the CLI contract."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator


class ExitCode(enum.IntEnum):
    """Exit codes of every ``tracer`` command (README, "Exit codes"; docs/limits.md for outputs)."""

    OK = 0
    CHECK_FAILED = 1
    USAGE = 2
    CAPTURE_UNREADABLE = 3
    SOURCE_UNAVAILABLE = 4
    INTERRUPTED = 130


class TracerError(Exception):
    """Base of the errors the CLI turns into a message and an exit code, never a traceback."""

    exit_code: ExitCode = ExitCode.USAGE


class UsageError(TracerError):
    """The command line or a configuration file asks for something impossible."""

    exit_code = ExitCode.USAGE


class CaptureError(TracerError):
    """A capture or log cannot be read or decoded at all."""

    exit_code = ExitCode.CAPTURE_UNREADABLE


class OutputError(TracerError):
    """An output cannot be written: ``-o PATH``, a capture being recorded, or stdout (a full disk,
    ``/dev/full``, a pipe nobody reads). Exit 2, as for an output path that cannot be opened: the
    place the user chose does not take the output (docs/limits.md, "Outputs").
    """

    exit_code = ExitCode.USAGE

    def __init__(self, name: str, exc: OSError) -> None:
        super().__init__(f"cannot write {name}: {exc.strerror or exc}")


class SourceUnavailable(TracerError):
    """A port, probe, server or launcher cannot be opened or went away."""

    exit_code = ExitCode.SOURCE_UNAVAILABLE


@contextlib.contextmanager
def reading_file(name: str, what: str, error: type[TracerError]) -> Iterator[None]:
    """Turn the OS's errors while opening or reading file ``name`` into ``error``, said in words;
    so too a file larger than :func:`tracer.limits.read_limited` allows.

    Args:
        name: How to name the file in messages.
        what: What the file should have been, after "is a directory, not" (e.g. ``"a capture"``).
        error: The error to raise (its class decides the exit code).
    """
    from tracer.limits import InputError  # errors.py stays importable on its own

    try:
        yield
    except InputError as exc:  # read_limited: the file is larger than its kind may be
        raise error(f"{name}: {exc.message}") from None
    except FileNotFoundError:
        raise error(f"{name}: no such file") from None
    except IsADirectoryError:
        raise error(f"{name}: is a directory, not {what}") from None
    except OSError as exc:
        raise error(f"{name}: cannot read: {exc.strerror}") from None
