"""Entry point: builds the argument parser from the verb modules and maps errors to exit codes."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from types import ModuleType

import tracer
from tracer.cli.help_format import FittedHelpFormatter
from tracer.cli.output import STDOUT, Console, flush_stdout
from tracer.cli.signals import interrupt_outside_imports
from tracer.errors import ExitCode, OutputError, TracerError

# Each verb is a module ``tracer.cli.cmd_<verb>`` with HELP, DESCRIPTION, add_arguments(parser)
# and run(args) -> int. The order here is the order in ``tracer --help``.
VERBS = [
    "decode",
    "record",
    "export",
    "budget",
    "list",
    "demo",
    "report",
    "live",
    "replay",
    "check",
    "calibrate",
    "compare",
    "ingest",
    "trend",
]

EPILOG = """\
exit codes: 0 ok; 1 a check failed; 2 usage or configuration error, or an output that cannot be
written (full disk, closed pipe); 3 capture unreadable or undecodable; 4 source or probe
unavailable; 130 interrupted (Ctrl-C, SIGTERM, SIGHUP).

examples:
  tracer report captures/demo.trace --budget captures/demo_budget.toml
  tracer replay captures/demo.trace --budget captures/demo_budget.toml
  tracer check run.trace --budget out/model_per-layer.csv out/model_summary_*.csv --format junit -o junit.xml
  tracer record tcp://localhost:3443 -o bringup.trace --cpu-hz 160M
  tracer live 'jlink://600012345?device=STM32H743ZI&cpu=480M&swo=2M'
  tracer demo --inferences 20 -o demo.trace

'tracer COMMAND --help' explains each command, with examples.
"""


def _verb_module(verb: str) -> ModuleType:
    return importlib.import_module(f"tracer.cli.cmd_{verb}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Return the parser: every verb with its options (tests check every verb's help), or, with
    ``only``, that verb alone if it is one (a run loads what its verb needs, not what every verb's
    options do), else every verb without options (``tracer --help`` lists them; a wrong verb is
    refused with the list).
    """
    parser = argparse.ArgumentParser(
        prog="tracer",
        description="Telemetry and trace analyzer for microcontrollers running neural networks.",
        epilog=EPILOG,
        formatter_class=FittedHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tracer {tracer.__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="COMMAND")
    for verb in [only] if only in VERBS else VERBS:
        module = _verb_module(verb)
        verb_parser = sub.add_parser(
            verb,
            help=module.HELP,
            description=module.DESCRIPTION,
            formatter_class=FittedHelpFormatter,
        )
        verb_parser.add_argument("-q", "--quiet", action="store_true", help="no warnings or progress on stderr")
        if only is None or only == verb:
            module.add_arguments(verb_parser)
        verb_parser.set_defaults(run=module.run)
    return parser


def _chosen_verb(argv: list[str]) -> str:
    """The verb of a command line: its first word that is not an option ("" if none is)."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return ""


def main(argv: list[str] | None = None) -> int:
    """Run ``tracer`` with ``argv`` (without the program name) and return the exit code.

    Every way a command can end becomes an exit code of the contract and at most one line on
    stderr: its own code; a :class:`TracerError` (an output that cannot be written included);
    Ctrl-C at any moment, building the parser included (130).
    """
    argv = sys.argv[1:] if argv is None else argv
    console = Console()
    try:
        parser = build_parser(only=_chosen_verb(argv))
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on usage errors and 0 on --help
            flush_stdout()
            return int(exc.code or 0)
        if args.verb is None:
            parser.print_help(sys.stderr)
            return ExitCode.USAGE
        console.quiet = args.quiet
        args.console = console
        code = int(args.run(args))
        flush_stdout()
        return code
    except TracerError as exc:
        console.error(str(exc))
        return int(exc.exit_code)
    except KeyboardInterrupt:
        console.error("interrupted")
        return ExitCode.INTERRUPTED
    except BrokenPipeError as exc:  # a write to stdout outside open_output (a safety net)
        console.error(str(OutputError(STDOUT, exc)))
        return int(OutputError.exit_code)


def entry() -> None:
    """Console-script entry point."""
    interrupt_outside_imports()
    try:
        code = main()
    except KeyboardInterrupt:  # between main's own handlers and here: still an interrupt
        code = ExitCode.INTERRUPTED
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        # main said why; keep the interpreter's own flush at exit from trying (and printing) again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)
