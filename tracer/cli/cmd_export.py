"""``tracer export``: a capture in another tool's format."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.cli.output import Console

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
  model-explorer
               node data for Google's Model Explorer, one JSON file per
               metric in the folder -o names: measured_cycles,
               inference_share; with --budget planner_ratio; with
               --calibration calibrated_ratio; with NPU PMU counters
               npu_active. Keyed by the operators' output tensor names
               (Vela's layer names). Load the model, then each file as
               node data (docs/calibrate.md).

Times are converted from target cycles at the capture's clock (--clock when it does not say);
with --budget, layer executions carry their predicted cycles and the ratio.

examples:
  tracer export captures/demo.trace --format perfetto -o demo.perfetto-trace
  tracer export captures/demo.trace --format perfetto --budget captures/demo_budget.toml -o demo.pftrace
  tracer export captures/demo.trace --format csv -o layers.csv
  tracer export captures/demo.trace --format chrome-json -o demo.json
  tracer export captures/demo.trace --format raw -o demo.swo
  tracer export run.trace --format model-explorer --budget out/kws/ -o node_data/
  tracer export run.trace --format perfetto --power run.jls -o run.pftrace
"""

FORMATS = ("perfetto", "chrome-json", "csv", "raw", "model-explorer")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer export``."""
    from tracer.cli.analysis_input import (
        add_budget_arguments,
        add_elf_argument,
        add_input_argument,
        add_power_arguments,
    )

    add_input_argument(parser)
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
    from tracer.cli.analysis_input import analyse_request, analysis_request

    request = analysis_request(args, whole=True)  # every execution is exported
    loaded, analysis = analyse_request(request, args.console)
    if not loaded.timeline.source:
        loaded.timeline.source = str(request.capture)
    if args.format == "perfetto":
        from tracer.export.perfetto import write_perfetto

        with open_output(args.output, binary=True) as out:
            size = write_perfetto(out, analysis)
        args.console.info(f"wrote {size:,} bytes of Perfetto trace: open it in ui.perfetto.dev")
    elif args.format == "chrome-json":
        from tracer.export.chrome_json import write_chrome_json

        with open_output(args.output) as out:
            write_chrome_json(out, analysis)
    elif args.format == "model-explorer":
        _write_node_data(analysis, args.output, request.capture, args.console)
    else:
        from tracer.export.csv_export import write_csv

        with open_output(args.output) as out:
            rows = write_csv(out, analysis)
        args.console.info(f"wrote {rows:,} layer executions")
    return 0


def _write_node_data(analysis: Any, output: str, capture: str, console: Console) -> None:
    """One Model Explorer node-data file per metric in the folder ``-o`` (``output``) names."""
    import json
    from pathlib import Path

    from tracer.cli.output import open_output
    from tracer.errors import CaptureError, UsageError
    from tracer.export.model_explorer import node_data

    if output == "-":
        raise UsageError("--format model-explorer writes one file per metric: give -o a folder")
    folder = Path(output)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{folder}: cannot make the folder ({exc.strerror})") from None
    data = node_data(analysis)
    for why in data.left_out:
        console.info(f"left out: {why}")
    if not data.metrics["measured_cycles"]["results"]:
        raise CaptureError(f"{capture}: no layer measured in a complete inference: no node data")
    for stem, graph in data.metrics.items():
        with open_output(str(folder / f"{stem}.json")) as out:
            out.write(json.dumps(graph, indent=2) + "\n")
    nodes = len(data.metrics["measured_cycles"]["results"])
    console.info(f"wrote {len(data.metrics)} node-data files for {nodes} nodes to {folder}")
