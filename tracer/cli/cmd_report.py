"""``tracer report``: per-layer cycles, inference latency, memory and loss of a capture."""

from __future__ import annotations

import argparse

HELP = "per-layer report of a capture: cycles, latency, memory, loss"
DESCRIPTION = """\
Decode the telemetry records in a capture (written by firmware_snippets: ITM over SWO, or the
same packets over a UART or RTT) and report per layer: cycles min/p50/p99/max/mean/std over the
complete inferences, inference latency, tensor-arena and stack use, NPU PMU counters, and what
was lost on the way. An inference touched by lost or damaged data is counted but never averaged
into the numbers; the report says why it is incomplete.

Cycles are target cycles at the clock the firmware reports (on the QEMU demo: SysTick ticks of
emulated time, labelled so; NPU PMU values there are simulated, labelled so).

formats:
  text    tables for a terminal (default)
  json    the report object: schema_version, capture, inferences, layers, memory, findings

examples:
  tracer report captures/demo.trace
  tracer report captures/demo.trace --per-inference
  tracer report captures/demo.trace --format json -o report.json
  tracer report captures/demo.trace --format json | jq '.layers[] | {name, p50: .cycles.p50}'
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer report``."""
    parser.add_argument("capture", metavar="CAPTURE", help="a .trace capture or a raw ITM file")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument(
        "--per-inference", action="store_true",
        help="also list every inference with the cycles of every layer (JSON: per_inference)",
    )  # fmt: skip
    parser.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Decode, build the report, print it."""
    from tracer.analysis.report import CaptureFacts, build_report
    from tracer.cli.output import open_output
    from tracer.export.report_json import write_report_json
    from tracer.export.report_text import write_report_text
    from tracer.telemetry.capture import decode_capture

    console = args.console
    with console.progress("decoding") as bar:
        decoded = decode_capture(args.capture, on_progress=bar.update)
    for warning in decoded.warnings:
        console.warn(warning)
    if decoded.records == 0:
        console.warn(
            f"{args.capture}: no telemetry records found (firmware_snippets records use ITM ports 24 and 25); "
            "the report is empty"
        )
    facts = CaptureFacts(decoded.metadata.source or args.capture, decoded.stream_bytes, decoded.host_seconds,
                         decoded.warnings, str(args.capture))  # fmt: skip
    report = build_report(decoded.timeline, facts, per_inference=args.per_inference)
    with open_output(args.output) as out:
        if args.format == "json":
            write_report_json(report, out)
        else:
            write_report_text(report, out)
    return 0
