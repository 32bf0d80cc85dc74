"""``tracer export``: a capture in another tool's format."""

from __future__ import annotations

import argparse

from tracer.capture.reader import open_capture

HELP = "export a capture (raw bytes for other tools)"
DESCRIPTION = """\
Write a capture in another format.

formats:
  raw     the stream bytes exactly as received, for orbcat, pyOCD, OpenOCD or sigrok

examples:
  tracer export captures/demo.trace --format raw -o demo.swo
"""

FORMATS = ("raw",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer export``."""
    parser.add_argument("capture", metavar="CAPTURE", help="a .trace capture or raw trace file")
    parser.add_argument("--format", choices=FORMATS, required=True, help="output format")
    parser.add_argument("-o", "--output", metavar="PATH", required=True, help="output file ('-' for stdout)")


def run(args: argparse.Namespace) -> int:
    """Export."""
    from tracer.cli.output import open_output

    with open_capture(args.capture) as reader, open_output(args.output, binary=True) as out:
        for chunk in reader.chunks():
            out.write(chunk.data)
        for warning in reader.warnings:
            args.console.warn(str(warning))
    return 0
