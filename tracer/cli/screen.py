"""What ``tracer live`` and ``tracer replay`` share: checks before the screen opens, and running it.

Textual is imported only when the screen opens, so the CLI parser stays light.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from tracer.cli.analysis_input import load_calibration
from tracer.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from tracer.cli.output import Console
    from tracer.elf.inlines import CodeLocator
    from tracer.session.engine import Session, SessionOptions


def require_terminal(verb: str) -> None:
    """The screen needs a terminal on both ends.

    Raises:
        UsageError: stdin or stdout is not a terminal.
    """
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(
            f"tracer {verb} draws a screen and needs a terminal; for a report of a capture use "
            "'tracer report CAPTURE' (or 'tracer check' in CI)"
        )


def add_screen_arguments(parser: argparse.ArgumentParser) -> None:
    """``--ring`` and ``--window``: how much the screen keeps (``live`` and ``replay``)."""
    from tracer.analysis.statistics import DEFAULT_WINDOW
    from tracer.session.ring import DEFAULT_RING

    view = parser.add_argument_group("how much the screen keeps")
    view.add_argument(
        "--ring",
        type=int,
        default=DEFAULT_RING,
        metavar="N",
        help=f"recent inferences kept whole for the timeline and the findings (default: {DEFAULT_RING})",
    )
    view.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        metavar="N",
        help=f"recent executions per layer for p50/p99, history, distribution (default: {DEFAULT_WINDOW})",
    )


def session_options(args: argparse.Namespace, speed: float | None = 1.0, paused: bool = False) -> SessionOptions:
    """Ring and window sizes from the command line."""
    from tracer.session.engine import SessionOptions

    if args.ring < 1:
        raise UsageError(f"--ring must be at least 1, not {args.ring}")
    if args.window < 1:
        raise UsageError(f"--window must be at least 1, not {args.window}")
    calibration = load_calibration(getattr(args, "calibration", None), bool(getattr(args, "budget", None)))
    return SessionOptions(ring=args.ring, window=args.window, speed=speed, paused=paused, calibration=calibration)


@contextlib.contextmanager
def _signals_quit(app: Any, stopped: list[str]) -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP quit the screen the way ctrl+c does (exit 130), so the session is
    stopped and its capture flushed and closed on the way out; ``stopped`` gets the signal's name.

    Nothing is raised: a KeyboardInterrupt inside Textual's event loop, or inside asyncio setting
    it up, prints a traceback. The exit is asked of the loop when it runs; before that the app
    finds the request as it mounts and quits at once (``TracerApp.exit_requested``).
    """
    from tracer.cli.signals import on_stop_signals

    def handler(name: str) -> None:
        stopped.append(name)
        app.exit_requested = int(ExitCode.INTERRUPTED)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not running yet (the app quits as it mounts), or already done
        loop.call_soon_threadsafe(app.exit, int(ExitCode.INTERRUPTED))

    with on_stop_signals(handler):
        yield


def run_app(
    session: Session,
    console: Console,
    before_close: Callable[[], None] | None = None,
    locator: CodeLocator | None = None,
) -> int:
    """Run the screen until the user quits; then stop the worker and release the session.

    Args:
        session: What to show.
        console: For messages after the screen closed.
        before_close: Called after the screen closed and before the session's feed is closed.
        locator: ``--elf``'s symbols (:func:`~tracer.cli.analysis_input.open_elf_symbols`), to name the CPU hot spots.
    """
    from tracer.tui.app import TracerApp

    app = TracerApp(session, locator=locator)
    stopped: list[str] = []
    try:
        with _signals_quit(app, stopped):
            result = app.run()
    finally:
        session.stop()
        if before_close is not None:
            before_close()
        session.wait_done(5.0)
        session.close()
    if app.last_export is not None:
        console.info(f"report written to {os.fspath(app.last_export)}")
    if stopped:
        console.info("interrupted" if stopped[0] == "SIGINT" else f"stopped by {stopped[0]}")
        return int(ExitCode.INTERRUPTED)
    snapshot = app.snapshot
    if snapshot is not None and snapshot.status.state == "error":
        console.error(snapshot.status.message)
        return int(ExitCode.CAPTURE_UNREADABLE if session.mode == "replay" else ExitCode.SOURCE_UNAVAILABLE)
    return int(result) if result is not None else int(ExitCode.OK)
