"""Errors that reach the user, each tied to an exit code of the CLI contract."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Exit codes of every ``tracer`` command (PRODUCT.md, "Exit codes")."""

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


class SourceUnavailable(TracerError):
    """A port, probe, server or launcher cannot be opened or went away."""

    exit_code = ExitCode.SOURCE_UNAVAILABLE
