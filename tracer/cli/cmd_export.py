"""``tracer export``: a capture in another tool's format."""

from __future__ import annotations

import argparse

HELP = "export a capture: Perfetto trace, Chrome JSON, CSV of layer executions, or raw bytes"
DESCRIPTION = """\
Write a capture (or a firmware text log) in another tool's format.

formats:
  perfetto     native Perfetto protobuf trace: open it in ui.perfetto.dev. One track per engine
               (CPU, NPU) with a slice per layer execution (args: cycles, predicted, ratio, PMU
               counters), inferences, a track per interrupt, NPU jobs, cache maintenance and
               console lines, counter tracks for arena use, stack high-water and NPU PMU counters;
               sampled captures add NPU operators inside the job, QREAD and PC samples (--elf)
  chrome-json  legacy Chrome trace-event JSON (chrome://tracing); the same tracks, ts/dur in us
  csv          one row per layer execution: inference, layer, name, op, engine, start, end,
               cycles, complete, predicted, ratio (cycles at the capture's clock)
  raw          the stream bytes exactly as received, for orbcat, pyOCD, OpenOCD or sigrok

Times are converted from target cycles at the capture's clock (--clock when it does not say);
with --budget, layer executions carry their predicted cycles and the ratio.

examples:
  tracer export captures/demo.trace --format perfetto -o demo.perfetto-trace
  tracer export captures/demo.trace --format perfetto --budget captures/demo_budget.toml -o demo.pftrace
  tracer export captures/demo.trace --format csv -o layers.csv
  tracer export captures/demo.trace --format chrome-json -o demo.json
  tracer export captures/demo.trace --format raw -o demo.swo
  tracer export run.trace --format perfetto --power run.jls -o run.pftrace
"""

FORMATS = ("perfetto", "chrome-json", "csv", "raw")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer export``."""
    from tracer.cli.analysis_input import INPUT_HELP, add_budget_arguments, add_elf_argument, add_power_arguments

    parser.add_argument("capture", metavar="CAPTURE", help=INPUT_HELP)
    parser.add_argument("--format", choices=FORMATS, required=True, help="output format")
    parser.add_argument("-o", "--output", metavar="PATH", required=True, help="output file ('-' for stdout)")
    add_budget_arguments(parser)
    add_elf_argument(parser)
    add_power_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Export."""
    from tracer.cli.output import open_output

    if args.format == "raw":
        from tracer.capture.reader import open_capture

        with open_capture(args.capture) as reader, open_output(args.output, binary=True) as out:
            for chunk in reader.chunks():
                out.write(chunk.data)
            for warning in reader.warnings:
                args.console.warn(str(warning))
        return 0
    from tracer.cli.analysis_input import analyse_whole

    loaded, analysis = analyse_whole(args)
    if not loaded.timeline.source:
        loaded.timeline.source = str(args.capture)
    if args.format == "perfetto":
        from tracer.export.perfetto import write_perfetto

        with open_output(args.output, binary=True) as out:
            size = write_perfetto(out, analysis)
        args.console.info(f"wrote {size:,} bytes of Perfetto trace: open it in ui.perfetto.dev")
    elif args.format == "chrome-json":
        from tracer.export.chrome_json import write_chrome_json

        with open_output(args.output) as out:
            write_chrome_json(out, analysis)
    else:
        from tracer.export.csv_export import write_csv

        with open_output(args.output) as out:
            rows = write_csv(out, analysis)
        args.console.info(f"wrote {rows:,} layer executions")
    return 0
