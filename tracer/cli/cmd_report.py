"""``tracer report``: per-layer cycles, inference latency, memory and loss of a capture."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracer.analysis.energy_model import PowerModel
    from tracer.analysis.result import Analysis
    from tracer.cli.output import Console

HELP = "per-layer report of a capture or log: cycles against the budget, latency, memory, PMU, findings"
DESCRIPTION = """\
Decode the telemetry records in a capture (written by firmware_snippets: ITM over SWO, or the
same packets over a UART or RTT) and report per layer: cycles min/p50/p99/max/mean/std over the
complete inferences, inference latency, tensor-arena and stack use, NPU PMU counters, and what
was lost on the way. An inference touched by lost or damaged data is counted but never averaged
into the numbers; the report says why it is incomplete.

Cycles are target cycles at the clock the firmware reports (on the QEMU demo: SysTick ticks of
emulated time, labelled so; NPU PMU values there are simulated, labelled so).

A firmware text log (a UART dump, an FVP's stdout: MLEK PMU profiles, TFLite Micro profiler and
allocator lines, ethos-u-core-software and ExecuTorch reports) is read like a capture; what a file
is comes from its content. With --budget, each layer gets its predicted cycles in the capture's
clock and the ratio measured/predicted; findings say which layer is off, by how much, and what the
field does about it (see 'tracer check' for the same as a pass/fail gate).

When the capture holds samples of the NPU's command-stream position (the firmware's timer sampler,
or a probe's npu= polling) and the budget includes Vela's debug database, the NPU job is split into
Vela's operations with the share each took and its 95% interval, held against Vela's estimate;
PC samples give each layer's CPU hot spots, named from --elf (inlined functions too).

formats:
  text    tables for a terminal (default)
  json    the report object: schema_version, capture, inferences, layers, memory, pmu, findings;
          with --budget also budget (and per layer: predicted_cycles, ratio, budget); logs add log;
          sampled captures add sampling, npu_operators, cpu_hotspots;
          --power adds energy

examples:
  tracer report captures/demo.trace
  tracer report captures/demo.trace --per-inference
  tracer report captures/demo.trace --format json -o report.json
  tracer report captures/demo.trace --format json | jq '.layers[] | {name, p50: .cycles.p50}'
  tracer report captures/demo.trace --budget captures/demo_budget.toml
  tracer report uart.log --budget out/model_per-layer.csv out/model_summary_*.csv --clock 400M
  tracer report run.trace --budget out/model_*.csv out/model_debug.xml --elf build/app.elf
  tracer report run.trace --power run.jls       # energy per layer: docs/energy.md
  tracer report run.trace --power ppk.csv --supply-voltage 3.3
  tracer report run.trace --power run.jls --fit-power-model model.json
  tracer report other.trace --power-model model.json  # estimated, no meter
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer report``."""
    from tracer.cli.analysis_input import (
        add_budget_arguments,
        add_elf_argument,
        add_input_argument,
        add_power_arguments,
    )

    add_input_argument(parser)
    add_budget_arguments(parser)
    add_elf_argument(parser)
    add_power_arguments(parser)
    parser.add_argument(
        "--fit-power-model",
        metavar="OUT",
        help="with --power: fit energy per layer execution to its time and NPU PMU counters, and write "
        "the model to OUT (JSON), for --power-model on runs without a meter (docs/energy.md)",
    )
    parser.add_argument(
        "--power-model",
        metavar="FILE",
        help="no meter: estimate each layer's energy from its time and NPU PMU counters with a model "
        "written by --fit-power-model (labelled an estimate, with the model's fit error)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument(
        "--per-inference",
        action="store_true",
        help="also list every inference with the cycles of every layer (JSON: per_inference)",
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Decode (or read the log), match the budget, run the findings, print the report."""
    from tracer.cli.analysis_input import analyse_request, analysis_request
    from tracer.cli.output import open_output, terminal_width
    from tracer.export.report_json import report_object, write_report_json
    from tracer.export.report_text import write_report_text

    # A bad model file is exit 2 before the capture is read.
    model = _power_model(args.power_model, args.fit_power_model, args.power)
    request = analysis_request(args, whole=args.per_inference)  # every execution listed: read whole
    if model is not None:
        request = dataclasses.replace(request, settings=dataclasses.replace(request.settings, power_model=model))
    _, analysis = analyse_request(request, args.console)
    report = report_object(analysis, args.per_inference, streamed=True)
    if args.fit_power_model:
        _fit_power_model(args.fit_power_model, request.capture, analysis, args.console)
    with open_output(args.output) as out:
        if args.format == "json":
            write_report_json(report, out)
        else:
            write_report_text(report, out, terminal_width(args.output))
    return 0


def _power_model(path: str | None, fit_to: str | None, power: str | None) -> PowerModel | None:
    """``--power-model PATH``, read (exit 2 on a bad file or with ``--power``), or None; and
    ``--fit-power-model`` only with ``--power``.
    """
    from tracer.errors import UsageError

    if fit_to and not power:
        raise UsageError("--fit-power-model fits a model on a metered run: give its recording too (--power FILE)")
    if not path:
        return None
    if power:
        raise UsageError(
            "--power-model estimates energy where no meter was attached; with --power the energy is measured"
        )
    from tracer.analysis.energy_model import read_model

    return read_model(path)


def _fit_power_model(out: str, capture: str, analysis: Analysis, console: Console) -> None:
    """Fit the model on the metered analysis and write it to ``out`` (``--fit-power-model``)."""
    import json

    from tracer.analysis.energy_model import fit_model
    from tracer.errors import OutputError

    energy = analysis.energy
    assert energy is not None  # --power is required with it
    fitted_on = {
        "capture": capture,
        "recording": energy.recording.path,
        "meter": energy.recording.meter,
        "simulated": energy.recording.simulated,
        "clock_hz": analysis.timeline.clock_hz,
    }
    model = fit_model(analysis.layers, energy.layers, analysis.timeline.clock_hz, fitted_on)
    try:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(model.to_json(), f, indent=2)
            f.write("\n")
    except OSError as exc:
        raise OutputError(out, exc) from None
    console.info(
        f"power model written to {out}: {len(model.coefficients)} coefficients over "
        f"{model.layers} layers, fit error {model.error_pct:.1f} % RMS (leave one layer out; worst "
        f"{model.worst_pct:.1f} %)"
    )
