"""``tracer record``: copy a source into a crash-safe capture."""

from __future__ import annotations

import argparse

from tracer.sources.registry import source_schemes
from tracer.units import parse_frequency

HELP = "record a source into a .trace capture"
DESCRIPTION = """\
Record the bytes of a source, exactly as received, into a capture. The capture is crash-safe: a
killed process or a pulled cable keeps every byte flushed so far (at most 0.1 s is at risk).
Recording ends at the end of the stream, after --duration, or on Ctrl-C.

sources:
  {schemes}

examples:
  tracer record tcp://localhost:3443 -o bringup.trace --duration 30 --cpu-hz 160M
  tracer record serial:///dev/ttyUSB0?baud=2000000 -o swo.trace --swo-hz 2M
  tracer record socket://127.0.0.1:4321 -o qemu.trace
""".format(schemes="\n  ".join(source_schemes()))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer record``."""
    parser.add_argument("source", metavar="SOURCE", help="source URL (see below)")
    parser.add_argument("-o", "--output", metavar="CAPTURE", required=True, help="capture file to create (.trace)")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: until the end)")
    parser.add_argument("--force", action="store_true", help="replace CAPTURE if it exists")
    meta = parser.add_argument_group("what the capture header records")
    meta.add_argument("--cpu-hz", type=parse_frequency, metavar="HZ", help="core clock, e.g. 160M")
    meta.add_argument("--swo-hz", type=parse_frequency, metavar="HZ", help="SWO bit rate, e.g. 2M")
    meta.add_argument("--tpiu", choices=("on", "off"), help="whether the stream is TPIU-formatted (default: detect)")
    meta.add_argument("--tpiu-id", type=int, default=1, metavar="N", help="TPIU source ID carrying ITM (default: 1)")
    meta.add_argument("--ts-prescaler", type=int, choices=(1, 4, 16, 64), default=1, help="ITM timestamp prescaler")
    meta.add_argument("--notes", default="", help="free text stored in the header")


def run(args: argparse.Namespace) -> int:
    """Record until the end, the duration, or Ctrl-C."""
    from tracer.capture.metadata import CaptureMetadata
    from tracer.capture.recorder import record
    from tracer.capture.writer import CaptureWriter
    from tracer.errors import ExitCode
    from tracer.sources.registry import open_source

    console = args.console
    source = open_source(args.source)
    source.open()
    try:
        hints = source.metadata()
        meta = CaptureMetadata.from_json({**hints, "source": args.source})
        meta.cpu_hz = args.cpu_hz or meta.cpu_hz
        meta.swo_hz = args.swo_hz or meta.swo_hz
        if args.tpiu:
            meta.tpiu = args.tpiu == "on"
        meta.tpiu_id = args.tpiu_id
        meta.ts_prescaler = args.ts_prescaler
        meta.notes = args.notes
        with CaptureWriter(args.output, meta, overwrite=args.force) as writer:
            with console.progress(f"recording {args.source}") as bar:
                try:
                    result = record(source, writer, duration=args.duration, on_tick=bar.update)
                except KeyboardInterrupt:
                    writer.close()
                    console.info(f"interrupted; {args.output} keeps {writer.bytes_received} bytes")
                    return ExitCode.INTERRUPTED
    finally:
        source.close()
    console.info(f"recorded {result.bytes} bytes in {result.seconds:.1f} s to {args.output} ({result.ended})")
    if result.ended == "lost":
        console.error(f"source lost: {result.message}; every byte received is in {args.output}")
        return ExitCode.SOURCE_UNAVAILABLE
    return ExitCode.OK
